// dezero/tensor/checks.hpp - the argument checks and message helpers that the layers
// above the tensor share (internal): describe a tensor for an error, check that it is
// defined or on the same device as another, normalise axes. No backend here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "dezero/fail.hpp"
#include "dezero/small_vector.hpp"
#include "dezero/tensor.hpp"

namespace dezero::detail {

// "(2, 3) float32" for messages.
inline std::string describe(const Tensor& t) {
  if (!t.defined()) return "<undefined tensor>";
  std::string s = t.shape().str() + " " + dtype_name(t.dtype());
  if (!t.device().is_cpu()) s += " on " + t.device().str();
  return s;
}

// The library's errors in one line: fail<E>(op, parts...) and require<E>(ok, op, parts...)
// (fail.hpp, where the layers that may not include this header get them too).

// What an empty tensor's or variable's EmptyCause means, as the end of a sentence
// that says it holds no data: "" for a plain Tensor() / Variable(), else ": it came
// from grad() of ...; hint: ...".
std::string empty_cause_text(EmptyCause cause);
// ValueError "<op>: the tensor holds no data ..." (with the cause) when t is undefined.
void check_defined(const char* op, const Tensor& t);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// Normalises an axis against ndim (negative counts from the end); IndexError naming `op`.
int normalize_axis(const char* op, int axis, int ndim);
// The axes of a reduction, non-negative, in the order given (small: no allocation).
using AxisList = SmallVector<int, 6>;
AxisList normalize_axes(const char* op, const Axes& axes, int ndim);

// --- integer index arrays (defined in index.cpp) ----------------------------------------
// The first element of the integer tensor idx (any shape, row-major order) outside
// [lo, hi), or nothing when all are inside; `negative` (when given) is set to whether
// any element is < 0. On the CPU one pass over idx. On a GPU one min and one max
// reduction on the device and one 16-byte read back to the host (a sync); only when
// something is out of range is idx copied to the host to find the first offender, so
// both devices report the same element. The callers turn it into an IndexError that
// names the user's function, the value, the axis size and a hint.
struct BadIndex {
  std::int64_t position;
  std::int64_t value;
};
std::optional<BadIndex> find_bad_index(const Tensor& idx, std::int64_t lo, std::int64_t hi,
                                       bool* negative = nullptr);

}  // namespace dezero::detail
