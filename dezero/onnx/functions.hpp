// dezero/onnx/functions.hpp - internal: the differentiable functions that ONNX ops need and
// dezero::F lacks (Concat, Pad, Max/Min of two tensors, Pow with a tensor exponent, Where,
// Sqrt, Abs, Cast). Each is a dezero::Function: forward on Tensors, backward on Variables, so
// an imported graph differentiates to any order (create_graph) like one built with dezero::F.
// Binary ones broadcast as NumPy does and sum each gradient back to its operand's shape.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "dezero/core.hpp"

namespace dezero::onnx::detail {

// The inputs (all of one rank, equal outside `axis`) joined along `axis` (negative counts from
// the end); gradient: the slices of gy. Errors as dezero::concatenate's.
Variable concat(const VariableList& xs, int axis);

// x padded with `value`: pads_per_axis[i] = (before, after) elements added to axis i (one pair
// per axis of x); a negative count crops that many. Gradient: gy cropped back (pad(gy, -pads, 0)).
// A pair count other than x.ndim(), or a crop past the axis, is a ShapeError.
Variable pad(const Variable& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& pads_per_axis,
             double value = 0.0);

// The element-wise larger / smaller of a and b (broadcasting, result_type(a, b)). The gradient
// goes to the operand that was chosen; on a tie to a.
Variable maximum(const Variable& a, const Variable& b);
Variable minimum(const Variable& a, const Variable& b);

// x ** y element-wise with a tensor exponent (broadcasting), in x's dtype (ONNX's Pow: the
// base's type). Gradients: gy * y * x^(y-1) for x, gy * x^y * log(x) for y (float y only).
Variable pow(const Variable& x, const Variable& y);

// cond != 0 ? a : b element-wise, the three broadcast together (result_type(a, b)); cond is a
// fixed tensor (no gradient). Gradients: gy where cond holds to a, elsewhere to b.
Variable where(const Tensor& cond, const Variable& a, const Variable& b);

// sqrt(x) element-wise; gradient gy / (2 sqrt(x)).
Variable sqrt(const Variable& x);
// |x| element-wise; gradient gy * sign(x) (0 at 0).
Variable abs(const Variable& x);
// F::cast (functions/shape.hpp), under the name the ops use.
Variable cast(const Variable& x, DType dtype);

}  // namespace dezero::onnx::detail
