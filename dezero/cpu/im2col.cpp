// dezero/cpu/im2col.cpp - im2col and col2im on the host (DeZero's im2col_array /
// col2im_array, functions_conv.py; step 57): the layout change that turns a
// convolution into one GEMM per image.
//
//   im2col: x (n, c, h, w) -> col (n, c, kh, kw, oh, ow),
//           col[n, c, i, j, y, x] = x[n, c, y*sh - ph + i, x*sw - pw + j] (0 in the padding)
//   col2im: the adjoint, x[n, c, ., .] = sum of the col elements read from that pixel
//
// One (n, c) plane per work item on OpenMP threads (planes never share memory, so
// col2im needs no atomics); the rows of a stride-1 window are contiguous copies.
// Twin of cuda/im2col.cu, which runs one thread per col element (im2col) or per pixel
// (col2im) like Chainer's kernels.
#include <algorithm>
#include <cstring>

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {

namespace {

using i64 = std::int64_t;

// Output columns x whose input column x*s - p + j lies in [0, w): [lo, hi).
inline void valid_range(i64 ow, i64 s, i64 p, i64 j, i64 w, i64& lo, i64& hi) {
  // x*s - p + j >= 0  <=>  x >= ceil((p - j) / s);  x*s - p + j < w  <=>  x < ceil((w + p - j) / s)
  auto ceil_div = [](i64 a, i64 b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };
  lo = std::clamp<i64>(ceil_div(p - j, s), 0, ow);
  hi = std::clamp<i64>(ceil_div(w + p - j, s), lo, ow);
}

template <class T>
void im2col_plane(const T* x, T* col, const ConvGeom& g) {
  for (i64 i = 0; i < g.kh; ++i) {
    for (i64 j = 0; j < g.kw; ++j) {
      i64 lo, hi;
      valid_range(g.ow, g.sw, g.pw, j, g.w, lo, hi);
      for (i64 y = 0; y < g.oh; ++y, col += g.ow) {
        i64 iy = y * g.sh - g.ph + i;
        if (iy < 0 || iy >= g.h) {
          std::fill(col, col + g.ow, T(0));
          continue;
        }
        const T* row = x + iy * g.w - g.pw + j;  // row[xo * sw] is column xo's pixel
        std::fill(col, col + lo, T(0));
        if (g.sw == 1) std::copy(row + lo, row + hi, col + lo);
        else
          for (i64 xo = lo; xo < hi; ++xo) col[xo] = row[xo * g.sw];
        std::fill(col + hi, col + g.ow, T(0));
      }
    }
  }
}

template <class T>
void col2im_plane(const T* col, T* x, const ConvGeom& g) {
  std::fill(x, x + g.h * g.w, T(0));
  for (i64 i = 0; i < g.kh; ++i) {
    for (i64 j = 0; j < g.kw; ++j) {
      i64 lo, hi;
      valid_range(g.ow, g.sw, g.pw, j, g.w, lo, hi);
      for (i64 y = 0; y < g.oh; ++y, col += g.ow) {
        i64 iy = y * g.sh - g.ph + i;
        if (iy < 0 || iy >= g.h) continue;
        T* row = x + iy * g.w - g.pw + j;
        if (g.sw == 1)
          for (i64 xo = lo; xo < hi; ++xo) row[xo] += col[xo];
        else
          for (i64 xo = lo; xo < hi; ++xo) row[xo * g.sw] += col[xo];
      }
    }
  }
}

template <class T>
void im2col_typed(const T* x, T* col, const ConvGeom& g) {
  i64 planes = g.n * g.c, in = g.h * g.w, out = g.kh * g.kw * g.oh * g.ow;
  par_for(planes * out, planes, [&](i64 p) { im2col_plane(x + p * in, col + p * out, g); });
}

template <class T>
void col2im_typed(const T* col, T* x, const ConvGeom& g) {
  i64 planes = g.n * g.c, in = g.h * g.w, out = g.kh * g.kw * g.oh * g.ow;
  par_for(planes * out, planes, [&](i64 p) { col2im_plane(col + p * out, x + p * in, g); });
}

}  // namespace

void im2col(DType dt, const void* x, void* col, const ConvGeom& g) {
  if (dt == DType::Float32) im2col_typed(static_cast<const float*>(x), static_cast<float*>(col), g);
  else im2col_typed(static_cast<const double*>(x), static_cast<double*>(col), g);
}

void col2im(DType dt, const void* col, void* x, const ConvGeom& g) {
  if (dt == DType::Float32) col2im_typed(static_cast<const float*>(col), static_cast<float*>(x), g);
  else col2im_typed(static_cast<const double*>(col), static_cast<double*>(x), g);
}

}  // namespace dezero::detail::cpu
