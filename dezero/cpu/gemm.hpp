// dezero/cpu/gemm.hpp - the host float32 GEMM of the CPU backend: a packed, cache-blocked
// AVX-512 kernel (sgemm.cpp). Single-threaded; gemm_typed in cpu_backend.cpp splits
// a product into per-thread slabs and calls it once per slab. Not a BLAS: row-major
// views only, no argument checking beyond what the backend already guarantees.
#pragma once

#include <cstdint>

namespace dezero::detail {

// True when this build has the AVX-512 kernel (compiled with __AVX512F__).
bool sgemm_available();

// C = alpha op(A) op(B) + beta C on row-major views, op = transpose when ta/tb.
//   op(A): (m, k), stored (m, k) with row stride lda, or (k, m) when ta
//   op(B): (k, n), stored (k, n) with row stride ldb, or (n, k) when tb
//   C:     (m, n) with row stride ldc
// beta == 0: C is write-only (never read, may hold NaN). Any m, n, k >= 0.
// Without AVX-512 (sgemm_available() == false) it throws dezero::Error; callers check first.
void sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);

}  // namespace dezero::detail
