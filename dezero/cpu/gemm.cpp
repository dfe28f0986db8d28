// dezero/cpu/gemm.cpp - the host backend's batched GEMM: for each product, Eigen
// (float64, and the float32 shapes where Eigen wins) or our float32 kernels (gemm.hpp:
// sgemm_small for tiny products, sgemm for the rest), chosen by a fixed per-shape table
// measured with bench/sgemm_shapes.cpp, and the split of large products into per-thread
// slabs. Also gemm_bias, C = op(A) op(B) + bias in one pass where sgemm_small or sgemm
// takes the product. The kernels themselves are in sgemm.cpp and gemm_small.cpp; this file
// only chooses and threads.
#include "dezero/cpu/eigen.hpp"  // first: Eigen renamed per instruction-set level

#include <algorithm>
#include <type_traits>
#include <vector>

#include "dezero/backend/dispatch.hpp"
#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/parallel.hpp"
#include "dezero/half.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

// --- one product on the calling thread: Eigen or our float32 kernels ------------------------
template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MutMap = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

// --- which kernel takes a float32 product: a fixed table, measured ----------------------------
// Per shape, one product on one thread (bench/sgemm_shapes.cpp times our kernels against Eigen,
// oneDNN's dnnl_sgemm and OpenBLAS on M, N of 10-512, K of 100-4096 and the MLPs' products;
// the figures are in bench/README.md):
//   - tiny products (at most kGemmSmallMacs multiply-adds): sgemm_small (gemm_small.cpp), except
//     those at least 8 x 8 and deeper than 8 (small_to_sgemm), which sgemm runs 2x faster;
//   - C at least 8 rows and 8 columns: our blocked sgemm (sgemm.cpp). From 32 columns on it
//     runs 1.2-1.5x Eigen; on 8-31 columns (a 10-class output layer, (100, 100) x (100, 10))
//     its one-vector edge kernel runs 1.4-1.8x Eigen (Eigen took n < 32 until issue 36);
//   - fewer rows or columns (a batch of 1: (1, 784) x (784, 100)): Eigen, whose GEMV-like
//     paths beat a register tile that would be mostly padding.
// The table is fixed, not timed at run time: a product of a given shape always takes the same
// kernel, in every process and on every machine with the same build, so its result is the same
// bits run after run (a timed choice could flip between two kernels that round differently when
// their speeds are close). Within sgemm the edge kernels and the in-place reads never change the
// bits (sgemm.cpp). oneDNN and OpenBLAS are faster on some shapes (NT and wide-N products by
// 5-11%, (1000, 100)^T x (100, 10)) but are not used: OpenBLAS is not a dependency, and oneDNN
// is optional, so results would then depend on whether the build found it.
bool takes_sgemm(std::int64_t m, std::int64_t n, std::int64_t /*k*/) {
  return m >= 8 && n >= 8 && sgemm_available();
}

// Tiny products that sgemm runs faster than sgemm_small: at least 8 x 8 and deeper than 8
// (sgemm_small holds op(B)'s rows in registers up to depth 8; deeper it runs at 0.4-0.5x sgemm:
// (10, 100) x (100, 10), (100, 16) x (16, 10), (32, 16) x (16, 32)). W3's products (depth 1-2,
// one column, two rows) stay on sgemm_small.
bool small_to_sgemm(std::int64_t m, std::int64_t n, std::int64_t k) { return k > 8 && takes_sgemm(m, n, k); }

// out (rows x cols, contiguous) = src (rows x cols, row stride ld) rounded to bfloat16 / float16 and
// widened back: half.hpp's conversions, the values Round stands for.
void rounded_copy(Round r, const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                  std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const float v = src[i * ld + j];
      out[i * cols + j] = r == Round::bf16 ? static_cast<float>(bfloat16_t(v)) : static_cast<float>(float16_t(v));
    }
}

