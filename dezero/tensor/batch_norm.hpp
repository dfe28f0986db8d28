// dezero/tensor/batch_norm.hpp - the fused batch normalisation of tensor/batch_norm.cpp (functions/normalization.cpp)
// (internal, not installed; the layers above the tensor reach it through tensor/fused.hpp).
// Each entry validates shapes, dtypes and devices, then calls the backend; no autograd here.
#pragma once

#include <cstdint>
#include <optional>

#include "dezero/pair.hpp"
#include "dezero/tensor.hpp"

namespace dezero::detail {

// --- batch normalisation (batch_norm.cpp; functions/normalization.cpp) ----------------
// The fused kernels of F::batch_norm over the channel axis 1 of x (N, C) or NCHW
// (N, C, H, W), without moving C last (Backend::batch_norm_forward / _backward give the
// formulas). batch_norm_fusable: whether they take the case: x float32 or float64, 2-d
// or 4-d, and gamma, beta, running_mean and running_var defined, of shape (C,), of x's
// dtype and on x's device (the caller, which has checked its operands, takes the
// composite formula otherwise).
bool batch_norm_fusable(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                        const Tensor& running_var);
// y (x's shape), and the channels' mean and inv_std (C,) for the backward; train: the batch's
// statistics, running_mean / running_var updated in place (decay, unbiased var); test: the
// running statistics, only read. Through the backend's library (cuDNN) where it takes the
// case and the library path is on (set_conv_library_path), else its own kernels: the same
// formulas either way.
struct BatchNormForward {
  Tensor y, mean, inv_std;
};
BatchNormForward batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                                    Tensor& running_var, double decay, double eps, bool train);
// gx (x's shape; undefined unless want_gx), ggamma and gbeta (C,) from gy (x's shape) and
// the forward's mean and inv_std; eps is the forward's (cuDNN's backward takes it).
struct BatchNormBackward {
  Tensor gx, ggamma, gbeta;
};
BatchNormBackward batch_norm_backward(const Tensor& x, const Tensor& gy, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& inv_std, bool train, bool want_gx, double eps = 2e-5);

}  // namespace dezero::detail
