// dezero/functions/normalization.cpp - batch_norm (alias batch_nrom): DeZero
// functions.py's BatchNorm, used by the BatchNorm layer.
//
// Two routes to the same numbers. The fused one (tensor/fused.hpp's batch_norm_forward
// and _backward, one backend call each: cpu/batch_norm.cpp, and on a GPU cuDNN's batch
// normalisation (cuda/cudnn_batch_norm.cpp) where it takes the case, else cuda/batch_norm.cu)
// works on NCHW in place of (N*H*W, C) rows: it takes float32 / float64 x whose gamma,
// beta and running statistics share its dtype and device, the forward in both modes and
// the backward when no graph is recorded (create_graph false). The composite one - tensor
// ops over the rows (N*H*W, C), C moved last, and a backward written with Variables -
// takes the rest, and the backward with create_graph, so that the gradient is itself
// differentiable (the statistics recomputed from x in train mode).
#include "dezero/functions/normalization.hpp"

#include <string>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

// --- batch normalisation -----------------------------------------------------------------
// The kernel works on rows: x (N, C) as is, x (N, C, H, W) as (N*H*W, C) after
// moving C last; the result is moved back.
Tensor to_rows(const Tensor& x) {
  if (x.ndim() == 2) return x;
  return x.transpose({0, 2, 3, 1}).reshape(Shape{-1, x.shape()[1]});
}
Tensor from_rows(const Tensor& y, const Shape& s) {
  if (s.ndim() == 2) return y;
  return y.reshape(Shape{s[0], s[2], s[3], s[1]}).transpose({0, 3, 1, 2});
}
Variable to_rows(const Variable& x) {
  if (x.ndim() == 2) return x;
  return F::reshape(F::transpose(x, {0, 2, 3, 1}), Shape{-1, x.shape()[1]});
}
Variable from_rows(const Variable& y, const Shape& s) {
  if (s.ndim() == 2) return y;
  return F::transpose(F::reshape(y, Shape{s[0], s[2], s[3], s[1]}), {0, 3, 1, 2});
}

// Inputs x, gamma (C,), beta (C,). Train mode: batch statistics, running
// statistics updated in place. Test mode: running statistics. Both have a
// backward (DeZero's crashes after a test-mode forward). The forward keeps only
// the per-channel mean and 1/sqrt(var + eps) (C values each).
class BatchNorm : public Function {
 public:
  BatchNorm(Tensor running_mean, Tensor running_var, double decay, double eps, bool train)
      : rm_(std::move(running_mean)), rv_(std::move(running_var)), decay_(decay), eps_(eps), train_(train) {}

  TensorList forward(const TensorList& xs) override {
    const Tensor &x = xs[0], &gamma = xs[1], &beta = xs[2];
    if (detail::batch_norm_fusable(x, gamma, beta, rm_, rv_)) {
      detail::BatchNormForward r = detail::batch_norm_forward(x, gamma, beta, rm_, rv_, decay_, eps_, train_);
      mean_ = std::move(r.mean);
      inv_std_ = std::move(r.inv_std);
      return {std::move(r.y)};
    }
    Tensor x2 = to_rows(x);  // (M, C)
    Tensor xhat;
    if (train_) {
      mean_ = dezero::mean(x2, Axes{0});
      Tensor xc = x2 - mean_;
      Tensor var = dezero::mean(square(xc), Axes{0});
      inv_std_ = 1.0 / sqrt(var + eps_);
      xhat = xc * inv_std_;
      const double m = static_cast<double>(x2.shape()[0]);
      const double adjust = m / std::max(m - 1.0, 1.0);
      copyto(rm_, rm_ * decay_ + mean_ * (1.0 - decay_));
      copyto(rv_, rv_ * decay_ + var * ((1.0 - decay_) * adjust));
    } else {
      mean_ = rm_.astype(x.dtype());
      inv_std_ = 1.0 / sqrt(rv_.astype(x.dtype()) + eps_);
      xhat = (x2 - mean_) * inv_std_;
    }
    return {from_rows(gamma * xhat + beta, x.shape())};
  }

