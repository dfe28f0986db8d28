// tensor_impl.hpp - helpers shared by the tensor*.cpp files (not installed).
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/tensor.hpp"

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

inline Backend& backend_of(const Tensor& t) { return backend_for(t.device()); }

// "(2, 3) float32" for messages.
inline std::string describe(const Tensor& t) {
  if (!t.defined()) return "<undefined tensor>";
  std::string s = t.shape().str() + " " + dtype_name(t.dtype());
  if (!t.device().is_cpu()) s += " on " + t.device().str();
  return s;
}

void check_defined(const char* op, const Tensor& t);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// Normalises an axis against ndim (negative counts from the end); IndexError naming `op`.
int normalize_axis(const char* op, int axis, int ndim);
std::vector<int> normalize_axes(const char* op, const Axes& axes, int ndim);

// Element-type dispatch for host code.
#define DEZERO_DISPATCH(DT, T, ...)                       \
  switch (DT) {                                           \
    case ::dezero::DType::Float32: { using T = float; __VA_ARGS__; break; }          \
    case ::dezero::DType::Float64: { using T = double; __VA_ARGS__; break; }         \
    case ::dezero::DType::Int32: { using T = std::int32_t; __VA_ARGS__; break; }     \
    case ::dezero::DType::Int64: { using T = std::int64_t; __VA_ARGS__; break; }     \
  }

}  // namespace dezero::detail

namespace dezero::detail {
// 2-D matmul with transpose flags: op(a) @ op(b), op = transpose when the flag is set.
// If bias is defined, y = op(a) @ op(b) + bias (bias broadcast over rows).
Tensor matmul_t(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias = Tensor());
}  // namespace dezero::detail
