// dezero/cpu/pool.cpp - max pooling on the host: forward with the argmax of each
// window, its backward (scatter of gy to the argmax) and the gather that is the
// backward's own backward (DeZero's Pooling, Pooling2DGrad, Pooling2DWithIndexes in
// functions_conv.py; step 57's pooling layer); and average pooling with its backward.
//
// Same results as DeZero's im2col + max / argmax without the (n, c, kh, kw, oh, ow) col:
// zero padding (a window that touches the padding has a max of at least 0; Chainer
// pads with -inf instead), idx = i * kw + j of the first max. NaN as in NumPy: a NaN
// anywhere in a window makes its max NaN and idx the first NaN's position (np.argmax's),
// so the window's gradient goes to that NaN (the same on every path, cuDNN's included:
// gpu/cudnn_pool.cpp). One (n, c) plane per
// work item on OpenMP threads; float32 2 x 2 windows of stride 2 (W2's) run 16 at a
// time in AVX-512 registers where the build has them. Twin of gpu/pool.cu.
#include <algorithm>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

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

// A later element wins when greater, or when it is the first NaN (v != v while best is a
// number); once best is NaN nothing replaces it. (For the windows that touch the padding.)
template <class T>
inline bool takes_over(T v, T best) {
  return (v > best) | ((v != v) & (best == best));
}

// The window's max and its position, every position inside the image: no bounds
// checks, and selects instead of branches (the argmax of random data is unpredictable).
// (Unrolled 2 x 2 and 3 x 3 windows, even written as a tournament of pairs, measured
// 2.7x slower than this rolled loop: GCC turned their selects into branches, which the
// argmax of random data mispredicts. takes_over in this loop measured 2.5-4x slower for
// the same reason.) NaN: z adds up v * 0, which is NaN exactly when some v is NaN (or
// infinite), one add per element and no branch; only such a window is searched again, and
// its first NaN, if any, becomes the max.
template <class T>
inline void window_max_inside(const T* base, i64 w, i64 kh, i64 kw, T& best, i64& arg) {
  best = base[0];
  arg = 0;
  T z = T(0);
  for (i64 i = 0; i < kh; ++i)
    for (i64 j = 0; j < kw; ++j) {
      T v = base[i * w + j];
      bool gt = v > best;
      best = gt ? v : best;
      arg = gt ? i * kw + j : arg;
      z += v * T(0);
    }
  if (z == z) return;
  for (i64 i = 0; i < kh; ++i)
    for (i64 j = 0; j < kw; ++j) {
      T v = base[i * w + j];
      if (v != v) {
        best = v;
        arg = i * kw + j;
        return;
      }
    }
}

#if defined(__AVX512F__)
// The 2 x 2, stride 2, unpadded window of float32 (a CNN's usual pooling), 16 windows
// per step in AVX-512 registers, the last step masked: the even and odd columns of the
// two rows, the first max of each pair, then of the two pairs (a later element wins
// only when greater, as in np.argmax, or when it is NaN and the earlier one is not, as in
// the scalar loop: the first NaN in the order 0, 1, 2, 3 wins; the two extra compares
// measured no slower). (maskz forms throughout: the unmasked conversions trip GCC 12's
// false -Wmaybe-uninitialized, bug 105593.)
// takes_over for 16 lanes: v > best, or v NaN and best not.
inline __mmask16 takes_over_avx512(__m512 v, __m512 best) {
  return _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
         (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q));
}

void row_2x2_avx512(const float* r0, const float* r1, float* y, i64* idx, i64 ow) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
  const __m512i two = _mm512_set1_epi32(2), three = _mm512_set1_epi32(3);
  for (i64 ox = 0; ox < ow; ox += 16) {
    i64 n = std::min<i64>(16, ow - ox), n2 = 2 * n;  // outputs, inputs per row in this step
    __mmask16 lo = n2 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n2) - 1);
    __mmask16 hi = n2 >= 32 ? __mmask16(0xFFFF) : n2 > 16 ? __mmask16((1u << (n2 - 16)) - 1) : __mmask16(0);
    __mmask16 out = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
    __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * ox), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * ox + 16);
    __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * ox), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * ox + 16);
    __m512 v0 = _mm512_permutex2var_ps(a0, even, a1), v1 = _mm512_permutex2var_ps(a0, odd, a1);
    __m512 v2 = _mm512_permutex2var_ps(b0, even, b1), v3 = _mm512_permutex2var_ps(b0, odd, b1);
    __mmask16 m1 = takes_over_avx512(v1, v0), m3 = takes_over_avx512(v3, v2);
    __m512 m01 = _mm512_mask_blend_ps(m1, v0, v1), m23 = _mm512_mask_blend_ps(m3, v2, v3);
    __m512i a01 = _mm512_mask_blend_epi32(m1, zero, one), a23 = _mm512_mask_blend_epi32(m3, two, three);
    __mmask16 lower = takes_over_avx512(m23, m01);
    _mm512_mask_storeu_ps(y + ox, out, _mm512_mask_blend_ps(lower, m01, m23));
    __m512i arg = _mm512_mask_blend_epi32(lower, a01, a23);
    __m512i arg_lo = _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xF, arg, 0));
    __m512i arg_hi = _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xF, arg, 1));
    _mm512_mask_storeu_epi64(idx + ox, __mmask8(out & 0xFF), arg_lo);
    _mm512_mask_storeu_epi64(idx + ox + 8, __mmask8(out >> 8), arg_hi);
  }
}
#endif

