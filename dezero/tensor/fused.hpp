// tensor_nn.hpp - tensor-level neural-network kernels (internal, not installed).
//
// The "xp" level under functions/nn: each wrapper validates shapes, dtypes and
// devices, then calls one fused backend primitive (backend.hpp). functions/ uses
// these instead of touching raw pointers or backends. No autograd here.
#pragma once

#include "dezero/tensor.hpp"

namespace dezero::detail {

// softmax (or log_softmax when `log`) along `axis` (negative counts from the end).
// Integer input is computed in float64 (NumPy's exp of ints).
Tensor softmax(const Tensor& x, int axis, bool log = false);

// x > 0 ? x : slope * x, and its derivative mask (1 or slope) in x's dtype.
Tensor leaky_relu(const Tensor& x, double slope);
Tensor leaky_relu_mask(const Tensor& x, double slope);

// The sigmoid's backward, gy * y * (1 - y), as one kernel when gy and y have the same
// shape and dtype (three kernels and two temporaries otherwise); the same arithmetic
// in the same order either way, so the bits match the unfused expression.
Tensor sigmoid_grad(const Tensor& gy, const Tensor& y);
// The relu's backward, gy * (x > 0), likewise one kernel instead of a mask and a product.
Tensor relu_grad(const Tensor& gy, const Tensor& x);

// Labels for the softmax cross entropy: t holds N int32/int64 class ids (any
// shape with N elements), returned as a contiguous int64 (N,) tensor on x's
// device. On the CPU every label is checked against [0, C).
// x: (N, C) float32/float64.
Tensor sce_labels(const char* op, const Tensor& x, const Tensor& t);

// loss = -mean_n log_softmax(x)[n, t[n]]: a 0-d tensor of x's dtype (one fused call).
// x: (N, C), t: (N,) int64 from sce_labels.
Tensor softmax_cross_entropy(const Tensor& x, const Tensor& t);
// gx = (softmax(x) - onehot(t)) * gy / N, gy: one element read on x's device.
Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy);

// 2-D matmul with transpose flags: op(a) @ op(b), op = transpose when the flag is set.
// If bias is defined, y = op(a) @ op(b) + bias (bias broadcast over rows).
Tensor matmul_t(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias = Tensor());

}  // namespace dezero::detail
