// dezero/tensor/elementwise.cpp - tensor.hpp's element-wise section: the arithmetic
// operators, exp / log / tanh / ..., pow, maximum / minimum / clip, the comparisons,
// where and result_type.
//
// Each operation picks the result dtype (result_type; true division and the float
// functions of integers give float64, as NumPy), casts the operands that differ,
// and makes one backend call: Backend::binary over broadcast views of the two
// operands (tensor/strided.hpp; Backend::where over three), or Backend::unary with
// the scalar as its argument, so that x * 2.0 never materialises the 2.0. The
// in-place operators are Tensor members (tensor.cpp); broadcast_shapes is in shape.cpp.
#include "dezero/tensor.hpp"

#include <cmath>
#include <string>

#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

using detail::backend_of;
using detail::BinaryOp;
using detail::describe;
using detail::Strided;
using detail::UnaryOp;

// --- result_type: NumPy's promotion of two operands ------------------------------------
DType result_type(const Tensor& a, const Tensor& b) {
  DType da = a.dtype(), db = b.dtype();
  if (da == db) return da;
  bool a0 = a.ndim() == 0, b0 = b.ndim() == 0;
  if (a0 != b0) {  // NumPy 1.x value-based casting: a 0-d operand of the same kind does not widen
    DType arr = a0 ? db : da, sc = a0 ? da : db;
    if (is_floating(arr) || is_integer(sc)) return arr;
    if (is_half(sc)) return sc;  // PyTorch: a 16-bit float scalar with an int array keeps its dtype
    return float64;  // float scalar with an int array
  }
  return promote_types(da, db);
}

// --- the three ways to a kernel: binary (broadcast views), scalar, unary ---------------
namespace {

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Maximum: return "maximum";
    case BinaryOp::Minimum: return "minimum";
    case BinaryOp::Eq: return "equal";
    case BinaryOp::Ne: return "not_equal";
    case BinaryOp::Gt: return "greater";
    case BinaryOp::Ge: return "greater_equal";
    case BinaryOp::Lt: return "less";
    case BinaryOp::Le: return "less_equal";
    case BinaryOp::SigmoidGrad: return "sigmoid_grad";
    case BinaryOp::ReluGrad: return "relu_grad";
    case BinaryOp::SquaredDiff: return "squared_difference";
  }
  return "binary";
}

// The broadcast shape of two operands; the error names both shapes and dtypes.
Shape broadcast_operands(const char* op, const Tensor& a, const Tensor& b) {
  try {
    return broadcast_shapes(a.shape(), b.shape(), op);
  } catch (const ShapeError&) {
    detail::fail<ShapeError>(op, "operands could not be broadcast together: ", describe(a), " and ", describe(b),
                             "; hint: axes are matched from the right and must be equal or 1");
  }
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  detail::check_same_device(name, a, b);
  DType dt = result_type(a, b);
  if ((op == BinaryOp::Div) && is_integer(dt)) dt = float64;  // true division, as NumPy
  if (is_half(dt)) return detail::half_result(binary_op(op, detail::half_operand(a, dt), detail::half_operand(b, dt)), dt);
  Tensor a_cast, b_cast;  // the operands converted to dt, when they are not already
  const Tensor& ac = a.dtype() == dt ? a : (a_cast = a.astype(dt));
  const Tensor& bc = b.dtype() == dt ? b : (b_cast = b.astype(dt));
  // Two flat cases of a small network need no broadcast shape: equal shapes, and one operand
  // of one element (a loss gradient times an array) with no more axes than the other.
  const bool a_one = a.size() == 1 && a.ndim() <= b.ndim(), b_one = b.size() == 1 && b.ndim() <= a.ndim();
  Shape broadcast;
  const bool flat = a.shape() == b.shape() || a_one || b_one;
  if (!flat) broadcast = broadcast_operands(name, a, b);
  const Shape& out = !flat ? broadcast : b_one || !a_one ? a.shape() : b.shape();
  Tensor y = Tensor::empty(out, dt, a.device());
  if (y.size() == 0) return y;
  Strided sa, sb, so;
  detail::binary_views(a.shape(), b.shape(), out, sa, sb, so);
  backend_of(a).binary(op, dt, ac.raw_data(), sa, bc.raw_data(), sb, y.raw_data(), so);
  return y;
}

bool is_integral_value(double v) { return std::floor(v) == v && std::abs(v) < 9.2e18; }

// x (op) scalar without materialising the scalar; an int tensor with a fractional
// scalar is promoted to float64 (NumPy would too).
// y = op(x, s) into a new tensor; x converted to float64 first when `widen` (no copy of x
// otherwise: a Tensor copy is a reference count up and down).
Tensor unary_into_new(UnaryOp op, const Tensor& x, double s, bool widen) {
  if (widen) return unary_into_new(op, x.astype(float64), s, false);
  if (is_half(x.dtype())) return detail::half_result(unary_into_new(op, x.astype(float32), s, false), x.dtype());
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (y.size()) backend_of(x).unary(op, x.dtype(), x.raw_data(), y.raw_data(), y.size(), s);
  return y;
}

Tensor scalar_op(UnaryOp op, const Tensor& x, double s, const char* name) {
  detail::check_defined(name, x);
  return unary_into_new(op, x, s, is_integer(x.dtype()) && !is_integral_value(s));
}

