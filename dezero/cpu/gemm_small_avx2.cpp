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

// cp[0:8) = alpha acc + beta cp + bias_lanes, masked (gemm_small.cpp's Store). The common case,
// alpha = 1 and beta = 0 (every product of a training step), is a type of its own (PlainStore): the
// row loops then test nothing per row (the same bits: Store skips the multiply and the load then too).
template <bool Bias>
struct PlainStore {
  bool bias = Bias;
  void operator()(float* cp, __m256i mk, bool full, __m256 acc, __m256 bias_lanes) const {
    const __m256 r = Bias ? _mm256_add_ps(acc, bias_lanes) : acc;
    if (full) _mm256_storeu_ps(cp, r);
    else _mm256_maskstore_ps(cp, mk, r);
  }
};
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

// A block of up to 16 columns [x, x + w) of C: two 8-lane vectors (the second masked, or absent when
// w <= 8), so that n = 10 (a 10-class output, W3's 10 hidden units) takes one pass over the rows,
// not two (the AVX-512 kernels' 16 lanes hold it in one vector). Passed by value, as Store: behind
// a reference the compiler reloads its masks after every store to C, which could alias them.
struct Cols {
  i64 x, w;
  __m256i m0, m1;
  bool full0, full1;
  Cols(i64 x_, i64 w_) : x(x_), w(w_), m0(lanes(w_)), m1(lanes(w_ - 8)), full0(w_ >= 8), full1(w_ >= 16) {}
  __m256 load0(const float* row) const { return full0 ? _mm256_loadu_ps(row + x) : load(row + x, m0); }
  __m256 load1(const float* row) const { return full1 ? _mm256_loadu_ps(row + x + 8) : load(row + x + 8, m1); }
};

// Columns `cb` of every row of C, with the K rows of op(B) (and the bias) for them loaded once: per
// row of C, K broadcasts, K multiply-adds per vector and a store per vector. Two: w > 8.
template <int K, bool Two, class S>
void rows_hoisted(i64 m, const float* a, i64 ai, i64 ap, const float* brows, i64 ldbr, const Cols cb,
                  const float* bias, float* c, i64 ldc, S store) {
  __m256 b0[K], b1[K];
#pragma GCC unroll 8
  for (int p = 0; p < K; ++p) {
    b0[p] = cb.load0(brows + p * ldbr);
    if (Two) b1[p] = cb.load1(brows + p * ldbr);
  }
  const __m256 bl0 = bias ? cb.load0(bias) : _mm256_setzero_ps();
  const __m256 bl1 = bias && Two ? cb.load1(bias) : _mm256_setzero_ps();
  for (i64 i = 0; i < m; ++i) {
    const float* arow = a + i * ai;
    float* cr = c + i * ldc + cb.x;
    store(cr, cb.m0, cb.full0, axpy_sum(K, [&](i64 p) { return arow[p * ap]; }, [&](i64 p) { return b0[p]; }), bl0);
    if (Two)
      store(cr + 8, cb.m1, cb.full1, axpy_sum(K, [&](i64 p) { return arow[p * ap]; }, [&](i64 p) { return b1[p]; }),
            bl1);
  }
}
template <bool Two, class S>
constexpr decltype(&rows_hoisted<1, Two, S>) kRowsHoisted[kHoistMax] = {
    &rows_hoisted<1, Two, S>, &rows_hoisted<2, Two, S>, &rows_hoisted<3, Two, S>, &rows_hoisted<4, Two, S>,
    &rows_hoisted<5, Two, S>, &rows_hoisted<6, Two, S>, &rows_hoisted<7, Two, S>, &rows_hoisted<8, Two, S>};  // [k - 1]

