// dezero/half.cpp - half.hpp's bulk converters float32 <-> bfloat16 / float16.
//
// They give what half.hpp's scalar conversions give, element for element: 16 at a time with
// AVX-512F (bfloat16 by integer rounding on the bits, float16 with vcvtps2ph), 8 at a time with
// F16C for float16 where there is no AVX-512, the portable loops for the tails and on other CPUs.
// The level is the host kernels' (isa_level.hpp), asked once at run time; the functions built for
// AVX-512 or F16C (target attributes) carry the level in their names (tools/check_isa.py).
// AVX512-BF16's vcvtneps2bf16 is not used: it flushes subnormals to zero.
#include "dezero/half.hpp"

#include <cstddef>
#include <cstdint>

#include "dezero/isa_level.hpp"

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
// The level the host kernels run at (isa_level.hpp: CPUID, capped by DEZERO_CPU_ISA): F16C is part
// of the avx2 level (x86-64-v3).
bool has_avx512() {
  static const bool yes = static_cast<int>(detail::isa_in_use()) >= static_cast<int>(detail::IsaLevel::avx512);
  return yes;
}
bool has_f16c() {
  static const bool yes = static_cast<int>(detail::isa_in_use()) >= static_cast<int>(detail::IsaLevel::avx2);
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

}  // namespace dezero
