// dezero/functions/normalization.cpp - batch_norm (alias batch_nrom): DeZero
// functions.py's BatchNorm, used by the BatchNorm layer; layer_norm (Chainer's
// F.layer_normalization over gamma's axes, as PyTorch's F.layer_norm), used by L::LayerNorm.
//
// Two routes to the same numbers. The fused one (tensor/fused.hpp's batch_norm_forward
// and _backward, one backend call each: cpu/batch_norm.cpp, and on a GPU cuDNN's batch
// normalisation (gpu/cudnn_batch_norm.cpp) where it takes the case, else gpu/batch_norm.cu)
// works on NCHW in place of (N*H*W, C) rows: it takes float32 / float64 x whose gamma,
// beta and running statistics share its dtype and device, the forward in both modes and
// the backward when no graph is recorded (create_graph false). The composite one - tensor
// ops over the rows (N*H*W, C), C moved last, and a backward written with Variables -
// takes the rest, and the backward with create_graph, so that the gradient is itself
// differentiable (the statistics recomputed from x in train mode).
#include "dezero/functions/normalization.hpp"

#include <string>
#include <vector>

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
  std::string name() const override { return "BatchNorm"; }
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

// --- layer normalisation ------------------------------------------------------------------
// x (..., D1..Dk) normalised over its last k axes (gamma's shape (D1..Dk)), per leading index:
//   mu = mean(x), var = mean((x - mu)^2) (biased), rstd = 1 / sqrt(var + eps),
//   xhat = (x - mu) rstd, y = gamma xhat + beta.
// Backward (gy, dxhat = gy gamma, means over the k axes, sums over the leading ones):
//   gx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), ggamma = sum(gy xhat), gbeta = sum(gy).
// The forward keeps mu and rstd (one value per leading index); with create_graph they are
// recomputed from x as Variables, so that the gradient differentiates again.
class LayerNorm : public Function {
 public:
  LayerNorm(Axes axes, double eps) : axes_(std::move(axes)), eps_(eps) {}
  TensorList forward(const TensorList& xs) override {
    const Tensor &x = xs[0], &gamma = xs[1];
    mean_ = dezero::mean(x, axes_, true);
    Tensor xc = x - mean_;
    rstd_ = 1.0 / sqrt(dezero::mean(square(xc), axes_, true) + eps_);
    Tensor y = xc * rstd_ * gamma;
    return {xs.size() > 2 ? y + xs[2] : y};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable &x = input(0), &gamma = input(1), &gy = gys[0];
    Variable xhat;
    Variable rstd;
    if (Config::enable_backprop) {  // create_graph: the statistics as functions of x
      Variable xc = x - F::mean(x, axes_, true);
      rstd = F::pow(F::mean(xc * xc, axes_, true) + eps_, -0.5);
      xhat = xc * rstd;
    } else {
      rstd = Variable(rstd_);
      xhat = Variable((x.data() - mean_) * rstd_);
    }
    Variable gx;
    if (needs_input_grad(0)) {
      Variable d = gy * gamma;
      gx = rstd * (d - F::mean(d, axes_, true) - xhat * F::mean(d * xhat, axes_, true));
    }
    VariableList g{gx, needs_input_grad(1) ? F::sum_to(gy * xhat, gamma.shape()) : Variable()};
    if (inputs().size() > 2) g.push_back(needs_input_grad(2) ? F::sum_to(gy, gamma.shape()) : Variable());
    return g;
  }
  // "axis": the first normalised axis, counted from the end (-k), as ONNX's LayerNormalization.
  FunctionAttrs attributes() const override {
    return {{"axis", -static_cast<std::int64_t>(axes_.list().size())}, {"eps", eps_}};
  }
  std::string name() const override { return "LayerNorm"; }

 private:
  Axes axes_;
  double eps_;
  Tensor mean_, rstd_;  // (..., 1, .., 1): keepdims
};

}  // namespace

namespace F {

// --- batch_norm ---------------------------------------------------------------------------------
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay, double eps) {
  const Tensor& xd = x.data();
  if (!is_floating(xd.dtype()))
    detail::fail<DtypeError>("batch_norm", "x must be float32 or float64, got ", xd);
  if (xd.ndim() != 2 && xd.ndim() != 4)
    detail::fail<ShapeError>("batch_norm", "x must be 2-d (N, C) or 4-d (N, C, H, W), got ", xd);
  const std::int64_t c = xd.shape()[1];
  auto check_c = [&](const char* what, const Tensor& p) {
    if (p.shape() != Shape{c})
      detail::fail<ShapeError>("batch_norm", what, " must have shape (", c, ",) for x ", xd, ", got ", p);
    detail::check_same_device("batch_norm", xd, p);
  };
  check_c("gamma", gamma.data());
  check_c("beta", beta.data());
  if (!running_mean.defined()) running_mean = zeros(Shape{c}, xd.dtype(), xd.device());
  if (!running_var.defined()) running_var = ones(Shape{c}, xd.dtype(), xd.device());
  check_c("running_mean", running_mean);
  check_c("running_var", running_var);
  if (!(eps > 0.0)) detail::fail<ValueError>("batch_norm", "eps must be positive, got ", std::to_string(eps));
  return call<BatchNorm>(detail::in(x, gamma, beta), running_mean, running_var, decay, eps, Config::train);
}

// --- layer_norm ---------------------------------------------------------------------------------
Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta, double eps) {
  const Tensor& xd = x.data();
  detail::check_defined("layer_norm", xd);
  if (!is_floating(xd.dtype()))
    detail::fail<DtypeError>("layer_norm", "x must be float32 or float64, got ", xd);
  if (!gamma.defined() || !gamma.data().defined())
    detail::fail<ValueError>("layer_norm", "gamma is undefined",
                             detail::Hint{"its shape names the normalised axes (ones(D) for a plain normalisation "
                                          "over the last axis of size D)"});
  const Tensor& g = gamma.data();
  const int k = g.ndim(), nd = xd.ndim();
  bool fits = k >= 1 && k <= nd;
  for (int i = 0; fits && i < k; ++i) fits = g.shape()[i] == xd.shape()[nd - k + i];
  if (!fits)
    detail::fail<ShapeError>("layer_norm", "gamma ", g, " must be the last axes of x ", xd,
                             detail::Hint{"gamma's shape is the normalised shape (PyTorch's normalized_shape)"});
  detail::check_same_device("layer_norm", xd, g);
  if (g.dtype() != xd.dtype())
    detail::fail<DtypeError>("layer_norm", "gamma ", g, " and x ", xd, " must have one dtype");
  const bool with_beta = beta.defined() && beta.data().defined();
  if (with_beta) {
    const Tensor& b = beta.data();
    if (b.shape() != g.shape())
      detail::fail<ShapeError>("layer_norm", "beta ", b, " must have gamma's shape ", g.shape());
    detail::check_same_device("layer_norm", xd, b);
    if (b.dtype() != xd.dtype())
      detail::fail<DtypeError>("layer_norm", "beta ", b, " and x ", xd, " must have one dtype");
  }
  if (!(eps > 0.0)) detail::fail<ValueError>("layer_norm", "eps must be positive, got ", std::to_string(eps));
  std::vector<int> axes;
  for (int i = nd - k; i < nd; ++i) axes.push_back(i);
  if (with_beta) return call<LayerNorm>(detail::in(x, gamma, beta), axes, eps);
  return call<LayerNorm>(detail::in(x, gamma), axes, eps);
}

Variable batch_nrom(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay, double eps) {
  return batch_norm(x, gamma, beta, running_mean, running_var, decay, eps);
}

}  // namespace F
}  // namespace dezero
