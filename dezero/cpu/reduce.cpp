// dezero/cpu/reduce.cpp - the host backend's reductions: reduce (sum, max, min) and
// arg_reduce (argmax, argmin) over the middle axis of x viewed as (outer, r, inner),
// into y viewed as (outer, inner). inner == 1 (the last axis) folds one row per
// output (sum as an OpenMP SIMD reduction); otherwise column groups keep their running
// values in registers (reduce_cols), and blocks too large for L2 stream their rows
// through y. Large inputs split over threads (the pool, parallel.hpp) by outer, or, for a
// single outer, by column ranges. As on the GPU and in NumPy, max and min start from -inf / +inf
// (integers: their lowest / highest value) and a NaN anywhere gives NaN, in every
// layout (fold_max, fold_min); argmax / argmin give the index of the first NaN.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "dezero/backend/dispatch.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

// --- NaN-propagating folds and NumPy's identities -----------------------------------------
// acc is the running value, v the next element. v != v (v is NaN) takes the NaN, and a
// NaN acc is kept (NaN > v and NaN < v are false). Two compares and a blend: the column
// groups stay vectorised. For integers v != v is false and folds away.
template <class T>
inline T fold_max(T acc, T v) { return (v > acc || v != v) ? v : acc; }
template <class T>
inline T fold_min(T acc, T v) { return (v < acc || v != v) ? v : acc; }

template <class T>
T reduce_identity(ReduceOp op) {
  using L = std::numeric_limits<T>;
  if (op == ReduceOp::Sum) return T(0);
  if constexpr (L::has_infinity) return op == ReduceOp::Max ? -L::infinity() : L::infinity();
  return op == ReduceOp::Max ? L::lowest() : L::max();
}

// --- reduce ------------------------------------------------------------------------------
// y[j] = fold(x[0, j], x[1, j], ..., x[r-1, j]) for the columns j in [j0, j1) of an
// (r, inner) row-major block. The columns are taken W at a time with the W running
// values in registers (W: the largest power of two <= j1 - j0, at most 64); the last
// group is shifted left to end at j1 and recomputes a few columns instead of running a
// scalar tail. Each column is still folded in row order, as a loop over rows would.
// With the running values in y instead, every add would wait on the previous store:
// a Linear bias gradient ((100, 10) summed down to (10,)) would take ~5x the cycles.
// A group of W <= 32 floats is one or two vectors, so its r folds are one or two chains
// of dependent adds: such groups go through the rows two at a time (10 columns: [0, 8)
// and [2, 10) in one pass, two independent chains instead of two passes of one). The
// columns both groups hold get the same value from each.
template <class T, class Fold>
void reduce_cols(const T* x, T* y, std::int64_t r, std::int64_t inner, std::int64_t j0, std::int64_t j1, T init,
                 Fold fold) {
  auto columns = [&](auto width) {
    constexpr int W = decltype(width)::value;
    const std::int64_t groups = (j1 - j0 + W - 1) / W;
    auto start = [&](std::int64_t g) { return std::min(j0 + g * W, j1 - W); };
    std::int64_t g = 0;
    if constexpr (W * sizeof(T) <= 128) {
      for (; g + 2 <= groups; g += 2) {
        const std::int64_t ja = start(g), jb = start(g + 1);
        T acc[W], bcc[W];
        for (int c = 0; c < W; ++c) acc[c] = bcc[c] = init;
        // Row pointers stepped, not recomputed from i: with p[jb + c] GCC keeps the
        // second group in scalars.
        const T* pa = x + ja;
        const T* pb = x + jb;
        for (std::int64_t i = 0; i < r; ++i, pa += inner, pb += inner) {
#pragma omp simd
          for (int c = 0; c < W; ++c) acc[c] = fold(acc[c], pa[c]);
#pragma omp simd
          for (int c = 0; c < W; ++c) bcc[c] = fold(bcc[c], pb[c]);
        }
        for (int c = 0; c < W; ++c) y[ja + c] = acc[c];
        for (int c = 0; c < W; ++c) y[jb + c] = bcc[c];
      }
    }
    for (; g < groups; ++g) {
      const std::int64_t jj = start(g);
      T acc[W];
      for (int c = 0; c < W; ++c) acc[c] = init;
      for (std::int64_t i = 0; i < r; ++i) {
        const T* p = x + i * inner + jj;
        for (int c = 0; c < W; ++c) acc[c] = fold(acc[c], p[c]);
      }
      for (int c = 0; c < W; ++c) y[jj + c] = acc[c];
    }
  };
  const std::int64_t len = j1 - j0;
  if (len >= 64) columns(std::integral_constant<int, 64>{});
  else if (len >= 32) columns(std::integral_constant<int, 32>{});
  else if (len >= 16) columns(std::integral_constant<int, 16>{});
  else if (len >= 8) columns(std::integral_constant<int, 8>{});
  else if (len >= 4) columns(std::integral_constant<int, 4>{});
  else if (len >= 2) columns(std::integral_constant<int, 2>{});
  else if (len == 1) columns(std::integral_constant<int, 1>{});
}

