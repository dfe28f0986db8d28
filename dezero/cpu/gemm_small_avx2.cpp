// dezero/cpu/gemm_small_avx2.cpp - float32 GEMM for tiny products on the avx2 level: gemm_small.cpp's
// kernels (the book's step-43 network: (100, 2) x (2, 10), (100, 10) x (10, 1), the outer product and
// the weight gradients) on 8-lane AVX2 vectors, masked with vmaskmovps at the right edge. Compiled in
// every copy of the kernels, non-empty only in the avx2 one (gemm_small.cpp has the AVX-512 kernels
// and the baseline's `return false`). The sums run in gemm_small.cpp's order (four accumulators by
// p mod 4, two by parity for rows_together), except single-column products, whose dot products
// are summed over 8 lanes here instead of 16.
#include <algorithm>
#include <cstdint>

#include "dezero/cpu/gemm.hpp"

#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)
#include <immintrin.h>

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

using i64 = std::int64_t;

constexpr i64 kPackMax = kGemmSmallMacs / 8;
constexpr int kHoistMax = 8;

inline __m256i lanes(i64 n) {
  alignas(32) static const std::int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  const i64 k = n <= 0 ? 0 : n >= 8 ? 8 : n;
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - k));
}
inline __m256 load(const float* p, __m256i m) { return _mm256_maskload_ps(p, m); }

// sum_p s(p) * row(p), four accumulators by p mod 4 (gemm_small.cpp's axpy_sum).
template <class Scalar, class Row>
inline __m256 axpy_sum(i64 k, Scalar s, Row row) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  i64 p = 0;
#pragma GCC unroll 4
  for (; p + 4 <= k; p += 4) {
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(s(p)), row(p), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(s(p + 1)), row(p + 1), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_set1_ps(s(p + 2)), row(p + 2), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_set1_ps(s(p + 3)), row(p + 3), acc3);
  }
  if (p < k) acc0 = _mm256_fmadd_ps(_mm256_set1_ps(s(p)), row(p), acc0);
  if (k == 1) return _mm256_add_ps(acc0, _mm256_setzero_ps());  // (see gemm_small.cpp)
  if (p + 1 < k) acc1 = _mm256_fmadd_ps(_mm256_set1_ps(s(p + 1)), row(p + 1), acc1);
  if (p + 2 < k) acc2 = _mm256_fmadd_ps(_mm256_set1_ps(s(p + 2)), row(p + 2), acc2);
  return _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
}