// One GEMM on the calling thread: C = alpha op(A) op(B) + beta C, row-major views, or
// C = alpha op(A) op(B) + bias when a bias row (float32 only) is given. float32 goes where the
// table above sends it; float64 to Eigen. With a bias, a product that sgemm takes gets it in
// sgemm's store (one pass); any other (a slab that sgemm_small or Eigen takes) gets the bias
// copied into C and beta = 1: both the bits of the unfused broadcast-and-accumulate path.
//
// round (float32 only; gemm_lowp): op(A) and op(B) rounded to bfloat16 / float16 first, by sgemm as it
// packs them where sgemm takes the product, else into rounded copies (tiny products, the x86-64 copy).
template <class T>
void gemm_one(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, std::int64_t lda,
              const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc, const T* bias = nullptr,
              Round round = Round::none) {
  if constexpr (std::is_same_v<T, float>) {
    if (round != Round::none) {
      if (takes_sgemm(m, n, k) && (small_to_sgemm(m, n, k) || m * n * k > kGemmSmallMacs))
        return sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, bias ? 0.0f : beta, c, ldc, bias, round);
      std::vector<float> ra, rb;
      rounded_copy(round, a, ta ? k : m, ta ? m : k, lda, ra);
      rounded_copy(round, b, tb ? n : k, tb ? k : n, ldb, rb);
      return gemm_one<float>(ta, tb, m, n, k, alpha, ra.data(), ta ? m : k, rb.data(), tb ? k : n, beta, c, ldc, bias);
    }
    if (bias) {
      if (takes_sgemm(m, n, k) && (small_to_sgemm(m, n, k) || m * n * k > kGemmSmallMacs))
        return sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc, bias);
      for (std::int64_t i = 0; i < m; ++i) std::copy(bias, bias + n, c + i * ldc);
      beta = 1.0f;
    }
    if (!small_to_sgemm(m, n, k) && sgemm_small(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    if (takes_sgemm(m, n, k)) return sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  ConstMap<T> A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstMap<T> B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  MutMap<T> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (beta == T(0)) {
    if (!ta && !tb) C.noalias() = alpha * (A * B);
    else if (ta && !tb) C.noalias() = alpha * (A.transpose() * B);
    else if (!ta && tb) C.noalias() = alpha * (A * B.transpose());
    else C.noalias() = alpha * (A.transpose() * B.transpose());
  } else {
    if (beta != T(1)) C *= beta;
    if (!ta && !tb) C.noalias() += alpha * (A * B);
    else if (ta && !tb) C.noalias() += alpha * (A.transpose() * B);
    else if (!ta && tb) C.noalias() += alpha * (A * B.transpose());
    else C.noalias() += alpha * (A.transpose() * B.transpose());
  }
}

// --- threading: per-thread slabs of C -------------------------------------------------------
// Threads split C into independent slabs (columns when n >= m, else rows), each
// computed by a single-threaded GEMM (gemm_one). Eigen's own parallel GEMM shares packed
// panels between threads and spins on them; on the skinny products of a training
// step (batch 100: (100, 784) x (784, 1000) and friends) the slabs are faster and
// degrade gracefully when the cores are shared. Eigen itself never threads (init_gemm).
// Below 2^21 flops a product stays on the calling thread: for an RNN step
// ((30, 100) x (100, 100)) the fork/join costs more than it saves, far more when the
// cores are shared.
constexpr double kGemmParallelFlops = 1 << 21;

template <class T>
void gemm_typed(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                std::int64_t lda, std::int64_t sa, const T* b, std::int64_t ldb, std::int64_t sb, T beta, T* c,
                std::int64_t ldc, std::int64_t sc, std::int64_t batch, const T* bias = nullptr,
                Round round = Round::none) {
  double flops = 2.0 * double(m) * double(n) * double(k);
  // (a small network's products never ask for threads: no call into the pool or OpenMP at all)
  const int threads = flops * double(batch) < kGemmParallelFlops ? 1 : max_threads();  // 1 inside a loop
  if (threads > 1 && flops < kGemmParallelFlops && batch >= threads && flops * double(batch) >= kGemmParallelFlops) {
    // Many small products (a convolution's one GEMM per image): the images go onto threads.
    parallel_ranges(batch, threads, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i)
        gemm_one<T>(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc, bias, round);
    });
    return;
  }
  if (threads <= 1 || flops < kGemmParallelFlops) {
    for (std::int64_t i = 0; i < batch; ++i)
      gemm_one<T>(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc, bias, round);
    return;
  }
  // Work items: batch x slabs, slab edges aligned to 16 elements (a SIMD register of floats).
  bool by_cols = n >= m;
  std::int64_t len = by_cols ? n : m;
  std::int64_t slabs = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, len / 16));
  if (batch >= threads) slabs = 1;
  std::int64_t items = batch * slabs;
  parallel_items(items, threads, [&](std::int64_t it) {
    std::int64_t i = it / slabs, s = it % slabs;
    std::int64_t lo = (len * s / slabs) / 16 * 16, hi = s == slabs - 1 ? len : (len * (s + 1) / slabs) / 16 * 16;
    if (hi <= lo) return;
    const T* ai = a + i * sa;
    const T* bi = b + i * sb;
    T* ci = c + i * sc;
    if (by_cols)  // C[:, lo:hi] = op(A) op(B)[:, lo:hi]
      gemm_one<T>(ta, tb, m, hi - lo, k, alpha, ai, lda, tb ? bi + lo * ldb : bi + lo, ldb, beta, ci + lo, ldc,
                  bias ? bias + lo : nullptr, round);
    else  // C[lo:hi, :] = op(A)[lo:hi, :] op(B)
      gemm_one<T>(ta, tb, hi - lo, n, k, alpha, ta ? ai + lo : ai + lo * lda, lda, bi, ldb, beta, ci + lo * ldc, ldc,
                  bias, round);
  });
}

}  // namespace

