// dezero/cpu/half.cpp - the host backend's cast and fill for the 16-bit floats (the bulk
// converters they use are half.hpp's, in dezero/half.cpp).
//
// cast between a 16-bit float and another dtype goes through float32 where that is exact
// (float32 itself, bfloat16 <-> float16 via float32 is a single rounding too); float64 and
// integers are rounded once, to odd in float32 first (half.hpp's f32_round_to_odd).
#include <cmath>
#include <cstring>

#include "dezero/backend/dispatch.hpp"
#include "dezero/cpu/isa.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"
#include "dezero/half.hpp"

namespace dezero {
namespace detail::cpu {

namespace {

// An integer rounded to odd in float32 (24 significant bits, the last one sticky), so that one
// more rounding to 8 or 11 bits is the correctly rounded result of the integer.
template <class I>
float int_round_to_odd(I v) {
  const bool neg = v < 0;
  std::uint64_t m = neg ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  int shift = 0;
  while ((m >> shift) >= (1u << 24)) ++shift;
  std::uint64_t kept = m >> shift;
  if (shift && (m & ((std::uint64_t{1} << shift) - 1))) kept |= 1;
  const float f = std::ldexp(static_cast<float>(kept), shift);
  return neg ? -f : f;
}

// One element of a non-float32 source, as float32 rounded to odd (float64, integers) or exactly
// (the other 16-bit float).
float widen_to_odd(DType from, const void* x, std::int64_t i) {
  switch (from) {
    case DType::Float64: return f32_round_to_odd(static_cast<const double*>(x)[i]);
    case DType::Int32: return int_round_to_odd(static_cast<const std::int32_t*>(x)[i]);
    case DType::Int64: return int_round_to_odd(static_cast<const std::int64_t*>(x)[i]);
    case DType::BFloat16: return float_from_bf16_bits(static_cast<const std::uint16_t*>(x)[i]);
    case DType::Float16: return float_from_f16_bits(static_cast<const std::uint16_t*>(x)[i]);
    case DType::Float32: return static_cast<const float*>(x)[i];
  }
  return 0.0f;
}

constexpr std::int64_t kBlock = 4096;  // elements per converter call; blocks go onto threads

// blocks of [0, n) on threads when large: body(begin, count)
template <class Body>
void for_blocks(std::int64_t n, Body&& body) {
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  par_for(n, blocks, [&](std::int64_t b) {
    const std::int64_t lo = b * kBlock;
    body(lo, std::min(kBlock, n - lo));
  });
}

}  // namespace

// y (to) = x (from) where one of the two is bfloat16 or float16.
void cast_half(DType from, const void* x, DType to, void* y, std::int64_t n) {
  if (from == to) {
    std::memcpy(y, x, static_cast<std::size_t>(n) * dtype_size(from));
    return;
  }
  if (is_half(to)) {
    auto* d = static_cast<std::uint16_t*>(y);
    if (from == DType::Float32) {
      const auto* s = static_cast<const float*>(x);
      if (to == DType::BFloat16)
        for_blocks(n, [&](std::int64_t lo, std::int64_t c) { to_bfloat16(s + lo, reinterpret_cast<bfloat16_t*>(d) + lo, c); });
      else
        for_blocks(n, [&](std::int64_t lo, std::int64_t c) { to_float16(s + lo, reinterpret_cast<float16_t*>(d) + lo, c); });
      return;
    }
    if (to == DType::BFloat16)
      par_for(n, n, [&](std::int64_t i) { d[i] = bf16_bits_from_float(widen_to_odd(from, x, i)); });
    else
      par_for(n, n, [&](std::int64_t i) { d[i] = f16_bits_from_float(widen_to_odd(from, x, i)); });
    return;
  }
  // from a 16-bit float: widen to float32 (exact), then to the destination as float32's cast does
  const auto* s = static_cast<const std::uint16_t*>(x);
  if (to == DType::Float32) {
    auto* d = static_cast<float*>(y);
    if (from == DType::BFloat16)
      for_blocks(n, [&](std::int64_t lo, std::int64_t c) { to_float(reinterpret_cast<const bfloat16_t*>(s) + lo, d + lo, c); });
    else
      for_blocks(n, [&](std::int64_t lo, std::int64_t c) { to_float(reinterpret_cast<const float16_t*>(s) + lo, d + lo, c); });
    return;
  }
  DEZERO_DISPATCH(to, D, {
    D* d = static_cast<D*>(y);
    if (from == DType::BFloat16)
      par_for(n, n, [&](std::int64_t i) { d[i] = static_cast<D>(float_from_bf16_bits(s[i])); });
    else
      par_for(n, n, [&](std::int64_t i) { d[i] = static_cast<D>(float_from_f16_bits(s[i])); });
  })
}

// n copies of `value` rounded once to the 16-bit dtype.
void fill_half(DType dt, void* dst, std::int64_t n, double value) {
  const std::uint16_t bits = dt == DType::BFloat16 ? bfloat16_t(value).bits : float16_t(value).bits;
  auto* p = static_cast<std::uint16_t*>(dst);
  par_for(n, n, [&](std::int64_t i) { p[i] = bits; });
}

}  // namespace detail::cpu

}  // namespace dezero
