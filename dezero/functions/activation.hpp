// dezero/functions/activation.hpp - sigmoid, relu, leaky_relu, softmax, log_softmax (steps 43, 47).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

Variable sigmoid(const Variable& x);  // stable: tanh(0.5 x) * 0.5 + 0.5
Variable relu(const Variable& x);     // gradient 0 at x == 0
Variable leaky_relu(const Variable& x, double slope = 0.2);  // x > 0 ? x : slope * x
// Max-shifted softmax / log-softmax along `axis` (negative counts from the end).
Variable softmax(const Variable& x, int axis = 1);
Variable log_softmax(const Variable& x, int axis = 1);

}  // namespace dezero::F
