/// \file
/// L::LayerNorm (PyTorch's nn.LayerNorm, Chainer's L.LayerNormalization), over F::layer_norm.
#pragma once

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- LayerNorm ----------------------------------------------------------------------------------
/// Layer normalisation over the last axes of x, with a learnt scale gamma and shift beta.
///
/// The normalised shape is given (PyTorch's `nn.LayerNorm(normalized_shape)`, written
/// `L::LayerNorm({512})`) or, by default, x's last axis on the first call (Chainer's lazy
/// `L.LayerNormalization()`). gamma = 1 and beta = 0 of that shape are created on the first
/// call with x's dtype and device. The same in train and test mode.
class LayerNorm : public Layer {
 public:
  /// Normalises over x's last axis, whose size the first call fixes; eps 1e-5.
  LayerNorm();
  /// Normalises over the last `normalized_shape.ndim()` axes of x, which must be
  /// `normalized_shape`. An empty shape, an extent below 1 or `eps <= 0` is a ValueError.
  explicit LayerNorm(const Shape& normalized_shape, double eps = 1e-5);
  /// x (..., D1..Dk) -> the same shape and dtype: `gamma * (x - mean) / sqrt(var + eps) + beta`
  /// over the last k axes (F::layer_norm). Axes that do not end in the normalised shape, or
  /// in the first call's, are a ShapeError.
  Variable forward(const Variable& x) override;
  /// The scale (ones) and the shift (zeros), of the normalised shape; "gamma" and "beta" in
  /// params() and the weight files.
  ///@{
  Parameter gamma, beta;
  ///@}

 private:
  Shape shape_;  // empty: x's last axis on the first call
  double eps_ = 1e-5;
};

}  // namespace dezero::L
