// dezero/cpu/gemm.hpp - the host float32 GEMM kernels of the CPU backend, ours rather
// than Eigen's: sgemm (sgemm.cpp, sgemm_avx2.cpp), a packed, cache-blocked kernel for
// products of some size, and sgemm_small (gemm_small.cpp, gemm_small_avx2.cpp) for products
// too small for any blocking. Both are single-threaded; gemm.cpp picks one of them or Eigen for
// each product and splits large products into per-thread slabs. Not a BLAS:
// row-major views only, no argument checking beyond what the backend already
// guarantees.
//
// Compiled once per instruction-set level (isa_namespace.hpp): the AVX-512 kernels in the
// x86-64-v4 copy, the AVX2 + FMA ones in the x86-64-v3 copy; the baseline copy has none
// (sgemm_available() false: gemm.cpp keeps float32 on Eigen there).
#pragma once

#include <cstdint>

#include "dezero/backend/isa_namespace.hpp"

namespace dezero::detail::cpu {

// How sgemm rounds its operands as it packs them: not at all, or each element to the nearest
// bfloat16 / float16 (ties to even; NaN stays NaN), exactly what astype(bfloat16 / float16)
// then astype(float32) gives. Mixed precision on a CPU without bfloat16 or float16 products
// (gemm_lowp, gemm.cpp): the values of the 16-bit product, summed in float32 as those kernels
// sum, at the float32 kernel's speed, without a pass over the operands to round them.
enum class Round : int { none = 0, bf16 = 1, fp16 = 2 };

DEZERO_ISA_BEGIN

// --- sgemm: the blocked kernel (sgemm.cpp: AVX-512; sgemm_avx2.cpp: AVX2) ----------------

// True when this copy of the kernels has a blocked kernel (the avx2 and avx512 copies).
bool sgemm_available();

// C = alpha op(A) op(B) + beta C on row-major views, op = transpose when ta/tb.
//   op(A): (m, k), stored (m, k) with row stride lda, or (k, m) when ta
//   op(B): (k, n), stored (k, n) with row stride ldb, or (n, k) when tb
//   C:     (m, n) with row stride ldc
// beta == 0: C is write-only (never read, may hold NaN). Any m, n, k >= 0.
// bias: a row of n elements added to every row of C in place of beta C (beta is then not
// used): C = alpha op(A) op(B) + bias, the same bits as C filled with the bias and beta = 1.
// round: op(A) and op(B) rounded to bfloat16 / float16 as they are packed (Round; a product that
// would read them in place is packed instead). Where sgemm_available() is false it throws
// dezero::Error; callers check first.
void sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
           const float* bias = nullptr, Round round = Round::none);

// --- sgemm_small: products too small for a blocked GEMM (gemm_small.cpp) -------------

// The most multiply-adds (m n k) that sgemm_small takes.
constexpr std::int64_t kGemmSmallMacs = 1 << 14;

// C = alpha op(A) op(B) + beta C on row-major views, as sgemm, when the product is
// small (a small MLP's layers and their gradients, e.g. (100, 2) x (2, 10): at most
// kGemmSmallMacs multiply-adds) and this copy has the kernels. Returns false, having done
// nothing, when it does not apply. beta == 0 never reads C. A bias row (n elements)
// is added to every row of C.
bool sgemm_small(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                 const float* bias = nullptr);

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