// Lane r of the result = the sum of the 8 lanes of v[r]: in-lane unpacks and shuffles, then the
// two 128-bit halves.
inline __m256 row_sums(const __m256 v[8]) {
  __m256 s[4], t[2];
  for (int q = 0; q < 4; ++q)
    s[q] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * q], v[2 * q + 1]), _mm256_unpackhi_ps(v[2 * q], v[2 * q + 1]));
  for (int r = 0; r < 2; ++r)
    t[r] = _mm256_add_ps(_mm256_shuffle_ps(s[2 * r], s[2 * r + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(s[2 * r], s[2 * r + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // t[0]: rows 0-3 in each half, t[1]: rows 4-7; add the halves
  return _mm256_add_ps(_mm256_permute2f128_ps(t[0], t[1], 0x20), _mm256_permute2f128_ps(t[0], t[1], 0x31));
}

// cp[0:8) = alpha acc + beta cp + bias_lanes, masked (gemm_small.cpp's Store).
struct Store {
  float alpha, beta;
  bool bias;
  void operator()(float* cp, __m256i mk, bool full, __m256 acc, __m256 bias_lanes) const {
    __m256 r = alpha == 1.f ? acc : _mm256_mul_ps(acc, _mm256_set1_ps(alpha));
    if (beta != 0.f) r = _mm256_fmadd_ps(full ? _mm256_loadu_ps(cp) : load(cp, mk), _mm256_set1_ps(beta), r);
    if (bias) r = _mm256_add_ps(r, bias_lanes);
    if (full) _mm256_storeu_ps(cp, r);
    else _mm256_maskstore_ps(cp, mk, r);
  }
};

template <int K>
void rows_hoisted(i64 m, const float* a, i64 ai, i64 ap, const float* brows, i64 ldbr, i64 x, __m256i mk, bool full,
                  const float* bias, float* c, i64 ldc, Store store) {
  __m256 bk[K];
#pragma GCC unroll 8
  for (int p = 0; p < K; ++p) bk[p] = load(brows + p * ldbr + x, mk);
  const __m256 bl = bias ? load(bias + x, mk) : _mm256_setzero_ps();
  for (i64 i = 0; i < m; ++i) {
    const float* arow = a + i * ai;
    store(c + i * ldc + x, mk, full,
          axpy_sum(K, [&](i64 p) { return arow[p * ap]; }, [&](i64 p) { return bk[p]; }), bl);
  }
}
constexpr decltype(&rows_hoisted<1>) kRowsHoisted[kHoistMax] = {&rows_hoisted<1>, &rows_hoisted<2>, &rows_hoisted<3>,
                                                                &rows_hoisted<4>, &rows_hoisted<5>, &rows_hoisted<6>,
                                                                &rows_hoisted<7>, &rows_hoisted<8>};  // [k - 1]

template <int M>
void rows_together(i64 k, const float* a, i64 ai, i64 ap, const float* brows, i64 ldbr, i64 x, __m256i mk, bool full,
                   const float* bias, float* c, i64 ldc, Store store) {
  __m256 acc0[M], acc1[M];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
  i64 p = 0;
  for (; p + 2 <= k; p += 2) {
    const __m256 b0 = load(brows + p * ldbr + x, mk);
    const __m256 b1 = load(brows + (p + 1) * ldbr + x, mk);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      acc0[i] = _mm256_fmadd_ps(_mm256_set1_ps(a[i * ai + p * ap]), b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(_mm256_set1_ps(a[i * ai + (p + 1) * ap]), b1, acc1[i]);
    }
  }
  if (p < k) {
    const __m256 b0 = load(brows + p * ldbr + x, mk);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) acc0[i] = _mm256_fmadd_ps(_mm256_set1_ps(a[i * ai + p * ap]), b0, acc0[i]);
  }
  const __m256 bl = bias ? load(bias + x, mk) : _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) store(c + i * ldc + x, mk, full, _mm256_add_ps(acc0[i], acc1[i]), bl);
}
constexpr decltype(&rows_together<1>) kRowsTogether[] = {&rows_together<1>, &rows_together<2>, &rows_together<3>,
                                                          &rows_together<4>};

}  // namespace

bool sgemm_small(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, const float* b, i64 ldb,
                 float beta, float* c, i64 ldc, const float* bias) {
  if (m * n * k > kGemmSmallMacs) return false;
  if (tb && n > 1 && m < 8) return false;
  const i64 bs = tb ? 1 : ldb;
  if (n == 1 && bs != 1 && !ta && k > kPackMax) return false;
  const i64 ai = ta ? 1 : lda, ap = ta ? lda : 1;
  const Store store{alpha, beta, bias != nullptr};
  alignas(64) float pack[kPackMax];
  if (n == 1) {
    const float* bcol = b;
    if (bs != 1 && !ta) {
      for (i64 p = 0; p < k; ++p) pack[p] = b[p * bs];
      bcol = pack;
    }
    if (!ta) {  // C[i] = A[i, :] . B[:, 0], 8 rows at a time
      const __m256 bl = bias ? _mm256_set1_ps(bias[0]) : _mm256_setzero_ps();
      for (i64 i0 = 0; i0 < m; i0 += 8) {
        const i64 rows = std::min<i64>(8, m - i0);
        const float* a0 = a + i0 * lda;
        __m256 v[8];
        __m256i mk = lanes(k);
        __m256 bv = load(bcol, mk);
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) v[r] = r < rows ? _mm256_mul_ps(load(a0 + r * lda, mk), bv) : _mm256_setzero_ps();
        for (i64 p = 8; p < k; p += 8) {
          mk = lanes(k - p);
          bv = load(bcol + p, mk);
#pragma GCC unroll 8
          for (int r = 0; r < 8; ++r)
            if (r < rows) v[r] = _mm256_fmadd_ps(load(a0 + r * lda + p, mk), bv, v[r]);
        }
        const __m256i mr = lanes(rows);
        if (ldc == 1) {
          store(c + i0, mr, rows == 8, row_sums(v), bl);
        } else {
          alignas(32) float col[8] = {};
          for (i64 r = 0; r < rows; ++r) col[r] = c[(i0 + r) * ldc];
          store(col, mr, rows == 8, row_sums(v), bl);
          for (i64 r = 0; r < rows; ++r) c[(i0 + r) * ldc] = col[r];
        }
      }
      return true;
    }
    if (ldc == 1) {  // C^T (1, m) = B^T A^T
      const __m256 bl = bias ? _mm256_set1_ps(bias[0]) : _mm256_setzero_ps();
      for (i64 x = 0; x < m; x += 8) {
        const __m256i mk = lanes(m - x);
        store(c + x, mk, m - x >= 8,
              axpy_sum(
                  k, [&](i64 p) { return b[p * bs]; }, [&](i64 p) { return load(a + p * lda + x, mk); }),
              bl);
      }
      return true;
    }
  }
  const float* brows = b;
  i64 ldbr = ldb;
  if (tb) {
    for (i64 j = 0; j < n; ++j)
      for (i64 p = 0; p < k; ++p) pack[p * n + j] = b[j * ldb + p];
    brows = pack;
    ldbr = n;
  }
  for (i64 x = 0; x < n; x += 8) {
    const __m256i mk = lanes(n - x);
    const bool full = n - x >= 8;
    if (k >= 1 && k <= kHoistMax) {
      kRowsHoisted[k - 1](m, a, ai, ap, brows, ldbr, x, mk, full, bias, c, ldc, store);
      continue;
    }
    if (m >= 1 && m <= 4) {
      kRowsTogether[m - 1](k, a, ai, ap, brows, ldbr, x, mk, full, bias, c, ldc, store);
      continue;
    }
    const __m256 bl = bias ? load(bias + x, mk) : _mm256_setzero_ps();
    for (i64 i = 0; i < m; ++i) {
      const float* arow = a + i * ai;
      store(c + i * ldc + x, mk, full,
            axpy_sum(
                k, [&](i64 p) { return arow[p * ap]; }, [&](i64 p) { return load(brows + p * ldbr + x, mk); }),
            bl);
    }
  }
  return true;
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu

#endif
