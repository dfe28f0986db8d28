// dezero/cpu/sgemm_avx2.cpp - the single-threaded float32 GEMM of the avx2 level (x86-64-v3: AVX2 +
// FMA, 16 ymm registers): sgemm.cpp's design on 8-lane vectors, for the CPUs without AVX-512 (AMD
// Zen 1-3, Intel up to Comet Lake and the hybrid cores). Compiled in every copy of the kernels
// (isa.hpp), non-empty only in the avx2 one; sgemm.cpp has the AVX-512 kernel and the stubs of the
// baseline copy.
//
// op(A) and op(B) are packed block by block into zero-padded micro-panels, and a register-blocked
// micro-kernel computes one MR x NR = 6 x 16 tile of C per call: per step of the depth, 2 vectors of
// packed B, 6 broadcasts of packed A and 12 FMAs into 12 accumulators (12 + 2 + 1 of the 16
// registers; BLIS's and OpenBLAS's Haswell tile). Loop order as in sgemm.cpp (outer to inner): jc
// over NC columns, pc over KC depth (pack KC x NC of B: 256 KB, in L2), ic over MC rows (pack A),
// then each A micro-panel (6 KB, in L1) sweeps every B micro-panel of the block. NN products at most
// 128 columns wide, or 512 with at most 32 rows, read A and B where they are (reads_in_place), a
// last panel of 17-24 columns as three vectors of at most 4 rows. Whatever the path, each element of
// C is the same chain of FMAs over the depth in the same KC blocks, so the paths never change the
// bits. (sgemm.cpp's AVX-512 kernel sums in the same order with other blocks: the two levels may
// differ in the last bits where k > 256.)
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/sgemm_blocking.hpp"

#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)
#include <immintrin.h>

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

using i64 = std::int64_t;

constexpr int kMR = 6;   // rows of the register tile
constexpr int kNV = 2;   // vectors of 8 columns
constexpr int kNR = 8 * kNV;
constexpr int kMR3 = 4;  // rows of the three-vector tile (in place: a last panel of 17-24 columns)
// (-DDEZERO_SGEMM_AVX2_KC=... / _NC=... for tuning runs, as sgemm.cpp's DEZERO_SGEMM_* macros)
#ifndef DEZERO_SGEMM_AVX2_KC
#define DEZERO_SGEMM_AVX2_KC 256
#endif
#ifndef DEZERO_SGEMM_AVX2_NC
#define DEZERO_SGEMM_AVX2_NC 256
#endif
constexpr i64 kKC = DEZERO_SGEMM_AVX2_KC;
constexpr i64 kNC = DEZERO_SGEMM_AVX2_NC;  // KC x NC floats of packed B: 256 KB, half of a Zen 3 core's L2
constexpr i64 kMC = 1020;  // a multiple of MR; bounds the A buffer only

using sgemm_blocking::balanced_block;
using sgemm_blocking::ceil_div;
using sgemm_blocking::panel_lo;

// The lane mask of the first n (0-8) lanes, for vmaskmovps.
inline __m256i lanes(i64 n) {
  alignas(32) static const std::int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  const i64 k = n <= 0 ? 0 : n >= 8 ? 8 : n;
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - k));
}

// v rounded to bfloat16 or float16 and widened back (gemm.hpp's Round; sgemm.cpp's round_to).
inline __m256 round_to(Round r, __m256 v) {
  if (r == Round::bf16) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256 x = _mm256_castsi256_ps(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)));
    const __m256 quiet = _mm256_castsi256_ps(_mm256_or_si256(u, _mm256_set1_epi32(0x00400000)));
    const __m256 q = _mm256_blendv_ps(x, quiet, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));  // a NaN: quieted, not rounded
    return _mm256_and_ps(q, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  if (r == Round::fp16) return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return v;
}

// Packing buffers, one pair per thread (sgemm_blocking.hpp): a: MC x KC, MC / MR micro-panels of KC x MR,
// + 16 floats for pack_a's last 8-lane store; b: KC x NC, NC / NR micro-panels of KC x NR.
auto& buffers() { return sgemm_blocking::buffers<kMC * kKC + 16, kKC * kNC>(); }

