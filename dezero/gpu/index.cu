// dezero/gpu/index.cu - the indexing kernels of the CUDA backend and their launchers:
// gather and scatter_add by int64 element offsets, gather_rows by int64 row indices.
//
// Twin of cpu/index.cpp. scatter_add adds with atomics, so repeated offsets
// accumulate (in an unspecified order for floating point).
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

template <class T>
__global__ void gather_kernel(const T* s, const i64* off, T* d, i64 n) {
  DEZERO_GRID_LOOP(i, n) d[i] = s[off[i]];
}

template <class T>
__global__ void scatter_add_kernel(const T* s, const i64* off, T* d, i64 n) {
  DEZERO_GRID_LOOP(i, n) atomic_add(d + off[i], s[i]);
}

template <class T>
__global__ void gather_rows_kernel(const T* s, const i64* idx, T* d, i64 rows, i64 cols) {
  DEZERO_GRID_LOOP(t, rows * cols) {
    i64 i = t / cols, c = t - i * cols;
    d[t] = s[idx[i] * cols + c];
  }
}

}  // namespace

namespace gpu {

void gather(int device, DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) {
  cd::ScopedDevice g(device);
  DEZERO_DISPATCH_BITS(dt, T,
                  DEZERO_LAUNCH(gather_kernel<T>, n, cd::current_stream(device), static_cast<const T*>(src), off,
                                static_cast<T*>(dst), n))
}

void scatter_add(int device, DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) {
  cd::ScopedDevice g(device);
  DEZERO_DISPATCH(dt, T,
                  DEZERO_LAUNCH(scatter_add_kernel<T>, n, cd::current_stream(device), static_cast<const T*>(src), off,
                                static_cast<T*>(dst), n))
}

void gather_rows(int device, DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                 std::int64_t cols) {
  cd::ScopedDevice g(device);
  i64 n = rows * cols;
  DEZERO_DISPATCH_BITS(dt, T,
                  DEZERO_LAUNCH(gather_rows_kernel<T>, n, cd::current_stream(device), static_cast<const T*>(src), idx,
                                static_cast<T*>(dst), rows, cols))
}

}  // namespace gpu

}  // namespace dezero::detail