template <class T>
void forward_plane(const T* x, T* y, i64* idx, const ConvGeom& g) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0) {
      for (i64 oy = 0; oy < g.oh; ++oy) {
        const T* r0 = x + 2 * oy * g.w;  // (an odd last column or row is outside every window)
        row_2x2_avx512(r0, r0 + g.w, y + oy * g.ow, idx + oy * g.ow, g.ow);
      }
      return;
    }
  }
#endif
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
            if (arg < 0 || takes_over(v, best)) {
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

#if defined(__AVX512F__)
// The backward of row_2x2_avx512: 16 windows per step write their 2 x 2 pixels of the two
// rows, gy at the window's idx and 0 elsewhere (the last step masked). Columns past
// 2 ow are left to the caller.
void row_2x2_backward_avx512(const float* gy, const i64* idx, float* g0, float* g1, i64 ow) {
  const __m512i lo_perm = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_perm = _mm512_add_epi32(lo_perm, _mm512_set1_epi32(8));
  for (i64 ox = 0; ox < ow; ox += 16) {
    i64 n = std::min<i64>(16, ow - ox), n2 = 2 * n;
    __mmask16 in = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
    __mmask16 lo = n2 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n2) - 1);
    __mmask16 hi = n2 >= 32 ? __mmask16(0xFFFF) : n2 > 16 ? __mmask16((1u << (n2 - 16)) - 1) : __mmask16(0);
    __m512 v = _mm512_maskz_loadu_ps(in, gy + ox);
    __m512i k_lo = _mm512_maskz_loadu_epi64(__mmask8(in & 0xFF), idx + ox);
    __m512i k_hi = _mm512_maskz_loadu_epi64(__mmask8(in >> 8), idx + ox + 8);
    auto at = [&](long long pos) {  // the windows whose max is at position pos, as a 16-bit mask
      __m512i p = _mm512_set1_epi64(pos);
      return __mmask16(_mm512_cmpeq_epi64_mask(k_lo, p) | (unsigned(_mm512_cmpeq_epi64_mask(k_hi, p)) << 8));
    };
    __m512 p0 = _mm512_maskz_mov_ps(at(0), v), p1 = _mm512_maskz_mov_ps(at(1), v);
    __m512 p2 = _mm512_maskz_mov_ps(at(2), v), p3 = _mm512_maskz_mov_ps(at(3), v);
    _mm512_mask_storeu_ps(g0 + 2 * ox, lo, _mm512_permutex2var_ps(p0, lo_perm, p1));
    _mm512_mask_storeu_ps(g0 + 2 * ox + 16, hi, _mm512_permutex2var_ps(p0, hi_perm, p1));
    _mm512_mask_storeu_ps(g1 + 2 * ox, lo, _mm512_permutex2var_ps(p2, lo_perm, p3));
    _mm512_mask_storeu_ps(g1 + 2 * ox + 16, hi, _mm512_permutex2var_ps(p2, hi_perm, p3));
  }
}
#endif

template <class T>
void backward_plane(const T* gy, const i64* idx, T* gx, const ConvGeom& g) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0) {
      for (i64 oy = 0; oy < g.oh; ++oy) {
        T* g0 = gx + 2 * oy * g.w;
        row_2x2_backward_avx512(gy + oy * g.ow, idx + oy * g.ow, g0, g0 + g.w, g.ow);
        for (i64 c = 2 * g.ow; c < g.w; ++c) g0[c] = g0[g.w + c] = T(0);  // an odd last column
      }
      for (i64 r = 2 * g.oh; r < g.h; ++r) std::fill(gx + r * g.w, gx + (r + 1) * g.w, T(0));  // an odd last row
      return;
    }
  }
#endif
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

