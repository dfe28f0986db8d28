/// \file
/// Arithmetic: add, sub, mul, div, neg, pow, and the scalar forms behind the Variable
/// operators (DeZero core.py, steps 20-22; broadcasting backward, step 40); the element-wise
/// maximum, minimum and where (NumPy's) and pow with a tensor exponent.
///
/// The two-Variable forms broadcast as NumPy does; the gradient of an operand that was
/// broadcast is summed back to its own shape (F::sum_to). Their result dtype is NumPy's
/// (dezero::result_type: a 0-d operand of the same kind does not widen; int / int is
/// float64). The forms with a `double` keep it out of the graph (a constant) and keep the
/// Variable's dtype, except that an integer Variable with a fractional constant, or in a
/// division, gives float64. Shapes that do not broadcast are a dezero::ShapeError.
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// `a + b` with broadcasting (DeZero's Add; the Variable operator +).
Variable add(const Variable& a, const Variable& b);
/// `a - b` with broadcasting (DeZero's Sub; the Variable operator -).
Variable sub(const Variable& a, const Variable& b);
/// `a * b` element-wise with broadcasting (DeZero's Mul; the Variable operator *).
Variable mul(const Variable& a, const Variable& b);
/// `a / b`, true division with broadcasting (DeZero's Div; the Variable operator /); integers give float64.
Variable div(const Variable& a, const Variable& b);
/// `-x` (DeZero's Neg; the unary Variable operator -).
Variable neg(const Variable& x);
/// `x ** c` element-wise for a constant exponent `c` (DeZero's Pow); gradient `c x^(c-1)`.
/// An integer x with a negative `c` gives float64.
Variable pow(const Variable& x, double c);
/// `x ** y` element-wise for a tensor exponent `y` with broadcasting, in x's dtype (ONNX's Pow);
/// gradients `gy y x^(y-1)` for x and `gy x^y log(x)` for a floating y. A number as exponent
/// (`F::pow(x, 2)`) still calls the constant form above: a number does not convert to a Variable.
Variable pow(const Variable& x, const Variable& y);
/// The element-wise larger of a and b with broadcasting (NumPy's maximum; ONNX's Max); the
/// gradient goes to the operand chosen, to a on a tie.
Variable maximum(const Variable& a, const Variable& b);
/// The element-wise smaller of a and b with broadcasting (NumPy's minimum; ONNX's Min); the
/// gradient goes to the operand chosen, to a on a tie.
Variable minimum(const Variable& a, const Variable& b);
/// `cond != 0 ? a : b` element-wise, the three broadcast together (NumPy's where; ONNX's Where);
/// cond is a fixed tensor without a gradient; gy goes to a where cond holds, to b elsewhere.
Variable where(const Tensor& cond, const Variable& a, const Variable& b);
/// `a + b` for a constant `b` (Variable + double and double + Variable).
Variable add(const Variable& a, double b);
/// `a - b` for a constant `b` (Variable - double).
Variable sub(const Variable& a, double b);
/// `a * b` for a constant `b` (Variable * double and double * Variable).
Variable mul(const Variable& a, double b);
/// `a / b` for a constant `b` (Variable / double); an integer `a` gives float64.
Variable div(const Variable& a, double b);
/// `b - a` for a constant `b` (double - Variable; DeZero's rsub).
Variable rsub(const Variable& a, double b);  // b - a
/// `b / a` for a constant `b` (double / Variable; DeZero's rdiv); an integer `a` gives float64.
Variable rdiv(const Variable& a, double b);  // b / a

}  // namespace dezero::F