// --- packing ------------------------------------------------------------------------------------
// The 8 x 8 transpose: r[i] (8 floats of row i) -> r[q] = column q of the block.
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 8; g += 4) {
    u[g + 0] = _mm256_shuffle_ps(t[g + 0], t[g + 2], 0x44);
    u[g + 1] = _mm256_shuffle_ps(t[g + 0], t[g + 2], 0xEE);
    u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

// dst[q * dst_ld + i] = src[i * ld + q] for i < rows, q < cols (both <= 8); lanes i >= rows are
// zero. Each store writes 8 lanes, in ascending q: where dst_ld < 8 (A's 6-row panels) a store's
// last lanes are overwritten by the next one, and the packing buffers have room for the last's.
// (vmaskmovps stores, which AMD's cores run slowly, only where a row is short.)
inline void transpose_block(const float* src, i64 ld, i64 rows, i64 cols, float* dst, i64 dst_ld, Round round) {
  __m256 r[8];
  if (cols == 8) {
    for (int i = 0; i < 8; ++i) r[i] = i < rows ? _mm256_loadu_ps(src + i * ld) : _mm256_setzero_ps();
  } else {
    const __m256i cm = lanes(cols);
    for (int i = 0; i < 8; ++i) r[i] = i < rows ? _mm256_maskload_ps(src + i * ld, cm) : _mm256_setzero_ps();
  }
  if (round != Round::none)
    for (int i = 0; i < 8; ++i) r[i] = round_to(round, r[i]);
  transpose8(r);
  for (int q = 0; q < cols; ++q) _mm256_storeu_ps(dst + q * dst_ld, r[q]);
}

// op(A)[i0 : i0 + mc, p0 : p0 + kc] into panels of at most MR rows split evenly (as sgemm.cpp): panel q
// at dst + q MR kc, op(A)[row, p] at [p MR + i], rows past the panel's height zero.
i64 panel_count(i64 mc) { return ceil_div(mc, kMR); }

void pack_a(bool ta, const float* a, i64 lda, i64 mc, i64 kc, float* dst, Round round) {
  const i64 panels = panel_count(mc);
  for (i64 q = 0; q < panels; ++q, dst += kMR * kc) {
    const i64 s = panel_lo(q, mc, panels), rows = panel_lo(q + 1, mc, panels) - s;
    if (ta) {  // op(A)[i, p] = a[p lda + i]: each step of p is a run of rows; 8-lane stores, as transpose_block
      const __m256i rm = lanes(rows);
      for (i64 p = 0; p < kc; ++p) {
        const __m256 v = _mm256_maskload_ps(a + p * lda + s, rm);
        _mm256_storeu_ps(dst + p * kMR, round_to(round, v));
      }
    } else {  // op(A)[i, p] = a[i lda + p]: 8-wide strips of the panel's rows, transposed
      for (i64 p = 0; p < kc; p += 8)
        transpose_block(a + s * lda + p, lda, rows, std::min<i64>(8, kc - p), dst + p * kMR, kMR, round);
    }
  }
}

// op(B)[p0 : p0 + kc, j0 : j0 + nc] into NR-column panels: panel s holds op(B)[p, s NR + j] at
// dst[s NR kc + p NR + j], columns past nc zero.
void pack_b(bool tb, const float* b, i64 ldb, i64 nc, i64 kc, float* dst, Round round) {
  if (!tb) {
    const i64 full = nc / kNR * kNR;
    for (i64 p = 0; p < kc; ++p) {
      const float* src = b + p * ldb;
      float* d = dst + p * kNR;
      for (i64 s = 0; s < full; s += kNR, d += kNR * kc) {
        _mm256_store_ps(d, round_to(round, _mm256_loadu_ps(src + s)));
        _mm256_store_ps(d + 8, round_to(round, _mm256_loadu_ps(src + s + 8)));
      }
      if (full < nc) {
        _mm256_store_ps(d, round_to(round, _mm256_maskload_ps(src + full, lanes(nc - full))));
        _mm256_store_ps(d + 8, round_to(round, _mm256_maskload_ps(src + full + 8, lanes(nc - full - 8))));
      }
    }
    return;
  }
  // op(B)[p, j] = b[j ldb + p]: 8 x 8 blocks, transposed
  for (i64 s = 0; s < nc; s += kNR, dst += kNR * kc)
    for (int v = 0; v < kNV; ++v) {
      const i64 cols = std::max<i64>(0, std::min<i64>(8, nc - s - 8 * v));
      for (i64 p = 0; p < kc; p += 8)
        transpose_block(b + (s + 8 * v) * ldb + p, ldb, cols, std::min<i64>(8, kc - p), dst + p * kNR + 8 * v, kNR,
                        round);
    }
}

// --- micro-kernel -----------------------------------------------------------------------------
// C[0:R, 0:nr] = alpha (A panel)(R x kc) (B panel)(kc x 8 V) + beta C, or + bias[0:nr] in place of
// beta C (sgemm.cpp's contract). Packed: A's row i at pa[i], MR floats per step of p, B's NR floats
// per step (zero-padded). Direct: A's row i at pa[i lda], B's row p at pb + p ldb; `Tail`: the last
// vector of B is read with a mask (nr < 8 V). beta == 0 never reads C.
template <int R, int V, bool Direct, bool Tail>
void kernel(i64 kc, const float* __restrict pa, i64 lda, const float* __restrict pb, i64 ldb, float* c, i64 ldc,
            i64 nr, float alpha, float beta, const float* bias) {
  static_assert(R * V + V + 1 <= 16, "the tile must fit 16 ymm registers");
  const i64 step_a = Direct ? 1 : kMR, step_b = Direct ? ldb : kNR, row_a = Direct ? lda : 1;
  const __m256i tail = lanes(nr - 8 * (V - 1));
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc[i][v] = _mm256_setzero_ps();
  for (i64 p = 0; p < kc; ++p, pa += step_a, pb += step_b) {
    __m256 bv[V];
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v)
      bv[v] = !Direct ? _mm256_load_ps(pb + 8 * v)
              : (Tail && v == V - 1) ? _mm256_maskload_ps(pb + 8 * v, tail)
                                     : _mm256_loadu_ps(pb + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m256 av = _mm256_broadcast_ss(pa + i * row_a);
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  const bool full = nr >= 8 * V;
  __m256 bias_v[V];
  for (int v = 0; v < V; ++v) {
    const __m256i m = v == V - 1 ? tail : lanes(8);
    bias_v[v] = bias ? _mm256_maskload_ps(bias + 8 * v, m) : _mm256_setzero_ps();
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    float* cr = c + i * ldc;
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) {
      const bool masked = !full && v == V - 1;
      __m256 x = acc[i][v];
      if (bias) {
        x = _mm256_fmadd_ps(x, va, bias_v[v]);
      } else if (beta == 0.0f) {
        x = _mm256_mul_ps(x, va);
      } else {
        const __m256 old = masked ? _mm256_maskload_ps(cr + 8 * v, tail) : _mm256_loadu_ps(cr + 8 * v);
        x = beta == 1.0f ? _mm256_fmadd_ps(x, va, old) : _mm256_fmadd_ps(x, va, _mm256_mul_ps(old, vb));
      }
      if (masked) _mm256_maskstore_ps(cr + 8 * v, tail, x);
      else _mm256_storeu_ps(cr + 8 * v, x);
    }
  }
}

using KernelFn = void (*)(i64, const float*, i64, const float*, i64, float*, i64, i64, float, float, const float*);

// Packed: kPacked[one vector][r - 1]; in place: kDirect[v - 1][tail][r - 1] (r <= 6, or <= 4 for v = 3).
template <int V, bool Direct, bool Tail, int... R>
constexpr std::array<KernelFn, kMR> make(std::integer_sequence<int, R...>) {
  return {(R + 1 <= (V == 3 ? kMR3 : kMR) ? &kernel<(R + 1 <= (V == 3 ? kMR3 : kMR) ? R + 1 : 1), V, Direct, Tail>
                                          : nullptr)...};
}
using Rows = std::make_integer_sequence<int, kMR>;
constexpr std::array<KernelFn, kMR> kPacked[2] = {make<2, false, false>(Rows()), make<1, false, false>(Rows())};
constexpr std::array<KernelFn, kMR> kDirect[3][2] = {
    {make<1, true, false>(Rows()), make<1, true, true>(Rows())},
    {make<2, true, false>(Rows()), make<2, true, true>(Rows())},
    {make<3, true, false>(Rows()), make<3, true, true>(Rows())}};

// sgemm.cpp's rule: NN products at most 128 columns wide, or 512 with at most 32 rows.
#ifndef DEZERO_SGEMM_AVX2_DIRECT
#define DEZERO_SGEMM_AVX2_DIRECT 1
#endif
bool reads_in_place(bool ta, bool tb, i64 m, i64 n) {
  return DEZERO_SGEMM_AVX2_DIRECT && !ta && !tb && (n <= 128 || (m <= 32 && n <= 512));
}

// --- the last 1-4 columns as dot products along the depth (sgemm.cpp's dot_columns, on 8 lanes) ----
// n = 100 is six 16-column panels and 4 columns; a three-vector panel for the last 20 computes 24
// (and only 4 rows at a time): (100, 784) x (784, 100) ran at 121.6 GFLOP/s against 127.3 for n =
// 96. Instead those columns of B are copied transposed into rows of kp = k rounded up to 8 floats
// (zeros past k), and a tile of R rows of A x J of those rows accumulates R x J vectors of 8 partial
// sums along k, each summed across its lanes at the end (another order than the vector panels': the
// last bits of those columns differ, as in sgemm.cpp; every other column keeps its bits). Taken for
// 16 <= n <= 128 with n mod 16 in 1..4, m >= 10, 128 <= k <= 16384; 5-8 columns join the last panel
// (24 lanes for 21-24 columns waste little).
constexpr int kDotJ = 4;
constexpr int dot_rows(int j) { return j == 1 ? 8 : j == 2 ? 6 : j == 3 ? 4 : 2; }  // R J + J + 1 <= 16

inline float sum_lanes(__m256 v) {  // halves, then pairs, then neighbours (a fixed tree)
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

template <int R, int J>
void dot_kernel(i64 k, const float* __restrict a, i64 lda, const float* __restrict bt, i64 kp, float* c, i64 ldc,
                float alpha, float beta, const float* bias) {
  __m256 acc[R][J];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) acc[i][j] = _mm256_setzero_ps();
  const i64 full = k / 8 * 8;
  i64 p = 0;
  for (; p < full; p += 8) {
    __m256 bv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) bv[j] = _mm256_load_ps(bt + j * kp + p);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m256 av = _mm256_loadu_ps(a + i * lda + p);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  if (p < k) {  // A's lanes past k are not read; B's copy is zero there
    const __m256i mk = lanes(k - p);
    __m256 bv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) bv[j] = _mm256_load_ps(bt + j * kp + p);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m256 av = _mm256_maskload_ps(a + i * lda + p, mk);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) {
      const float sum = sum_lanes(acc[i][j]);
      float& out = c[i * ldc + j];
      if (bias) out = std::fma(sum, alpha, bias[j]);
      else if (beta == 0.0f) out = sum * alpha;
      else out = beta == 1.0f ? std::fma(sum, alpha, out) : std::fma(sum, alpha, out * beta);
    }
}

