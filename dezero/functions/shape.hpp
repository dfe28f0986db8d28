/// \file
/// Shape functions: reshape, transpose, expand_dims, flatten, get_item (steps 38-40, 52),
/// cast, and concat and pad (NumPy's concatenate and pad; ONNX's Concat and Pad).
///
/// These change only the shape (or pick elements): the result keeps x's dtype and
/// device, and each gradient is the inverse operation on gy.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "dezero/core.hpp"

namespace dezero::F {

/// x with the same elements in `shape` (one entry may be -1: inferred); gradient: gy reshaped back.
/// Returns x itself, with no node, when the shape is unchanged. A shape of another size
/// is a dezero::ShapeError.
Variable reshape(const Variable& x, const Shape& shape);  // no node when the shape is unchanged
/// x with its axes permuted: axis i of the result is axis `axes[i]` of x (negative axes
/// count from the end); `{}` reverses the axes (a matrix transpose for 2-d x). Axes that
/// are not a permutation of x's are a dezero::ValueError (an axis out of range a dezero::IndexError).
Variable transpose(const Variable& x, const std::vector<int>& axes = {});  // {} reverses the axes
/// x with a new axis of size 1 at `axis` (in [-ndim-1, ndim]), through reshape.
/// An axis out of range is a dezero::IndexError.
Variable expand_dims(const Variable& x, int axis);
/// x reshaped to (N, -1), keeping the batch axis: (N, ...) -> (N, product of the rest).
/// A 0-d x is a dezero::ShapeError.
Variable flatten(const Variable& x);  // (N, ...) -> (N, -1)
/// Picks `x[indices]` with NumPy's basic and advanced indexing (DeZero's get_item; Variable::operator[]).
/// `x[indices]` (dezero::get_item, tensor.hpp): an out-of-range integer index is an
/// IndexError naming get_item on every device (one sync per index array on a GPU).
/// The gradient scatter-adds gy into zeros of x's shape, so repeated indices accumulate.
Variable get_item(const Variable& x, const Indices& indices);  // backward: scatter-add
/// x's values as `dtype` (Chainer's F.cast; NumPy's astype as a graph node); gradient: gy cast
/// back to x's dtype, none for an integer x or result. Returns x itself, with no node, when the
/// dtype is already `dtype`. Exported as ONNX's Cast.
Variable cast(const Variable& x, DType dtype);
/// The inputs joined along the existing axis `axis` (negative counts from the end; NumPy's
/// concatenate, Chainer's F.concat); gradient: each input's slice of gy. The inputs need one
/// rank and equal extents outside `axis` (else a dezero::ShapeError); none is a dezero::ValueError.
Variable concat(const VariableList& xs, int axis = 0);
/// x padded with the constant `value`: `pads[i]` = (before, after) elements added to axis i,
/// one pair per axis; a negative count crops that many (ONNX's Pad). Gradient: gy cropped back.
/// A pair count other than x.ndim(), or a crop past an axis, is a dezero::ShapeError.
Variable pad(const Variable& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& pads, double value = 0.0);

}  // namespace dezero::F
