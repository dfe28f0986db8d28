// dezero/tensor/strided.hpp - strided views of contiguous tensors and the backend of a
// tensor: what the tensor/*.cpp files use to dispatch (internal; only tensor/ and the
// CUDA kernel binding include it). Layers above see tensor/checks.hpp instead.
#pragma once

#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/tensor.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::detail {

inline std::vector<std::int64_t> contiguous_strides(const Shape& s) {
  std::vector<std::int64_t> st(s.size());
  std::int64_t acc = 1;
  for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// A contiguous view of `shape`.
Strided make_contiguous(const Shape& shape);
// The view of a contiguous tensor of shape `in` broadcast to `out` (right-aligned).
Strided make_broadcast(const Shape& in, const Shape& out);
// Merges adjacent axes that are contiguous in every view (same number of views' axes).
void coalesce(Strided* views[], int nviews);
// The views of a binary op's operands a and b and of its result `out` (their broadcast shape):
// equal shapes, or one operand of one element with no more axes than the other, run flat (no
// views per axis: a small network's common cases); anything else as broadcast views, coalesced.
// binary_op's (tensor/elementwise.cpp) and a plan's kernel program's (plan/kernels.cpp).
void binary_views(const Shape& a, const Shape& b, const Shape& out, Strided& sa, Strided& sb, Strided& so);

inline Backend& backend_of(const Tensor& t) { return backend_for(t.device()); }

// --- the 16-bit floats' route through float32 ---------------------------------------------
// An op whose result dtype `dt` is bfloat16 or float16 runs on float32: each operand is cast to
// dt first (as any operand is cast to the result dtype), then widened to float32 (exact); the
// float32 result is rounded once to dt. The backends have no 16-bit arithmetic kernels.
inline Tensor half_operand(const Tensor& t, DType dt) { return (t.dtype() == dt ? t : t.astype(dt)).astype(float32); }
inline Tensor half_result(const Tensor& y, DType dt) { return y.astype(dt); }

}  // namespace dezero::detail
