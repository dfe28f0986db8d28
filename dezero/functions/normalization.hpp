/// \file
/// Normalisation: batch_norm (DeZero functions.py's BatchNorm) and layer_norm.
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// Batch normalisation; x: (N, C) or (N, C, H, W), gamma/beta: (C,).
/// Train mode normalises with the batch mean and biased variance over every axis
/// but C, and updates running_mean/running_var in place:
/// `mean <- decay mean + (1 - decay) mu`, `var <- decay var + (1 - decay) m/max(m-1,1) sigma^2`
/// (m = `N` or `N*H*W`). Test mode normalises with running_mean/running_var. Undefined
/// running statistics are created (zeros / ones of (C,), x's dtype and device).
/// The result is `gamma * (x - mean) / sqrt(var + eps) + beta`, of x's shape and dtype;
/// x, gamma and beta get gradients in both modes, the running statistics none.
/// An x that is not float is a dezero::DtypeError; an x that is not 2-d or 4-d, or a
/// gamma, beta or running statistic that is not (C,), a dezero::ShapeError; `eps <= 0` a
/// dezero::ValueError.
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay = 0.9, double eps = 2e-5);
/// Layer normalisation (Chainer's F.layer_normalization, PyTorch's F.layer_norm with
/// normalized_shape = gamma's shape): x (..., D1..Dk) is normalised over its last k axes,
/// where gamma is (D1..Dk), for every leading index:
/// `gamma * (x - mean) / sqrt(var + eps) + beta`, with the mean and the biased variance over
/// those axes. beta (gamma's shape) may be Variable() for none. The same in train and test
/// mode; x, gamma and beta get gradients, differentiable again.
/// An x that is not float is a dezero::DtypeError, as are gamma or beta of another dtype; an
/// undefined gamma a dezero::ValueError; a gamma that is not x's last axes, or a beta not of
/// gamma's shape, a dezero::ShapeError; `eps <= 0` a dezero::ValueError.
Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta = Variable(), double eps = 1e-5);
/// DeZero's (misspelt) name for batch_norm.
Variable batch_nrom(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay = 0.9, double eps = 2e-5);

}  // namespace dezero::F