using DotFn = void (*)(i64, const float*, i64, const float*, i64, float*, i64, float, float, const float*);
template <int J, int... R>
constexpr std::array<DotFn, 8> make_dots(std::integer_sequence<int, R...>) {
  return {(R + 1 <= dot_rows(J) ? &dot_kernel<(R + 1 <= dot_rows(J) ? R + 1 : 1), J> : nullptr)...};
}
constexpr std::array<DotFn, 8> kDots[kDotJ] = {make_dots<1>(std::make_integer_sequence<int, 8>()),
                                               make_dots<2>(std::make_integer_sequence<int, 8>()),
                                               make_dots<3>(std::make_integer_sequence<int, 8>()),
                                               make_dots<4>(std::make_integer_sequence<int, 8>())};

#ifndef DEZERO_SGEMM_AVX2_DOT
#define DEZERO_SGEMM_AVX2_DOT 1
#endif
i64 dot_columns(i64 m, i64 n, i64 k) {
  const i64 r = n % kNR;
  const bool takes = DEZERO_SGEMM_AVX2_DOT && n >= 16 && n <= 128 && r >= 1 && r <= kDotJ && m >= 10 && k >= 128 &&
                     k <= kKC * kNC / kDotJ;
  return takes ? r : 0;
}

// C[:, 0:nd] = alpha A (m x k, in place) B[:, 0:nd] + beta C or + bias, as dot products; nd <= 4.
void dot_columns_in_place(i64 m, i64 nd, i64 k, float alpha, const float* a, i64 lda, const float* b, i64 ldb,
                          float beta, float* c, i64 ldc, const float* bias, float* bt) {
  const i64 kp = ceil_div(k, 8) * 8;
  for (i64 p = 0; p < k; p += 8)  // bt[j kp + p] = B[p, j], zero for p >= k
    transpose_block(b + p * ldb, ldb, std::min<i64>(8, k - p), nd, bt + p, kp, Round::none);
  const i64 panels = ceil_div(m, dot_rows(static_cast<int>(nd)));
  for (i64 q = 0; q < panels; ++q) {
    const i64 ir = panel_lo(q, m, panels), mr = panel_lo(q + 1, m, panels) - ir;
    kDots[nd - 1][mr - 1](k, a + ir * lda, lda, bt, kp, c + ir * ldc, ldc, alpha, beta, bias);
  }
}

