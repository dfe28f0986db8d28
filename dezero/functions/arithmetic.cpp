// dezero/functions/arithmetic.cpp - add, sub, mul, div, neg, pow and the Variable
// operators (DeZero core.py, steps 20-22; broadcasting-aware backward, step 40).
//
// Each backward is written with Variables so that it can be differentiated again.
// An operand that was broadcast in forward gets its gradient summed back to its
// own shape (sum_to). Operations with a double keep the double out of the graph
// (a constant), and the result keeps the Variable's dtype.
#include "dezero/functions/arithmetic.hpp"

#include "dezero/functions.hpp"

namespace dezero {

namespace {

// gy summed down to `shape` when the operand was broadcast.
Variable unbroadcast(const Variable& gy, const Shape& shape) {
  return gy.shape() == shape ? gy : F::sum_to(gy, shape);
}

class Add : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {xs[0] + xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    return {needs_input_grad(0) ? unbroadcast(gy, input(0).shape()) : Variable(),
            needs_input_grad(1) ? unbroadcast(gy, input(1).shape()) : Variable()};
  }
};

class Sub : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {xs[0] - xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    return {needs_input_grad(0) ? unbroadcast(gy, input(0).shape()) : Variable(),
            needs_input_grad(1) ? unbroadcast(F::neg(gy), input(1).shape()) : Variable()};
  }
};

class Mul : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {xs[0] * xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    return {needs_input_grad(0) ? unbroadcast(gy * input(1), input(0).shape()) : Variable(),
            needs_input_grad(1) ? unbroadcast(gy * input(0), input(1).shape()) : Variable()};
  }
};

class Div : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {xs[0] / xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const Variable& x0 = input(0);
    const Variable& x1 = input(1);
    Variable g0, g1;
    if (needs_input_grad(0)) g0 = unbroadcast(gy / x1, x0.shape());
    if (needs_input_grad(1)) g1 = unbroadcast(gy * (F::neg(x0) / F::pow(x1, 2.0)), x1.shape());
    return {g0, g1};
  }
};

class Neg : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {-xs[0]}; }
  VariableList backward(const VariableList& gys) override { return {F::neg(gys[0])}; }
};

class Pow : public Function {
 public:
  explicit Pow(double c) : c_(c) {}
  TensorList forward(const TensorList& xs) override { return {dezero::pow(xs[0], c_)}; }
  VariableList backward(const VariableList& gys) override {
    return {c_ * F::pow(input(0), c_ - 1.0) * gys[0]};
  }
  FunctionAttrs attributes() const override { return {{"c", c_}}; }

 private:
  double c_;
};

// x (op) c with a constant c; named like DeZero's node for the same expression.
class AddConst : public Function {
 public:
  explicit AddConst(double c) : c_(c) {}
  TensorList forward(const TensorList& xs) override { return {xs[0] + c_}; }
  VariableList backward(const VariableList& gys) override { return {gys[0]}; }
  std::string name() const override { return "Add"; }
  FunctionAttrs attributes() const override { return {{"c", c_}}; }

 private:
  double c_;
};

class MulConst : public Function {
 public:
  explicit MulConst(double c) : c_(c) {}
  TensorList forward(const TensorList& xs) override { return {xs[0] * c_}; }
  VariableList backward(const VariableList& gys) override { return {F::mul(gys[0], c_)}; }
  std::string name() const override { return "Mul"; }
  FunctionAttrs attributes() const override { return {{"c", c_}}; }

 private:
  double c_;
};

class RSubConst : public Function {  // c - x
 public:
  explicit RSubConst(double c) : c_(c) {}
  TensorList forward(const TensorList& xs) override { return {c_ - xs[0]}; }
  VariableList backward(const VariableList& gys) override { return {F::neg(gys[0])}; }
  std::string name() const override { return "Sub"; }
  FunctionAttrs attributes() const override { return {{"c", c_}}; }

 private:
  double c_;
};

class RDivConst : public Function {  // c / x
 public:
  explicit RDivConst(double c) : c_(c) {}
  TensorList forward(const TensorList& xs) override { return {c_ / xs[0]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& x = input(0);
    return {gys[0] * (F::mul(F::pow(x, -2.0), -c_))};
  }
  std::string name() const override { return "Div"; }
  FunctionAttrs attributes() const override { return {{"c", c_}}; }

 private:
  double c_;
};

}  // namespace

namespace F {
Variable add(const Variable& a, const Variable& b) { return call<Add>(detail::in(a, b)); }
Variable sub(const Variable& a, const Variable& b) { return call<Sub>(detail::in(a, b)); }
Variable mul(const Variable& a, const Variable& b) { return call<Mul>(detail::in(a, b)); }
Variable div(const Variable& a, const Variable& b) { return call<Div>(detail::in(a, b)); }
Variable neg(const Variable& x) { return call<Neg>(detail::in(x)); }
Variable pow(const Variable& x, double c) { return call<Pow>(detail::in(x), c); }
Variable add(const Variable& a, double b) { return call<AddConst>(detail::in(a), b); }
Variable sub(const Variable& a, double b) { return call<AddConst>(detail::in(a), -b); }
Variable mul(const Variable& a, double b) { return call<MulConst>(detail::in(a), b); }
Variable div(const Variable& a, double b) {
  if (is_integer(a.dtype())) return call<Div>(detail::in(a, Variable(array(b, float64, a.device()))));
  return call<MulConst>(detail::in(a), 1.0 / b);
}
Variable rsub(const Variable& a, double b) { return call<RSubConst>(detail::in(a), b); }
Variable rdiv(const Variable& a, double b) { return call<RDivConst>(detail::in(a), b); }
}  // namespace F

Variable operator+(const Variable& a, const Variable& b) { return F::add(a, b); }
Variable operator-(const Variable& a, const Variable& b) { return F::sub(a, b); }
Variable operator*(const Variable& a, const Variable& b) { return F::mul(a, b); }
Variable operator/(const Variable& a, const Variable& b) { return F::div(a, b); }
Variable operator+(const Variable& a, double b) { return F::add(a, b); }
Variable operator-(const Variable& a, double b) { return F::sub(a, b); }
Variable operator*(const Variable& a, double b) { return F::mul(a, b); }
Variable operator/(const Variable& a, double b) { return F::div(a, b); }
Variable operator+(double a, const Variable& b) { return F::add(b, a); }
Variable operator-(double a, const Variable& b) { return F::rsub(b, a); }
Variable operator*(double a, const Variable& b) { return F::mul(b, a); }
Variable operator/(double a, const Variable& b) { return F::rdiv(b, a); }
Variable operator-(const Variable& a) { return F::neg(a); }

}  // namespace dezero