// --- the linear-algebra primitives -----------------------------------------------------------
void init_gemm() { Eigen::setNbThreads(1); }

void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
          std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b, double beta,
          void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) {
  DEZERO_DISPATCH(dt, T,
                  gemm_typed<T>(ta, tb, m, n, k, static_cast<T>(alpha), static_cast<const T*>(a), lda, stride_a,
                                static_cast<const T*>(b), ldb, stride_b, static_cast<T>(beta), static_cast<T*>(c), ldc,
                                stride_c, batch))
}

// gemm_bias: sgemm_small's one pass for tiny products; for the products that sgemm takes
// (takes_sgemm, also per slab when threaded), the bias is added in the kernel's store of the first
// depth block (sgemm.cpp), instead of a broadcast copy of the bias that the product then
// accumulates into: the same bits, one pass over C less (the MLP 784-100-10's first layer at
// batch 100). Any other product: false, and matmul_t broadcasts.
bool gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
               std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c, std::int64_t ldc) {
  if (dt != DType::Float32) return false;
  const auto* af = static_cast<const float*>(a);
  const auto* bf = static_cast<const float*>(b);
  const auto* biasf = static_cast<const float*>(bias);
  auto* cf = static_cast<float*>(c);
  if (!small_to_sgemm(m, n, k) && sgemm_small(ta, tb, m, n, k, 1.f, af, lda, bf, ldb, 0.f, cf, ldc, biasf))
    return true;
  if (!takes_sgemm(m, n, k)) return false;
  gemm_typed<float>(ta, tb, m, n, k, 1.f, af, lda, 0, bf, ldb, 0, 0.f, cf, ldc, 0, 1, biasf);
  return true;
}

// gemm_lowp (LowpKernels::gemm) where oneDNN has no 16-bit product for this CPU: the float32 GEMM
// with op(A) and op(B) rounded to `compute` as they are packed (Round), the products summed in
// float32, as a 16-bit kernel sums them. A 16-bit operand (a copy the caller kept) is widened first,
// exactly. Threads and bias as gemm_typed's; accumulate adds to C.
bool gemm_lowp(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
               DType a_dt, std::int64_t lda, const void* b, DType b_dt, std::int64_t ldb, const float* bias, float* c,
               std::int64_t ldc, bool accumulate) {
  if ((compute != DType::BFloat16 && compute != DType::Float16) || m <= 0 || n <= 0 || k <= 0) return false;
  if ((a_dt != DType::Float32 && a_dt != compute) || (b_dt != DType::Float32 && b_dt != compute)) return false;
  std::vector<float> wa, wb;
  auto widened = [](const void* p, DType dt, std::int64_t rows, std::int64_t ld, std::vector<float>& w) {
    if (dt == DType::Float32) return static_cast<const float*>(p);
    w.resize(static_cast<std::size_t>(rows * ld));
    cast_half(dt, p, DType::Float32, w.data(), rows * ld);
    return static_cast<const float*>(w.data());
  };
  const float* af = widened(a, a_dt, ta ? k : m, lda, wa);
  const float* bf = widened(b, b_dt, tb ? n : k, ldb, wb);
  const Round round = compute == DType::BFloat16 ? Round::bf16 : Round::fp16;
  gemm_typed<float>(ta, tb, m, n, k, 1.f, af, lda, 0, bf, ldb, 0, accumulate ? 1.f : 0.f, c, ldc, 0, 1, bias, round);
  return true;
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
