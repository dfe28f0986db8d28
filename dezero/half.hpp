/// \file
/// The 16-bit floating element types: dezero::bfloat16_t and dezero::float16_t.
///
/// Two-byte structs that hold the bits of one value of `dezero::bfloat16` (1 sign, 8 exponent,
/// 7 mantissa bits: float32's upper half) or `dezero::float16` (IEEE 754 binary16: 1 sign, 5 exponent,
/// 10 mantissa bits, largest finite 65504). They are storage, not arithmetic types: convert to float,
/// compute, convert back (the library's own ops on these dtypes do exactly that, in float32).
///
/// Conversions to the 16-bit types round to nearest, ties to even; NaN stays NaN (quiet, sign kept);
/// a float16 value at or past 65520 becomes infinity; subnormals of both types are produced and read
/// exactly. From a double the result is rounded once (not first to float and then again).
/// The bulk converters `to_bfloat16`, `to_float16` and `to_float` convert arrays with AVX-512 or F16C
/// instructions when the CPU has them (asked at run time), with the same results as the scalar ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dezero {

namespace detail {

inline std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// double -> float rounded to odd (truncate, then set the last bit when inexact): rounding that
// float once more to a type with at most 22 mantissa bits gives the correctly rounded result of
// the double, with no double rounding.
inline float f32_round_to_odd(double d) {
  float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d) return f;  // NaN or exact
  std::uint32_t u = f32_bits(f);
  if ((u & 1u) == 0) {  // nearest-even picked the even neighbour; take the odd one on d's side
    const double af = f < 0 ? -static_cast<double>(f) : static_cast<double>(f), ad = d < 0 ? -d : d;
    u = af > ad ? u - 1 : u + 1;  // the magnitude bits are monotone; 0 -> the smallest subnormal
  }
  return f32_from_bits(u);
}

// bfloat16: keep float32's upper 16 bits, rounding the lower 16 to nearest even (adding
// 0x7FFF plus the lowest kept bit carries exactly at and past the halfway point). A finite
// value that rounds past the largest bfloat16 carries into the exponent: infinity.
inline std::uint16_t bf16_bits_from_float(float f) {
  const std::uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline float float_from_bf16_bits(std::uint16_t h) { return f32_from_bits(static_cast<std::uint32_t>(h) << 16); }

// float16: exponent bias 15 instead of 127, 13 mantissa bits fewer. Normal results re-bias and
// round; below 2^-14 (float16's subnormals, steps of 2^-24) the float adder does the rounding:
// |f| + 0.5 has its last place at 2^-24, so its low bits are the subnormal's mantissa (0x400,
// the smallest normal, when it rounds up).
inline std::uint16_t f16_bits_from_float(float f) {
  std::uint32_t u = f32_bits(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((u >> 13) & 0x3FFu));  // quiet NaN
  if (u >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // 65520 and up (and inf): inf
  if (u < 0x38800000u) {
    const float r = f32_from_bits(u) + 0.5f;
    return static_cast<std::uint16_t>(sign | (f32_bits(r) - 0x3F000000u));
  }
  u += 0xC8000000u + 0xFFFu + ((u >> 13) & 1u);  // exponent - 112 (mod 2^32), round the 13 dropped bits
  return static_cast<std::uint16_t>(sign | (u >> 13));
}
inline float float_from_f16_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1Fu) return f32_from_bits(sign | 0x7F800000u | (mant << 13));      // inf, NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));  // normal
  const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);                // mant * 2^-24, exact
  return sign ? -v : v;
}

}  // namespace detail

/// One bfloat16 value (the C++ element type of `dezero::bfloat16`): its 16 bits.
struct bfloat16_t {
  std::uint16_t bits = 0;  ///< the value's bits: sign, 8 exponent bits, 7 mantissa bits
  bfloat16_t() = default;
  /// `f` rounded to nearest even; NaN stays NaN.
  explicit bfloat16_t(float f) : bits(detail::bf16_bits_from_float(f)) {}
  /// `d` rounded once to nearest even.
  explicit bfloat16_t(double d) : bits(detail::bf16_bits_from_float(detail::f32_round_to_odd(d))) {}
  /// The value as float (exact).
  explicit operator float() const { return detail::float_from_bf16_bits(bits); }
  /// The value as double (exact).
  explicit operator double() const { return detail::float_from_bf16_bits(bits); }
  /// The value with these bits.
  static bfloat16_t from_bits(std::uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
};

/// One IEEE float16 value (the C++ element type of `dezero::float16`): its 16 bits.
struct float16_t {
  std::uint16_t bits = 0;  ///< the value's bits: sign, 5 exponent bits, 10 mantissa bits
  float16_t() = default;
  /// `f` rounded to nearest even; 65520 and beyond become infinity; NaN stays NaN.
  explicit float16_t(float f) : bits(detail::f16_bits_from_float(f)) {}
  /// `d` rounded once to nearest even.
  explicit float16_t(double d) : bits(detail::f16_bits_from_float(detail::f32_round_to_odd(d))) {}
  /// The value as float (exact).
  explicit operator float() const { return detail::float_from_f16_bits(bits); }
  /// The value as double (exact).
  explicit operator double() const { return detail::float_from_f16_bits(bits); }
  /// The value with these bits.
  static float16_t from_bits(std::uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(bfloat16_t) == 2 && sizeof(float16_t) == 2, "16-bit element types must be 2 bytes");

/// Bulk conversions of `n` contiguous elements (dst and src must not overlap), each element as
/// the scalar constructor / conversion gives it. AVX-512 (bfloat16, float16) or F16C (float16)
/// when the CPU has them, asked once at run time; portable loops otherwise.
///@{
void to_bfloat16(const float* src, bfloat16_t* dst, std::size_t n);
void to_float16(const float* src, float16_t* dst, std::size_t n);
void to_float(const bfloat16_t* src, float* dst, std::size_t n);
void to_float(const float16_t* src, float* dst, std::size_t n);
///@}

}  // namespace dezero
