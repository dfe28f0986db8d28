/// \file
/// Element-wise math: sin, cos, tanh, exp, log (DeZero functions.py; steps 27, 34, 35).
///
/// Element-wise: the result has x's shape and dtype (an integer x gives float64, as
/// NumPy). Out-of-domain values give NaN or inf, as NumPy, and throw nothing.
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

}  // namespace dezero::F
