// dezero/cpu/im2col.cpp - im2col and col2im on the host (DeZero's im2col_array /
// col2im_array, functions_conv.py; step 57): the layout change that turns a
// convolution into one GEMM per image.
//
//   im2col: x (n, c, h, w) -> col (n, c, kh, kw, oh, ow),
//           col[n, c, i, j, y, x] = x[n, c, y*sh - ph + i, x*sw - pw + j] (0 in the padding)
//   col2im: the adjoint, x[n, c, ., .] = sum of the col elements read from that pixel
//
// One (n, c) plane per work item on the pool's threads (planes never share memory, so
// col2im needs no atomics); the rows of a stride-1 window are contiguous copies (and
// additions), float32 ones in masked AVX-512 steps.
// Twin of cuda/im2col.cu, which runs one thread per col element (im2col) or per pixel
// (col2im) like Chainer's kernels.
//
// Also the host's three convolution products (LibraryKernels::conv2d_forward, _backward_data,
// _backward_filter), built on the same plane loops: one image at a time per thread,
// its col (c kh kw, oh ow) in a per-thread buffer that stays in cache between the
// im2col and the GEMM (gemm.cpp: our AVX-512 sgemm for float32, Eigen for float64),
// instead of a whole batch's col written to memory and read back:
//   forward: y[i] = W (oc, c kh kw) @ col[i] + b       data: col2im(W^T @ gy[i])
//   filter:  gW = sum_i gy[i] @ col[i]^T, one partial sum per thread, added in thread order
// (where oc >= 32, forward and filter compute the transposed products, whose shapes
// suit the sgemm's register tiles, and transpose the small results). A grouped
// convolution (g.groups G, W (oc, c/G, kh, kw)) runs one product per group on its slice
// of the image's col (rows [j c/G kh kw, (j+1) c/G kh kw)) and of W, y and gy (rows
// [j oc/G, (j+1) oc/G)); the test for the transposed products is then oc/G >= 32.
#include <algorithm>
#include <atomic>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

using i64 = std::int64_t;

template <class T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
}

// Output columns x whose input column x*s - p + j lies in [0, w): [lo, hi).
inline void valid_range(i64 ow, i64 s, i64 p, i64 j, i64 w, i64& lo, i64& hi) {
  // x*s - p + j >= 0  <=>  x >= ceil((p - j) / s);  x*s - p + j < w  <=>  x < ceil((w + p - j) / s)
  auto ceil_div = [](i64 a, i64 b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };
  lo = std::clamp<i64>(ceil_div(p - j, s), 0, ow);
  hi = std::clamp<i64>(ceil_div(w + p - j, s), lo, ow);
}

// dst[0, n) = src[0, n) and dst[0, n) += src[0, n) for the short rows of a CNN's images
// (14 or 28 elements: too short for the compiler's 16-wide loops, which leave them to
// scalar code, and for a memmove call): float32 in masked AVX-512 steps.
template <class T>
inline void copy_row(T* dst, const T* src, i64 n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    for (i64 i = 0; i < n; i += 16) {
      __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
      _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
    }
    return;
  }
#endif
  std::copy(src, src + n, dst);
}
template <class T>
inline void add_row(T* dst, const T* src, i64 n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    for (i64 i = 0; i < n; i += 16) {
      __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
      __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst + i), _mm512_maskz_loadu_ps(m, src + i));
      _mm512_mask_storeu_ps(dst + i, m, sum);
    }
    return;
  }
#endif
  for (i64 i = 0; i < n; ++i) dst[i] += src[i];
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
        if (g.sw == 1) copy_row(col + lo, row + lo, hi - lo);
        else
          for (i64 xo = lo; xo < hi; ++xo) col[xo] = row[xo * g.sw];
        std::fill(col + hi, col + g.ow, T(0));
      }
    }
  }
}

