// dezero/functions.hpp - dezero::F, the differentiable functions (DeZero's
// dezero.functions, imported as F). Each takes Variables (a Tensor converts
// implicitly) and records itself in the graph; each backward is written with
// these same functions, so gradients of any order work (DESIGN.md §3.1).
#pragma once

#include <optional>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/functions_nn.hpp"

namespace dezero::F {

// --- arithmetic (core.py, steps 20-22, 40) ---
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

// --- element-wise math (step 27, 34, 35) ---
Variable sin(const Variable& x);
Variable cos(const Variable& x);
Variable tanh(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);

// --- shapes (steps 38-40) ---
Variable reshape(const Variable& x, const Shape& shape);  // no node when the shape is unchanged
Variable transpose(const Variable& x, const std::vector<int>& axes = {});  // {} reverses the axes
Variable expand_dims(const Variable& x, int axis);
Variable flatten(const Variable& x);  // (N, ...) -> (N, -1)
Variable get_item(const Variable& x, const Indices& indices);  // backward: scatter-add

// --- reductions and broadcasting (steps 39-40) ---
Variable sum(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable sum_to(const Variable& x, const Shape& shape);
Variable broadcast_to(const Variable& x, const Shape& shape);
Variable average(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable mean(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable max(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);  // ties share the full gradient
Variable min(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
Variable clip(const Variable& x, double x_min, double x_max);

// --- linear algebra (step 41, 43) ---
Variable matmul(const Variable& x, const Variable& W);
Variable linear(const Variable& x, const Variable& W, const Variable& b = Variable());  // x @ W + b; W is (in, out)

}  // namespace dezero::F
