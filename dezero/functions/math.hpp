/// \file
/// Element-wise math: sin, cos, tanh, exp, log (DeZero functions.py; steps 27, 34, 35), erf,
/// sqrt and abs.
///
/// Element-wise: the result has x's shape and dtype (an integer x gives float64, as
/// NumPy, except in abs, which keeps it). Out-of-domain values give NaN or inf, as NumPy,
/// and throw nothing.
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// The element-wise sine of x; gradient `gy * cos(x)`.
Variable sin(const Variable& x);
/// The element-wise cosine of x; gradient `gy * -sin(x)`.
Variable cos(const Variable& x);
/// The element-wise hyperbolic tangent of x; gradient `gy * (1 - y * y)`, from the output y.
Variable tanh(const Variable& x);
/// The element-wise exponential of x; gradient `gy * y`, from the output y.
Variable exp(const Variable& x);
/// The element-wise natural logarithm of x; gradient `gy / x`.
Variable log(const Variable& x);
/// The element-wise error function `erf(x) = 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt`
/// (Chainer's F.erf; ONNX's Erf); gradient `gy * 2/sqrt(pi) * exp(-x^2)`.
Variable erf(const Variable& x);
/// The element-wise square root of x (NumPy's sqrt; ONNX's Sqrt); gradient `gy / (2 sqrt(x))`.
Variable sqrt(const Variable& x);
/// The element-wise absolute value of x, in x's dtype (NumPy's abs; ONNX's Abs); gradient
/// `gy * sign(x)`, 0 at 0.
Variable abs(const Variable& x);

}  // namespace dezero::F
