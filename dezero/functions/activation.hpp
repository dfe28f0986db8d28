/// \file
/// Activations: sigmoid, relu, leaky_relu, softmax, log_softmax (steps 43, 47).
///
/// The results have x's shape and dtype (an integer x gives float64, except relu, which
/// keeps it).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// The logistic function `1 / (1 + exp(-x))`, element-wise; gradient `gy * y * (1 - y)`.
/// Computed in the stable form `tanh(0.5 x) * 0.5 + 0.5`.
Variable sigmoid(const Variable& x);  // stable: tanh(0.5 x) * 0.5 + 0.5
/// `max(x, 0)`, element-wise; gradient `gy * (x > 0)`, so 0 at x == 0.
Variable relu(const Variable& x);     // gradient 0 at x == 0
/// `x > 0 ? x : slope * x`, element-wise; gradient 1 where x > 0, `slope` elsewhere.
Variable leaky_relu(const Variable& x, double slope = 0.2);  // x > 0 ? x : slope * x
/// Max-shifted softmax along `axis` (negative counts from the end): `exp(x) / sum(exp(x), axis)`.
/// A 0-d x is a dezero::ShapeError; an axis out of range a dezero::IndexError.
Variable softmax(const Variable& x, int axis = 1);
/// Max-shifted log-softmax along `axis` (negative counts from the end): `x - logsumexp(x, axis)`.
/// A 0-d x is a dezero::ShapeError; an axis out of range a dezero::IndexError.
Variable log_softmax(const Variable& x, int axis = 1);

}  // namespace dezero::F
