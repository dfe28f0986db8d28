// dezero/gpu/launch.cuh - what the kernel files of the CUDA backend share
// (internal; included by the *.cu files only): the launch geometry, the grid-stride
// loop, strided views, atomics, and warp / block reductions.
//
// Everything here sits in an anonymous namespace, as it did when the backend was one
// file: each .cu file gets its own copy of these helpers and of the kernels it
// instantiates from them, so no kernel has external linkage. DEZERO_LAUNCH uses
// 256-thread blocks and at most 2^20 of them; a grid-stride loop covers the rest, so
// one launch handles any n. The launchers that use all this are declared in
// detail/launchers.hpp.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/check.hpp"

namespace dezero::detail {

namespace {

using i64 = std::int64_t;

// --- launch geometry, the grid-stride loop -----------------------------------------------
constexpr int kBlock = 256;

inline unsigned blocks_for(i64 n, int block = kBlock) {
  i64 b = (n + block - 1) / block;
  return static_cast<unsigned>(std::max<i64>(1, std::min<i64>(b, i64(1) << 20)));  // grid-stride loops do the rest
}

// for (i = this thread's global index; i < n; i += every thread of the grid)
#define DEZERO_GRID_LOOP(i, n)                                                    \
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<i64>(blockDim.x) * gridDim.x)

// Warp-per-row launch: 8 warps per block.
inline unsigned warp_blocks_for(i64 rows) { return blocks_for(rows * 32); }

// Launch helper: n elements, grid-stride kernels.
#define DEZERO_LAUNCH(kernel, n, stream, ...)                                          \
  do {                                                                                 \
    if ((n) > 0) {                                                                     \
      kernel<<<blocks_for(n), kBlock, 0, stream>>>(__VA_ARGS__);                       \
      DEZERO_CUDA_CHECK_LAUNCH();                                                      \
    }                                                                                  \
  } while (0)

// --- strided views: K views sharing the iteration shape of view 0 --------------------
template <int K>
struct Views {
  int ndim;
  i64 shape[kMaxDims];
  i64 strides[K][kMaxDims];
};

template <int K>
Views<K> make_views(const Strided* const (&v)[K]) {
  Views<K> r{};
  r.ndim = v[0]->ndim;
  for (int d = 0; d < r.ndim; ++d) {
    r.shape[d] = v[0]->shape[d];
    for (int k = 0; k < K; ++k) r.strides[k][d] = v[k]->strides[d];
  }
  return r;
}

// Element offsets of linear index i (row-major over the shape) in each view.
template <int K>
__device__ __forceinline__ void view_offsets(const Views<K>& v, i64 i, i64 (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = 0;
  for (int d = v.ndim - 1; d >= 0; --d) {
    i64 ext = v.shape[d];
    i64 q = i / ext;
    i64 r = i - q * ext;
    i = q;
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += r * v.strides[k][d];
  }
}

// --- atomics ------------------------------------------------------------------------------
__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }  // sm_60+
__device__ __forceinline__ void atomic_add(std::int32_t* p, std::int32_t v) { atomicAdd(reinterpret_cast<int*>(p), v); }
__device__ __forceinline__ void atomic_add(std::int64_t* p, std::int64_t v) {
  // two's complement: adding as unsigned 64-bit gives the signed sum
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// --- reductions: identity, combine (NaN propagates for max/min), warp and block ----------
// The identities are NumPy's: 0 for sum, -inf / +inf for a floating max / min (so the
// max of an all -inf row is -inf), the lowest / highest value for an integer one.
template <class T>
__host__ __device__ __forceinline__ T red_identity(ReduceOp op);
#define DEZERO_IDENTITY(T, LO, HI)                                                     \
  template <>                                                                          \
  __host__ __device__ __forceinline__ T red_identity<T>(ReduceOp op) {                 \
    return op == ReduceOp::Sum ? T(0) : (op == ReduceOp::Max ? T(LO) : T(HI));         \
  }
DEZERO_IDENTITY(float, -INFINITY, INFINITY)
DEZERO_IDENTITY(double, -INFINITY, INFINITY)
DEZERO_IDENTITY(std::int32_t, INT_MIN, INT_MAX)
DEZERO_IDENTITY(std::int64_t, LLONG_MIN, LLONG_MAX)
#undef DEZERO_IDENTITY

template <class T>
__device__ __forceinline__ bool is_nan(T v) { return false; }
template <>
__device__ __forceinline__ bool is_nan<float>(float v) { return v != v; }
template <>
__device__ __forceinline__ bool is_nan<double>(double v) { return v != v; }

template <class T>
__device__ __forceinline__ T red_combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Max: return (a > b || is_nan(a)) ? a : b;
    case ReduceOp::Min: return (a < b || is_nan(a)) ? a : b;
  }
  return a;
}

__device__ __forceinline__ float shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ std::int32_t shfl_xor(std::int32_t v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ std::int64_t shfl_xor(std::int64_t v, int m) {
  return static_cast<std::int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(v), m));
}

// Every lane of a full warp gets the result.
template <class T>
__device__ __forceinline__ T warp_allreduce(ReduceOp op, T v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v = red_combine(op, v, shfl_xor(v, m));
  return v;
}

// Every thread of the block gets the result; blockDim.x is a multiple of 32 (<= 1024).
// All threads of the block must call it (it synchronises).
template <class T>
__device__ T block_allreduce(ReduceOp op, T v) {
  __shared__ __align__(8) unsigned char raw[32 * sizeof(T)];
  T* sm = reinterpret_cast<T*>(raw);
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_allreduce(op, v);
  __syncthreads();  // an earlier call's readers are done with sm
  if (lane == 0) sm[wid] = v;
  __syncthreads();
  T r = lane < nw ? sm[lane] : red_identity<T>(op);
  return warp_allreduce(op, r);
}

// --- the kernel two families launch ------------------------------------------------------
// fill (memory.cu) and the identity of an empty reduction (reduce.cu).
template <class T>
__global__ void fill_kernel(T* p, i64 n, T v) {
  DEZERO_GRID_LOOP(i, n) p[i] = v;
}

}  // namespace

}  // namespace dezero::detail
