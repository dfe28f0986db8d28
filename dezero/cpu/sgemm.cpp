// dezero/cpu/sgemm.cpp - single-threaded AVX-512 float32 GEMM in the GotoBLAS/BLIS style:
// op(A) and op(B) are copied ("packed") block by block into contiguous, zero-padded
// panels laid out in the order the micro-kernel reads them, and a register-blocked
// micro-kernel computes one MR x NR tile of C per call. Transposes are absorbed by
// the packing, so one kernel serves NN, NT, TN and TT. Narrow or short NN products (n <= 128:
// an inference layer's (100, 784) x (784, 100); m <= 32 up to n = 512) skip the packing and
// the kernel reads A and B in place (reads_in_place). Whatever the panel, the edge variant or the packing, each
// element of C is the same chain of FMAs over the depth in the same KC blocks, so none of
// them changes the results' bits; in place, a last 1-8 columns past a multiple of 16 may run as
// dot products along the depth instead (dot_columns), summed in another order. Compiled in every
// copy of the kernels (isa.hpp): the avx512 copy has this kernel, the avx2 copy sgemm_avx2.cpp's,
// the baseline copy only the stubs at the bottom (float32 stays on Eigen there).
#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/sgemm_blocking.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <new>
#include <utility>

#include "dezero/error.hpp"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

#if defined(__AVX512F__)

namespace {

// --- blocking ----------------------------------------------------------------
// Register tile: MR rows of C x NR = 16 NV columns, vectorised along n (C's
// contiguous dimension). Each step of k loads NV vectors of packed B, broadcasts
// MR scalars of packed A (vbroadcastss from memory, each shared by NV FMAs) and
// issues MR x NV FMAs into MR x NV accumulators. Zen 4 retires one 512-bit FMA per
// cycle (two 256-bit pipes) with 4 cycles latency, so anything above ~8 independent
// accumulators keeps the pipes busy; 14 x 2 uses 28 of the 32 zmm registers (+2
// for B, +1 broadcast) and needs 16 loads per 28 FMAs, well inside the load ports.
// 8 x 3 and 6 x 4 measure the same within noise; 14 x 2 has the narrowest NR, which
// wastes least on the n-slabs of ~500 columns that gemm.cpp cuts, on two threads, from
// the MNIST MLP's 1000-wide products (bench/w1_mlp_epoch.cpp).
// (The DEZERO_SGEMM_* macros exist for such tuning runs: -DDEZERO_SGEMM_MR=8 ...)
#ifndef DEZERO_SGEMM_MR
#define DEZERO_SGEMM_MR 14
#endif
#ifndef DEZERO_SGEMM_NV
#define DEZERO_SGEMM_NV 2
#endif
#ifndef DEZERO_SGEMM_KC
#define DEZERO_SGEMM_KC 256
#endif
#ifndef DEZERO_SGEMM_NC
#define DEZERO_SGEMM_NC 512
#endif
constexpr int kMR = DEZERO_SGEMM_MR;
constexpr int kNV = DEZERO_SGEMM_NV;
constexpr int kNR = 16 * kNV;
static_assert(kMR >= 1 && kMR <= 16 && kMR * kNV + kNV <= 32, "register tile must fit 32 zmm registers");

// Cache blocks. Loop order (outer to inner): jc over NC columns, pc over KC depth
// (pack a KC x NC block of B), ic over MC rows (pack an MC x KC block of A), ir over
// MR panels of A, jr over NR panels of B. The MR x KC micro-panel of A (14 KB at
// KC = 256) stays in L1 for the whole jr sweep while the packed B block (KC x NC =
// 512 KB) streams from L2 (1 MB), read at ~4 bytes per FMA cycle. MC only bounds
// the A buffer: A micro-panels are used once per block, so A need not fit L2.
constexpr std::int64_t kKC = DEZERO_SGEMM_KC;
constexpr std::int64_t kNC = (DEZERO_SGEMM_NC + kNR - 1) / kNR * kNR;
constexpr std::int64_t kMC = (1024 + kMR - 1) / kMR * kMR;

using sgemm_blocking::balanced_block;
using sgemm_blocking::ceil_div;
using sgemm_blocking::panel_lo;

__mmask16 lanes(std::int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1); }

