// dezero/mn/wire.cpp - gradients on a 16-bit wire (CommunicatorOptions::allreduce_grad_dtype): the
// float32 <-> bfloat16 / float16 conversions (round to nearest, ties to even; NaN stays NaN, a value
// past the type's range becomes infinity) and the MPI reductions that add two 16-bit vectors in
// float32 and round the sum back. The conversions are portable C++ on the bits; the loops over a
// gradient (pack, unpack, the reductions) take 8 floats at a time with F16C's instructions for
// float16 when the CPU has them (asked at run time: libdezero_mn is not built for one CPU; the same
// results, which tests/mn/test_mn_wire.cpp checks), and a branch-free bfloat16 loop the compiler
// vectorises.
#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DEZERO_WIRE_F16C 1
#endif

#include "dezero/mn/detail.hpp"

namespace dezero::mn::detail {

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

// bfloat16 is float32's upper half: round the lower 16 bits away (ties to even by adding
// 0x7FFF plus the lowest kept bit); a NaN keeps its sign and becomes the quiet NaN 0x7FC0.
std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = bits_of(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float bf16_to_float(std::uint16_t h) { return float_of(static_cast<std::uint32_t>(h) << 16); }

// float16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Normal results re-bias the exponent and
// round the 13 dropped mantissa bits; results below 2^-14 (float16's subnormals) are rounded by
// float addition with 0.5, whose exponent puts the unit of the last place at 2^-24.
std::uint16_t float_to_f16(float f) {
  std::uint32_t u = bits_of(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);  // NaN
  if (u >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to 65520 or more: inf
  if (u < 0x38800000u) {  // below 2^-14: a subnormal float16 or zero
    const float r = float_of(u) + 0.5f;  // 0.5's last place is 2^-24, float16's smallest step
    return static_cast<std::uint16_t>(sign | (bits_of(r) - bits_of(0.5f)));
  }
  const std::uint32_t odd = (u >> 13) & 1u;
  u += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFFu + odd;
  return static_cast<std::uint16_t>(sign | (u >> 13));
}

float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0x1F) return float_of(sign | 0x7F800000u | (mant << 13));            // inf, NaN
  if (exp != 0) return float_of(sign | ((exp + 127 - 15) << 23) | (mant << 13));  // normal
  const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);                // mant x 2^-24, exact
  return sign ? -v : v;
}

// --- whole vectors ----------------------------------------------------------------------------------
namespace {

// float_to_bf16 without a branch (the NaN case as a select), so that the loops vectorise.
inline std::uint16_t bf16_of(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? ((u >> 16) | 0x0040u) : rounded);
}

inline float float_of_bf16(std::uint16_t h) { return float_of(static_cast<std::uint32_t>(h) << 16); }

#if DEZERO_WIRE_F16C
// float16 with F16C, 8 at a time; the tails (n % 8) in the portable code.
__attribute__((target("avx,f16c"))) std::int64_t pack_f16c(const float* src, float scale, std::int64_t n,
                                                              std::uint16_t* dst) {
  const __m256 s = _mm256_set1_ps(scale);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(src + i), s), _MM_FROUND_TO_NEAREST_INT));
  return i;
}

__attribute__((target("avx,f16c"))) std::int64_t unpack_f16c(const std::uint16_t* src, std::int64_t n, float* dst) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}

__attribute__((target("avx,f16c"))) std::int64_t sum_f16c(const std::uint16_t* a, std::uint16_t* b, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i), _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return yes;
}
#else
std::int64_t pack_f16c(const float*, float, std::int64_t, std::uint16_t*) { return 0; }
std::int64_t unpack_f16c(const std::uint16_t*, std::int64_t, float*) { return 0; }
std::int64_t sum_f16c(const std::uint16_t*, std::uint16_t*, std::int64_t) { return 0; }
bool has_f16c() { return false; }
#endif

// MPI_User_function: inout[i] = round16(widen(in[i]) + widen(inout[i])), for MPI_UINT16_T.
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = bf16_of(float_of_bf16(a[i]) + float_of_bf16(b[i]));
}

void sum_f16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  std::int64_t i = has_f16c() ? sum_f16c(a, b, *len) : 0;
  for (; i < *len; ++i) b[i] = float_to_f16(f16_to_float(a[i]) + f16_to_float(b[i]));
}

}  // namespace

void pack16(GradWireDtype dtype, const float* src, float scale, std::int64_t n, std::uint16_t* dst) {
  if (dtype == GradWireDtype::bfloat16) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_of(src[i] * scale);
    return;
  }
  std::int64_t i = has_f16c() ? pack_f16c(src, scale, n, dst) : 0;
  for (; i < n; ++i) dst[i] = float_to_f16(src[i] * scale);
}

void unpack16(GradWireDtype dtype, const std::uint16_t* src, std::int64_t n, float* dst) {
  if (dtype == GradWireDtype::bfloat16) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = float_of_bf16(src[i]);
    return;
  }
  std::int64_t i = has_f16c() ? unpack_f16c(src, n, dst) : 0;
  for (; i < n; ++i) dst[i] = f16_to_float(src[i]);
}

MPI_User_function* wire_sum_function(GradWireDtype dtype) {
  return dtype == GradWireDtype::bfloat16 ? &sum_bf16 : &sum_f16;
}

}  // namespace dezero::mn::detail
