// dezero/cpu/gemm_small.cpp - float32 GEMM for tiny products, without Eigen's blocking.
//
// The book's step-43 network (2-10-1 on a batch of 100; bench/w3_overhead.cpp times
// its training step) multiplies (100, 2) x (2, 10), (100, 10) x (10, 1) and, backward,
// an outer product (100, 1) x (1, 10) and two (k = 100) products for the weight
// gradients. Eigen spends 0.3-1 us on each in packing and blocking set-up, for
// 1,000-2,000 multiply-adds; the kernel here takes a fraction of that. Every output
// row is computed in 16-lane chunks (masked at the right edge) as a sum over k of
// A(i, p) * B[p, chunk], with several accumulators so that consecutive multiply-adds
// need not wait on each other (kernel times for the shapes above: bench/README.md):
//   - op(B)'s rows must be contiguous; a transposed B is first packed (k x n);
//   - up to depth 8 the k rows of op(B) for a chunk stay in registers for all rows;
//   - deeper, up to 4 rows of C go through op(B) together (rows_together);
//   - a single output column (n == 1) takes 16 rows at a time when A's rows are
//     contiguous (16 dot products, one shuffle tree for their sums), else the
//     transposed problem C^T = B^T A^T, whose rows are A's.
// Declared in gemm.hpp (sgemm_small); gemm.cpp tries it first for every float32
// product, and alone for gemm_bias.
#include "dezero/cpu/gemm.hpp"

#include <array>
#include <type_traits>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
// GCC 12's AVX-512 intrinsics read intentionally undefined registers (GCC bug
// 105593): false (maybe-)uninitialized warnings inside the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

#if defined(__AVX512F__)
namespace {

// Transposed B operands are packed on the stack: k * n <= kGemmSmallMacs / 8 floats
// (a transposed B needs m >= 8), the same bound for a strided single column.
constexpr std::int64_t kPackMax = kGemmSmallMacs / 8;
// Up to this depth the k rows of op(B) for a 16-column chunk stay in registers for
// all the rows of C (the step-43 network's first layer: k = 2; the backward outer
// product with the second layer's weights: k = 1).
constexpr int kHoistMax = 8;

__mmask16 lanes(std::int64_t w) { return w >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << w) - 1); }

// sum_p s(p) * row(p) over p < k, in four accumulators (p mod 4) so that consecutive
// multiply-adds need not wait on each other: a deep product (k = 100, a weight
// gradient over the batch) is otherwise a chain of k dependent multiply-adds, each
// waiting the full latency of the one before. row(p) is a vector.
template <class Scalar, class Row>
inline __m512 axpy_sum(std::int64_t k, Scalar s, Row row) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
  std::int64_t p = 0;
#pragma GCC unroll 4
  for (; p + 4 <= k; p += 4) {
    acc0 = _mm512_fmadd_ps(_mm512_set1_ps(s(p)), row(p), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_set1_ps(s(p + 1)), row(p + 1), acc1);
    acc2 = _mm512_fmadd_ps(_mm512_set1_ps(s(p + 2)), row(p + 2), acc2);
    acc3 = _mm512_fmadd_ps(_mm512_set1_ps(s(p + 3)), row(p + 3), acc3);
  }
  if (p < k) acc0 = _mm512_fmadd_ps(_mm512_set1_ps(s(p)), row(p), acc0);
  // k = 1 (an outer product, rows_hoisted<1>): the sum below is (acc0 + 0) + 0, and
  // acc0 + 0 is never -0, so one add of +0 gives the same bits (a -0 product still
  // comes out +0, as from a loop that starts at 0) with one dependent add less per row.
  if (k == 1) return _mm512_add_ps(acc0, _mm512_setzero_ps());
  if (p + 1 < k) acc1 = _mm512_fmadd_ps(_mm512_set1_ps(s(p + 1)), row(p + 1), acc1);
  if (p + 2 < k) acc2 = _mm512_fmadd_ps(_mm512_set1_ps(s(p + 2)), row(p + 2), acc2);
  return _mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3));
}

