// dezero/cpu/pool.cpp - max pooling on the host: forward with the argmax of each
// window, its backward (scatter of gy to the argmax) and the gather that is the
// backward's own backward (DeZero's Pooling, Pooling2DGrad, Pooling2DWithIndexes in
// functions_conv.py; step 57's pooling layer).
//
// Same results as DeZero's im2col + argmax without the (n, c, kh, kw, oh, ow) col:
// zero padding (a window that touches the padding has a max of at least 0; Chainer
// pads with -inf instead), idx = i * kw + j of the first max. One (n, c) plane per
// work item on OpenMP threads. Twin of cuda/pool.cu.
#include <algorithm>

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {

namespace {

using i64 = std::int64_t;

// float32 or float64 (the only dtypes tensor/ lets through): T bound in the body.
#define DEZERO_FLOAT_PLANES(DT, T, ...) \
  if ((DT) == DType::Float32) {         \
    using T = float;                    \
    __VA_ARGS__;                        \
  } else {                              \
    using T = double;                   \
    __VA_ARGS__;                        \
  }

// The window's max and its position, every position inside the image: no bounds
// checks, and selects instead of branches (the argmax of random data is unpredictable).
template <class T>
inline void window_max_inside(const T* base, i64 w, i64 kh, i64 kw, T& best, i64& arg) {
  best = base[0];
  arg = 0;
  for (i64 i = 0; i < kh; ++i)
    for (i64 j = 0; j < kw; ++j) {
      T v = base[i * w + j];
      bool gt = v > best;
      best = gt ? v : best;
      arg = gt ? i * kw + j : arg;
    }
}

template <class T>
void forward_plane(const T* x, T* y, i64* idx, const ConvGeom& g) {
  for (i64 oy = 0; oy < g.oh; ++oy) {
    i64 iy0 = oy * g.sh - g.ph;
    bool rows_in = iy0 >= 0 && iy0 + g.kh <= g.h;
    for (i64 ox = 0; ox < g.ow; ++ox) {
      i64 ix0 = ox * g.sw - g.pw;
      T best;
      i64 arg;
      if (rows_in && ix0 >= 0 && ix0 + g.kw <= g.w) {
        window_max_inside(x + iy0 * g.w + ix0, g.w, g.kh, g.kw, best, arg);
      } else {  // the window touches the padding, which reads as 0
        best = T(0);
        arg = -1;
        for (i64 i = 0; i < g.kh; ++i) {
          i64 iy = iy0 + i;
          bool row_in = iy >= 0 && iy < g.h;
          for (i64 j = 0; j < g.kw; ++j) {
            i64 ix = ix0 + j;
            T v = (row_in && ix >= 0 && ix < g.w) ? x[iy * g.w + ix] : T(0);
            if (arg < 0 || v > best) {
              best = v;
              arg = i * g.kw + j;
            }
          }
        }
      }
      y[oy * g.ow + ox] = best;
      idx[oy * g.ow + ox] = arg;
    }
  }
}

// The input offset of window (oy, ox)'s position k, or -1 when it is in the padding.
inline i64 source_of(i64 oy, i64 ox, i64 k, const ConvGeom& g) {
  i64 iy = oy * g.sh - g.ph + k / g.kw, ix = ox * g.sw - g.pw + k % g.kw;
  return (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? iy * g.w + ix : -1;
}

template <class T>
void backward_plane(const T* gy, const i64* idx, T* gx, const ConvGeom& g) {
  std::fill(gx, gx + g.h * g.w, T(0));
  for (i64 oy = 0; oy < g.oh; ++oy)
    for (i64 ox = 0; ox < g.ow; ++ox) {
      i64 src = source_of(oy, ox, idx[oy * g.ow + ox], g);
      if (src >= 0) gx[src] += gy[oy * g.ow + ox];
    }
}

template <class T>
void gather_plane(const T* x, const i64* idx, T* y, const ConvGeom& g) {
  for (i64 oy = 0; oy < g.oh; ++oy)
    for (i64 ox = 0; ox < g.ow; ++ox) {
      i64 src = source_of(oy, ox, idx[oy * g.ow + ox], g);
      y[oy * g.ow + ox] = src >= 0 ? x[src] : T(0);
    }
}

template <class Body>
void each_plane(const ConvGeom& g, Body body) {
  i64 planes = g.n * g.c;
  par_for(planes * g.oh * g.ow * g.kh * g.kw, planes, body);
}

}  // namespace

void max_pool_forward(DType dt, const void* x, void* y, std::int64_t* idx, const ConvGeom& g) {
  i64 in = g.h * g.w, out = g.oh * g.ow;
  DEZERO_FLOAT_PLANES(dt, T, each_plane(g, [&](i64 p) {
    forward_plane(static_cast<const T*>(x) + p * in, static_cast<T*>(y) + p * out, idx + p * out, g);
  }))
}

void max_pool_backward(DType dt, const void* gy, const std::int64_t* idx, void* gx, const ConvGeom& g) {
  i64 in = g.h * g.w, out = g.oh * g.ow;
  DEZERO_FLOAT_PLANES(dt, T, each_plane(g, [&](i64 p) {
    backward_plane(static_cast<const T*>(gy) + p * out, idx + p * out, static_cast<T*>(gx) + p * in, g);
  }))
}

void max_pool_gather(DType dt, const void* x, const std::int64_t* idx, void* y, const ConvGeom& g) {
  i64 in = g.h * g.w, out = g.oh * g.ow;
  DEZERO_FLOAT_PLANES(dt, T, each_plane(g, [&](i64 p) {
    gather_plane(static_cast<const T*>(x) + p * in, idx + p * out, static_cast<T*>(y) + p * out, g);
  }))
}

}  // namespace dezero::detail::cpu
