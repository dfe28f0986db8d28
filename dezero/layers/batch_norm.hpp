// dezero/layers/batch_norm.hpp - L::BatchNorm (DeZero layers.py), over F::batch_norm.
#pragma once

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- BatchNorm ----------------------------------------------------------------------------------
// x: (N, C) or (N, C, H, W). Parameters avg_mean, avg_var (running statistics,
// never given a gradient), gamma, beta; created on the first call with C = x.shape[1],
// x's dtype and device. Train mode normalises with the batch statistics and updates
// the running ones (decay 0.9, eps 2e-5); test mode uses the running ones.
class BatchNorm : public Layer {
 public:
  BatchNorm();
  Variable forward(const Variable& x) override;
  Parameter avg_mean, avg_var, gamma, beta;
};

}  // namespace dezero::L
