/// \file
/// Losses: mean_squared_error, softmax_cross_entropy, sigmoid_cross_entropy,
/// binary_cross_entropy (steps 42, 47). Losses are 0-d Variables in the logits' dtype.
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// The mean squared error of x0 and x1 as DeZero computes it: a 0-d Variable.
/// `sum((x0 - x1)^2) / len(x0 - x1)`: divides by the first axis (DeZero), not the size.
/// x0 and x1 must have the same shape or broadcast; unlike DeZero's, the gradient of a
/// broadcast operand is summed back to its shape. Shapes that do not broadcast, or a 0-d
/// difference, are a dezero::ShapeError naming mean_squared_error.
Variable mean_squared_error(const Variable& x0, const Variable& x1);
/// The softmax cross-entropy of logits x and integer class labels t: a 0-d Variable in x's dtype.
/// `-mean_n log_softmax(x)[n, t[n]]`; x: (N, C) float, t: N int32/int64 class ids
/// (any shape). One fused kernel forward and backward; t gets no gradient. A label
/// outside [0, C) is an IndexError naming softmax_cross_entropy, the label, its
/// position and C, on both devices; on a GPU that check is one min / max reduction of
/// t and one small read back to the host (a sync) per call. Logits that are not float
/// or labels that are not integers are a dezero::DtypeError; x not 2-d, C == 0 or a t of
/// another size than N a dezero::ShapeError.
Variable softmax_cross_entropy(const Variable& x, const Variable& t);
/// The sigmoid cross-entropy of logits x and targets t (probabilities of class 1): a 0-d Variable in x's dtype.
/// `-sum(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) / len(x)`, computed in the
/// stable form `max(x, 0) - x t + log(1 + exp(-|x|))`; t: x's shape (or reshapeable to it).
/// Targets of another dtype are converted to x's dtype (and then get no gradient).
/// Integer logits are a dezero::DtypeError; a 0-d x, or a t of another size, a dezero::ShapeError.
Variable sigmoid_cross_entropy(const Variable& x, const Variable& t);
/// The binary cross-entropy of probabilities p and targets t: a 0-d Variable in p's dtype.
/// p: probabilities (clipped to [1e-15, 0.999] as DeZero does); divides by len(t):
/// `-sum(t log p + (1 - t) log(1 - p)) / len(t)`, through composite functions. t: p's shape
/// (or reshapeable to it), converted to p's dtype when it differs. Integer p is a
/// dezero::DtypeError; a 0-d t, or a t of another size, a dezero::ShapeError.
Variable binary_cross_entropy(const Variable& p, const Variable& t);

}  // namespace dezero::F
