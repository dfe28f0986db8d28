// dezero/functions/loss.hpp - mean_squared_error, softmax_cross_entropy, sigmoid_cross_entropy,
// binary_cross_entropy (steps 42, 47). Losses are 0-d Variables in the logits' dtype.
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

// sum((x0 - x1)^2) / len(x0 - x1): divides by the first axis (DeZero), not the size.
Variable mean_squared_error(const Variable& x0, const Variable& x1);
// -mean_n log_softmax(x)[n, t[n]]; x: (N, C) float, t: N int32/int64 class ids
// (any shape). One fused kernel forward and backward; t gets no gradient. A label
// outside [0, C) is an IndexError naming softmax_cross_entropy, the label, its
// position and C, on both devices; on a GPU that check is one min / max reduction of
// t and one small read back to the host (a sync) per call.
Variable softmax_cross_entropy(const Variable& x, const Variable& t);
// -sum(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) / len(x), computed in the
// stable form max(x, 0) - x t + log(1 + exp(-|x|)); t: x's shape (or reshapeable to it).
// Targets of another dtype are converted to x's dtype (and then get no gradient).
Variable sigmoid_cross_entropy(const Variable& x, const Variable& t);
// p: probabilities (clipped to [1e-15, 0.999] as DeZero does); divides by len(t).
Variable binary_cross_entropy(const Variable& p, const Variable& t);

}  // namespace dezero::F
