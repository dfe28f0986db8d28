// dezero/functions/activation.cpp - sigmoid, relu, leaky_relu, softmax, log_softmax
// (DeZero functions.py; steps 43, 47), and gelu, hard_sigmoid, hard_swish (the activations
// of PyTorch's model zoo: ViT / ConvNeXt, MobileNet V3). Forwards run on Tensors (most are
// single fused kernels); backwards are written with Variables so that they can be
// differentiated again.
#include "dezero/functions/activation.hpp"

#include <optional>
#include <string>

#include "dezero/functions.hpp"
#include "dezero/functions/dual.hpp"
#include "dezero/tensor/fused.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {
namespace {

// y = sigmoid(x); gx = gy * y * (1 - y), from the output (recomputed if it was dropped).
class Sigmoid : public detail::DualFunction<Sigmoid> {
 public:
  std::string name() const override { return "Sigmoid"; }
  TensorList forward(const TensorList& xs) override { return {dezero::sigmoid(xs[0])}; }
  template <class V>
  detail::GradList<V> grads(const V& gy) const {
    Variable y = output(0);
    if (!y.defined()) y = F::sigmoid(input(0));
    return {detail::sigmoid_grad(gy, detail::as<V>(y))};
  }
};

// y = max(x, 0); gx = gy * (x > 0), so the gradient at 0 is 0.
// The masks of ReLU's and LeakyReLU's gradients as Functions of x: (x > 0) and (x > 0 ? 1 : slope),
// as the backward used them before. Piecewise constant: no gradient flows back through them.
class ReLUMask : public Function {
 public:
  explicit ReLUMask(std::optional<double> slope) : slope_(slope) {}
  TensorList forward(const TensorList& xs) override {
    if (slope_) return {detail::leaky_relu_mask(xs[0], *slope_)};
    return {greater(xs[0], 0.0)};
  }
  VariableList backward(const VariableList&) override { return {Variable()}; }
  std::string name() const override { return slope_ ? "LeakyReLUMask" : "ReLUMask"; }
  FunctionAttrs attributes() const override {
    if (slope_) return {{"slope", *slope_}};
    return {};
  }

 private:
  std::optional<double> slope_;
};

class ReLU : public detail::DualFunction<ReLU> {
 public:
  std::string name() const override { return "ReLU"; }
  TensorList forward(const TensorList& xs) override { return {dezero::relu(xs[0])}; }
  template <class V>
  detail::GradList<V> grads(const V& gy) const {
    return {detail::relu_grad(gy, detail::as<V>(input(0)))};
  }
};

}  // namespace

Variable detail::relu_mask(const Variable& x) { return call<ReLUMask>(detail::in(x), std::nullopt); }

namespace {

class LeakyReLU : public Function {
 public:
  std::string name() const override { return "LeakyReLU"; }
  explicit LeakyReLU(double slope) : slope_(slope) {}
  TensorList forward(const TensorList& xs) override { return {detail::leaky_relu(xs[0], slope_)}; }
  VariableList backward(const VariableList& gys) override {
    return {gys[0] * call<ReLUMask>(detail::in(input(0)), slope_)};
  }
  FunctionAttrs attributes() const override { return {{"slope", slope_}}; }

 private:
  double slope_;
};

// y = softmax(x); gx = y * gy - y * sum(y * gy, axis)
class Softmax : public Function {
 public:
  std::string name() const override { return "Softmax"; }
  explicit Softmax(int axis) : axis_(axis) {}
  TensorList forward(const TensorList& xs) override { return {detail::softmax(xs[0], axis_)}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::softmax(input(0), axis_);
    Variable gx = y * gys[0];
    return {gx - y * F::sum(gx, Axes{axis_}, true)};
  }
  FunctionAttrs attributes() const override { return {{"axis", std::int64_t{axis_}}}; }

 private:
  int axis_;
};

// y = log_softmax(x); gx = gy - exp(y) * sum(gy, axis)
class LogSoftmax : public Function {
 public:
  std::string name() const override { return "LogSoftmax"; }
  explicit LogSoftmax(int axis) : axis_(axis) {}
  TensorList forward(const TensorList& xs) override { return {detail::softmax(xs[0], axis_, true)}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::log_softmax(input(0), axis_);
    return {gys[0] - F::exp(y) * F::sum(gys[0], Axes{axis_}, true)};
  }
  FunctionAttrs attributes() const override { return {{"axis", std::int64_t{axis_}}}; }

