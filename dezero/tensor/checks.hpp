// dezero/tensor/checks.hpp - the argument checks and message helpers that the layers
// above the tensor share (internal): describe a tensor for an error, check that it is
// defined or on the same device as another, normalise axes. No backend here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

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

// --- the library's errors, one line per check ----------------------------------------------------
//   require<ShapeError>(x.ndim() == 5, "conv3d", "x must be 5-d (N, C, D, H, W), got ", x.data());
//   fail<ValueError>("pad", "the pads of axis ", axis, " are negative", Hint{"..."});
// make "<op>: <parts...>[; hint: ...]" and throw E (a dezero::Error). The parts are written as
// every message of the library writes them: text as it is, an integer in decimal, a Shape "(2, 3)",
// a DType "float32", a Device "cuda:0", a Tensor "(2, 3) float32 [on cuda:0]" (describe()); a
// floating-point number has no part of its own (write it as the message wants it). require()
// builds the message only when the check fails.
struct Hint {
  const char* text;  // the end of the message: "; hint: <text>"
};
inline void append_part(std::string& s, const std::string& t) { s += t; }
inline void append_part(std::string& s, const char* t) { s += t; }
inline void append_part(std::string& s, char c) { s += c; }
template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, char>, int> = 0>
void append_part(std::string& s, I v) {
  s += std::to_string(v);
}
// A floating-point number or a bool has no part of its own: a compile error here, not a char.
template <class F, std::enable_if_t<std::is_floating_point_v<F> || std::is_same_v<F, bool>, int> = 0>
void append_part(std::string& s, F v) = delete;
inline void append_part(std::string& s, const Shape& v) { s += v.str(); }
inline void append_part(std::string& s, DType v) { s += dtype_name(v); }
inline void append_part(std::string& s, const Device& v) { s += v.str(); }
inline void append_part(std::string& s, const Tensor& v) { s += describe(v); }
inline void append_part(std::string& s, const Hint& h) {
  s += "; hint: ";
  s += h.text;
}
template <class E, class... Parts>
[[noreturn]] void fail(const char* op, const Parts&... parts) {
  static_assert(std::is_base_of_v<Error, E>, "fail<E>: E is one of the library's errors");
  std::string s(op);
  s += ": ";
  (append_part(s, parts), ...);
  throw E(s);
}
template <class E, class... Parts>
void require(bool ok, const char* op, const Parts&... parts) {
  if (!ok) fail<E>(op, parts...);
}

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
