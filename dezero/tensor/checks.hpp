// dezero/tensor/checks.hpp - the argument checks and message helpers that the layers
// above the tensor share (internal): describe a tensor for an error, check that it is
// defined or on the same device as another, normalise axes. No backend here.
#pragma once

#include <string>
#include <vector>

#include "dezero/tensor.hpp"

namespace dezero::detail {

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

}  // namespace dezero::detail
