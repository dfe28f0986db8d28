// dezero/functions_nn.hpp - dezero::F for neural networks: activations, losses,
// metrics, dropout, batch normalisation, embeddings (DeZero functions.py §3.5-3.7).
//
// Floating results keep the dtype of the (first) floating input: float32 logits
// give a float32 loss and float32 gradients, whatever the labels' dtype.
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

// --- activations (steps 43, 47) ---
Variable sigmoid(const Variable& x);  // stable: tanh(0.5 x) * 0.5 + 0.5
Variable relu(const Variable& x);     // gradient 0 at x == 0
Variable leaky_relu(const Variable& x, double slope = 0.2);  // x > 0 ? x : slope * x
// Max-shifted softmax / log-softmax along `axis` (negative counts from the end).
Variable softmax(const Variable& x, int axis = 1);
Variable log_softmax(const Variable& x, int axis = 1);

// --- losses (steps 42, 47) ---
// sum((x0 - x1)^2) / len(x0 - x1): divides by the first axis (DeZero), not the size.
Variable mean_squared_error(const Variable& x0, const Variable& x1);
// -mean_n log_softmax(x)[n, t[n]]; x: (N, C) float, t: N int32/int64 class ids
// (any shape). One fused kernel forward and backward; t gets no gradient.
Variable softmax_cross_entropy(const Variable& x, const Variable& t);
// -sum(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) / len(x), computed in the
// stable form max(x, 0) - x t + log(1 + exp(-|x|)); t: x's shape (or reshapeable to it).
// Targets of another dtype are converted to x's dtype (and then get no gradient).
Variable sigmoid_cross_entropy(const Variable& x, const Variable& t);
// p: probabilities (clipped to [1e-15, 0.999] as DeZero does); divides by len(t).
Variable binary_cross_entropy(const Variable& p, const Variable& t);

// --- metrics, regularisation, normalisation, embeddings (steps 50, 52, 54) ---
// Fraction of rows whose argmax over axis 1 equals t: a float64 0-d Variable outside the graph.
Variable accuracy(const Variable& y, const Variable& t);
// Inverted dropout (step 54): x * (rand(x.shape) > ratio) / (1 - ratio) in train
// mode; x itself under test_mode(). The mask comes from dezero::random (seedable).
Variable dropout(const Variable& x, double dropout_ratio = 0.5);
// Batch normalisation; x: (N, C) or (N, C, H, W), gamma/beta: (C,).
// Train mode normalises with the batch mean and biased variance over every axis
// but C, and updates running_mean/running_var in place:
//   mean <- decay mean + (1 - decay) mu,  var <- decay var + (1 - decay) m/max(m-1,1) sigma^2
// (m = N or N*H*W). Test mode normalises with running_mean/running_var. Undefined
// running statistics are created (zeros / ones of (C,), x's dtype and device).
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay = 0.9, double eps = 2e-5);
// DeZero's (misspelt) name for batch_norm.
Variable batch_nrom(const Variable& x, const Variable& gamma, const Variable& beta, Tensor& running_mean,
                    Tensor& running_var, double decay = 0.9, double eps = 2e-5);
// W[x]: rows of W (V, D) picked by the int32/int64 ids in x (any shape) -> x.shape + (D,).
// The gradient scatter-adds (repeated ids accumulate); x gets none.
Variable embed_id(const Variable& x, const Variable& W);

}  // namespace dezero::F
