// dezero/functions/linalg.hpp - matmul and linear (steps 41, 43).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

Variable matmul(const Variable& x, const Variable& W);
Variable linear(const Variable& x, const Variable& W, const Variable& b = Variable());  // x @ W + b; W is (in, out)

}  // namespace dezero::F