  VariableList backward(const VariableList& gys) override {
    const Variable &x = input(0), &gamma = input(1);
    const Shape& xs = x.shape();
    if (!Config::enable_backprop && gys[0].data().dtype() == x.dtype() && gys[0].shape() == xs &&
        detail::batch_norm_fusable(x.data(), gamma.data(), gamma.data(), mean_, inv_std_)) {
      // gx = gamma inv_std (gy - gbeta / m - xhat ggamma / m) (train) or gamma inv_std gy,
      // ggamma = sum xhat gy, gbeta = sum gy: one kernel over NCHW.
      detail::BatchNormBackward r =
          detail::batch_norm_backward(x.data(), gys[0].data(), gamma.data(), mean_, inv_std_, train_,
                                      needs_input_grad(0), eps_);
      return {needs_input_grad(0) ? Variable(std::move(r.gx)) : Variable(),
              needs_input_grad(1) ? Variable(std::move(r.ggamma)) : Variable(),
              needs_input_grad(2) ? Variable(std::move(r.gbeta)) : Variable()};
    }
    const double m = static_cast<double>(x.size() / xs[1]);
    Variable gy = to_rows(gys[0]);
    Variable xhat, inv_std;
    if (Config::enable_backprop && train_) {
      // create_graph: recompute the statistics from x so that they are differentiated too.
      Variable x2 = to_rows(x);
      Variable xc = x2 - F::sum(x2, Axes{0}) / m;
      inv_std = F::pow(F::sum(xc * xc, Axes{0}) / m + eps_, -0.5);
      xhat = xc * inv_std;
    } else {
      Variable x2 = Config::enable_backprop ? to_rows(x) : Variable(to_rows(x.data()));
      inv_std = Variable(inv_std_);
      xhat = (x2 - Variable(mean_)) * inv_std;
    }
    Variable gbeta = F::sum(gy, Axes{0});
    Variable ggamma = (train_ || needs_input_grad(1)) ? F::sum(xhat * gy, Axes{0}) : Variable();
    Variable gx;
    if (needs_input_grad(0)) {
      Variable g = train_ ? gy - gbeta / m - xhat * ggamma / m : gy;
      gx = from_rows(g * (gamma * inv_std), xs);
    }
    return {gx, needs_input_grad(1) ? ggamma : Variable(), needs_input_grad(2) ? gbeta : Variable()};
  }
  // "running_mean" / "running_var" (C,): handles to the caller's statistics (the layer's
  // avg_mean / avg_var data); "train" 0 / 1: the mode forward ran in.
  FunctionAttrs attributes() const override {
    return {{"eps", eps_}, {"decay", decay_}, {"train", std::int64_t{train_}}, {"running_mean", rm_},
            {"running_var", rv_}};
  }

 private:
  Tensor rm_, rv_;  // share storage with the caller's running statistics
  double decay_, eps_;
  bool train_;
  Tensor mean_, inv_std_;  // (C,)
};

}  // namespace

namespace F {

// --- batch_norm ---------------------------------------------------------------------------------
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay, double eps) {
  const Tensor& xd = x.data();
  if (!is_floating(xd.dtype()))
    throw DtypeError("batch_norm: x must be float32 or float64, got " + detail::describe(xd));
  if (xd.ndim() != 2 && xd.ndim() != 4)
    throw ShapeError("batch_norm: x must be 2-d (N, C) or 4-d (N, C, H, W), got " + detail::describe(xd));
  const std::int64_t c = xd.shape()[1];
  auto check_c = [&](const char* what, const Tensor& p) {
    if (p.shape() != Shape{c})
      throw ShapeError(std::string("batch_norm: ") + what + " must have shape (" + std::to_string(c) +
                       ",) for x " + detail::describe(xd) + ", got " + detail::describe(p));
    detail::check_same_device("batch_norm", xd, p);
  };
  check_c("gamma", gamma.data());
  check_c("beta", beta.data());
  if (!running_mean.defined()) running_mean = zeros(Shape{c}, xd.dtype(), xd.device());
  if (!running_var.defined()) running_var = ones(Shape{c}, xd.dtype(), xd.device());
  check_c("running_mean", running_mean);
  check_c("running_var", running_var);
  if (!(eps > 0.0)) throw ValueError("batch_norm: eps must be positive, got " + std::to_string(eps));
  return call<BatchNorm>(detail::in(x, gamma, beta), running_mean, running_var, decay, eps, Config::train);
}

Variable batch_nrom(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay, double eps) {
  return batch_norm(x, gamma, beta, running_mean, running_var, decay, eps);
}

}  // namespace F
}  // namespace dezero