// NN in place: column panels of NR (a last remainder of at most 8 joins the panel before it: three
// vectors, at most kMR3 rows; of at most 4, dot products first, where dot_columns says), each swept
// over all rows in row panels split evenly.
void sgemm_in_place(i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, const float* b, i64 ldb, float beta,
                    float* c, i64 ldc, const float* bias) {
  if (const i64 nd = dot_columns(m, n, k)) {
    dot_columns_in_place(m, nd, k, alpha, a, lda, b + (n - nd), ldb, beta, c + (n - nd), ldc,
                         bias ? bias + (n - nd) : nullptr, buffers().b);
    n -= nd;
  }
  const i64 kc_max = balanced_block(k, kKC, 8);
  const i64 full = n / kNR, rem = n % kNR;
  const i64 merged = full >= 1 && rem > 0 && rem <= 8 ? (full - 1) * kNR : -1;  // the 3-vector panel
  for (i64 pc = 0; pc < k; pc += kc_max) {
    const i64 kc = std::min(kc_max, k - pc);
    const float beta_pc = pc == 0 ? beta : 1.0f;
    const float* bias_pc = pc == 0 ? bias : nullptr;
    for (i64 jr = 0; jr < n;) {
      const i64 nr = jr == merged ? kNR + rem : std::min<i64>(kNR, n - jr);
      const int v = static_cast<int>(ceil_div(nr, 8));
      const bool tail = nr != 8 * v;
      const i64 rmax = v == 3 ? kMR3 : kMR, panels = ceil_div(m, rmax);
      for (i64 q = 0; q < panels; ++q) {
        const i64 ir = panel_lo(q, m, panels), mr = panel_lo(q + 1, m, panels) - ir;
        kDirect[v - 1][tail][mr - 1](kc, a + ir * lda + pc, lda, b + pc * ldb + jr, ldb, c + ir * ldc + jr, ldc, nr,
                                     alpha, beta_pc, bias_pc ? bias_pc + jr : nullptr);
      }
      jr += nr;
    }
  }
}

}  // namespace

