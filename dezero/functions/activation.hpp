/// \file
/// Activations: sigmoid, relu, leaky_relu, softmax, log_softmax (steps 43, 47), and
/// gelu, hard_sigmoid, hard_swish (PyTorch's model zoo: ViT, ConvNeXt, MobileNet V3).
///
/// The results have x's shape and dtype (an integer x gives float64, except relu, which
/// keeps it).
#pragma once

#include <string>

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
/// GELU, `x * Phi(x)` with Phi the standard normal CDF, element-wise (PyTorch's F.gelu).
/// `approximate` is PyTorch's keyword: "none" computes `0.5 x (1 + erf(x / sqrt 2))`,
/// "tanh" the approximation `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`; anything
/// else is a dezero::ValueError. The gradient is the exact derivative of the form chosen,
/// written in Variables (differentiable again). ONNX export writes PyTorch's opset 13-17
/// form (Erf or Tanh with Mul/Add/Div nodes).
Variable gelu(const Variable& x, const std::string& approximate = "none");
/// `clip(alpha x + beta, 0, 1)`, element-wise (Chainer's F.hard_sigmoid and ONNX's
/// HardSigmoid, whose defaults these are; PyTorch's F.hardsigmoid is alpha = 1/6, beta = 1/2).
/// Gradient `gy * alpha` where `0 < alpha x + beta < 1`, else 0.
Variable hard_sigmoid(const Variable& x, double alpha = 0.2, double beta = 0.5);
/// `x * clip(x + 3, 0, 6) / 6`, element-wise (PyTorch's F.hardswish, ONNX's HardSwish;
/// MobileNet V3). Gradient `gy` times 0 below -3, `(2x + 3) / 6` between -3 and 3, 1 above.
Variable hard_swish(const Variable& x);

}  // namespace dezero::F
