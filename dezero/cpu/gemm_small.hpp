// cpu/gemm_small.hpp - float32 products too small for a blocked GEMM (see gemm_small.cpp).
#pragma once

#include <cstdint>

namespace dezero::detail {

// C = alpha op(A) op(B) + beta C on row-major views, when the product is small
// (W3's layers and their gradients: at most kGemmSmallMacs multiply-adds) and the
// build has AVX-512. Returns false, having done nothing, when it does not apply.
// beta == 0 never reads C. A bias row (n elements) is added to every row of C.
bool sgemm_small(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                 const float* bias = nullptr);

constexpr std::int64_t kGemmSmallMacs = 1 << 14;

}  // namespace dezero::detail