// v rounded to bfloat16 or float16 and widened back (gemm.hpp's Round): bfloat16 by integer
// rounding on the bits (ties to even; a NaN keeps its sign and payload's top bits, quieted), as
// half.hpp's conversion does; float16 through vcvtps2ph / vcvtph2ps.
inline __m512 round_to(Round r, __m512 v) {
  if (r == Round::bf16) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i x = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb));
    const __mmask16 nan =
        _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
    x = _mm512_mask_mov_epi32(x, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
    return _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  if (r == Round::fp16) return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return v;
}

// --- packing buffers: one pair per thread (sgemm_blocking.hpp) --------------------------------
// a: MC x KC, MC / MR micro-panels of KC x MR; b: KC x NC, NC / NR micro-panels of KC x NR.
auto& buffers() { return sgemm_blocking::buffers<kMC * kKC, kKC * kNC>(); }

// --- packing -----------------------------------------------------------------
// Transposes a rows x cols block (rows, cols <= 16) of a row-major source with row
// stride ld: dst[q * dst_ld + i] = src[i * ld + q] for q < cols, i < width; lanes
// i >= rows are written as zeros (the panel padding). In registers: 16 loads, a
// 4-stage 16 x 16 shuffle network, `cols` stores.
// (GCC 12 flags the _mm512_undefined_ps() inside these shuffle intrinsics as uninitialised.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
void transpose_block(const float* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, float* dst,
                     std::int64_t dst_ld, int width, Round round = Round::none) {
  __m512 r[16], t[16];
  const __mmask16 cm = lanes(cols);
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_maskz_loadu_ps(cm, src + i * ld) : _mm512_setzero_ps();
  if (round != Round::none)
    for (int i = 0; i < 16; ++i) r[i] = round_to(round, r[i]);
  for (int i = 0; i < 16; i += 2) {  // t[2g], t[2g+1]: rows 2g, 2g+1 interleaved per 128-bit lane
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {  // r[g + c], lane l: rows g..g+3 of column 4l + c
    r[g + 0] = _mm512_shuffle_ps(t[g + 0], t[g + 2], 0x44);
    r[g + 1] = _mm512_shuffle_ps(t[g + 0], t[g + 2], 0xEE);
    r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
  }
  for (int c = 0; c < 4; ++c) {  // lanes 0/2 and 1/3 of rows 0-7 and 8-15
    t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
    t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
  }
  for (int c = 0; c < 4; ++c) {  // r[4l + c]: column 4l + c, all 16 rows
    r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD);
    r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD);
  }
  const __mmask16 wm = lanes(width);
  for (int q = 0; q < cols; ++q) _mm512_mask_storeu_ps(dst + q * dst_ld, wm, r[q]);
}
#pragma GCC diagnostic pop

// Packs op(A)[i0 : i0 + mc, p0 : p0 + kc] into row micro-panels of at most MR rows, panel s
// (rows panel_lo(s, ...) on) at dst + s MR kc with op(A)[row, p] at [p MR + i], rows past the
// panel's height zero. The panels split mc evenly (m = 100: 8 panels of 12-13 rows, not 7 of 14
// and one of 2, whose kernel would wait on its few FMA chains).
std::int64_t panel_count(std::int64_t mc) { return ceil_div(mc, kMR); }

void pack_a(bool ta, const float* a, std::int64_t lda, std::int64_t mc, std::int64_t kc, float* dst, Round round) {
  const std::int64_t panels = panel_count(mc);
  for (std::int64_t q = 0; q < panels; ++q, dst += kMR * kc) {
    const std::int64_t s = panel_lo(q, mc, panels), rows = panel_lo(q + 1, mc, panels) - s;
    if (ta) {  // op(A)[i, p] = a[p lda + i]: each k step is a contiguous run of rows
      const __mmask16 rm = lanes(rows), wm = lanes(kMR);
      for (std::int64_t p = 0; p < kc; ++p)
        _mm512_mask_storeu_ps(dst + p * kMR, wm, round_to(round, _mm512_maskz_loadu_ps(rm, a + p * lda + s)));
    } else {  // op(A)[i, p] = a[i lda + p]: transpose 16-wide strips of the panel's rows
      for (std::int64_t p = 0; p < kc; p += 16)
        transpose_block(a + s * lda + p, lda, rows, std::min<std::int64_t>(16, kc - p), dst + p * kMR, kMR, kMR,
                        round);
    }
  }
}