Tensor unary_op(UnaryOp op, const Tensor& x, const char* name, bool float_only = true) {
  detail::check_defined(name, x);
  return unary_into_new(op, x, 0.0, float_only && is_integer(x.dtype()));  // np.exp(int array) -> float64
}

}  // namespace

// --- arithmetic operators --------------------------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Add, a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Sub, a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Mul, a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Div, a, b); }
Tensor operator+(const Tensor& a, double b) { return scalar_op(UnaryOp::AddScalar, a, b, "add"); }
Tensor operator-(const Tensor& a, double b) { return scalar_op(UnaryOp::AddScalar, a, -b, "sub"); }
Tensor operator*(const Tensor& a, double b) { return scalar_op(UnaryOp::MulScalar, a, b, "mul"); }
Tensor operator/(const Tensor& a, double b) {
  detail::check_defined("div", a);
  if (is_integer(a.dtype())) return a.astype(float64) * (1.0 / b);
  return scalar_op(UnaryOp::DivScalar, a, b, "div");
}
Tensor operator+(double a, const Tensor& b) { return b + a; }
Tensor operator-(double a, const Tensor& b) { return scalar_op(UnaryOp::RSubScalar, b, a, "sub"); }
Tensor operator*(double a, const Tensor& b) { return b * a; }
Tensor operator/(double a, const Tensor& b) {
  detail::check_defined("div", b);
  if (is_integer(b.dtype())) return a / b.astype(float64);
  return scalar_op(UnaryOp::RDivScalar, b, a, "div");
}
Tensor operator-(const Tensor& a) { return unary_op(UnaryOp::Neg, a, "neg", false); }

// --- math functions --------------------------------------------------------------------
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::Exp, x, "exp"); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::Log, x, "log"); }
Tensor sin(const Tensor& x) { return unary_op(UnaryOp::Sin, x, "sin"); }
Tensor cos(const Tensor& x) { return unary_op(UnaryOp::Cos, x, "cos"); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::Tanh, x, "tanh"); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::Sqrt, x, "sqrt"); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::Abs, x, "abs", false); }
Tensor sign(const Tensor& x) { return unary_op(UnaryOp::Sign, x, "sign", false); }
Tensor square(const Tensor& x) { return unary_op(UnaryOp::Square, x, "square", false); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::Sigmoid, x, "sigmoid"); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::Relu, x, "relu", false); }
Tensor erf(const Tensor& x) { return unary_op(UnaryOp::Erf, x, "erf"); }
Tensor pow(const Tensor& x, double c) {
  detail::check_defined("pow", x);
  if (c == 2.0) return square(x);
  if (c == 1.0) return x.copy();
  return scalar_op(UnaryOp::PowScalar, is_integer(x.dtype()) && c < 0 ? x.astype(float64) : x, c, "pow");
}
Tensor pow(const Tensor& x, const Tensor& c) { return binary_op(BinaryOp::Pow, x, c); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Minimum, a, b); }
Tensor maximum(const Tensor& a, double b) { return scalar_op(UnaryOp::MaxScalar, a, b, "maximum"); }
Tensor minimum(const Tensor& a, double b) { return scalar_op(UnaryOp::MinScalar, a, b, "minimum"); }
Tensor clip(const Tensor& x, double lo, double hi) {
  if (lo > hi) detail::fail<ValueError>("clip", "x_min (", std::to_string(lo), ") is greater than x_max (",
                                        std::to_string(hi), ")");
  return minimum(maximum(x, lo), hi);
}
// --- comparisons (0/1 in the operands' common dtype) and where -------------------------
Tensor equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Eq, a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Ne, a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Gt, a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Ge, a, b); }
Tensor less(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Lt, a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Le, a, b); }
Tensor greater(const Tensor& a, double b) { return scalar_op(UnaryOp::GtScalar, a, b, "greater"); }
Tensor greater_equal(const Tensor& a, double b) { return scalar_op(UnaryOp::GeScalar, a, b, "greater_equal"); }
Tensor less(const Tensor& a, double b) { return scalar_op(UnaryOp::LtScalar, a, b, "less"); }
Tensor less_equal(const Tensor& a, double b) { return scalar_op(UnaryOp::LeScalar, a, b, "less_equal"); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  detail::check_same_device("where", cond, a);
  detail::check_same_device("where", a, b);
  DType dt = result_type(a, b);
  if (is_half(dt))
    return detail::half_result(
        where(detail::half_operand(cond, dt), detail::half_operand(a, dt), detail::half_operand(b, dt)), dt);
  Shape out = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor cc = cond.dtype() == dt ? cond : cond.astype(dt);
  Tensor ac = a.dtype() == dt ? a : a.astype(dt);
  Tensor bc = b.dtype() == dt ? b : b.astype(dt);
  Tensor y = Tensor::empty(out, dt, a.device());
  if (!y.size()) return y;
  Strided so = detail::make_contiguous(out), sc = detail::make_broadcast(cond.shape(), out),
          sa = detail::make_broadcast(a.shape(), out), sb = detail::make_broadcast(b.shape(), out);
  Strided* views[] = {&so, &sc, &sa, &sb};
  detail::coalesce(views, 4);
  backend_of(a).where(dt, cc.raw_data(), sc, ac.raw_data(), sa, bc.raw_data(), sb, y.raw_data(), so);
  return y;
}

}  // namespace dezero
