// dezero/functions/math.cpp - sin, cos, tanh, exp, log (DeZero functions.py;
// steps 27, 34, 35), erf (Chainer's F.erf, for GELU), sqrt and abs (NumPy's; ONNX's Sqrt
// and Abs). tanh and exp differentiate through their own output y.
#include "dezero/functions/math.hpp"

#include "dezero/functions.hpp"

namespace dezero {
namespace {

class Sin : public Function {
 public:
  std::string name() const override { return "Sin"; }
  TensorList forward(const TensorList& xs) override { return {dezero::sin(xs[0])}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] * F::cos(input(0))}; }
};

class Cos : public Function {
 public:
  std::string name() const override { return "Cos"; }
  TensorList forward(const TensorList& xs) override { return {dezero::cos(xs[0])}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] * F::neg(F::sin(input(0)))}; }
};

class Tanh : public Function {
 public:
  std::string name() const override { return "Tanh"; }
  TensorList forward(const TensorList& xs) override { return {dezero::tanh(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::tanh(input(0));  // the output was dropped: recompute it
    return {gys[0] * F::rsub(y * y, 1.0)};
  }
};

class Exp : public Function {
 public:
  std::string name() const override { return "Exp"; }
  TensorList forward(const TensorList& xs) override { return {dezero::exp(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::exp(input(0));
    return {gys[0] * y};
  }
};

class Log : public Function {
 public:
  std::string name() const override { return "Log"; }
  TensorList forward(const TensorList& xs) override { return {dezero::log(xs[0])}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] / input(0)}; }
};

// y = erf(x); gx = gy * 2/sqrt(pi) * exp(-x^2), written in Variables (differentiable again).
class Erf : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::erf(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& x = input(0);
    return {gys[0] * (F::exp(F::neg(x * x)) * kTwoOverSqrtPi)};
  }
  std::string name() const override { return "Erf"; }

 private:
  static constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)
};

// y = sqrt(x); gx = gy / (2 sqrt(x)), through F::sqrt so that it differentiates again.
class Sqrt : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::sqrt(xs[0])}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] / (2.0 * F::sqrt(input(0)))}; }
  std::string name() const override { return "Sqrt"; }
};

// y = |x|; gx = gy * sign(x), the sign a constant (0 at 0; the second derivative is 0).
class Abs : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::abs(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    const Tensor s = dezero::sign(input(0).data());
    return {gys[0] * Variable(s.dtype() == gys[0].dtype() ? s : s.astype(gys[0].dtype()))};
  }
  std::string name() const override { return "Abs"; }
};

}  // namespace

namespace F {
Variable sin(const Variable& x) { return call<Sin>(detail::in(x)); }
Variable cos(const Variable& x) { return call<Cos>(detail::in(x)); }
Variable tanh(const Variable& x) { return call<Tanh>(detail::in(x)); }
Variable exp(const Variable& x) { return call<Exp>(detail::in(x)); }
Variable erf(const Variable& x) { return call<Erf>(detail::in(x)); }
Variable log(const Variable& x) { return call<Log>(detail::in(x)); }
Variable sqrt(const Variable& x) { return call<Sqrt>(detail::in(x)); }
Variable abs(const Variable& x) { return call<Abs>(detail::in(x)); }
}  // namespace F
}  // namespace dezero