// Packs op(B)[p0 : p0 + kc, j0 : j0 + nc] into NR-column micro-panels: panel s holds
// op(B)[p, s NR + j] at dst[s NR kc + p NR + j], columns past nc zero.
void pack_b(bool tb, const float* b, std::int64_t ldb, std::int64_t nc, std::int64_t kc, float* dst, Round round) {
  if (!tb) {  // op(B)[p, j] = b[p ldb + j]: rows are contiguous; read each once, front to back
    const std::int64_t full = nc / kNR * kNR;
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* src = b + p * ldb;
      float* d = dst + p * kNR;
      for (std::int64_t s = 0; s < full; s += kNR, d += kNR * kc)
        for (int v = 0; v < kNV; ++v) _mm512_store_ps(d + 16 * v, round_to(round, _mm512_loadu_ps(src + s + 16 * v)));
      if (full < nc)
        for (int v = 0; v < kNV; ++v)
          _mm512_store_ps(d + 16 * v,
                          round_to(round, _mm512_maskz_loadu_ps(lanes(nc - full - 16 * v), src + full + 16 * v)));
    }
    return;
  }
  // op(B)[p, j] = b[j ldb + p]: transpose 16 x 16 blocks
  for (std::int64_t s = 0; s < nc; s += kNR, dst += kNR * kc)
    for (int v = 0; v < kNV; ++v) {
      const std::int64_t cols = std::max<std::int64_t>(0, std::min<std::int64_t>(16, nc - s - 16 * v));
      for (std::int64_t p = 0; p < kc; p += 16)
        transpose_block(b + (s + 16 * v) * ldb + p, ldb, cols, std::min<std::int64_t>(16, kc - p),
                        dst + p * kNR + 16 * v, kNR, 16, round);
    }
}

