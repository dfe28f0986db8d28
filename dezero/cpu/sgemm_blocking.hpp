// dezero/cpu/sgemm_blocking.hpp - internal: what the two blocked float32 GEMMs share (sgemm.cpp on
// AVX-512, sgemm_avx2.cpp on AVX2 + FMA): the cache blocks' sizes, the even split of rows into
// panels, the per-thread packing buffers, and C = beta C (+ bias) for an empty depth. The
// vector code (packing, micro-kernels) is each file's own. Inline, in each level's namespace.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "dezero/backend/isa_namespace.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN
namespace sgemm_blocking {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Splits len into ceil(len / max_block) near-equal blocks, each rounded up to a multiple of unit.
inline std::int64_t balanced_block(std::int64_t len, std::int64_t max_block, std::int64_t unit) {
  const std::int64_t blocks = ceil_div(len, max_block);
  return std::min(max_block, ceil_div(ceil_div(len, blocks), unit) * unit);
}

// Row panel s of `panels` that split mc rows evenly starts at panel_lo(s) (m = 100 on 14-row tiles:
// 8 panels of 12-13 rows, not 7 of 14 and one of 2, whose kernel would wait on its few FMA chains).
inline std::int64_t panel_lo(std::int64_t s, std::int64_t mc, std::int64_t panels) { return s * mc / panels; }

// One pair of packing buffers per thread, allocated on first use, 64-byte aligned: A floats for the
// packed block of A, B floats for the packed block of B.
template <std::size_t A, std::size_t B>
struct Buffers {
  float* a;
  float* b;
  Buffers()
      : a(static_cast<float*>(std::aligned_alloc(64, sizeof(float) * A))),
        b(static_cast<float*>(std::aligned_alloc(64, sizeof(float) * B))) {
    if (!a || !b) {
      std::free(a);
      std::free(b);
      throw std::bad_alloc();
    }
  }
  ~Buffers() {
    std::free(a);
    std::free(b);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
};
template <std::size_t A, std::size_t B>
Buffers<A, B>& buffers() {
  thread_local Buffers<A, B> buf;
  return buf;
}

// C = beta C, or the bias row when there is one (the k == 0 / alpha == 0 cases); beta == 0 writes
// zeros without reading C.
inline void empty_depth(std::int64_t m, std::int64_t n, float beta, float* c, std::int64_t ldc, const float* bias) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float& x = c[i * ldc + j];
      x = bias ? 0.0f + bias[j] : beta == 0.0f ? 0.0f : beta * x;
    }
}

}  // namespace sgemm_blocking
DEZERO_ISA_END
}  // namespace dezero::detail::cpu
