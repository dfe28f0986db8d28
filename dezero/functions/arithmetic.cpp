// dezero/functions/arithmetic.cpp - add, sub, mul, div, neg, pow and the Variable
// operators (DeZero core.py, steps 20-22; broadcasting-aware backward, step 40); maximum,
// minimum, where and pow with a tensor exponent (NumPy's; the ONNX importer's Max, Min, Where
// and Pow, and the exporter's emitters found by these Functions' names).
//
// Each backward is written with Variables so that it can be differentiated again.
// An operand that was broadcast in forward gets its gradient summed back to its
// own shape (sum_to). Operations with a double keep the double out of the graph
// (a constant), and the result keeps the Variable's dtype.
#include "dezero/functions/arithmetic.hpp"

#include <algorithm>
#include <string>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

namespace {

// gy summed down to `shape` when the operand was broadcast.
Variable unbroadcast(const Variable& gy, const Shape& shape) {
  return gy.shape() == shape ? gy : F::sum_to(gy, shape);
}

class Add : public Function {
 public:
  std::string name() const override { return "Add"; }
  TensorList forward(const TensorList& xs) override { return {xs[0] + xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    return {needs_input_grad(0) ? unbroadcast(gy, input(0).shape()) : Variable(),
            needs_input_grad(1) ? unbroadcast(gy, input(1).shape()) : Variable()};
  }
};

class Sub : public Function {
 public:
  std::string name() const override { return "Sub"; }
  TensorList forward(const TensorList& xs) override { return {xs[0] - xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    return {needs_input_grad(0) ? unbroadcast(gy, input(0).shape()) : Variable(),
            needs_input_grad(1) ? unbroadcast(F::neg(gy), input(1).shape()) : Variable()};
  }
};

class Mul : public Function {
 public:
  std::string name() const override { return "Mul"; }
  TensorList forward(const TensorList& xs) override { return {xs[0] * xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    return {needs_input_grad(0) ? unbroadcast(gy * input(1), input(0).shape()) : Variable(),
            needs_input_grad(1) ? unbroadcast(gy * input(0), input(1).shape()) : Variable()};
  }
};

class Div : public Function {
 public:
  std::string name() const override { return "Div"; }
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
  std::string name() const override { return "Neg"; }
  TensorList forward(const TensorList& xs) override { return {-xs[0]}; }
  VariableList backward(const VariableList& gys) override { return {F::neg(gys[0])}; }
};

class Pow : public Function {
 public:
  std::string name() const override { return "Pow"; }
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

// ShapeError "<op>: a (2, 3) float32 and b (4,) float32 do not broadcast together" before the
// Function is made, for the binary functions below.
void check_broadcast(const char* op, const Variable& a, const Variable& b) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const int n = std::max(sa.ndim(), sb.ndim());
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - sa.ndim()), ib = i - (n - sb.ndim());
    const std::int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
    if (da != db && da != 1 && db != 1)
      detail::fail<ShapeError>(op, "a ", a.data(), " and b ", b.data(),
                               " do not broadcast together",
                               detail::Hint{"axes are matched from the right and must be equal or 1"});
  }
}

// A 0/1 mask in `dtype` as a constant of the graph.
Variable constant_mask(const Tensor& mask, DType dtype) {
  return Variable(mask.dtype() == dtype ? mask : mask.astype(dtype));
}

// The element-wise maximum (kMax) or minimum of a and b. The gradient goes where the chosen
// operand came from: a where a >= b (max) or a <= b (min), b elsewhere.
template <bool kMax>
class Extremum : public Function {
 public:
  TensorList forward(const TensorList& xs) override {
    return {kMax ? dezero::maximum(xs[0], xs[1]) : dezero::minimum(xs[0], xs[1])};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const Tensor& a = input(0).data();
    const Tensor& b = input(1).data();
    const Tensor first = kMax ? dezero::greater_equal(a, b) : dezero::less_equal(a, b);
    Variable ga, gb;
    if (needs_input_grad(0) && is_floating(a.dtype()))
      ga = unbroadcast(gy * constant_mask(first, gy.dtype()), a.shape());
    if (needs_input_grad(1) && is_floating(b.dtype()))
      gb = unbroadcast(gy * constant_mask(1.0 - first, gy.dtype()), b.shape());
    return {ga, gb};
  }
  std::string name() const override { return kMax ? "Maximum" : "Minimum"; }
};

// x ** y with a tensor exponent, in x's dtype; gx = gy y x^(y-1), gy' = gy x^y log(x).
class PowTensor : public Function {
 public:
  TensorList forward(const TensorList& xs) override {
    Tensor y = dezero::pow(xs[0], xs[1]);
    return {y.dtype() == xs[0].dtype() ? y : y.astype(xs[0].dtype())};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const Variable& x = input(0);
    const Variable& y = input(1);
    Variable gx, gyy;
    if (!is_floating(x.dtype())) return {gx, gyy};
    if (needs_input_grad(0)) {
      Variable yx = F::cast(y, x.dtype());
      gx = unbroadcast(gy * yx * F::pow(x, yx - 1.0), x.shape());
    }
    if (needs_input_grad(1) && is_floating(y.dtype()))
      gyy = unbroadcast(F::cast(gy * F::pow(x, y) * F::log(x), y.dtype()), y.shape());
    return {gx, gyy};
  }
  std::string name() const override { return "PowTensor"; }
};

// cond != 0 ? a : b with a fixed cond (moved to the operands' device on first use).
class Where : public Function {
 public:
  explicit Where(Tensor cond) : cond_(std::move(cond)) {}
  TensorList forward(const TensorList& xs) override {
    if (cond_.device() != xs[0].device()) cond_ = cond_.to(xs[0].device());
    return {dezero::where(cond_, xs[0], xs[1])};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const Tensor c = dezero::not_equal(cond_, zeros_like(cond_)).astype(gy.dtype());
    Variable ga, gb;
    if (needs_input_grad(0) && is_floating(input(0).dtype()))
      ga = unbroadcast(F::cast(gy * Variable(c), input(0).dtype()), input(0).shape());
    if (needs_input_grad(1) && is_floating(input(1).dtype()))
      gb = unbroadcast(F::cast(gy * Variable(1.0 - c), input(1).dtype()), input(1).shape());
    return {ga, gb};
  }
  std::string name() const override { return "Where"; }
  FunctionAttrs attributes() const override { return {{"condition", cond_}}; }

 private:
  Tensor cond_;
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

Variable pow(const Variable& x, const Variable& y) {
  check_broadcast("pow", x, y);
  return call<PowTensor>(detail::in(x, y));
}
Variable maximum(const Variable& a, const Variable& b) {
  check_broadcast("maximum", a, b);
  return call<Extremum<true>>(detail::in(a, b));
}
Variable minimum(const Variable& a, const Variable& b) {
  check_broadcast("minimum", a, b);
  return call<Extremum<false>>(detail::in(a, b));
}
Variable where(const Tensor& cond, const Variable& a, const Variable& b) {
  auto operands = [&] {
    return "cond " + detail::describe(cond) + ", a " + detail::describe(a.data()) + " and b " + detail::describe(b.data());
  };
  if (!cond.defined())
    detail::fail<ValueError>("where", "cond holds no data (", operands(),
                             "); hint: pass a 0/1 tensor that broadcasts with a and b");
  try {
    broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape(), "where"), "where");
  } catch (const ShapeError&) {
    detail::fail<ShapeError>("where", operands(), " do not broadcast together",
                             detail::Hint{"axes are matched from the right and must be equal or 1"});
  }
  return call<Where>(detail::in(a, b), cond);
}
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
