// layers/batchnorm.cpp - L::BatchNorm (examples/spiral.py, gan.py, ResNet).
//
// TODO(issue 4): call F::batch_norm(x, gamma, beta, running_mean, running_var,
// decay, eps) from functions_nn.hpp once it lands; until then forward uses the
// composite below (same formulas, built from differentiable F ops).
#include <algorithm>

#include "dezero/functions.hpp"
#include "dezero/layers.hpp"

namespace dezero::L {

namespace {
// Train mode: batch mean and biased variance over every axis but 1, running
// statistics updated in place as Chainer does (unbiased variance, m = N or N*H*W).
// Test mode: the running statistics.  x: (N, C, ...), gamma/beta/mean/var: (C,).
Variable batch_norm_composite(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                              Tensor& running_var, double decay, double eps) {
  const int nd = x.ndim();
  const std::int64_t C = x.shape()[1];
  Shape pshape(static_cast<std::size_t>(nd), 1);
  pshape[1] = C;
  std::vector<int> axes{0};
  for (int a = 2; a < nd; ++a) axes.push_back(a);
  Variable g = F::reshape(gamma, pshape), b = F::reshape(beta, pshape);
  if (!Config::train) {
    Tensor inv_std = pow(running_var + eps, -0.5).reshape(pshape);
    return (x - running_mean.reshape(pshape)) * inv_std * g + b;
  }
  Variable mu = F::mean(x, axes, true);
  Variable xc = x - mu;
  Variable var = F::mean(xc * xc, axes, true);
  Variable y = xc * F::pow(var + eps, -0.5) * g + b;
  const double m = static_cast<double>(x.size() / C);
  const double adjust = m / std::max(m - 1.0, 1.0);
  running_mean *= decay;
  running_mean += (1.0 - decay) * mu.data().reshape({C});
  running_var *= decay;
  running_var += ((1.0 - decay) * adjust) * var.data().reshape({C});
  return y;
}
}  // namespace

BatchNorm::BatchNorm() {
  avg_mean = register_parameter("avg_mean", Parameter(Tensor(), "avg_mean"));
  avg_var = register_parameter("avg_var", Parameter(Tensor(), "avg_var"));
  gamma = register_parameter("gamma", Parameter(Tensor(), "gamma"));
  beta = register_parameter("beta", Parameter(Tensor(), "beta"));
}

Variable BatchNorm::forward(const Variable& x) {
  if (x.ndim() != 2 && x.ndim() != 4)
    throw ShapeError("BatchNorm: input of shape " + x.shape().str() + "; hint: pass (N, C) or (N, C, H, W)");
  const std::int64_t D = x.shape()[1];
  const Device dev = x.device();
  if (!avg_mean.data().defined()) avg_mean.set_data(zeros({D}, x.dtype(), dev));
  if (!avg_var.data().defined()) avg_var.set_data(ones({D}, x.dtype(), dev));
  if (!gamma.data().defined()) gamma.set_data(ones({D}, x.dtype(), dev));
  if (!beta.data().defined()) beta.set_data(zeros({D}, x.dtype(), dev));
  Tensor mean = avg_mean.data(), var = avg_var.data();
  Variable y = batch_norm_composite(x, gamma, beta, mean, var, 0.9, 2e-5);
  avg_mean.set_data(mean);
  avg_var.set_data(var);
  return y;
}

}  // namespace dezero::L