// Lane r of the result = the sum of the 16 lanes of v[r]: a tree of in-lane
// unpacks and shuffles (45 operations for 16 rows instead of a full horizontal
// reduction, about 8, per row).
inline __m512 row_sums(const __m512 v[16]) {
  __m512 s[8], t[4];
  // Within each 128-bit lane: s[q] = [v2q(0+2), v2q+1(0+2), v2q(1+3), v2q+1(1+3)].
  for (int q = 0; q < 8; ++q)
    s[q] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * q], v[2 * q + 1]), _mm512_unpackhi_ps(v[2 * q], v[2 * q + 1]));
  // t[r] = [v4r, v4r+1, v4r+2, v4r+3] partial sums in each 128-bit lane.
  for (int r = 0; r < 4; ++r)
    t[r] = _mm512_add_ps(_mm512_shuffle_ps(s[2 * r], s[2 * r + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(s[2 * r], s[2 * r + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Fold the four 128-bit lanes: x0 = [v0-3 (lanes 0+1), v0-3 (2+3), v4-7 (0+1), v4-7 (2+3)].
  const __m512 x0 = _mm512_add_ps(_mm512_shuffle_f32x4(t[0], t[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(t[0], t[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 x1 = _mm512_add_ps(_mm512_shuffle_f32x4(t[2], t[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(t[2], t[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(x0, x1, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(x0, x1, _MM_SHUFFLE(3, 1, 3, 1)));
}

// cp[0:16) = alpha acc + beta cp + bias_lanes, masked to mk (alpha == 1 skips the
// multiply: the same bits). Passed by value: a Store behind a pointer could alias C's
// floats, and each row's store would then reload alpha, beta and bias to test them.
struct Store {
  float alpha, beta;
  bool bias;
  void operator()(float* cp, __mmask16 mk, __m512 acc, __m512 bias_lanes) const {
    __m512 r = alpha == 1.f ? acc : _mm512_mul_ps(acc, _mm512_set1_ps(alpha));
    if (beta != 0.f) r = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, cp), _mm512_set1_ps(beta), r);
    if (bias) r = _mm512_add_ps(r, bias_lanes);
    _mm512_mask_storeu_ps(cp, mk, r);
  }
};

// The common case, alpha = 1 and beta = 0 (every product of a training step), as a type of its own:
// the row loops then test nothing per row (Store gives the same bits: it skips the multiply and
// the load then too). W3's step at 2.86 -> 2.73 us.
template <bool Bias>
struct PlainStore {
  void operator()(float* cp, __mmask16 mk, __m512 acc, __m512 bias_lanes) const {
    _mm512_mask_storeu_ps(cp, mk, Bias ? _mm512_add_ps(acc, bias_lanes) : acc);
  }
};

// Columns [x, x + 16) of every row of C, with the K rows of op(B) (and the bias) for
// that chunk loaded once: per row of C, K broadcasts, K multiply-adds and a store.
template <int K, class S>
void rows_hoisted(std::int64_t m, const float* a, std::int64_t ai, std::int64_t ap, const float* brows,
                  std::int64_t ldbr, std::int64_t x, __mmask16 mk, const float* bias, float* c, std::int64_t ldc,
                  S store) {
  __m512 bk[K];
#pragma GCC unroll 8
  for (int p = 0; p < K; ++p) bk[p] = _mm512_maskz_loadu_ps(mk, brows + p * ldbr + x);
  const __m512 bl = bias ? _mm512_maskz_loadu_ps(mk, bias + x) : _mm512_setzero_ps();
  for (std::int64_t i = 0; i < m; ++i) {
    const float* arow = a + i * ai;
    store(c + i * ldc + x, mk,
          axpy_sum(K, [&](std::int64_t p) { return arow[p * ap]; }, [&](std::int64_t p) { return bk[p]; }), bl);
  }
}

template <class S, std::size_t... K>
constexpr auto make_hoisted(std::index_sequence<K...>) {
  return std::array<decltype(&rows_hoisted<1, S>), sizeof...(K)>{&rows_hoisted<int(K) + 1, S>...};
}
template <class S>
constexpr auto kRowsHoisted = make_hoisted<S>(std::make_index_sequence<kHoistMax>());  // [k - 1]

// All M (<= 4) rows of C for columns [x, x + 16) in one pass over the k rows of op(B):
// each row of op(B) is loaded once for the M rows, and every row of C keeps two running
// sums (even and odd p), 2M independent chains. This is a weight gradient x^T gy with a
// few input features: (2, 100) x (100, 10) for the step-43 network's first layer, which
// row by row would load op(B) M times and wait on one chain of k multiply-adds per row.
template <int M, class S>
void rows_together(std::int64_t k, const float* a, std::int64_t ai, std::int64_t ap, const float* brows,
                   std::int64_t ldbr, std::int64_t x, __mmask16 mk, const float* bias, float* c, std::int64_t ldc,
                   S store) {
  __m512 acc0[M], acc1[M];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  std::int64_t p = 0;
  for (; p + 2 <= k; p += 2) {
    const __m512 b0 = _mm512_maskz_loadu_ps(mk, brows + p * ldbr + x);
    const __m512 b1 = _mm512_maskz_loadu_ps(mk, brows + (p + 1) * ldbr + x);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      acc0[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * ai + p * ap]), b0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * ai + (p + 1) * ap]), b1, acc1[i]);
    }
  }
  if (p < k) {
    const __m512 b0 = _mm512_maskz_loadu_ps(mk, brows + p * ldbr + x);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) acc0[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * ai + p * ap]), b0, acc0[i]);
  }
  const __m512 bl = bias ? _mm512_maskz_loadu_ps(mk, bias + x) : _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) store(c + i * ldc + x, mk, _mm512_add_ps(acc0[i], acc1[i]), bl);
}
template <class S>
constexpr decltype(&rows_together<1, S>) kRowsTogether[] = {&rows_together<1, S>, &rows_together<2, S>,
                                                             &rows_together<3, S>, &rows_together<4, S>};  // [m - 1]

// C's columns, 16 at a time, for every product with n > 1 (op(B)'s rows at brows).
template <class S>
void column_chunks(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t ai, std::int64_t ap,
                   const float* brows, std::int64_t ldbr, const float* bias, float* c, std::int64_t ldc, S store) {
  for (std::int64_t x = 0; x < n; x += 16) {
    __mmask16 mk = lanes(n - x);
    if (k >= 1 && k <= kHoistMax) {
      kRowsHoisted<S>[k - 1](m, a, ai, ap, brows, ldbr, x, mk, bias, c, ldc, store);
      continue;
    }
    if (m >= 1 && m <= 4) {
      kRowsTogether<S>[m - 1](k, a, ai, ap, brows, ldbr, x, mk, bias, c, ldc, store);
      continue;
    }
    const __m512 bl = bias ? _mm512_maskz_loadu_ps(mk, bias + x) : _mm512_setzero_ps();
    for (std::int64_t i = 0; i < m; ++i) {
      const float* arow = a + i * ai;
      store(c + i * ldc + x, mk,
            axpy_sum(
                k, [&](std::int64_t p) { return arow[p * ap]; },
                [&](std::int64_t p) { return _mm512_maskz_loadu_ps(mk, brows + p * ldbr + x); }),
            bl);
    }
  }
}

}  // namespace
#endif

#if !(defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__))  // the avx2 copy: gemm_small_avx2.cpp
bool sgemm_small(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                 const float* bias) {
#if defined(__AVX512F__)
  if (m * n * k > kGemmSmallMacs) return false;
  // Packing a transposed B costs k * n scalar moves; it pays only over several rows.
  if (tb && n > 1 && m < 8) return false;
  const std::int64_t bs = tb ? 1 : ldb;  // B(p, 0) = b[p * bs] (single-column case)
  if (n == 1 && bs != 1 && !ta && k > kPackMax) return false;
  const std::int64_t ai = ta ? 1 : lda, ap = ta ? lda : 1;  // A(i, p) = a[i*ai + p*ap]
  const Store store{alpha, beta, bias != nullptr};
  alignas(64) float pack[kPackMax];
  if (n == 1) {
    const float* bcol = b;
    if (bs != 1 && !ta) {
      for (std::int64_t p = 0; p < k; ++p) pack[p] = b[p * bs];
      bcol = pack;
    }
    if (!ta) {  // C[i] = A[i, :] . B[:, 0], 16 rows at a time
      const __m512 bl = bias ? _mm512_set1_ps(bias[0]) : _mm512_setzero_ps();
      // A block of 16 rows; `Full`: all 16 exist, so no row needs a mask of its own.
      auto block = [&](std::int64_t i0, auto full) {
        constexpr bool kFull = decltype(full)::value;
        const std::int64_t rows = kFull ? 16 : m - i0;
        // Rows past m load nothing (an empty mask), so the 16 products stay in registers.
        const float* a0 = a + i0 * lda;
        __m512 v[16];
        __mmask16 mk = lanes(k);
        __m512 bv = _mm512_maskz_loadu_ps(mk, bcol);
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r)
          v[r] = _mm512_mul_ps(_mm512_maskz_loadu_ps(kFull || r < rows ? mk : __mmask16(0), a0 + r * lda), bv);
        for (std::int64_t p = 16; p < k; p += 16) {
          mk = lanes(k - p);
          bv = _mm512_maskz_loadu_ps(mk, bcol + p);
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r)
            v[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(kFull || r < rows ? mk : __mmask16(0), a0 + r * lda + p),
                                   bv, v[r]);
        }
        const __mmask16 mr = lanes(rows);
        if (ldc == 1) {
          store(c + i0, mr, row_sums(v), bl);
        } else {  // a strided column of C: go through a buffer
          alignas(64) float col[16];
          for (std::int64_t r = 0; r < rows; ++r) col[r] = c[(i0 + r) * ldc];
          store(col, mr, row_sums(v), bl);
          for (std::int64_t r = 0; r < rows; ++r) c[(i0 + r) * ldc] = col[r];
        }
      };
      std::int64_t i0 = 0;
      for (; i0 + 16 <= m; i0 += 16) block(i0, std::true_type{});
      if (i0 < m) block(i0, std::false_type{});
      return true;
    }
    if (ldc == 1) {  // C^T (1, m) = B^T A^T: row p of A^T is a[p*lda : p*lda + m]
      const __m512 bl = bias ? _mm512_set1_ps(bias[0]) : _mm512_setzero_ps();
      for (std::int64_t x = 0; x < m; x += 16) {
        __mmask16 mk = lanes(m - x);
        store(c + x, mk,
              axpy_sum(
                  k, [&](std::int64_t p) { return b[p * bs]; },
                  [&](std::int64_t p) { return _mm512_maskz_loadu_ps(mk, a + p * lda + x); }),
              bl);
      }
      return true;
    }
  }
  const float* brows = b;  // op(B)[p, :] = brows[p*ldbr : p*ldbr + n]
  std::int64_t ldbr = ldb;
  if (tb) {
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) pack[p * n + j] = b[j * ldb + p];
    brows = pack;
    ldbr = n;
  }
  if (alpha == 1.f && beta == 0.f) {
    if (bias) column_chunks(m, n, k, a, ai, ap, brows, ldbr, bias, c, ldc, PlainStore<true>{});
    else column_chunks(m, n, k, a, ai, ap, brows, ldbr, bias, c, ldc, PlainStore<false>{});
  } else {
    column_chunks(m, n, k, a, ai, ap, brows, ldbr, bias, c, ldc, store);
  }
  return true;
#else
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc, (void)bias;
  return false;
#endif
}
#endif

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