template <class T>
void reduce_typed(ReduceOp op, const T* x, T* y, std::int64_t outer, std::int64_t r, std::int64_t inner) {
  auto init = [&]() -> T { return reduce_identity<T>(op); };
  if (inner == 1) {
    auto row = [&](std::int64_t o) {
      const T* p = x + o * r;
      T acc = init();
      if (op == ReduceOp::Sum) {
#pragma omp simd reduction(+ : acc)
        for (std::int64_t i = 0; i < r; ++i) acc += p[i];
      } else if (op == ReduceOp::Max) {
        for (std::int64_t i = 0; i < r; ++i) acc = fold_max(acc, p[i]);
      } else {
        for (std::int64_t i = 0; i < r; ++i) acc = fold_min(acc, p[i]);
      }
      y[o] = acc;
    };
    if (outer * r >= kReduceParallelMin && outer > 1 && !in_parallel()) {
      parallel_ranges(outer, max_threads(), [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t o = lo; o < hi; ++o) row(o);
      });
    } else {
      for (std::int64_t o = 0; o < outer; ++o) row(o);
    }
    return;
  }
  auto block = [&](std::int64_t o, std::int64_t j0, std::int64_t j1) {
    const T* xo = x + o * r * inner;
    T* yo = y + o * inner;
    if (inner > 64 && r * inner * std::int64_t(sizeof(T)) > (std::int64_t(1) << 19)) {
      // Too large for the column groups to stay in L2 between passes: stream the rows
      // with the running values in y, as the column groups would in the same row order.
      for (std::int64_t j = j0; j < j1; ++j) yo[j] = init();
      for (std::int64_t i = 0; i < r; ++i) {
        const T* p = xo + i * inner;
        if (op == ReduceOp::Sum) {
#pragma omp simd
          for (std::int64_t j = j0; j < j1; ++j) yo[j] += p[j];
        } else if (op == ReduceOp::Max) {
          for (std::int64_t j = j0; j < j1; ++j) yo[j] = fold_max(yo[j], p[j]);
        } else {
          for (std::int64_t j = j0; j < j1; ++j) yo[j] = fold_min(yo[j], p[j]);
        }
      }
    } else if (op == ReduceOp::Sum) {
      reduce_cols(xo, yo, r, inner, j0, j1, init(), [](T acc, T v) { return acc + v; });
    } else if (op == ReduceOp::Max) {
      reduce_cols(xo, yo, r, inner, j0, j1, init(), [](T acc, T v) { return fold_max(acc, v); });
    } else {
      reduce_cols(xo, yo, r, inner, j0, j1, init(), [](T acc, T v) { return fold_min(acc, v); });
    }
  };
  // Threads by measurement (bench/parallel_threshold.cpp, bench/README.md): blocks of rows pay
  // from 2^16 elements in all; one block split by columns pays only with wide rows that stay in
  // cache (each thread reads every row, so narrow rows or streamed ones lose: a (r, 16) sum is
  // slower on two threads at every size measured, a streamed (r, 256) one 1.5x slower).
  std::int64_t total = outer * r * inner;
  const bool streamed = r * inner * std::int64_t(sizeof(T)) > (std::int64_t(1) << 19);
  if (total >= kReduceParallelMin && outer > 1 && !in_parallel()) {
    parallel_ranges(outer, max_threads(), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t o = lo; o < hi; ++o) block(o, 0, inner);
    });
  } else if (total >= kReduceParallelMin && inner >= 512 && !streamed && !in_parallel()) {
    const int nt = max_threads();
    std::int64_t chunk = (inner + nt - 1) / nt;
    parallel_items(nt, nt, [&](std::int64_t t) {
      block(0, std::min(inner, t * chunk), std::min(inner, (t + 1) * chunk));
    });
  } else {
    for (std::int64_t o = 0; o < outer; ++o) block(o, 0, inner);
  }
}

// --- arg_reduce: the index of the first max (min) along r, or of the first NaN ----------
template <class T>
void arg_reduce_typed(ArgReduceOp op, const T* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                      std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < inner; ++j) {
      const T* p = x + o * r * inner + j;
      std::int64_t best = 0;
      T bv = p[0];
      for (std::int64_t i = 1; i < r; ++i) {
        T v = p[i * inner];
        // once bv is NaN nothing replaces it (bv == bv is false)
        if (bv == bv && (v != v || (op == ArgReduceOp::ArgMax ? v > bv : v < bv))) { bv = v; best = i; }
      }
      y[o * inner + j] = best;
    }
}

}  // namespace

// --- the reduction primitives --------------------------------------------------------------
void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r, std::int64_t inner) {
  DEZERO_DISPATCH(dt, T, reduce_typed<T>(op, static_cast<const T*>(x), static_cast<T*>(y), outer, r, inner))
}

void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                std::int64_t inner) {
  DEZERO_DISPATCH(dt, T, arg_reduce_typed<T>(op, static_cast<const T*>(x), y, outer, r, inner))
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
