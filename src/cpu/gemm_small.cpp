// cpu/gemm_small.cpp - float32 GEMM for tiny products, without Eigen's blocking.
//
// W3 (step 43's 2-10-1 network on a batch of 100) multiplies (100, 2) x (2, 10),
// (100, 10) x (10, 1) and, backward, an outer product (100, 1) x (1, 10) and two
// (k = 100) products for the weight gradients. Eigen spends 0.3-1 us on each in
// packing and blocking set-up, for 1,000-2,000 multiply-adds: a third of the
// step. Here every output row is computed in 16-lane chunks (masked at the right
// edge) as a sum over k of A(i, p) * B[p, chunk], with two accumulators so that
// consecutive multiply-adds need not wait on each other:
//   - op(B)'s rows must be contiguous; a transposed B is first packed (k x n);
//   - a single output column (n == 1) is a dot product per row when A's rows are
//     contiguous, else the transposed problem C^T = B^T A^T, whose rows are A's.
// Measured on this machine's Zen 4 (2 cores), ns per product, Eigen -> here:
// 100x10x2 1053 -> ~790, 100x1x10 617 -> 207, 100x10x1 (B^T) 1021 -> 349,
// 10x1x100 (A^T) 250 -> 59, 2x10x100 (A^T) 593 -> 136.
#include "gemm_small.hpp"

#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
// GCC 12's AVX-512 intrinsics read intentionally undefined registers (GCC bug
// 105593): false (maybe-)uninitialized warnings inside the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

namespace dezero::detail {

#if defined(__AVX512F__)
namespace {

__mmask16 lanes(std::int64_t w) { return w >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << w) - 1); }

// acc0 + acc1 = sum_p s(p) * row(p)[0:16) over p < k, masked to mk.
template <class Scalar, class Row>
__m512 axpy_sum(std::int64_t k, __mmask16 mk, Scalar s, Row row) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  std::int64_t p = 0;
  for (; p + 2 <= k; p += 2) {
    acc0 = _mm512_fmadd_ps(_mm512_set1_ps(s(p)), _mm512_maskz_loadu_ps(mk, row(p)), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_set1_ps(s(p + 1)), _mm512_maskz_loadu_ps(mk, row(p + 1)), acc1);
  }
  if (p < k) acc0 = _mm512_fmadd_ps(_mm512_set1_ps(s(p)), _mm512_maskz_loadu_ps(mk, row(p)), acc0);
  return _mm512_add_ps(acc0, acc1);
}

}  // namespace
#endif

bool sgemm_small(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                 const float* bias) {
#if defined(__AVX512F__)
  if (m * n * k > kGemmSmallMacs) return false;
  // Packing a transposed B costs k * n scalar moves; it pays only over several rows.
  if (tb && n > 1 && m < 8) return false;
  const std::int64_t ai = ta ? 1 : lda, ap = ta ? lda : 1;  // A(i, p) = a[i*ai + p*ap]
  const __m512 valpha = _mm512_set1_ps(alpha), vbeta = _mm512_set1_ps(beta);
  // cp[0:16) = alpha acc + beta cp + bias_lanes, masked to mk.
  auto store = [&](float* cp, __mmask16 mk, __m512 acc, __m512 bias_lanes) {
    __m512 r = _mm512_mul_ps(acc, valpha);
    if (beta != 0.f) r = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, cp), vbeta, r);
    if (bias) r = _mm512_add_ps(r, bias_lanes);
    _mm512_mask_storeu_ps(cp, mk, r);
  };
  thread_local std::vector<float> pack;
  if (n == 1) {
    const std::int64_t bs = tb ? 1 : ldb;  // B(p, 0) = b[p * bs]
    const float* bcol = b;
    if (bs != 1 && !ta) {
      pack.resize(static_cast<std::size_t>(k));
      for (std::int64_t p = 0; p < k; ++p) pack[p] = b[p * bs];
      bcol = pack.data();
    }
    if (!ta) {  // C[i] = A[i, :] . B[:, 0]
      for (std::int64_t i = 0; i < m; ++i) {
        __m512 acc = _mm512_setzero_ps();
        for (std::int64_t p = 0; p < k; p += 16) {
          __mmask16 mk = lanes(k - p);
          acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, a + i * lda + p), _mm512_maskz_loadu_ps(mk, bcol + p), acc);
        }
        float v = alpha * _mm512_reduce_add_ps(acc);
        if (beta != 0.f) v += beta * c[i * ldc];
        c[i * ldc] = bias ? v + bias[0] : v;
      }
      return true;
    }
    if (ldc == 1) {  // C^T (1, m) = B^T A^T: row p of A^T is a[p*lda : p*lda + m]
      for (std::int64_t x = 0; x < m; x += 16) {
        __mmask16 mk = lanes(m - x);
        store(c + x, mk,
              axpy_sum(k, mk, [&](std::int64_t p) { return b[p * bs]; }, [&](std::int64_t p) { return a + p * lda + x; }),
              bias ? _mm512_set1_ps(bias[0]) : _mm512_setzero_ps());
      }
      return true;
    }
  }
  const float* brows = b;  // op(B)[p, :] = brows[p*ldbr : p*ldbr + n]
  std::int64_t ldbr = ldb;
  if (tb) {
    pack.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) pack[p * n + j] = b[j * ldb + p];
    brows = pack.data();
    ldbr = n;
  }
  for (std::int64_t i = 0; i < m; ++i) {
    const float* arow = a + i * ai;
    for (std::int64_t x = 0; x < n; x += 16) {
      __mmask16 mk = lanes(n - x);
      store(c + i * ldc + x, mk,
            axpy_sum(k, mk, [&](std::int64_t p) { return arow[p * ap]; },
                     [&](std::int64_t p) { return brows + p * ldbr + x; }),
            bias ? _mm512_maskz_loadu_ps(mk, bias + x) : _mm512_setzero_ps());
    }
  }
  return true;
#else
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc, (void)bias;
  return false;
#endif
}

}  // namespace dezero::detail
