// dezero/functions/loss.cpp - mean_squared_error, softmax_cross_entropy,
// sigmoid_cross_entropy, binary_cross_entropy (DeZero functions.py;
// steps 42, 43, 47). Losses are 0-d Variables in the logits' dtype.
#include <algorithm>
#include <string>

#include "dezero/functions/loss.hpp"

#include "dezero/functions.hpp"
#include "dezero/functions/dual.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

std::int64_t first_axis_len(const char* op, const Tensor& t) {
  if (t.ndim() == 0)
    detail::fail<ShapeError>(op, "expected at least a 1-d array (the loss divides by its first axis), got ", t);
  return t.shape()[0];
}

// A float copy of t in x's dtype and shape (labels / targets of a loss).
Variable targets_like(const char* op, const Variable& x, const Variable& t0) {
  Variable t = t0;
  if (t.dtype() != x.dtype()) t = F::cast(t, x.dtype());  // a node: an exported graph reads the labels it is given
  if (t.shape() == x.shape()) return t;
  if (t.size() != x.size())
    detail::fail<ShapeError>(op, "targets ", t.data(), " do not match the input ", x.data());
  return F::reshape(t, x.shape());
}

// --- mean squared error (step 42) -------------------------------------------------------
// gx0 = gy * (x0 - x1) * 2 / N, summed back to x0's shape; gx1 = -gx0 likewise. Forward
// and the Tensor gradient are one host kernel each for equal shapes (tensor/fused.hpp).
class MeanSquaredError : public detail::DualFunction<MeanSquaredError> {
 public:
  std::string name() const override { return "MeanSquaredError"; }
  TensorList forward(const TensorList& xs) override { return {detail::mean_squared_error(xs[0], xs[1])}; }
  template <class V>
  detail::GradList<V> grads(const V& gy) const {
    V g = detail::mse_grad(gy, detail::as<V>(input(0)), detail::as<V>(input(1)));
    return {needs_input_grad(0) ? detail::sum_to(g, input(0).shape()) : V(),
            needs_input_grad(1) ? detail::sum_to(-g, input(1).shape()) : V()};
  }
};

// --- softmax cross entropy (step 47) -----------------------------------------------------
// Forward and backward are one fused kernel each. The backward is itself a
// Function (SoftmaxCrossEntropyGrad) whose backward uses differentiable ops.
// Inputs: x (N, C), t (N,) int64 checked by detail::sce_labels.
class SoftmaxCrossEntropy : public Function {
 public:
  std::string name() const override { return "SoftmaxCrossEntropy"; }
  TensorList forward(const TensorList& xs) override { return {detail::softmax_cross_entropy(xs[0], xs[1])}; }
  VariableList backward(const VariableList& gys) override;
};

// gx = (softmax(x) - onehot(t)) * gy / N; inputs x (N, C), t (N,), gy (one element).
class SoftmaxCrossEntropyGrad : public Function {
 public:
  std::string name() const override { return "SoftmaxCrossEntropyGrad"; }
  TensorList forward(const TensorList& xs) override {
    return {detail::softmax_cross_entropy_grad(xs[0], xs[1], xs[2])};
  }
  VariableList backward(const VariableList& ggxs) override {
    const Variable& x = input(0);
    const Variable& gy = input(2);
    const Variable& ggx = ggxs[0];
    const double n = static_cast<double>(x.shape()[0]);
    Variable s = F::softmax(x, 1);
    Variable g_x, g_gy;
    if (needs_input_grad(0)) {
      Variable sg = s * ggx;
      g_x = (sg - s * F::sum(sg, Axes{1}, true)) * (gy / n);
    }
    if (needs_input_grad(2)) {
      const Tensor& t = input(1).data();
      std::int64_t c = x.shape()[1];
      Tensor classes = arange(0.0, static_cast<double>(c), 1.0, int64, x.device()).reshape(Shape{1, c});
      Tensor onehot = equal(classes, t.reshape(Shape{t.size(), 1})).astype(x.dtype());
      g_gy = F::reshape(F::sum(ggx * (s - Variable(onehot))) / n, gy.shape());
    }
    return {g_x, Variable(), g_gy};
  }
};

