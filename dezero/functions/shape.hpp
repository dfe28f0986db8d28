// dezero/functions/shape.hpp - reshape, transpose, expand_dims, flatten, get_item (steps 38-40, 52).
#pragma once

#include <vector>

#include "dezero/core.hpp"

namespace dezero::F {

Variable reshape(const Variable& x, const Shape& shape);  // no node when the shape is unchanged
Variable transpose(const Variable& x, const std::vector<int>& axes = {});  // {} reverses the axes
Variable expand_dims(const Variable& x, int axis);
Variable flatten(const Variable& x);  // (N, ...) -> (N, -1)
// x[indices] (dezero::get_item, tensor.hpp): an out-of-range integer index is an
// IndexError naming get_item on every device (one sync per index array on a GPU).
Variable get_item(const Variable& x, const Indices& indices);  // backward: scatter-add

}  // namespace dezero::F
