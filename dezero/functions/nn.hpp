/// \file
/// Metrics, regularisation and embeddings: accuracy, dropout, embed_id (steps 50, 54; DeZero functions.py).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// Fraction of rows whose argmax over axis 1 equals t: a float64 0-d Variable outside the graph.
/// y: (N, C, ...) scores, t: N labels (any shape). A y with fewer than 2 axes, or a t
/// with another number of elements than there are predictions, is a dezero::ShapeError.
Variable accuracy(const Variable& y, const Variable& t);
/// Inverted dropout (step 54): `x * (rand(x.shape) > ratio) / (1 - ratio)` in train
/// mode; x itself under test_mode(). The mask comes from `gen` (dezero::random's global
/// stream by default; a random::Generator for a stream of the caller's own).
/// The result has x's shape and dtype (an integer x gives float64). A `dropout_ratio`
/// outside [0, 1) is a dezero::ValueError (in train mode).
Variable dropout(const Variable& x, double dropout_ratio = 0.5, random::Generator gen = random::Generator::global());
/// Embedding lookup `W[x]`: rows of W (V, D) picked by the int32/int64 ids in x (any shape) -> x.shape + (D,).
/// The gradient scatter-adds (repeated ids accumulate); x gets none. Every id must be
/// in [0, V): one outside (negative ones included: they do not wrap) is an IndexError
/// naming embed_id, the id, its position and V, on both devices. On a GPU that check is
/// one min / max reduction of x and one small read back to the host (a sync) per call.
/// Ids that are not integers are a dezero::DtypeError; a 0-d W a dezero::ShapeError.
Variable embed_id(const Variable& x, const Variable& W);

}  // namespace dezero::F
