// cpu/cpu_backend.cpp - the host backend: Eigen for GEMM, plain loops that the
// compiler vectorises for everything else, OpenMP threads for large arrays only
// (small arrays stay on the calling thread: overhead is the product for small nets).
//
// Twin of cuda/cuda_backend.cu: the same primitives in the same order, the same
// math through kernels/ops.hpp.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#include <omp.h>
#include <type_traits>

#include "dezero/backend/backend.hpp"
#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"
#include "dezero/backend/ops.hpp"
#include "dezero/backend/generator.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/error.hpp"

namespace dezero::detail {

namespace {

using cpu::for_each_row;
using cpu::kParallelMin;
using cpu::par_for;

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MutMap = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

// One GEMM on the calling thread: C = alpha op(A) op(B) + beta C, row-major views.
// float32: tiny products (at most kGemmSmallMacs multiply-adds) take gemm_small.cpp;
// larger ones go to our AVX-512 sgemm (sgemm.cpp) unless C is narrower than its 32-column
// register tile or shorter than 8 rows: there Eigen's smaller tiles win (measured with
// bench/sgemm_shapes: n = 16 runs at half Eigen's speed, n >= 32 at 1.2-1.5x).
template <class T>
void gemm_one(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, std::int64_t lda,
              const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (sgemm_small(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    if (m >= 8 && n >= 32 && sgemm_available()) return sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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

// Threads split C into independent slabs (columns when n >= m, else rows), each
// computed by a single-threaded Eigen GEMM. Eigen's own parallel GEMM shares packed
// panels between threads and spins on them; on the skinny products of a training
// step (batch 100: (100, 784) x (784, 1000) and friends) the slabs are faster and
// degrade gracefully when the cores are shared. Eigen itself never threads (see
// CpuBackend's constructor). Below 2^21 flops a product stays on the calling thread:
// for an RNN step ((30, 100) x (100, 100)) the fork/join cost more than it saved,
// 15x more on a loaded 2-core machine.
constexpr double kGemmParallelFlops = 1 << 21;

template <class T>
void gemm_typed(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                std::int64_t lda, std::int64_t sa, const T* b, std::int64_t ldb, std::int64_t sb, T beta, T* c,
                std::int64_t ldc, std::int64_t sc, std::int64_t batch) {
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  double flops = 2.0 * double(m) * double(n) * double(k);
  if (threads <= 1 || flops < kGemmParallelFlops) {
    for (std::int64_t i = 0; i < batch; ++i)
      gemm_one<T>(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
    return;
  }
  // Work items: batch x slabs, slab edges aligned to 16 elements (a SIMD register of floats).
  bool by_cols = n >= m;
  std::int64_t len = by_cols ? n : m;
  std::int64_t slabs = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, len / 16));
  if (batch >= threads) slabs = 1;
  std::int64_t items = batch * slabs;
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(std::min<std::int64_t>(threads, items)))
  for (std::int64_t it = 0; it < items; ++it) {
    std::int64_t i = it / slabs, s = it % slabs;
    std::int64_t lo = (len * s / slabs) / 16 * 16, hi = s == slabs - 1 ? len : (len * (s + 1) / slabs) / 16 * 16;
    if (hi <= lo) continue;
    const T* ai = a + i * sa;
    const T* bi = b + i * sb;
    T* ci = c + i * sc;
    if (by_cols)  // C[:, lo:hi] = op(A) op(B)[:, lo:hi]
      gemm_one<T>(ta, tb, m, hi - lo, k, alpha, ai, lda, tb ? bi + lo * ldb : bi + lo, ldb, beta, ci + lo, ldc);
    else  // C[lo:hi, :] = op(A)[lo:hi, :] op(B)
      gemm_one<T>(ta, tb, hi - lo, n, k, alpha, ta ? ai + lo : ai + lo * lda, lda, bi, ldb, beta, ci + lo * ldc, ldc);
  }
}

template <class T>
void softmax_typed(const T* x, T* y, std::int64_t outer, std::int64_t c, std::int64_t inner, bool log_) {
  auto column = [&](std::int64_t o, std::int64_t j) {
    const T* p = x + o * c * inner + j;
    T* q = y + o * c * inner + j;
    T mx = p[0];
    for (std::int64_t i = 1; i < c; ++i) mx = p[i * inner] > mx ? p[i * inner] : mx;
    T s = 0;
    for (std::int64_t i = 0; i < c; ++i) {
      T e = kernels::m_exp(p[i * inner] - mx);
      q[i * inner] = e;
      s += e;
    }
    if (log_) {
      T ls = kernels::m_log(s) + mx;
      for (std::int64_t i = 0; i < c; ++i) q[i * inner] = p[i * inner] - ls;
    } else {
      T inv = T(1) / s;
      for (std::int64_t i = 0; i < c; ++i) q[i * inner] *= inv;
    }
  };
  std::int64_t cols = outer * inner;
  if (cols * c >= kParallelMin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t t = 0; t < cols; ++t) column(t / inner, t % inner);
  } else {
    for (std::int64_t t = 0; t < cols; ++t) column(t / inner, t % inner);
  }
}

template <class T>
T row_logsumexp(const T* p, std::int64_t c) {
  T mx = p[0];
  for (std::int64_t i = 1; i < c; ++i) mx = p[i] > mx ? p[i] : mx;
  T s = 0;
  for (std::int64_t i = 0; i < c; ++i) s += kernels::m_exp(p[i] - mx);
  return kernels::m_log(s) + mx;
}

template <class T>
void sce_typed(const T* x, const std::int64_t* t, T* loss, std::int64_t n, std::int64_t c) {
  double acc = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const T* p = x + i * c;
    acc += static_cast<double>(row_logsumexp(p, c) - p[t[i]]);
  }
  *loss = static_cast<T>(acc / static_cast<double>(n));
}

template <class T>
void sce_grad_typed(const T* x, const std::int64_t* t, T gy, T* gx, std::int64_t n, std::int64_t c) {
  T scale = gy / static_cast<T>(n);
  auto row = [&](std::int64_t i) {
    const T* p = x + i * c;
    T* q = gx + i * c;
    T ls = row_logsumexp(p, c);
    for (std::int64_t j = 0; j < c; ++j) q[j] = kernels::m_exp(p[j] - ls) * scale;
    q[t[i]] -= scale;
  };
  if (n * c >= kParallelMin) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) row(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) row(i);
  }
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() { Eigen::setNbThreads(1); }  // gemm_typed does the threading
  Device device() const override { return Device::cpu(); }

  void* allocate(std::size_t nbytes) override { return cpu::allocate(nbytes); }
  void deallocate(void* ptr, std::size_t nbytes) noexcept override { cpu::deallocate(ptr, nbytes); }
  void copy_from_host(void* dst, const void* src, std::size_t n) override { cpu::copy_from_host(dst, src, n); }
  void copy_to_host(void* dst, const void* src, std::size_t n) override { cpu::copy_to_host(dst, src, n); }
  void copy(void* dst, const void* src, std::size_t n) override { cpu::copy(dst, src, n); }
  void fill(DType dt, void* dst, std::int64_t n, double value) override { cpu::fill(dt, dst, n, value); }
  void synchronize() override {}

  void cast(DType from, const void* x, DType to, void* y, std::int64_t n) override { cpu::cast(from, x, to, y, n); }
  void unary(UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha) override {
    cpu::unary(op, dt, x, y, n, alpha);
  }
  void binary(BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y,
              const Strided& out) override {
    cpu::binary(op, dt, a, sa, b, sb, y, out);
  }
  void where(DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
             const Strided& sb, void* y, const Strided& out) override {
    cpu::where(dt, cond, sc, a, sa, b, sb, y, out);
  }
  void copy_strided(DType dt, const void* src, const Strided& s, void* dst, const Strided& d,
                    bool accumulate) override {
    cpu::copy_strided(dt, src, s, dst, d, accumulate);
  }

  void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
              std::int64_t inner) override {
    cpu::reduce(op, dt, x, y, outer, r, inner);
  }
  void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                  std::int64_t inner) override {
    cpu::arg_reduce(op, dt, x, y, outer, r, inner);
  }

  bool gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                 std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c,
                 std::int64_t ldc) override {
    return dt == DType::Float32 && sgemm_small(ta, tb, m, n, k, 1.f, static_cast<const float*>(a), lda,
                                               static_cast<const float*>(b), ldb, 0.f, static_cast<float*>(c),
                                               ldc, static_cast<const float*>(bias));
  }

  void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
            std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b,
            double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) override {
    DEZERO_DISPATCH(dt, T,
                    gemm_typed<T>(ta, tb, m, n, k, static_cast<T>(alpha), static_cast<const T*>(a), lda, stride_a,
                                  static_cast<const T*>(b), ldb, stride_b, static_cast<T>(beta), static_cast<T*>(c),
                                  ldc, stride_c, batch))
  }

  void gather(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    DEZERO_DISPATCH(dt, T, {
      const T* s = static_cast<const T*>(src);
      T* d = static_cast<T*>(dst);
      par_for(n, n, [&](std::int64_t i) { d[i] = s[off[i]]; });
    })
  }
  void scatter_add(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    DEZERO_DISPATCH(dt, T, {
      const T* s = static_cast<const T*>(src);
      T* d = static_cast<T*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[off[i]] += s[i];  // serial: repeated offsets accumulate
    })
  }
  void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                   std::int64_t cols) override {
    std::size_t row_bytes = static_cast<std::size_t>(cols) * dtype_size(dt);
    const char* s = static_cast<const char*>(src);
    char* d = static_cast<char*>(dst);
    // memory-bound: threads only pay off for large gathers
    par_for(rows * cols / 32, rows, [&](std::int64_t i) { std::memcpy(d + i * row_bytes, s + idx[i] * row_bytes, row_bytes); });
  }

  void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
               bool log_) override {
    if (dt == float32) softmax_typed(static_cast<const float*>(x), static_cast<float*>(y), outer, c, inner, log_);
    else softmax_typed(static_cast<const double*>(x), static_cast<double*>(y), outer, c, inner, log_);
  }
  void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                             std::int64_t c) override {
    if (dt == float32) sce_typed(static_cast<const float*>(x), t, static_cast<float*>(loss), n, c);
    else sce_typed(static_cast<const double*>(x), t, static_cast<double*>(loss), n, c);
  }
  void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                  std::int64_t n, std::int64_t c) override {
    if (dt == float32)
      sce_grad_typed(static_cast<const float*>(x), t, *static_cast<const float*>(gy), static_cast<float*>(gx), n, c);
    else
      sce_grad_typed(static_cast<const double*>(x), t, *static_cast<const double*>(gy), static_cast<double*>(gx), n, c);
  }

  void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                        std::int64_t n, const UpdateArgs& args) override {
    // The rule is a compile-time constant inside each loop, so the switch in
    // update_apply folds away and the loop vectorises (SGD over W1's 1.8M weights
    // was 13% of the epoch with the switch inside).
    auto run = [&](auto* p, const auto* g, auto* a, auto* b) {
      auto loop = [&](auto rule_c) {
        constexpr UpdateRule R = decltype(rule_c)::value;
        par_for(n, n, [&](std::int64_t i) {
          kernels::update_apply(R, p[i], g[i], a ? a + i : nullptr, b ? b + i : nullptr, args);
        });
      };
      switch (rule) {
        case UpdateRule::SGD: loop(std::integral_constant<UpdateRule, UpdateRule::SGD>{}); break;
        case UpdateRule::MomentumSGD: loop(std::integral_constant<UpdateRule, UpdateRule::MomentumSGD>{}); break;
        case UpdateRule::AdaGrad: loop(std::integral_constant<UpdateRule, UpdateRule::AdaGrad>{}); break;
        case UpdateRule::AdaDelta: loop(std::integral_constant<UpdateRule, UpdateRule::AdaDelta>{}); break;
        case UpdateRule::Adam: loop(std::integral_constant<UpdateRule, UpdateRule::Adam>{}); break;
      }
    };
    if (dt == float32)
      run(static_cast<float*>(param), static_cast<const float*>(grad), static_cast<float*>(s1), static_cast<float*>(s2));
    else
      run(static_cast<double*>(param), static_cast<const double*>(grad), static_cast<double*>(s1),
          static_cast<double*>(s2));
  }

  void random_uniform(DType dt, void* dst, std::int64_t n) override {
    auto& g = global_generator();
    std::lock_guard<std::mutex> lock(g.mutex());
    DEZERO_DISPATCH(dt, T, {
      T* p = static_cast<T*>(dst);
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(g.uniform());
    })
  }
  void random_normal(DType dt, void* dst, std::int64_t n) override {
    auto& g = global_generator();
    std::lock_guard<std::mutex> lock(g.mutex());
    DEZERO_DISPATCH(dt, T, {
      T* p = static_cast<T*>(dst);
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(g.gauss());
    })
  }

};

}  // namespace

Backend& cpu_backend() {
  // Never destroyed: tensors in static storage may be freed after main returns.
  static CpuBackend* b = new CpuBackend;
  return *b;
}

}  // namespace dezero::detail
