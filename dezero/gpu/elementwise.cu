// dezero/gpu/elementwise.cu - the element-wise kernels of the CUDA backend and their
// launchers: cast, unary, binary (with broadcasting), where, copy_strided.
//
// Twin of cpu/elementwise.cpp, with the same element math (unary_apply, binary_apply
// of backend/ops.hpp are __host__ __device__). Ops are chosen by a runtime switch
// inside one kernel per dtype (the switch is uniform across a launch, so it costs a
// few instructions per element and keeps compile time small). binary takes a flat
// path for a 0-d or contiguous 1-d output whose operands are contiguous or a single
// broadcast element; the rest of binary, where and copy_strided use strided views.
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/backend/ops.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

template <class S, class D>
__global__ void cast_kernel(const S* x, D* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = static_cast<D>(x[i]);
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, i64 n, T a) {
  DEZERO_GRID_LOOP(i, n) y[i] = kernels::unary_apply<T>(op, x[i], a);
}

// mode 0: a[i], b[i]; 1: a[i], b[0]; 2: a[0], b[i]; 3: general strided views (y, a, b).
template <class T>
__global__ void binary_kernel(BinaryOp op, int mode, const T* a, const T* b, T* y, i64 n, Views<3> v) {
  DEZERO_GRID_LOOP(i, n) {
    T x, z;
    i64 oy = i;
    if (mode == 0) {
      x = a[i];
      z = b[i];
    } else if (mode == 1) {
      x = a[i];
      z = b[0];
    } else if (mode == 2) {
      x = a[0];
      z = b[i];
    } else {
      i64 off[3];
      view_offsets(v, i, off);
      oy = off[0];
      x = a[off[1]];
      z = b[off[2]];
    }
    y[oy] = kernels::binary_apply<T>(op, x, z);
  }
}

template <class T>
__global__ void where_kernel(const T* c, const T* a, const T* b, T* y, i64 n, Views<4> v) {
  DEZERO_GRID_LOOP(i, n) {
    i64 off[4];
    view_offsets(v, i, off);
    y[off[0]] = c[off[1]] != T(0) ? a[off[2]] : b[off[3]];
  }
}

// views: (dst, src)
template <class T>
__global__ void copy_strided_kernel(const T* src, T* dst, i64 n, Views<2> v, bool accumulate) {
  DEZERO_GRID_LOOP(i, n) {
    i64 off[2];
    view_offsets(v, i, off);
    if (accumulate) atomic_add(dst + off[0], src[off[1]]);
    else dst[off[0]] = src[off[1]];
  }
}

}  // namespace

namespace gpu {

void cast(int device, DType from, const void* x, DType to, void* y, std::int64_t n) {
  cd::ScopedDevice g(device);
  if (is_half(from) || is_half(to)) return cast_half(device, from, x, to, y, n);  // half.cu
  cudaStream_t s = cd::current_stream(device);
  DEZERO_DISPATCH(from, S, {
    DEZERO_DISPATCH(to, D, {
      auto kfn = cast_kernel<S, D>;
      DEZERO_LAUNCH(kfn, n, s, static_cast<const S*>(x), static_cast<D*>(y), n);
    })
  })
}

void unary(int device, UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha) {
  cd::ScopedDevice g(device);
  DEZERO_DISPATCH(dt, T,
                  DEZERO_LAUNCH(unary_kernel<T>, n, cd::current_stream(device), op, static_cast<const T*>(x),
                                static_cast<T*>(y), n, static_cast<T>(alpha)))
}

void binary(int device, BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb,
            void* y, const Strided& out) {
  cd::ScopedDevice g(device);
  i64 n = out.numel();
  int mode = 3;
  bool flat = out.ndim == 0 || (out.ndim == 1 && (out.strides[0] == 1 || out.shape[0] == 1));
  if (out.ndim == 0) {
    mode = 0;
  } else if (flat) {
    i64 s1 = out.shape[0] == 1 ? 1 : sa.strides[0], s2 = out.shape[0] == 1 ? 1 : sb.strides[0];
    if (s1 == 1 && s2 == 1) mode = 0;
    else if (s1 == 1 && s2 == 0) mode = 1;
    else if (s1 == 0 && s2 == 1) mode = 2;
  }
  const Strided* v[3] = {&out, &sa, &sb};
  Views<3> views = make_views<3>(v);
  DEZERO_DISPATCH(dt, T,
                  DEZERO_LAUNCH(binary_kernel<T>, n, cd::current_stream(device), op, mode, static_cast<const T*>(a),
                                static_cast<const T*>(b), static_cast<T*>(y), n, views))
}

void where(int device, DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
           const Strided& sb, void* y, const Strided& out) {
  cd::ScopedDevice g(device);
  i64 n = out.numel();
  const Strided* v[4] = {&out, &sc, &sa, &sb};
  Views<4> views = make_views<4>(v);
  DEZERO_DISPATCH(dt, T,
                  DEZERO_LAUNCH(where_kernel<T>, n, cd::current_stream(device), static_cast<const T*>(cond),
                                static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), n, views))
}

void copy_strided(int device, DType dt, const void* src, const Strided& s, void* dst, const Strided& d,
                  bool accumulate) {
  if (is_half(dt)) {  // moves only: tensor/ accumulates 16-bit gradients in float32
    if (accumulate) no_half_kernel("copy_strided (accumulate)", dt);
    return copy_strided_16(device, src, s, dst, d);  // half.cu
  }
  cd::ScopedDevice g(device);
  i64 n = d.numel();
  const Strided* v[2] = {&d, &s};
  Views<2> views = make_views<2>(v);
  DEZERO_DISPATCH(dt, T,
                  DEZERO_LAUNCH(copy_strided_kernel<T>, n, cd::current_stream(device), static_cast<const T*>(src),
                                static_cast<T*>(dst), n, views, accumulate))
}

}  // namespace gpu

}  // namespace dezero::detail