// Average pooling (DeZero's mean of im2col: the padded zeros count, so every window
// divides by kh * kw). The forward sums the window's pixels inside the image; the
// backward spreads each gy / (kh * kw) over its window's pixels inside the image. Two
// fast cases: windows wholly inside the image sum without bounds (2 x 2 unrolled), and
// windows that tile the image (stride = window, no padding: a CNN's 2 x 2 / 2, a global
// pooling) give each pixel the gradient of its one window, written row by row.
template <class T>
void avg_forward_plane(const T* x, T* y, const ConvGeom& g) {
  const T kk = T(g.kh * g.kw);
  for (i64 oy = 0; oy < g.oh; ++oy) {
    i64 iy0 = oy * g.sh - g.ph;
    i64 i0 = std::max<i64>(0, -iy0), i1 = std::min<i64>(g.kh, g.h - iy0);
    bool rows_in = i0 == 0 && i1 == g.kh;
    T* yr = y + oy * g.ow;
    if (rows_in && g.kh == 2 && g.kw == 2 && g.sw == 2 && g.pw == 0) {
      const T* r0 = x + iy0 * g.w;
      const T* r1 = r0 + g.w;
      for (i64 ox = 0; ox < g.ow; ++ox) yr[ox] = ((r0[2 * ox] + r0[2 * ox + 1]) + (r1[2 * ox] + r1[2 * ox + 1])) / kk;
      continue;
    }
    for (i64 ox = 0; ox < g.ow; ++ox) {
      i64 ix0 = ox * g.sw - g.pw;
      i64 j0 = std::max<i64>(0, -ix0), j1 = std::min<i64>(g.kw, g.w - ix0);
      T acc = T(0);
      for (i64 i = i0; i < i1; ++i) {
        const T* r = x + (iy0 + i) * g.w + ix0;
        for (i64 j = j0; j < j1; ++j) acc += r[j];
      }
      yr[ox] = acc / kk;
    }
  }
}

template <class T>
void avg_backward_plane(const T* gy, T* gx, const ConvGeom& g) {
  const T kk = T(g.kh * g.kw);
  if (g.sh == g.kh && g.sw == g.kw && g.ph == 0 && g.pw == 0) {  // the windows tile the image
    for (i64 iy = 0; iy < g.h; ++iy) {
      T* r = gx + iy * g.w;
      i64 oy = iy / g.kh;
      if (oy >= g.oh) {  // rows past the last window (an odd size)
        std::fill(r, r + g.w, T(0));
        continue;
      }
      const T* gr = gy + oy * g.ow;
      i64 cover = g.ow * g.kw;
      if (g.kw == 2) {
        for (i64 ox = 0; ox < g.ow; ++ox) r[2 * ox] = r[2 * ox + 1] = gr[ox] / kk;
      } else {
        for (i64 ix = 0; ix < cover; ++ix) r[ix] = gr[ix / g.kw] / kk;
      }
      std::fill(r + cover, r + g.w, T(0));
    }
    return;
  }
  std::fill(gx, gx + g.h * g.w, T(0));
  for (i64 oy = 0; oy < g.oh; ++oy) {
    i64 iy0 = oy * g.sh - g.ph;
    i64 i0 = std::max<i64>(0, -iy0), i1 = std::min<i64>(g.kh, g.h - iy0);
    for (i64 ox = 0; ox < g.ow; ++ox) {
      i64 ix0 = ox * g.sw - g.pw;
      i64 j0 = std::max<i64>(0, -ix0), j1 = std::min<i64>(g.kw, g.w - ix0);
      T v = gy[oy * g.ow + ox] / kk;
      for (i64 i = i0; i < i1; ++i) {
        T* r = gx + (iy0 + i) * g.w + ix0;
        for (i64 j = j0; j < j1; ++j) r[j] += v;
      }
    }
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

void avg_pool_forward(DType dt, const void* x, void* y, const ConvGeom& g) {
  i64 in = g.h * g.w, out = g.oh * g.ow;
  DEZERO_FLOAT_PLANES(dt, T, each_plane(g, [&](i64 p) {
    avg_forward_plane(static_cast<const T*>(x) + p * in, static_cast<T*>(y) + p * out, g);
  }))
}

void avg_pool_backward(DType dt, const void* gy, void* gx, const ConvGeom& g) {
  i64 in = g.h * g.w, out = g.oh * g.ow;
  DEZERO_FLOAT_PLANES(dt, T, each_plane(g, [&](i64 p) {
    avg_backward_plane(static_cast<const T*>(gy) + p * out, static_cast<T*>(gx) + p * in, g);
  }))
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
