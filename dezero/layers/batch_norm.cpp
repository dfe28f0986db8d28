// dezero/layers/batch_norm.cpp - L::BatchNorm (examples/spiral.py, gan.py, ResNet).
//
// Forward is F::batch_norm (train: batch statistics and an in-place update of the
// running ones; test mode: the running statistics).
#include "dezero/functions.hpp"
#include "dezero/layers/batch_norm.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::L {


BatchNorm::BatchNorm() {
  avg_mean = register_parameter("avg_mean", Parameter(Tensor(), "avg_mean"));
  avg_var = register_parameter("avg_var", Parameter(Tensor(), "avg_var"));
  gamma = register_parameter("gamma", Parameter(Tensor(), "gamma"));
  beta = register_parameter("beta", Parameter(Tensor(), "beta"));
}

Variable BatchNorm::forward(const Variable& x) {
  if (x.ndim() != 2 && x.ndim() != 4)
    detail::fail<ShapeError>("BatchNorm", "input of shape ", x.shape(), "; hint: pass (N, C) or (N, C, H, W)");
  const std::int64_t D = x.shape()[1];
  const Device dev = x.device();
  auto all_there = [&] {
    return avg_mean.data().defined() && avg_var.data().defined() && gamma.data().defined() && beta.data().defined();
  };
  lazy_init(all_there, [&] {
    if (!avg_mean.data().defined()) avg_mean.set_data(zeros({D}, x.dtype(), dev));
    if (!avg_var.data().defined()) avg_var.set_data(ones({D}, x.dtype(), dev));
    if (!gamma.data().defined()) gamma.set_data(ones({D}, x.dtype(), dev));
    if (!beta.data().defined()) beta.set_data(zeros({D}, x.dtype(), dev));
  });
  // Handles to the running statistics: train mode updates their storage in place, so
  // the layer's avg_mean / avg_var stay the same tensors and nothing is written back
  // (test mode, which only reads them, can run in several threads at once).
  Tensor mean = avg_mean.data(), var = avg_var.data();
  return F::batch_norm(x, gamma, beta, mean, var, 0.9, 2e-5);
}

}  // namespace dezero::L
