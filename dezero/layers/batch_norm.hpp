/// \file
/// L::BatchNorm (DeZero layers.py), over F::batch_norm.
#pragma once

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- BatchNorm ----------------------------------------------------------------------------------
/// Batch normalisation (DeZero's L.BatchNorm), over F::batch_norm.
///
/// x: (N, C) or (N, C, H, W). Parameters avg_mean, avg_var (running statistics,
/// never given a gradient), gamma, beta; created on the first call with C = x.shape[1],
/// x's dtype and device. Train mode normalises with the batch statistics and updates
/// the running ones (decay 0.9, eps 2e-5); test mode uses the running ones.
/// The mode is dezero::Config::train (dezero::test_mode() turns it off).
class BatchNorm : public Layer {
 public:
  /// Makes the layer; its four parameters are registered now and get their data on the first call.
  BatchNorm();
  /// x: (N, C) or (N, C, H, W) -> the same shape and dtype, normalised per channel C.
  ///
  /// `gamma * (x - mean) / sqrt(var + eps) + beta` with the batch statistics (train
  /// mode, which also updates avg_mean and avg_var in place) or the running ones
  /// (test mode). An x of any other number of axes is a ShapeError; a C that differs
  /// from the first call's is a ShapeError of F::batch_norm.
  Variable forward(const Variable& x) override;
  /// The running mean and variance (never given a gradient), the scale gamma and the shift beta, each (C,).
  ///
  /// Created on the first call as avg_mean = 0, avg_var = 1, gamma = 1, beta = 0; all four
  /// are in params() and the weight files ("avg_mean", "avg_var", "gamma", "beta").
  ///@{
  Parameter avg_mean, avg_var, gamma, beta;
  ///@}
};

}  // namespace dezero::L