// All M (<= 4) rows of C for the columns `cb` in one pass over the k rows of op(B), two running sums
// per row and vector (even and odd p: gemm_small.cpp's order).
template <int M, bool Two, class S>
void rows_together(i64 k, const float* a, i64 ai, i64 ap, const float* brows, i64 ldbr, const Cols cb,
                   const float* bias, float* c, i64 ldc, S store) {
  __m256 acc0[M], acc1[M], dcc0[M], dcc1[M];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = dcc0[i] = dcc1[i] = _mm256_setzero_ps();
  i64 p = 0;
  for (; p + 2 <= k; p += 2) {
    const float* r0 = brows + p * ldbr;
    const float* r1 = r0 + ldbr;
    const __m256 b0 = cb.load0(r0), b1 = cb.load0(r1);
    __m256 e0 = b0, e1 = b1;
    if (Two) {
      e0 = cb.load1(r0);
      e1 = cb.load1(r1);
    }
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      const __m256 s0 = _mm256_set1_ps(a[i * ai + p * ap]), s1 = _mm256_set1_ps(a[i * ai + (p + 1) * ap]);
      acc0[i] = _mm256_fmadd_ps(s0, b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(s1, b1, acc1[i]);
      if (Two) {
        dcc0[i] = _mm256_fmadd_ps(s0, e0, dcc0[i]);
        dcc1[i] = _mm256_fmadd_ps(s1, e1, dcc1[i]);
      }
    }
  }
  if (p < k) {
    const float* r0 = brows + p * ldbr;
    const __m256 b0 = cb.load0(r0);
    const __m256 e0 = Two ? cb.load1(r0) : b0;
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      const __m256 s0 = _mm256_set1_ps(a[i * ai + p * ap]);
      acc0[i] = _mm256_fmadd_ps(s0, b0, acc0[i]);
      if (Two) dcc0[i] = _mm256_fmadd_ps(s0, e0, dcc0[i]);
    }
  }
  const __m256 bl0 = bias ? cb.load0(bias) : _mm256_setzero_ps();
  const __m256 bl1 = bias && Two ? cb.load1(bias) : _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) {
    float* cr = c + i * ldc + cb.x;
    store(cr, cb.m0, cb.full0, _mm256_add_ps(acc0[i], acc1[i]), bl0);
    if (Two) store(cr + 8, cb.m1, cb.full1, _mm256_add_ps(dcc0[i], dcc1[i]), bl1);
  }
}
template <bool Two, class S>
constexpr decltype(&rows_together<1, Two, S>) kRowsTogether[] = {&rows_together<1, Two, S>, &rows_together<2, Two, S>,
                                                                  &rows_together<3, Two, S>, &rows_together<4, Two, S>};

// C's columns in blocks of 16 (Cols) for every product with n > 1 (op(B)'s rows at brows).
template <class S>
void column_blocks(i64 m, i64 n, i64 k, const float* a, i64 ai, i64 ap, const float* brows, i64 ldbr,
                   const float* bias, float* c, i64 ldc, S store) {
  for (i64 x = 0; x < n; x += 16) {
    const Cols cb(x, std::min<i64>(16, n - x));
    const bool two = cb.w > 8;
    if (k >= 1 && k <= kHoistMax) {
      (two ? kRowsHoisted<true, S> : kRowsHoisted<false, S>)[k - 1](m, a, ai, ap, brows, ldbr, cb, bias, c, ldc, store);
      continue;
    }
    if (m >= 1 && m <= 4) {
      (two ? kRowsTogether<true, S> : kRowsTogether<false, S>)[m - 1](k, a, ai, ap, brows, ldbr, cb, bias, c, ldc,
                                                                      store);
      continue;
    }
    const __m256 bl0 = bias ? cb.load0(bias) : _mm256_setzero_ps();
    const __m256 bl1 = bias && two ? cb.load1(bias) : _mm256_setzero_ps();
    for (i64 i = 0; i < m; ++i) {
      const float* arow = a + i * ai;
      float* cr = c + i * ldc + x;
      store(cr, cb.m0, cb.full0,
            axpy_sum(k, [&](i64 p) { return arow[p * ap]; }, [&](i64 p) { return cb.load0(brows + p * ldbr); }),
            bl0);
      if (two)
        store(cr + 8, cb.m1, cb.full1,
              axpy_sum(k, [&](i64 p) { return arow[p * ap]; }, [&](i64 p) { return cb.load1(brows + p * ldbr); }),
              bl1);
    }
  }
}

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
  if (alpha == 1.f && beta == 0.f) {
    if (bias) column_blocks(m, n, k, a, ai, ap, brows, ldbr, bias, c, ldc, PlainStore<true>{});
    else column_blocks(m, n, k, a, ai, ap, brows, ldbr, bias, c, ldc, PlainStore<false>{});
  } else {
    column_blocks(m, n, k, a, ai, ap, brows, ldbr, bias, c, ldc, store);
  }
  return true;
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu

#endif
