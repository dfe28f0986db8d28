// dezero/functions/reduce.hpp - sum, sum_to, broadcast_to, average, mean, max, min, clip (steps 39-40).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

Variable sum(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable sum_to(const Variable& x, const Shape& shape);
Variable broadcast_to(const Variable& x, const Shape& shape);
Variable average(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable mean(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable max(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);  // ties share the full gradient
Variable min(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable clip(const Variable& x, double x_min, double x_max);

}  // namespace dezero::F
