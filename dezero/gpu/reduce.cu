// dezero/gpu/reduce.cu - the reduction kernels of the CUDA backend and their
// launchers: sum / max / min over the middle axis of (outer, r, inner), argmax / argmin.
//
// Twin of cpu/reduce.cpp. Contiguous rows (inner == 1) are reduced by a warp per short
// row or a block per long one; strided columns (inner > 1) by a thread per output.
// When there are too few outputs to fill the GPU, the reduced axis is split into
// chunks whose partial results are reduced again (reduce_typed). max and min start
// from -inf / +inf (integers: their lowest / highest value) and propagate NaN
// (red_identity, red_combine in detail/launch.cuh); argmax / argmin give the index of
// the first NaN, as NumPy does.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

// x: (outer, r) -> y[o * splits + s] for the s-th chunk of each row; one block per (row, chunk).
template <class T>
__global__ void reduce_rows_kernel(ReduceOp op, const T* x, T* y, i64 outer, i64 r, i64 chunk, int splits) {
  int s = blockIdx.y;
  i64 begin = s * chunk, end = begin + chunk < r ? begin + chunk : r;
  for (i64 o = blockIdx.x; o < outer; o += gridDim.x) {
    const T* p = x + o * r;
    T acc = red_identity<T>(op);
    for (i64 i = begin + threadIdx.x; i < end; i += blockDim.x) acc = red_combine(op, acc, p[i]);
    acc = block_allreduce(op, acc);
    if (threadIdx.x == 0) y[o * splits + s] = acc;
  }
}

// x: (outer, r) with short rows: one warp per row.
template <class T>
__global__ void reduce_rows_warp_kernel(ReduceOp op, const T* x, T* y, i64 outer, i64 r) {
  i64 warp = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  i64 nwarps = (static_cast<i64>(gridDim.x) * blockDim.x) >> 5;
  int lane = threadIdx.x & 31;
  for (i64 o = warp; o < outer; o += nwarps) {
    const T* p = x + o * r;
    T acc = red_identity<T>(op);
    for (i64 i = lane; i < r; i += 32) acc = red_combine(op, acc, p[i]);
    acc = warp_allreduce(op, acc);
    if (lane == 0) y[o] = acc;
  }
}

// x: (outer, r, inner) -> y: (outer, splits, inner); one thread per (o, j), chunk blockIdx.y of r.
template <class T>
__global__ void reduce_cols_kernel(ReduceOp op, const T* x, T* y, i64 outer, i64 r, i64 inner, i64 chunk,
                                   int splits) {
  int s = blockIdx.y;
  i64 begin = s * chunk, end = begin + chunk < r ? begin + chunk : r;
  DEZERO_GRID_LOOP(t, outer * inner) {
    i64 o = t / inner, j = t - o * inner;
    const T* p = x + o * r * inner + j;
    T acc = red_identity<T>(op);
    for (i64 i = begin; i < end; ++i) acc = red_combine(op, acc, p[i * inner]);
    y[(o * splits + s) * inner + j] = acc;
  }
}

template <class T>
__global__ void arg_reduce_kernel(ArgReduceOp op, const T* x, i64* y, i64 outer, i64 r, i64 inner) {
  DEZERO_GRID_LOOP(t, outer * inner) {
    i64 o = t / inner, j = t - o * inner;
    const T* p = x + o * r * inner + j;
    i64 best = 0;
    T bv = p[0];
    for (i64 i = 1; i < r; ++i) {
      T v = p[i * inner];
      // NumPy: the first NaN wins; once bv is NaN nothing replaces it.
      if (!is_nan(bv) && (is_nan(v) || (op == ArgReduceOp::ArgMax ? v > bv : v < bv))) {
        bv = v;
        best = i;
      }
    }
    y[t] = best;
  }
}

template <class T>
void reduce_typed(int device, ReduceOp op, const T* x, T* y, i64 outer, i64 r, i64 inner) {
  if (outer <= 0 || inner <= 0) return;
  cudaStream_t s = cd::current_stream(device);
  if (r <= 0) {
    DEZERO_LAUNCH(fill_kernel<T>, outer * inner, s, y, outer * inner, red_identity<T>(op));
    return;
  }
  i64 sms = cd::sm_count(device);
  if (inner == 1) {
    i64 want = sms * 4;  // blocks that keep every SM busy
    int splits = 1;
    if (outer < want && r > 8192)
      splits = static_cast<int>(std::min<i64>({(want + outer - 1) / outer, (r + 4095) / 4096, 1024}));
    if (splits == 1 && r <= 512) {
      reduce_rows_warp_kernel<T><<<warp_blocks_for(outer), kBlock, 0, s>>>(op, x, y, outer, r);
      DEZERO_CUDA_CHECK_LAUNCH();
      return;
    }
    i64 chunk = (r + splits - 1) / splits;
    splits = static_cast<int>((r + chunk - 1) / chunk);
    dim3 grid(static_cast<unsigned>(std::min<i64>(outer, 65535)), static_cast<unsigned>(splits));
    if (splits == 1) {
      reduce_rows_kernel<T><<<grid, kBlock, 0, s>>>(op, x, y, outer, r, chunk, 1);
      DEZERO_CUDA_CHECK_LAUNCH();
      return;
    }
    cd::DeviceBuffer part(device, static_cast<std::size_t>(outer * splits) * sizeof(T), s);
    reduce_rows_kernel<T><<<grid, kBlock, 0, s>>>(op, x, part.as<T>(), outer, r, chunk, splits);
    DEZERO_CUDA_CHECK_LAUNCH();
    reduce_typed<T>(device, op, part.as<T>(), y, outer, splits, 1);
    return;
  }
  i64 threads = outer * inner, want = sms * 2048;
  int splits = 1;
  if (threads < want / 2 && r > 64)
    splits = static_cast<int>(std::min<i64>({(want + threads - 1) / threads, (r + 31) / 32, 1024}));
  i64 chunk = (r + splits - 1) / splits;
  splits = static_cast<int>((r + chunk - 1) / chunk);
  dim3 grid(blocks_for(threads), static_cast<unsigned>(splits));
  if (splits == 1) {
    reduce_cols_kernel<T><<<grid, kBlock, 0, s>>>(op, x, y, outer, r, inner, chunk, 1);
    DEZERO_CUDA_CHECK_LAUNCH();
    return;
  }
  cd::DeviceBuffer part(device, static_cast<std::size_t>(outer * splits * inner) * sizeof(T), s);
  reduce_cols_kernel<T><<<grid, kBlock, 0, s>>>(op, x, part.as<T>(), outer, r, inner, chunk, splits);
  DEZERO_CUDA_CHECK_LAUNCH();
  reduce_typed<T>(device, op, part.as<T>(), y, outer, splits, inner);
}

}  // namespace

namespace gpu {

void reduce(int device, ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
            std::int64_t inner) {
  cd::ScopedDevice g(device);
  DEZERO_DISPATCH(dt, T, reduce_typed<T>(device, op, static_cast<const T*>(x), static_cast<T*>(y), outer, r, inner))
}

void arg_reduce(int device, ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer,
                std::int64_t r, std::int64_t inner) {
  cd::ScopedDevice g(device);
  i64 n = outer * inner;
  if (r <= 0) return;
  DEZERO_DISPATCH(dt, T,
                  DEZERO_LAUNCH(arg_reduce_kernel<T>, n, cd::current_stream(device), op, static_cast<const T*>(x), y,
                                outer, r, inner))
}

}  // namespace gpu

}  // namespace dezero::detail
