// dezero/gpu/pool.cu - max pooling on a CUDA device: forward with each window's
// argmax, its backward and the gather that is the backward's own backward (DeZero's
// Pooling, Pooling2DGrad, Pooling2DWithIndexes; the last runs on the device here,
// where DeZero's used NumPy's arange on CuPy arrays and failed); and average pooling.
// cuDNN (cudnn_pool.cpp) takes unpadded max pooling and most average pooling first
// (Backend's library_* entry points).
//
// Twin of cpu/pool.cpp, with the same semantics: zero padding, idx = i * kw + j of the
// first max; a NaN anywhere in a window makes its max NaN and idx its first NaN (NumPy's
// max and argmax over DeZero's im2col), so the window's gradient goes to that NaN.
// forward and gather: one thread per output element; backward: one thread per input
// pixel, gathering from the windows that cover it (Chainer's max_pooling_2d backward), so
// no atomics. Also the two kernels that give cuDNN's max-pooling backward the same NaN rule
// (max_pool_nan_mask, max_pool_nan_route; cudnn_pool.cpp). Runs on the current stream.
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

template <class T>
__global__ void max_pool_forward_kernel(const T* x, T* y, i64* idx, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    i64 ox = t % g.ow, r = t / g.ow;
    i64 oy = r % g.oh, plane = r / g.oh;
    const T* p = x + plane * g.h * g.w;
    T best = 0;
    i64 arg = -1;
    for (i64 i = 0; i < g.kh; ++i) {
      i64 iy = oy * g.sh - g.ph + i;
      bool row_in = iy >= 0 && iy < g.h;
      for (i64 j = 0; j < g.kw; ++j) {
        i64 ix = ox * g.sw - g.pw + j;
        T v = (row_in && ix >= 0 && ix < g.w) ? p[iy * g.w + ix] : T(0);
        // the first max, or the first NaN (v != v), which no later value replaces
        if (arg < 0 || v > best || (v != v && best == best)) {
          best = v;
          arg = i * g.kw + j;
        }
      }
    }
    y[t] = best;
    idx[t] = arg;
  }
}

// The windows that cover input pixel t of (n, c, h, w): rows [oy0, oy1) and columns
// [ox0, ox1) of its plane's output, which starts at `base`; (py, px) is the pixel in
// padded coordinates. The backward kernels gather over these, one thread per pixel.
struct Cover {
  i64 py, px, base, oy0, oy1, ox0, ox1;
};
__device__ __forceinline__ Cover cover(i64 t, const ConvGeom& g) {
  Cover c;
  c.px = t % g.w + g.pw;
  i64 r = t / g.w;
  c.py = r % g.h + g.ph;
  c.base = (r / g.h) * g.oh * g.ow;
  c.oy0 = c.py >= g.kh ? (c.py - g.kh) / g.sh + 1 : 0;
  c.oy1 = c.py / g.sh + 1 < g.oh ? c.py / g.sh + 1 : g.oh;
  c.ox0 = c.px >= g.kw ? (c.px - g.kw) / g.sw + 1 : 0;
  c.ox1 = c.px / g.sw + 1 < g.ow ? c.px / g.sw + 1 : g.ow;
  return c;
}

template <class T>
__global__ void max_pool_backward_kernel(const T* gy, const i64* idx, T* gx, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    Cover c = cover(t, g);
    T v = 0;
    for (i64 oy = c.oy0; oy < c.oy1; ++oy)
      for (i64 ox = c.ox0; ox < c.ox1; ++ox) {
        i64 o = c.base + oy * g.ow + ox;
        if (idx[o] == (c.py - oy * g.sh) * g.kw + (c.px - ox * g.sw)) v += gy[o];
      }
    gx[t] = v;
  }
}

