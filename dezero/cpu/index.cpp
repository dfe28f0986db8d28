// dezero/cpu/index.cpp - the host backend's indexing primitives, on element offsets
// and row indices that tensor/ has already computed and checked (int64): gather,
// scatter_add (serial, so that repeated offsets accumulate) and gather_rows (one
// memcpy per row: embeddings, mini-batches). No bounds checks here.
#include <cstring>

#include "dezero/backend/dispatch.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

// --- the indexing primitives -----------------------------------------------------------------
void gather(DType dt, const void* src, const std::int64_t* offsets, void* dst, std::int64_t n) {
  DEZERO_DISPATCH_BITS(dt, T, {
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(dst);
    par_for(n, n, [&](std::int64_t i) { d[i] = s[offsets[i]]; });
  })
}

void scatter_add(DType dt, const void* src, const std::int64_t* offsets, void* dst, std::int64_t n) {
  DEZERO_DISPATCH(dt, T, {
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(dst);
    for (std::int64_t i = 0; i < n; ++i) d[offsets[i]] += s[i];  // serial: repeated offsets accumulate
  })
}

// dst[i, :] = src[idx[i], :] for rows of `cols` elements.
void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows, std::int64_t cols) {
  std::size_t row_bytes = static_cast<std::size_t>(cols) * dtype_size(dt);
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  // memory-bound: threads only pay off for large gathers
  par_for(rows * cols / 32, rows, [&](std::int64_t i) { std::memcpy(d + i * row_bytes, s + idx[i] * row_bytes, row_bytes); });
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
