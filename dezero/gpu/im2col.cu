// dezero/gpu/im2col.cu - im2col and col2im on a CUDA device (DeZero's _im2col_gpu /
// _col2im_gpu, ported from Chainer's utils/conv.py elementwise kernels; step 57).
//
//   im2col: x (n, c, h, w) -> col (n, c, kh, kw, oh, ow), one thread per col element,
//           col[n, c, i, j, y, x] = x[n, c, y*sh - ph + i, x*sw - pw + j] (0 in the padding)
//   col2im: col -> x (n, c, h, w), one thread per pixel gathering every col element
//           that reads it, so no atomics and a deterministic sum
//
// Twin of cpu/im2col.cpp. Runs on the calling thread's current stream of the device.
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

template <class T>
__global__ void im2col_kernel(const T* x, T* col, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    i64 ox = t % g.ow;
    i64 r = t / g.ow;
    i64 oy = r % g.oh;
    r /= g.oh;
    i64 j = r % g.kw;
    r /= g.kw;
    i64 i = r % g.kh;
    i64 plane = r / g.kh;  // n * c + c
    i64 iy = oy * g.sh - g.ph + i, ix = ox * g.sw - g.pw + j;
    col[t] = (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? x[(plane * g.h + iy) * g.w + ix] : T(0);
  }
}

template <class T>
__global__ void col2im_kernel(const T* col, T* x, ConvGeom g, i64 total) {
  DEZERO_GRID_LOOP(t, total) {
    i64 px = t % g.w + g.pw;  // the pixel's coordinates in the padded image
    i64 r = t / g.w;
    i64 py = r % g.h + g.ph;
    i64 plane = r / g.h;
    // windows oy with 0 <= py - oy*sh < kh
    i64 oy0 = py >= g.kh ? (py - g.kh) / g.sh + 1 : 0;
    i64 oy1 = py / g.sh + 1 < g.oh ? py / g.sh + 1 : g.oh;
    i64 ox0 = px >= g.kw ? (px - g.kw) / g.sw + 1 : 0;
    i64 ox1 = px / g.sw + 1 < g.ow ? px / g.sw + 1 : g.ow;
    const T* base = col + plane * g.kh * g.kw * g.oh * g.ow;
    T v = 0;
    for (i64 oy = oy0; oy < oy1; ++oy) {
      i64 i = py - oy * g.sh;
      for (i64 ox = ox0; ox < ox1; ++ox) {
        i64 j = px - ox * g.sw;
        v += base[((i * g.kw + j) * g.oh + oy) * g.ow + ox];
      }
    }
    x[t] = v;
  }
}

}  // namespace

namespace gpu {

void im2col(int device, DType dt, const void* x, void* col, const ConvGeom& g) {
  i64 total = g.n * g.c * g.kh * g.kw * g.oh * g.ow;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(im2col_kernel<float>, total, s, static_cast<const float*>(x), static_cast<float*>(col), g, total);
  else
    DEZERO_LAUNCH(im2col_kernel<double>, total, s, static_cast<const double*>(x), static_cast<double*>(col), g,
                  total);
}

void col2im(int device, DType dt, const void* col, void* x, const ConvGeom& g) {
  i64 total = g.n * g.c * g.h * g.w;
  if (total <= 0) return;
  cd::ScopedDevice guard(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(col2im_kernel<float>, total, s, static_cast<const float*>(col), static_cast<float*>(x), g, total);
  else
    DEZERO_LAUNCH(col2im_kernel<double>, total, s, static_cast<const double*>(col), static_cast<double*>(x), g,
                  total);
}

}  // namespace gpu
}  // namespace dezero::detail
