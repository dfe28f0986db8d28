// dezero/layers/layer_norm.cpp - L::LayerNorm over F::layer_norm: gamma and beta are made
// on the first call, of the normalised shape (given, or x's last axis).
#include "dezero/layers/layer_norm.hpp"

#include <string>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::L {

LayerNorm::LayerNorm() {
  gamma = register_parameter("gamma", Parameter(Tensor(), "gamma"));
  beta = register_parameter("beta", Parameter(Tensor(), "beta"));
}

LayerNorm::LayerNorm(const Shape& normalized_shape, double eps) : LayerNorm() {
  bool ok = normalized_shape.ndim() >= 1;
  for (std::int64_t d : normalized_shape) ok = ok && d >= 1;
  if (!ok)
    detail::fail<ValueError>("LayerNorm", "normalized_shape ", normalized_shape,
                             " must name at least one axis, each of size 1 or more");
  if (!(eps > 0.0)) throw ValueError("LayerNorm: eps must be positive, got " + std::to_string(eps));
  shape_ = normalized_shape;
  eps_ = eps;
}

Variable LayerNorm::forward(const Variable& x) {
  if (x.ndim() < std::max(shape_.ndim(), 1))
    detail::fail<ShapeError>("LayerNorm", "input of shape ", x.shape(), " has fewer axes than the normalised shape ",
                             shape_.ndim() ? shape_.str() : std::string("(last axis)"));
  lazy_init([&] { return gamma.data().defined() && beta.data().defined(); },
            [&] {
              Shape s = shape_.ndim() ? shape_ : Shape{x.shape()[x.ndim() - 1]};
              if (!gamma.data().defined()) gamma.set_data(ones(s, x.dtype(), x.device()));
              if (!beta.data().defined()) beta.set_data(zeros(s, x.dtype(), x.device()));
            });
  return F::layer_norm(x, gamma, beta, eps_);
}

}  // namespace dezero::L