template <class T>
__global__ void max_pool_gather_kernel(const T* x, const i64* idx, T* y, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    i64 ox = t % g.ow, r = t / g.ow;
    i64 oy = r % g.oh, plane = r / g.oh;
    i64 k = idx[t];
    i64 iy = oy * g.sh - g.ph + k / g.kw, ix = ox * g.sw - g.pw + k % g.kw;
    y[t] = (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? x[(plane * g.h + iy) * g.w + ix] : T(0);
  }
}

// --- the NaN rule for cuDNN's max-pooling backward (cudnn_pool.cpp) --------------------------
// out (n, c, oh, ow) = gy where y is a number, 0 where y is NaN: what cuDNN's backward is
// given, so that a NaN window sends it nothing, however cuDNN routes NaN windows.
template <class T>
__global__ void max_pool_nan_mask_kernel(const T* y, const T* gy, T* out, i64 total) {
  DEZERO_GRID_LOOP(t, total) { out[t] = y[t] != y[t] ? T(0) : gy[t]; }
}

// The position i * kw + j of the first NaN in window (oy, ox) of plane p (of x (h, w)), -1
// when there is none (the padding reads 0, never NaN).
template <class T>
__device__ i64 first_nan(const T* p, i64 oy, i64 ox, const ConvGeom& g) {
  for (i64 i = 0; i < g.kh; ++i) {
    i64 iy = oy * g.sh - g.ph + i;
    if (iy < 0 || iy >= g.h) continue;
    for (i64 j = 0; j < g.kw; ++j) {
      i64 ix = ox * g.sw - g.pw + j;
      if (ix >= 0 && ix < g.w && p[iy * g.w + ix] != p[iy * g.w + ix]) return i * g.kw + j;
    }
  }
  return -1;
}

// gx (n, c, h, w) += gy of every window that covers the pixel, has a NaN y and whose first
// NaN is that pixel: the indexed backward's rule for NaN windows, one thread per pixel.
template <class T>
__global__ void max_pool_nan_route_kernel(const T* x, const T* y, const T* gy, T* gx, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    Cover c = cover(t, g);
    const T* p = x + (t / (g.h * g.w)) * g.h * g.w;
    T v = 0;
    bool any = false;
    for (i64 oy = c.oy0; oy < c.oy1; ++oy)
      for (i64 ox = c.ox0; ox < c.ox1; ++ox) {
        i64 o = c.base + oy * g.ow + ox;
        if (y[o] == y[o]) continue;
        if (first_nan(p, oy, ox, g) == (c.py - oy * g.sh) * g.kw + (c.px - ox * g.sw)) {
          v += gy[o];
          any = true;
        }
      }
    if (any) gx[t] += v;
  }
}

// Average pooling, the padded zeros counted (every window divides by kh * kw): the
// fallback where cuDNN does not take the case, or the library path is off (cudnn_pool.cpp). Forward: one thread per
// output element; backward: one thread per input pixel, summing gy / (kh * kw) over the
// windows that cover it (cover(), as max_pool_backward_kernel).
template <class T>
__global__ void avg_pool_forward_kernel(const T* x, T* y, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    i64 ox = t % g.ow, r = t / g.ow;
    i64 oy = r % g.oh, plane = r / g.oh;
    const T* p = x + plane * g.h * g.w;
    T acc = 0;
    for (i64 i = 0; i < g.kh; ++i) {
      i64 iy = oy * g.sh - g.ph + i;
      if (iy < 0 || iy >= g.h) continue;
      for (i64 j = 0; j < g.kw; ++j) {
        i64 ix = ox * g.sw - g.pw + j;
        if (ix >= 0 && ix < g.w) acc += p[iy * g.w + ix];
      }
    }
    y[t] = acc / T(g.kh * g.kw);
  }
}

template <class T>
__global__ void avg_pool_backward_kernel(const T* gy, T* gx, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    Cover c = cover(t, g);
    T v = 0;
    for (i64 oy = c.oy0; oy < c.oy1; ++oy)
      for (i64 ox = c.ox0; ox < c.ox1; ++ox) v += gy[c.base + oy * g.ow + ox];
    gx[t] = v / T(g.kh * g.kw);
  }
}

}  // namespace