VariableList SoftmaxCrossEntropy::backward(const VariableList& gys) {
  Variable gx = call<SoftmaxCrossEntropyGrad>(detail::in(input(0), input(1), gys[0]));
  return {gx, Variable()};
}

// --- sigmoid cross entropy ----------------------------------------------------------------
// loss = sum(max(x, 0) - x t + log(1 + exp(-|x|))) / N, the stable form of
// -sum(t log p + (1 - t) log(1 - p)) / N with p = sigmoid(x).
class SigmoidCrossEntropy : public Function {
 public:
  std::string name() const override { return "SigmoidCrossEntropy"; }
  TensorList forward(const TensorList& xs) override {
    const Tensor &x = xs[0], &t = xs[1];
    std::int64_t n = first_axis_len("sigmoid_cross_entropy", x);
    Tensor l = maximum(x, 0.0) - x * t + log(1.0 + exp(-abs(x)));
    return {sum(l) / static_cast<double>(n)};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable &x = input(0), &t = input(1);
    Variable g = gys[0] / static_cast<double>(x.shape()[0]);
    return {needs_input_grad(0) ? (F::sigmoid(x) - t) * g : Variable(),
            needs_input_grad(1) ? -x * g : Variable()};
  }
};

}  // namespace

namespace F {

Variable mean_squared_error(const Variable& x0, const Variable& x1) {
  // Checked here so that a mismatch names mean_squared_error, not the subtraction inside it.
  detail::check_same_device("mean_squared_error", x0.data(), x1.data());
  const Shape &s0 = x0.shape(), &s1 = x1.shape();
  const int n = std::max(s0.ndim(), s1.ndim());
  for (int i = 0; i < n; ++i) {
    const int i0 = i - (n - s0.ndim()), i1 = i - (n - s1.ndim());
    const std::int64_t d0 = i0 >= 0 ? s0[i0] : 1, d1 = i1 >= 0 ? s1[i1] : 1;
    if (d0 != d1 && d0 != 1 && d1 != 1)
      detail::fail<ShapeError>("mean_squared_error", "x0 ", x0.data(), " and x1 ", x1.data(), " do not match",
                               detail::Hint{"x0 and x1 must have the same shape or broadcast (axes are matched "
                                            "from the right and must be equal or 1)"});
  }
  return call<MeanSquaredError>(detail::in(x0, x1));
}

Variable softmax_cross_entropy(const Variable& x, const Variable& t) {
  Tensor t64 = detail::sce_labels("softmax_cross_entropy", x.data(), t.data());
  // int32 or (N, 1) labels through nodes, so that an exported graph reads the labels it is given
  Variable tv = t;
  if (t.dtype() != int64) tv = F::cast(tv, int64);
  if (tv.shape() != t64.shape()) tv = F::reshape(tv, t64.shape());
  return call<SoftmaxCrossEntropy>(detail::in(x, tv));
}

Variable sigmoid_cross_entropy(const Variable& x, const Variable& t) {
  if (!is_floating(x.dtype()))
    detail::fail<DtypeError>("sigmoid_cross_entropy", "logits must be float32 or float64, got ", x.data());
  first_axis_len("sigmoid_cross_entropy", x.data());
  Variable tt = targets_like("sigmoid_cross_entropy", x, t);
  return call<SigmoidCrossEntropy>(detail::in(x, tt));
}

Variable binary_cross_entropy(const Variable& p0, const Variable& t0) {
  if (!is_floating(p0.dtype()))
    detail::fail<DtypeError>("binary_cross_entropy", "probabilities must be float32 or float64, got ", p0.data());
  Variable t = targets_like("binary_cross_entropy", p0, t0);
  double n = static_cast<double>(first_axis_len("binary_cross_entropy", t.data()));
  Variable p = clip(p0, 1e-15, 0.999);
  Variable tlog_p = t * log(p) + rsub(t, 1.0) * log(rsub(p, 1.0));
  return -sum(tlog_p) / n;
}

}  // namespace F
}  // namespace dezero