 private:
  int axis_;
};

// A float copy of an integer x (the activations give float64 for integer input, as NumPy).
Tensor as_float(const Tensor& x) { return is_integer(x.dtype()) ? x.astype(float64) : x; }

// GELU, x * Phi(x) with Phi the standard normal CDF (Hendrycks & Gimpel), exactly or in
// the tanh form; both as PyTorch's F.gelu(approximate="none" | "tanh"):
//   none:  y = 0.5 x (1 + erf(x / sqrt 2)),          gx = gy (Phi(x) + x phi(x)),
//          phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
//   tanh:  y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
//          gx = gy (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)), t = tanh(u)
class Gelu : public Function {
 public:
  explicit Gelu(bool tanh_form) : tanh_(tanh_form) {}
  TensorList forward(const TensorList& xs) override {
    Tensor x = as_float(xs[0]);
    if (tanh_) return {x * (dezero::tanh((x + x * x * x * kC) * kSqrt2OverPi) + 1.0) * 0.5};
    return {x * (dezero::erf(x * kInvSqrt2) + 1.0) * 0.5};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& x = input(0);
    if (tanh_) {
      Variable t = F::tanh((x + x * x * x * kC) * kSqrt2OverPi);
      Variable du = (x * x * (3.0 * kC) + 1.0) * kSqrt2OverPi;
      return {gys[0] * ((t + 1.0) * 0.5 + x * F::rsub(t * t, 1.0) * du * 0.5)};
    }
    Variable cdf = (F::erf(x * kInvSqrt2) + 1.0) * 0.5;
    Variable pdf = F::exp(x * x * -0.5) * kInvSqrt2Pi;
    return {gys[0] * (cdf + x * pdf)};
  }
  FunctionAttrs attributes() const override { return {{"approximate", std::string(tanh_ ? "tanh" : "none")}}; }
  std::string name() const override { return "Gelu"; }

 private:
  static constexpr double kInvSqrt2 = 0.70710678118654752440;     // 1 / sqrt(2)
  static constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
  static constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
  static constexpr double kC = 0.044715;
  bool tanh_;
};

// y = clip(alpha x + beta, 0, 1); gx = gy * alpha where 0 < alpha x + beta < 1, else 0
// (a constant mask, so the second derivative is 0, as it is almost everywhere).
class HardSigmoid : public Function {
 public:
  HardSigmoid(double alpha, double beta) : alpha_(alpha), beta_(beta) {}
  TensorList forward(const TensorList& xs) override { return {clip(as_float(xs[0]) * alpha_ + beta_, 0.0, 1.0)}; }
  VariableList backward(const VariableList& gys) override {
    Tensor z = as_float(input(0).data()) * alpha_ + beta_;
    return {gys[0] * Variable(greater(z, 0.0) * less(z, 1.0) * alpha_)};
  }
  FunctionAttrs attributes() const override { return {{"alpha", alpha_}, {"beta", beta_}}; }
  std::string name() const override { return "HardSigmoid"; }

 private:
  double alpha_, beta_;
};

// y = x * clip(x + 3, 0, 6) / 6 (PyTorch's hardswish, in its order of operations);
// gx = gy * (hard_sigmoid(x, 1/6, 1/2) + x / 6 * [-3 < x < 3]): 0 below -3, (2x + 3) / 6
// between, 1 above 3; its own derivative is 1/3 between.
class HardSwish : public Function {
 public:
  TensorList forward(const TensorList& xs) override {
    Tensor x = as_float(xs[0]);
    return {x * clip(x + 3.0, 0.0, 6.0) / 6.0};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& x = input(0);
    Tensor xd = as_float(x.data());
    Variable inside(greater(xd, -3.0) * less(xd, 3.0) * (1.0 / 6.0));
    return {gys[0] * (F::hard_sigmoid(x, 1.0 / 6.0, 0.5) + x * inside)};
  }
  std::string name() const override { return "HardSwish"; }
};

}  // namespace

namespace F {
Variable sigmoid(const Variable& x) { return call<Sigmoid>(detail::in(x)); }
Variable relu(const Variable& x) { return call<ReLU>(detail::in(x)); }
Variable leaky_relu(const Variable& x, double slope) { return call<LeakyReLU>(detail::in(x), slope); }
Variable softmax(const Variable& x, int axis) { return call<Softmax>(detail::in(x), axis); }
Variable log_softmax(const Variable& x, int axis) { return call<LogSoftmax>(detail::in(x), axis); }
Variable gelu(const Variable& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    detail::fail<ValueError>("gelu", "approximate must be \"none\" or \"tanh\" (PyTorch's names), got \"",
                             approximate, "\"");
  return call<Gelu>(detail::in(x), approximate == "tanh");
}
Variable hard_sigmoid(const Variable& x, double alpha, double beta) {
  return call<HardSigmoid>(detail::in(x), alpha, beta);
}
Variable hard_swish(const Variable& x) { return call<HardSwish>(detail::in(x)); }
}  // namespace F
}  // namespace dezero
