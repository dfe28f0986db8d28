// dezero/functions/math.hpp - sin, cos, tanh, exp, log (DeZero functions.py; steps 27, 34, 35).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

Variable sin(const Variable& x);
Variable cos(const Variable& x);
Variable tanh(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);

}  // namespace dezero::F