bool sgemm_available() { return true; }

void sgemm(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, const float* b, i64 ldb,
           float beta, float* c, i64 ldc, const float* bias, Round round) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) return sgemm_blocking::empty_depth(m, n, beta, c, ldc, bias);
  if (round == Round::none && reads_in_place(ta, tb, m, n))
    return sgemm_in_place(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
  auto& buf = buffers();
  const i64 nc_max = balanced_block(n, kNC, kNR);
  const i64 kc_max = balanced_block(k, kKC, 8);
  const i64 mc_max = balanced_block(m, kMC, kMR);
  for (i64 jc = 0; jc < n; jc += nc_max) {
    const i64 nc = std::min(nc_max, n - jc);
    for (i64 pc = 0; pc < k; pc += kc_max) {
      const i64 kc = std::min(kc_max, k - pc);
      pack_b(tb, tb ? b + jc * ldb + pc : b + pc * ldb + jc, ldb, nc, kc, buf.b, round);
      const float beta_pc = pc == 0 ? beta : 1.0f;
      const float* bias_pc = pc == 0 && bias ? bias + jc : nullptr;
      for (i64 ic = 0; ic < m; ic += mc_max) {
        const i64 mc = std::min(mc_max, m - ic);
        pack_a(ta, ta ? a + pc * lda + ic : a + ic * lda + pc, lda, mc, kc, buf.a, round);
        const i64 panels = panel_count(mc);
        for (i64 q = 0; q < panels; ++q) {
          const i64 ir = panel_lo(q, mc, panels), mr = panel_lo(q + 1, mc, panels) - ir;
          for (i64 jr = 0; jr < nc; jr += kNR) {
            const i64 nr = std::min<i64>(kNR, nc - jr);
            kPacked[nr <= 8][mr - 1](kc, buf.a + q * kMR * kc, kMR, buf.b + jr * kc, kNR,
                                     c + (ic + ir) * ldc + jc + jr, ldc, nr, alpha, beta_pc,
                                     bias_pc ? bias_pc + jr : nullptr);
          }
        }
      }
    }
  }
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu

#endif