namespace gpu {

void max_pool_forward(int device, DType dt, const void* x, void* y, std::int64_t* idx, const ConvGeom& g) {
  i64 total = g.n * g.c * g.oh * g.ow;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(max_pool_forward_kernel<float>, total, s, static_cast<const float*>(x), static_cast<float*>(y), idx,
                  g, total);
  else
    DEZERO_LAUNCH(max_pool_forward_kernel<double>, total, s, static_cast<const double*>(x), static_cast<double*>(y),
                  idx, g, total);
}

void max_pool_backward(int device, DType dt, const void* gy, const std::int64_t* idx, void* gx, const ConvGeom& g) {
  i64 total = g.n * g.c * g.h * g.w;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(max_pool_backward_kernel<float>, total, s, static_cast<const float*>(gy), idx,
                  static_cast<float*>(gx), g, total);
  else
    DEZERO_LAUNCH(max_pool_backward_kernel<double>, total, s, static_cast<const double*>(gy), idx,
                  static_cast<double*>(gx), g, total);
}

void max_pool_gather(int device, DType dt, const void* x, const std::int64_t* idx, void* y, const ConvGeom& g) {
  i64 total = g.n * g.c * g.oh * g.ow;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(max_pool_gather_kernel<float>, total, s, static_cast<const float*>(x), idx, static_cast<float*>(y), g,
                  total);
  else
    DEZERO_LAUNCH(max_pool_gather_kernel<double>, total, s, static_cast<const double*>(x), idx,
                  static_cast<double*>(y), g, total);
}

void max_pool_nan_mask(int device, DType dt, const void* y, const void* gy, void* out, std::int64_t n) {
  if (n <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(max_pool_nan_mask_kernel<float>, n, s, static_cast<const float*>(y), static_cast<const float*>(gy),
                  static_cast<float*>(out), n);
  else
    DEZERO_LAUNCH(max_pool_nan_mask_kernel<double>, n, s, static_cast<const double*>(y),
                  static_cast<const double*>(gy), static_cast<double*>(out), n);
}

void max_pool_nan_route(int device, DType dt, const void* x, const void* y, const void* gy, void* gx,
                        const ConvGeom& g) {
  i64 total = g.n * g.c * g.h * g.w;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(max_pool_nan_route_kernel<float>, total, s, static_cast<const float*>(x),
                  static_cast<const float*>(y), static_cast<const float*>(gy), static_cast<float*>(gx), g, total);
  else
    DEZERO_LAUNCH(max_pool_nan_route_kernel<double>, total, s, static_cast<const double*>(x),
                  static_cast<const double*>(y), static_cast<const double*>(gy), static_cast<double*>(gx), g, total);
}

void avg_pool_forward(int device, DType dt, const void* x, void* y, const ConvGeom& g) {
  i64 total = g.n * g.c * g.oh * g.ow;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(avg_pool_forward_kernel<float>, total, s, static_cast<const float*>(x), static_cast<float*>(y), g,
                  total);
  else
    DEZERO_LAUNCH(avg_pool_forward_kernel<double>, total, s, static_cast<const double*>(x), static_cast<double*>(y),
                  g, total);
}

void avg_pool_backward(int device, DType dt, const void* gy, void* gx, const ConvGeom& g) {
  i64 total = g.n * g.c * g.h * g.w;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(avg_pool_backward_kernel<float>, total, s, static_cast<const float*>(gy), static_cast<float*>(gx),
                  g, total);
  else
    DEZERO_LAUNCH(avg_pool_backward_kernel<double>, total, s, static_cast<const double*>(gy),
                  static_cast<double*>(gx), g, total);
}

}  // namespace gpu
}  // namespace dezero::detail