// --- micro-kernel --------------------------------------------------------------
// C[0:R, 0:nr] = alpha * (packed A panel)(R x kc) (packed B panel)(kc x 16 V) + beta C, or
// + bias[0:nr] in place of beta C when bias is given (then beta is not used: the first depth
// block of a product with a bias row; that sum, alpha acc + bias, is the one a C filled with
// the bias and beta = 1 gives, bit for bit). R = MR and V = NV except at the edges of a block:
// the last row panel gets its own R instead of computing padded rows, and a last column panel
// of at most 16 columns (the 4 left of n = 100) runs V = 1, half the FMAs of V = 2. Each
// element of C is the same chain of FMAs over p whatever R and V are, so the edge variants
// change the speed, never the bits. beta == 0 never reads C.
template <int R, int V, bool Direct>
void kernel(std::int64_t kc, const float* __restrict pa, std::int64_t lda, const float* __restrict pb,
            std::int64_t ldb, float* c, std::int64_t ldc, std::int64_t nr, float alpha, float beta,
            const float* bias) {
  static_assert(V >= 1 && (Direct ? R * V + V < 32 : V <= kNV), "V vectors: at most NV of a packed panel");
  // Packed: A's row i at pa[i], MR floats per step of p; B's NR floats per step. Direct: the
  // operands in place, A's row i at pa[i lda] (one float per step), B's row p at pb + p ldb.
  const std::int64_t step_a = Direct ? 1 : kMR, step_b = Direct ? ldb : kNR, row_a = Direct ? lda : 1;
  __mmask16 mk[V];
  for (int v = 0; v < V; ++v) mk[v] = lanes(nr - 16 * v);
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int i = 0; i < R; ++i) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
  for (std::int64_t p = 0; p < kc; ++p, pa += step_a, pb += step_b) {
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = Direct ? _mm512_maskz_loadu_ps(mk[v], pb + 16 * v) : _mm512_load_ps(pb + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 av = _mm512_set1_ps(pa[i * row_a]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __m512 bias_v[V];
  for (int v = 0; v < V; ++v) {
    bias_v[v] = bias ? _mm512_maskz_loadu_ps(mk[v], bias + 16 * v) : _mm512_setzero_ps();
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float* cr = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      __m512 x = acc[i][v];
      if (bias) {
        x = _mm512_fmadd_ps(x, va, bias_v[v]);
      } else if (beta == 0.0f) {
        x = _mm512_mul_ps(x, va);
      } else {
        const __m512 old = _mm512_maskz_loadu_ps(mk[v], cr + 16 * v);
        x = beta == 1.0f ? _mm512_fmadd_ps(x, va, old) : _mm512_fmadd_ps(x, va, _mm512_mul_ps(old, vb));
      }
      _mm512_mask_storeu_ps(cr + 16 * v, mk[v], x);
    }
  }
}

using KernelFn = void (*)(std::int64_t, const float*, std::int64_t, const float*, std::int64_t, float*, std::int64_t,
                          std::int64_t, float, float, const float*);

template <int V, bool Direct, std::size_t... R>
constexpr std::array<KernelFn, sizeof...(R)> make_kernels(std::index_sequence<R...>) {
  return {&kernel<int(R) + 1, V, Direct>...};
}
// kKernels[direct][one vector][r - 1]: r rows; NV vectors, or one (a last panel of <= 16 columns)
constexpr std::array<KernelFn, kMR> kKernels[2][2] = {
    {make_kernels<kNV, false>(std::make_index_sequence<kMR>()), make_kernels<1, false>(std::make_index_sequence<kMR>())},
    {make_kernels<kNV, true>(std::make_index_sequence<kMR>()), make_kernels<1, true>(std::make_index_sequence<kMR>())}};
// In place, a last panel of NR + 1-16 columns (n = 100: 64 + 36) is one panel of three vectors,
// at most kMR3 rows: 9 x 3 accumulators, 3 B vectors and a broadcast fill 31 registers.
constexpr int kMR3 = 9;
constexpr auto kKernels3 = make_kernels<3, true>(std::make_index_sequence<kMR3>());

// --- the last few columns as dot products along the depth ---------------------------------
// n = 100 in 16-lane vectors is 7 vectors for 100 columns: 11% of the FMAs are padding. In place,
// the last n mod 16 columns (dot_columns) are computed instead as dot products along k: those
// columns of B copied transposed into rows of kp = k rounded up to 16 floats (zeros past k; 4 x 784
// floats for n = 100), and a tile of R rows of A x J of those rows accumulating R x J vectors of 16
// partial sums along k, each reduced to one float at the end. No lane is padding but the depth's
// last vector (none for k = 784 = 49 x 16). The other columns run the vector panels as before
// (n = 100: 32, 32, 32 and 4 dot columns, instead of 32, 32, 36 in three vectors): (100, 784) x
// (784, 100) + bias goes from ~127 to ~117 us. These columns' sums are in another order (16
// interleaved chains, then a fixed reduction tree), so their last bits differ from the vector
// kernels'; every other column keeps its bits. Per step of 16: R + J loads for R x J FMAs, all J
// columns in one pass over A (a second pass, for 9-15 columns, streams A from L2 again and loses).
constexpr int kDotJ = 8;

// (GCC 12 flags the _mm512_undefined_ps() inside the shuffle intrinsics as uninitialised, as in
// transpose_block; the kernels are compiled where kDots instantiates them.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The sum of a vector's 16 lanes: halves, quarters, pairs, neighbours (a fixed tree).
inline float sum_lanes(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
  return _mm512_cvtss_f32(v);
}

template <int R, int J>
void dot_kernel(std::int64_t k, const float* __restrict a, std::int64_t lda, const float* __restrict bt,
                std::int64_t kp, float* c, std::int64_t ldc, float alpha, float beta, const float* bias) {
  __m512 acc[R][J];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) acc[i][j] = _mm512_setzero_ps();
  const std::int64_t full = k / 16 * 16;
  std::int64_t p = 0;
  for (; p < full; p += 16) {
    __m512 bv[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) bv[j] = _mm512_load_ps(bt + j * kp + p);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m512 av = _mm512_loadu_ps(a + i * lda + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  if (p < k) {  // the depth's last k mod 16: A's lanes past k are not read, op(B)^T's are zero
    const __mmask16 mk = lanes(k - p);
    __m512 bv[J];
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) bv[j] = _mm512_load_ps(bt + j * kp + p);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m512 av = _mm512_maskz_loadu_ps(mk, a + i * lda + p);
#pragma GCC unroll 8
      for (int j = 0; j < J; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) {
      const float s = sum_lanes(acc[i][j]);
      float& out = c[i * ldc + j];
      if (bias) out = std::fma(s, alpha, bias[j]);
      else if (beta == 0.0f) out = s * alpha;
      else out = beta == 1.0f ? std::fma(s, alpha, out) : std::fma(s, alpha, out * beta);
    }
}

using DotFn = void (*)(std::int64_t, const float*, std::int64_t, const float*, std::int64_t, float*, std::int64_t,
                       float, float, const float*);

// Rows per tile for J columns: R x J accumulators + J op(B)^T vectors + one of A within 32
// registers, at most 8 rows.
constexpr int dot_rows(int j) { return std::min(8, (31 - j) / j); }
template <int R, int J>
constexpr DotFn dot_fn() {
  if constexpr (R <= dot_rows(J)) return &dot_kernel<R, J>;
  else return nullptr;
}
template <int J, std::size_t... R>
constexpr std::array<DotFn, 8> make_dots(std::index_sequence<R...>) {
  return {dot_fn<int(R) + 1, J>()...};
}
// kDots[j - 1][r - 1]: r rows of A, j columns of op(B), r <= dot_rows(j)
constexpr std::array<DotFn, 8> kDots[kDotJ] = {
    make_dots<1>(std::make_index_sequence<8>()), make_dots<2>(std::make_index_sequence<8>()),
    make_dots<3>(std::make_index_sequence<8>()), make_dots<4>(std::make_index_sequence<8>()),
    make_dots<5>(std::make_index_sequence<8>()), make_dots<6>(std::make_index_sequence<8>()),
    make_dots<7>(std::make_index_sequence<8>()), make_dots<8>(std::make_index_sequence<8>())};
#pragma GCC diagnostic pop

// How many of an in-place product's last columns run as dot products: n mod 16 when that is 1 to
// 8, for 16 <= n <= 128 (the narrow products, where the padding is 3-33% of the FMAs), m >= 10 and
// 128 <= k <= 16384 (the copy of B fits the B packing buffer, unused in place); else none. The
// bounds are measured (bench/README.md, issue 36): below them the copy of B, the reductions and
// short tiles cost more than the padding saves (k = 16-96; m = 8-9, which the three-vector panel
// takes in one row panel), and 9-15 columns need a second pass over A. A fixed rule of the shape,
// so a shape always takes the same path. (DEZERO_SGEMM_DOT=0 turns this off, for tuning.)
#ifndef DEZERO_SGEMM_DOT
#define DEZERO_SGEMM_DOT 1
#endif
std::int64_t dot_columns(std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t r = n % 16;
  const bool takes = DEZERO_SGEMM_DOT && n >= 16 && n <= 128 && r <= kDotJ && m >= 10 && k >= 128 &&
                     k <= kKC * kNC / kDotJ;
  return takes ? r : 0;
}

// C[:, 0:nd] = alpha A (m x k, in place) B[:, 0:nd] + beta C or + bias, as dot products; nd <= 8.
void dot_columns_in_place(std::int64_t m, std::int64_t nd, std::int64_t k, float alpha, const float* a,
                          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                          const float* bias, float* bt) {
  const std::int64_t kp = ceil_div(k, 16) * 16;
  for (std::int64_t p = 0; p < k; p += 16)  // bt[j kp + p] = B[p, j], zero for p >= k
    transpose_block(b + p * ldb, ldb, std::min<std::int64_t>(16, k - p), nd, bt + p, kp, 16);
  const std::int64_t panels = ceil_div(m, dot_rows(int(nd)));
  for (std::int64_t q = 0; q < panels; ++q) {
    const std::int64_t ir = panel_lo(q, m, panels), mr = panel_lo(q + 1, m, panels) - ir;
    kDots[nd - 1][mr - 1](k, a + ir * lda, lda, bt, kp, c + ir * ldc, ldc, alpha, beta, bias);
  }
}

// Whether the kernel reads op(A) and op(B) where they are instead of packing them: NN products
// at most 128 columns wide (the MLP 784-100-10's (100, 784) x (784, 100)), or at most 512 wide
// with at most 32 rows. Packing costs a pass over A (16 x 16 transposes) and one over B per
// call, 17% of that product's time; read in place, its B rows (400 bytes) stay a few cache lines
// per step of the depth. Wider B runs 5-10% slower in place when many row panels share it (m =
// 100, n = 256-1000: rows 1-4 KB apart), but with few rows the packing is most of the work
// ((10, 784) x (784, 512): 1.5x in place). (DEZERO_SGEMM_DIRECT=0 turns this off, for tuning.)
#ifndef DEZERO_SGEMM_DIRECT
#define DEZERO_SGEMM_DIRECT 1
#endif
bool reads_in_place(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t /*k*/) {
  return DEZERO_SGEMM_DIRECT && !ta && !tb && (n <= 128 || (m <= 32 && n <= 512));
}

// NN in place (reads_in_place): C's columns in panels of NR, where a remainder of at most 16
// columns joins the last full panel (three vectors; n = 100: 32, 32, 36 instead of 32, 32, 32, 4,
// whose one-vector kernel waits on its loads: a broadcast per FMA), each panel swept over all
// rows in row panels split evenly, at most MR rows (kMR3 for three vectors). Depth blocks as in
// the packed path (balanced_block(k, KC, 16)), so the sums, and the bits, are the packed path's;
// but the last dot_columns(m, n, k) columns, if any, run first as dot products.
void sgemm_in_place(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda,
                    const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc, const float* bias) {
  const std::int64_t nd = dot_columns(m, n, k);
  if (nd > 0) {
    dot_columns_in_place(m, nd, k, alpha, a, lda, b + (n - nd), ldb, beta, c + (n - nd), ldc,
                         bias ? bias + (n - nd) : nullptr, buffers().b);
    n -= nd;
  }
  const std::int64_t kc_max = balanced_block(k, kKC, 16);
  const std::int64_t full = n / kNR, rem = n % kNR;
  const std::int64_t merged = full >= 1 && rem > 0 && rem <= 16 ? (full - 1) * kNR : -1;  // the 3-vector panel
  for (std::int64_t pc = 0; pc < k; pc += kc_max) {
    const std::int64_t kc = std::min(kc_max, k - pc);
    const float beta_pc = pc == 0 ? beta : 1.0f;
    const float* bias_pc = pc == 0 ? bias : nullptr;
    for (std::int64_t jr = 0; jr < n;) {
      const std::int64_t nr = jr == merged ? kNR + rem : std::min<std::int64_t>(kNR, n - jr);
      const std::int64_t rmax = nr > kNR ? kMR3 : kMR, panels = ceil_div(m, rmax);
      for (std::int64_t q = 0; q < panels; ++q) {
        const std::int64_t ir = panel_lo(q, m, panels), mr = panel_lo(q + 1, m, panels) - ir;
        const KernelFn kern = nr > kNR ? kKernels3[mr - 1] : kKernels[1][nr <= 16][mr - 1];
        kern(kc, a + ir * lda + pc, lda, b + pc * ldb + jr, ldb, c + ir * ldc + jr, ldc, nr, alpha, beta_pc,
             bias_pc ? bias_pc + jr : nullptr);
      }
      jr += nr;
    }
  }
}

}  // namespace

bool sgemm_available() { return true; }

void sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
           const float* bias, Round round) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) return sgemm_blocking::empty_depth(m, n, beta, c, ldc, bias);
  if (round == Round::none && reads_in_place(ta, tb, m, n, k))
    return sgemm_in_place(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
  auto& buf = buffers();
  const std::int64_t nc_max = balanced_block(n, kNC, kNR);
  const std::int64_t kc_max = balanced_block(k, kKC, 16);
  const std::int64_t mc_max = balanced_block(m, kMC, kMR);
  for (std::int64_t jc = 0; jc < n; jc += nc_max) {
    const std::int64_t nc = std::min(nc_max, n - jc);
    for (std::int64_t pc = 0; pc < k; pc += kc_max) {
      const std::int64_t kc = std::min(kc_max, k - pc);
      pack_b(tb, tb ? b + jc * ldb + pc : b + pc * ldb + jc, ldb, nc, kc, buf.b, round);
      const float beta_pc = pc == 0 ? beta : 1.0f;  // later depth blocks accumulate
      const float* bias_pc = pc == 0 && bias ? bias + jc : nullptr;
      for (std::int64_t ic = 0; ic < m; ic += mc_max) {
        const std::int64_t mc = std::min(mc_max, m - ic);
        pack_a(ta, ta ? a + pc * lda + ic : a + ic * lda + pc, lda, mc, kc, buf.a, round);
        const std::int64_t panels = panel_count(mc);
        for (std::int64_t q = 0; q < panels; ++q) {
          const std::int64_t ir = panel_lo(q, mc, panels), mr = panel_lo(q + 1, mc, panels) - ir;
          for (std::int64_t jr = 0; jr < nc; jr += kNR) {
            const std::int64_t nr = std::min<std::int64_t>(kNR, nc - jr);
            kKernels[0][nr <= 16][mr - 1](kc, buf.a + q * kMR * kc, kMR, buf.b + jr * kc, kNR,
                                          c + (ic + ir) * ldc + jc + jr, ldc, nr, alpha, beta_pc,
                                          bias_pc ? bias_pc + jr : nullptr);
          }
        }
      }
    }
  }
}

#elif !(defined(__AVX2__) && defined(__FMA__))  // the baseline copy: float32 stays on Eigen
// (the avx2 copy's kernel is sgemm_avx2.cpp)

bool sgemm_available() { return false; }

void sgemm(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t, const float*,
           std::int64_t, float, float*, std::int64_t, const float*, Round) {
  throw Error("sgemm: this copy of the kernels (x86-64) has no float32 GEMM of its own; use the Eigen path");
}

#endif

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
