// dezero/functions/arithmetic.hpp - add, sub, mul, div, neg, pow, and the scalar forms behind the Variable
// operators (DeZero core.py, steps 20-22; broadcasting backward, step 40).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable neg(const Variable& x);
Variable pow(const Variable& x, double c);
Variable add(const Variable& a, double b);
Variable sub(const Variable& a, double b);
Variable mul(const Variable& a, double b);
Variable div(const Variable& a, double b);
Variable rsub(const Variable& a, double b);  // b - a
Variable rdiv(const Variable& a, double b);  // b / a

}  // namespace dezero::F
