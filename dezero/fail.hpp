// dezero/fail.hpp - internal: the library's errors, one line per check, for every layer.
//
//   require<ShapeError>(x.ndim() == 5, "conv3d", "x must be 5-d (N, C, D, H, W), got ", x.data());
//   fail<ValueError>("pad", "the pads of axis ", axis, " are negative", Hint{"..."});
// make "<op>: <parts...>[; hint: ...]" and throw E (a dezero::Error). The parts are written as
// every message of the library writes them: text as it is, an integer in decimal, a Shape "(2, 3)",
// a DType "float32", a Device "cuda:0", a Pair "(3, 3)" or Triple "(1, 3, 3)", a Tensor "(2, 3) float32 [on cuda:0]" (tensor/checks.hpp's
// describe(); the tensor layer defines that part); a floating-point number or a bool has no part
// of its own (a compile error: write it as the message wants it). require() builds the message only
// when the check fails.
#pragma once

#include <string>
#include <type_traits>

#include "dezero/device.hpp"
#include "dezero/dtype.hpp"
#include "dezero/error.hpp"
#include "dezero/pair.hpp"
#include "dezero/shape.hpp"

namespace dezero {
class Tensor;
}

namespace dezero::detail {

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
inline void append_part(std::string& s, const Pair& v) { s += v.str(); }
inline void append_part(std::string& s, const Triple& v) { s += v.str(); }
void append_part(std::string& s, const Tensor& v);  // describe(v) (tensor/checks.cpp)
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

}  // namespace dezero::detail
