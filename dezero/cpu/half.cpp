// dezero/cpu/half.cpp - the host side of the 16-bit floats: half.hpp's bulk converters
// float32 <-> bfloat16 / float16, and the host backend's cast and fill for those dtypes.
//
// The converters give what half.hpp's scalar conversions give, element for element: 16 at a time
// with AVX-512F (bfloat16 by integer rounding on the bits, float16 with vcvtps2ph), 8 at a time
// with F16C for float16 where there is no AVX-512, the portable loops for the tails and on other
// CPUs. The level is the host kernels' (cpu/isa.hpp), asked once at run time; the functions built
// for AVX-512 or F16C (target attributes) carry the level in their names (tools/check_isa.py). AVX512-BF16's vcvtneps2bf16 is not
// used: it flushes subnormals to zero.
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DEZERO_HALF_X86 1
#endif

namespace dezero {

namespace {

// --- portable loops (branch-free, so that the compiler vectorises them) ---------------------------
void to_bf16_portable(const float* s, std::uint16_t* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = detail::f32_bits(s[i]);
    const std::uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    d[i] = static_cast<std::uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? ((u >> 16) | 0x0040u) : r);
  }
}
void from_bf16_portable(const std::uint16_t* s, float* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = detail::f32_from_bits(static_cast<std::uint32_t>(s[i]) << 16);
}
void to_f16_portable(const float* s, std::uint16_t* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = detail::f16_bits_from_float(s[i]);
}
void from_f16_portable(const std::uint16_t* s, float* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = detail::float_from_f16_bits(s[i]);
}

// --- x86: AVX-512F and F16C, each returning how many elements it did (a multiple of 16 or 8) -------
#if DEZERO_HALF_X86
__attribute__((target("avx512f"))) std::size_t to_bf16_avx512(const float* s, std::uint16_t* d, std::size_t n) {
  const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1);
  const __m512i abs = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
  const __m512i quiet = _mm512_set1_epi32(0x00400000);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_loadu_si512(s + i);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, lsb));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
  return i;
}
__attribute__((target("avx512f"))) std::size_t from_bf16_avx512(const std::uint16_t* s, float* d, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm512_storeu_si512(d + i, _mm512_slli_epi32(h, 16));
  }
  return i;
}
__attribute__((target("avx512f"))) std::size_t to_f16_avx512(const float* s, std::uint16_t* d, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}
__attribute__((target("avx512f"))) std::size_t from_f16_avx512(const std::uint16_t* s, float* d, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
  return i;
}
__attribute__((target("avx,f16c"))) std::size_t to_f16_f16c(const float* s, std::uint16_t* d, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}
__attribute__((target("avx,f16c"))) std::size_t from_f16_f16c(const std::uint16_t* s, float* d, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  return i;
}
// The level the host kernels run at (cpu/isa.hpp: CPUID, capped by DEZERO_CPU_ISA): F16C is part
// of the avx2 level (x86-64-v3).
bool has_avx512() {
  static const bool yes = static_cast<int>(detail::cpu::cpu_isa()) >= static_cast<int>(detail::cpu::IsaLevel::avx512);
  return yes;
}
bool has_f16c() {
  static const bool yes = static_cast<int>(detail::cpu::cpu_isa()) >= static_cast<int>(detail::cpu::IsaLevel::avx2);
  return yes;
}
#else
std::size_t to_bf16_avx512(const float*, std::uint16_t*, std::size_t) { return 0; }
std::size_t from_bf16_avx512(const std::uint16_t*, float*, std::size_t) { return 0; }
std::size_t to_f16_avx512(const float*, std::uint16_t*, std::size_t) { return 0; }
std::size_t from_f16_avx512(const std::uint16_t*, float*, std::size_t) { return 0; }
std::size_t to_f16_f16c(const float*, std::uint16_t*, std::size_t) { return 0; }
std::size_t from_f16_f16c(const std::uint16_t*, float*, std::size_t) { return 0; }
bool has_avx512() { return false; }
bool has_f16c() { return false; }
#endif

std::uint16_t* bits_of(bfloat16_t* p) { return reinterpret_cast<std::uint16_t*>(p); }
std::uint16_t* bits_of(float16_t* p) { return reinterpret_cast<std::uint16_t*>(p); }
const std::uint16_t* bits_of(const bfloat16_t* p) { return reinterpret_cast<const std::uint16_t*>(p); }
const std::uint16_t* bits_of(const float16_t* p) { return reinterpret_cast<const std::uint16_t*>(p); }

}  // namespace

// --- half.hpp's bulk converters ---------------------------------------------------------------------
void to_bfloat16(const float* src, bfloat16_t* dst, std::size_t n) {
  std::uint16_t* d = bits_of(dst);
  const std::size_t i = has_avx512() ? to_bf16_avx512(src, d, n) : 0;
  to_bf16_portable(src + i, d + i, n - i);
}
void to_float(const bfloat16_t* src, float* dst, std::size_t n) {
  const std::uint16_t* s = bits_of(src);
  const std::size_t i = has_avx512() ? from_bf16_avx512(s, dst, n) : 0;
  from_bf16_portable(s + i, dst + i, n - i);
}
void to_float16(const float* src, float16_t* dst, std::size_t n) {
  std::uint16_t* d = bits_of(dst);
  const std::size_t i = has_avx512() ? to_f16_avx512(src, d, n) : has_f16c() ? to_f16_f16c(src, d, n) : 0;
  to_f16_portable(src + i, d + i, n - i);
}
void to_float(const float16_t* src, float* dst, std::size_t n) {
  const std::uint16_t* s = bits_of(src);
  const std::size_t i = has_avx512() ? from_f16_avx512(s, dst, n) : has_f16c() ? from_f16_f16c(s, dst, n) : 0;
  from_f16_portable(s + i, dst + i, n - i);
}

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
