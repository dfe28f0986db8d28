// dezero/cpu/loops.hpp - the loop helpers of the host backend's family files
// (elementwise.cpp, memory.cpp, index.cpp, nn.cpp, ...): when a loop goes onto OpenMP
// threads (kParallelMin, par_for) and how an N-d strided view is walked row by row
// (for_each_row). Templates and inline only: the bodies are inlined into each
// caller's loop. Not the math of an element (backend/ops.hpp) nor a kernel itself.
// The threads are the pool's (parallel.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/isa_namespace.hpp"
#include "dezero/cpu/parallel.hpp"

namespace dezero::detail::cpu {

// --- threading -------------------------------------------------------------------------
// (memory.cpp, compiled once)
std::int64_t parallel_min_from_env();

DEZERO_ISA_BEGIN

// Elements below which a loop stays on the calling thread: small arrays are the common
// case of a small network, where thread start-up would cost more than the loop. 2^15 by
// measurement (bench/parallel_threshold.cpp, bench/README.md): on two cores an OpenMP
// region costs about 1 us, and float additions pay for it from 2^15 elements (1.2x; 0.9x at
// 2^14); float32 exp/log/tanh/sigmoid, ten times the arithmetic, count double (cpu/
// elementwise.cpp) and so go onto threads from 2^14 (1.4x). DEZERO_PARALLEL_MIN (elements)
// overrides it, read once at start-up.
inline const std::int64_t kParallelMin = parallel_min_from_env();
// Reductions read as much and compute less per element: threads pay from twice as many
// elements (2^16; cpu/reduce.cpp).
inline const std::int64_t kReduceParallelMin = 2 * kParallelMin;

// body(i) for i in [0, n): in the pool's pieces (consecutive ranges of i) when `work` is
// large, else on the calling thread without touching the pool at all (small arrays are a
// small network's whole training step: bench/w3_overhead.cpp).
template <class Body>
inline void par_for(std::int64_t work, std::int64_t n, Body&& body) {
  if (work >= kParallelMin && n > 1 && !in_parallel()) {
    parallel_ranges(n, max_threads(), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) body(i);
    });
  } else {
    for (std::int64_t i = 0; i < n; ++i) body(i);
  }
}

// --- strided iteration: all views share the shape of v[0]; the last axis is the inner loop
// inner(off, len, st) once per row: off[k] is view k's element offset of the row's
// first element, len the row's length (the last axis), st[k] view k's stride along it.
// A 0-d view is a single row of one element. Rows go onto threads for large views.
template <int NV, class Inner>
void for_each_row(const Strided* v[NV], Inner inner) {
  const Strided& s = *v[0];
  int nd = s.ndim;
  if (nd == 0) {
    std::int64_t off[NV] = {};
    std::int64_t st[NV] = {};
    inner(off, 1, st);
    return;
  }
  std::int64_t n_inner = s.shape[nd - 1];
  std::int64_t rows = s.numel() / std::max<std::int64_t>(n_inner, 1);
  std::int64_t st[NV];
  for (int k = 0; k < NV; ++k) st[k] = v[k]->strides[nd - 1];
  auto body = [&](std::int64_t r) {
    std::int64_t off[NV] = {};
    std::int64_t rem = r;
    for (int d = nd - 2; d >= 0; --d) {
      std::int64_t i = rem % s.shape[d];
      rem /= s.shape[d];
      for (int k = 0; k < NV; ++k) off[k] += i * v[k]->strides[d];
    }
    inner(off, n_inner, st);
  };
  par_for(rows * n_inner, rows, body);
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