#if defined(__AVX512F__)
// col2im of a float32 plane for horizontal stride 1, gathering: each image row iy gets,
// per window row i, the sum over j of the col rows (i, j) shifted by j, added in
// registers and written once. (Scattering row by row, col2im_plane's order, makes
// every j re-read the row that j - 1 has just written with a masked store, which the
// CPU cannot forward: a stall per row.)
void col2im_plane_sw1(const float* col, float* x, const ConvGeom& g) {
  std::fill(x, x + g.h * g.w, 0.f);
  i64 ohw = g.oh * g.ow;
  for (i64 i = 0; i < g.kh; ++i)
    for (i64 y = 0; y < g.oh; ++y) {
      i64 iy = y * g.sh - g.ph + i;
      if (iy < 0 || iy >= g.h) continue;
      float* r = x + iy * g.w;
      const float* c0 = col + (i * g.kw * g.oh + y) * g.ow;  // col row (i, 0, y)
      for (i64 x0 = 0; x0 < g.w; x0 += 16) {
        // lane l is pixel x0 + l; from col row j it takes element xo = x0 + l + pw - j
        __m512 acc = _mm512_setzero_ps();
        for (i64 j = 0; j < g.kw; ++j) {
          i64 off = x0 + g.pw - j;                                   // xo of lane 0
          i64 l0 = std::max<i64>(0, -off), l1 = std::min<i64>({16, g.ow - off, g.w - x0});
          if (l1 <= l0) continue;
          __mmask16 m = __mmask16(((1u << (l1 - l0)) - 1) << l0);
          const float* src = c0 + j * ohw + off;  // masked-off lanes are never read
          acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, src));
        }
        i64 n = std::min<i64>(16, g.w - x0);
        __mmask16 mw = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
        _mm512_mask_storeu_ps(r + x0, mw, _mm512_add_ps(_mm512_maskz_loadu_ps(mw, r + x0), acc));
      }
    }
}
#endif

template <class T>
void col2im_plane(const T* col, T* x, const ConvGeom& g) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (g.sw == 1) return col2im_plane_sw1(col, x, g);
  }
#endif
  std::fill(x, x + g.h * g.w, T(0));
  for (i64 i = 0; i < g.kh; ++i) {
    for (i64 j = 0; j < g.kw; ++j) {
      i64 lo, hi;
      valid_range(g.ow, g.sw, g.pw, j, g.w, lo, hi);
      for (i64 y = 0; y < g.oh; ++y, col += g.ow) {
        i64 iy = y * g.sh - g.ph + i;
        if (iy < 0 || iy >= g.h) continue;
        T* row = x + iy * g.w - g.pw + j;
        if (g.sw == 1) add_row(row + lo, col + lo, hi - lo);
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

// --- the convolution products, one image per step -------------------------------------------
// Images [lo, hi) of the batch for thread t of nt: a static split (the filter gradient's,
// whose per-thread sums must not depend on timing; the forward and the data gradient
// hand images out one at a time instead, so that on shared cores a thread the OS has
// descheduled does not hold up the other).
inline void image_range(i64 n, int t, int nt, i64& lo, i64& hi) {
  lo = n * t / nt;
  hi = n * (t + 1) / nt;
}

// Threads for a batch of n images of `flops` each: all of them when the batch is large
// enough to pay for the fork (the same 2^21 as gemm.cpp), one otherwise.
inline int conv_threads(i64 n, double flops) {
  if (in_parallel() || n < 2 || flops * double(n) < double(1 << 21)) return 1;
  return static_cast<int>(std::min<i64>(max_threads(), n));
}

// A scratch buffer of n T's for the calling thread, kept between calls (for the thread's
// lifetime, at the largest size asked for): a col of a few hundred KB freshly allocated
// per call would be page-faulted in every time.
template <class T>
T* scratch(int slot, i64 n) {
  thread_local std::vector<T> buf[3];
  std::vector<T>& v = buf[slot];
  if (static_cast<i64>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
  return v.data();
}

// body(t, nt) for each of the nt slots t, on up to nt threads of the pool (all on the calling
// thread when nt == 1). A slot is a piece of the pool, not a thread: one thread may run two.
template <class Body>
void on_threads(int nt, Body body) {
  if (nt <= 1) return body(0, 1);
  parallel_items(nt, nt, [&](i64 t) { body(static_cast<int>(t), nt); });
}

// Where oc >= 32 (float32) the product computed is y[i]^T (oh ow, oc) = col[i]^T @ W^T,
// then transposed into y[i] with the bias: with oh ow rows and oc columns the sgemm's
// 14 x 32 register tiles fit a CNN's channel counts (14 x 14 -> 196 = 14 x 14 rows, 32
// columns) where W @ col's oc rows would leave much of a 14-row tile empty. Narrower
// (oc < 32) products stay W @ col: gemm.cpp sends n < 32 to Eigen, slower here.
template <class T>
bool transposed_products(const ConvGeom& g) {
  return std::is_same_v<T, float> && g.oc / g.groups >= 32;
}

template <class T>
void conv_forward_typed(const T* x, const T* w, const T* b, T* y, const ConvGeom& g) {
  i64 ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow, in = g.c * g.h * g.w, pin = g.h * g.w, pcol = g.kh * g.kw * ohw;
  const i64 G = g.groups, ckg = ckk / G, ocg = g.oc / G;  // one group's col rows and filters
  int nt = conv_threads(g.n, 2.0 * double(ocg) * double(ckk) * double(ohw));
  bool tr = transposed_products<T>(g);
  std::atomic<i64> next{0};  // the next image: a thread the OS has descheduled holds up no one
  on_threads(nt, [&](int, int) {
    T* col = scratch<T>(0, ckk * ohw);
    T* yt = tr ? scratch<T>(1, ohw * g.oc) : nullptr;
    for (i64 i; (i = next.fetch_add(1, std::memory_order_relaxed)) < g.n;) {
      for (i64 c = 0; c < g.c; ++c) im2col_plane(x + i * in + c * pin, col + c * pcol, g);
      T* yi = y + i * g.oc * ohw;
      if (!tr) {
        if (b)
          for (i64 o = 0; o < g.oc; ++o) std::fill(yi + o * ohw, yi + (o + 1) * ohw, b[o]);
        for (i64 j = 0; j < G; ++j)  // y rows j ocg.. = W rows j ocg.. @ col rows j ckg..
          gemm(dtype_of<T>(), false, false, ocg, ohw, ckg, 1.0, w + j * ocg * ckg, ckg, 0, col + j * ckg * ohw, ohw,
               0, b ? 1.0 : 0.0, yi + j * ocg * ohw, ohw, 0, 1);
        continue;
      }
      for (i64 j = 0; j < G; ++j)  // yt columns j ocg.. = (col rows j ckg..)^T @ (W rows j ocg..)^T
        gemm(dtype_of<T>(), true, true, ohw, ocg, ckg, 1.0, col + j * ckg * ohw, ohw, 0, w + j * ocg * ckg, ckg, 0,
             0.0, yt + j * ocg, g.oc, 0, 1);
      for (i64 o = 0; o < g.oc; ++o) {
        T bo = b ? b[o] : T(0);
        const T* src = yt + o;
        T* dst = yi + o * ohw;
        for (i64 p = 0; p < ohw; ++p) dst[p] = src[p * g.oc] + bo;
      }
    }
  });
}

template <class T>
void conv_backward_data_typed(const T* w, const T* gy, T* gx, const ConvGeom& g) {
  i64 ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow, in = g.c * g.h * g.w, pin = g.h * g.w, pcol = g.kh * g.kw * ohw;
  const i64 G = g.groups, ckg = ckk / G, ocg = g.oc / G;
  int nt = conv_threads(g.n, 2.0 * double(ocg) * double(ckk) * double(ohw));
  std::atomic<i64> next{0};  // the next image, as in the forward
  on_threads(nt, [&](int, int) {
    T* col = scratch<T>(0, ckk * ohw);
    for (i64 i; (i = next.fetch_add(1, std::memory_order_relaxed)) < g.n;) {
      for (i64 j = 0; j < G; ++j)  // col rows j ckg.. = (W rows j ocg..)^T @ gy[i] rows j ocg..
        gemm(dtype_of<T>(), true, false, ckg, ohw, ocg, 1.0, w + j * ocg * ckg, ckg, 0,
             gy + i * g.oc * ohw + j * ocg * ohw, ohw, 0, 0.0, col + j * ckg * ohw, ohw, 0, 1);
      for (i64 c = 0; c < g.c; ++c) col2im_plane(col + c * pcol, gx + i * in + c * pin, g);
    }
  });
}

// Where oc >= 32 (float32) the product computed is gW^T (c kh kw, oc) = sum_i col[i] @
// gy[i]^T (the register tiles fit, as in the forward); else gW = sum_i gy[i] @ col[i]^T.
// One sum per slot of on_threads (a fixed range of images); the sums are added in slot order
// (and transposed), so the bits do not depend on which thread ran which slot.
template <class T>
void conv_backward_filter_typed(const T* x, const T* gy, T* gw, const ConvGeom& g) {
  i64 ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow, in = g.c * g.h * g.w, pin = g.h * g.w, pcol = g.kh * g.kw * ohw;
  const i64 G = g.groups, ckg = ckk / G, ocg = g.oc / G;
  i64 nw = g.oc * ckg;  // gW (oc, c/G kh kw); transposed: per group (ckg, ocg), group after group
  int nt = conv_threads(g.n, 2.0 * double(ocg) * double(ckk) * double(ohw));
  bool tr = transposed_products<T>(g);
  // Slot t's sum at parts + t nw, in the calling thread's scratch (a thread may run two slots).
  T* parts = scratch<T>(2, nw * nt);
  on_threads(nt, [&](int t, int n_t) {
    T* col = scratch<T>(0, ckk * ohw);
    T* acc = parts + t * nw;
    i64 lo, hi;
    image_range(g.n, t, n_t, lo, hi);
    if (lo == hi) std::fill(acc, acc + nw, T(0));
    for (i64 i = lo; i < hi; ++i) {
      for (i64 c = 0; c < g.c; ++c) im2col_plane(x + i * in + c * pin, col + c * pcol, g);
      double beta = i == lo ? 0.0 : 1.0;
      const T* gyi = gy + i * g.oc * ohw;
      for (i64 j = 0; j < G; ++j) {
        const T *colj = col + j * ckg * ohw, *gyj = gyi + j * ocg * ohw;
        T* accj = acc + j * ocg * ckg;
        if (tr)
          gemm(dtype_of<T>(), false, true, ckg, ocg, ohw, 1.0, colj, ohw, 0, gyj, ohw, 0, beta, accj, ocg, 0, 1);
        else
          gemm(dtype_of<T>(), false, true, ocg, ckg, ohw, 1.0, gyj, ohw, 0, colj, ohw, 0, beta, accj, ckg, 0, 1);
      }
    }
  });
  for (int t = 1; t < nt; ++t)
    for (i64 k = 0; k < nw; ++k) parts[k] += parts[t * nw + k];
  if (!tr) {
    std::copy(parts, parts + nw, gw);
    return;
  }
  for (i64 j = 0; j < G; ++j)
    for (i64 o = 0; o < ocg; ++o)
      for (i64 k = 0; k < ckg; ++k) gw[(j * ocg + o) * ckg + k] = parts[j * ocg * ckg + k * ocg + o];
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

// --- the convolution products (LibraryKernels::conv2d_*): float32 and float64, always taken -------
// except for a mixed-precision request (is_half(g.compute)), which is left to the caller's
// rounding fallback (tensor/conv.cpp).
bool conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g) {
  if (is_half(g.compute)) return false;
  if (dt == DType::Float32)
    conv_forward_typed(static_cast<const float*>(x), static_cast<const float*>(w), static_cast<const float*>(b),
                       static_cast<float*>(y), g);
  else
    conv_forward_typed(static_cast<const double*>(x), static_cast<const double*>(w), static_cast<const double*>(b),
                       static_cast<double*>(y), g);
  return true;
}

bool conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) {
  if (is_half(g.compute)) return false;
  if (dt == DType::Float32)
    conv_backward_data_typed(static_cast<const float*>(w), static_cast<const float*>(gy), static_cast<float*>(gx), g);
  else
    conv_backward_data_typed(static_cast<const double*>(w), static_cast<const double*>(gy), static_cast<double*>(gx),
                             g);
  return true;
}

bool conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g) {
  if (is_half(g.compute)) return false;
  if (dt == DType::Float32)
    conv_backward_filter_typed(static_cast<const float*>(x), static_cast<const float*>(gy), static_cast<float*>(gw),
                               g);
  else
    conv_backward_filter_typed(static_cast<const double*>(x), static_cast<const double*>(gy),
                               static_cast<double*>(gw), g);
  return true;
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
