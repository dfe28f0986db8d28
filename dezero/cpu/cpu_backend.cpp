// dezero/cpu/cpu_backend.cpp - the host backend: CpuBackend, the Backend of
// backend/backend.hpp for Device::cpu(). Each virtual forwards to its family file through
// kernels.hpp (memory.cpp, elementwise.cpp, reduce.cpp, gemm.cpp, im2col.cpp, pool.cpp,
// index.cpp, nn.cpp, random.cpp), where the loops are: Eigen or our AVX2 / AVX-512 kernels
// for GEMM, plain loops that the compiler vectorises for everything else, the pool's threads
// (parallel.hpp) for large arrays only (small arrays stay on the calling thread: overhead is
// the product for small nets). No loops here.
//
// Compiled once per instruction-set level (isa.hpp): each copy's CpuBackend calls its own
// level's kernels, and its KernelTable (the bottom of this file) is what cpu/isa.cpp picks
// from at run time; cpu_backend(), the one instance, is made there.
//
// Twin of gpu/cuda_backend.cu: the same primitives in the same order, the same
// math through backend/ops.hpp.
#include <cstddef>
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/isa.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/device.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

// The primitives with arithmetic have no 16-bit kernels (tensor/ computes bfloat16 and float16 in
// float32; matmul and convolution reach them through their own paths): a 16-bit dtype here is a
// DtypeError, not a float64 loop over 2-byte elements. The tables hand them to their defaults or decline.
void half_has_no_kernel(const char* primitive, DType dt) {
  if (is_half(dt)) no_half_kernel(primitive, dt);
}

// --- the optional tables (backend.hpp): the host's one-pass kernels ----------------------------
// Each hands a case its kernel does not take (a 16-bit dtype, a size past the kernel's reach)
// to the table's default, which composes it from the core.
class CpuNn final : public NnKernels {
 public:
  using NnKernels::NnKernels;
  // gemm_small's and sgemm's bias in the product's own pass (gemm.cpp)
  void gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                 std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c,
                 std::int64_t ldc) override {
    if (!is_half(dt) && cpu::gemm_bias(dt, ta, tb, m, n, k, a, lda, b, ldb, bias, c, ldc)) return;
    NnKernels::gemm_bias(dt, ta, tb, m, n, k, a, lda, b, ldb, bias, c, ldc);
  }
  // one pass below the threading size (nn.cpp)
  void mse_forward(DType dt, const void* x0, const void* x1, void* loss, std::int64_t n, double divisor) override {
    if (!is_half(dt) && cpu::mse_forward(dt, x0, x1, loss, n, divisor)) return;
    NnKernels::mse_forward(dt, x0, x1, loss, n, divisor);
  }
  void mse_backward(DType dt, const void* x0, const void* x1, const void* gy, void* gx, std::int64_t n,
                    double scale) override {
    if (!is_half(dt) && cpu::mse_backward(dt, x0, x1, gy, gx, n, scale)) return;
    NnKernels::mse_backward(dt, x0, x1, gy, gx, n, scale);
  }
};

class CpuLowp final : public LowpKernels {
 public:
  using LowpKernels::LowpKernels;
  // oneDNN's 16-bit products where this CPU has them (AVX512-BF16, AMX), else the float32 kernels with
  // the operands rounded as they are packed (gemm.cpp): the same values, at float32's speed.
  void gemm(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const Operand& a,
            const Operand& b, const float* bias, float* c, std::int64_t ldc, bool accumulate) override {
    if (cpu::onednn_gemm_lowp(compute, ta, tb, m, n, k, a.data, a.dtype, a.ld, b.data, b.dtype, b.ld, bias, c, ldc,
                              accumulate))
      return;
    if (cpu::gemm_lowp(compute, ta, tb, m, n, k, a.data, a.dtype, a.ld, b.data, b.dtype, b.ld, bias, c, ldc,
                       accumulate)) {
      note_lowp_emulated(compute);
      return;
    }
    LowpKernels::gemm(compute, ta, tb, m, n, k, a, b, bias, c, ldc, accumulate);
  }
};

class CpuOptimizer final : public OptimizerKernels {
 public:
  using OptimizerKernels::OptimizerKernels;
  bool fuses_weight_decay() const override { return true; }
  void update_multi(UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                    const UpdateArgs& args) override {
    half_has_no_kernel("optimizer_update_multi", dt);
    cpu::optimizer_update_multi(rule, dt, chunks, n, args);
  }
};

// The convolutions' "library" on the host: oneDNN (float32, when built with it and not turned
// off), else im2col + GEMM image by image, each image's col in cache (im2col.cpp); tensor/conv.cpp's
// batched path takes what these decline (16-bit data, a 16-bit compute type). No pooling or batch
// normalisation library: those run on the core's kernels.
class CpuLibrary final : public LibraryKernels {
 public:
  bool conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return cpu::onednn_conv2d_forward(dt, x, w, b, y, g) || cpu::conv2d_forward(dt, x, w, b, y, g);
  }
  bool conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return cpu::onednn_conv2d_backward_data(dt, w, gy, gx, g) || cpu::conv2d_backward_data(dt, w, gy, gx, g);
  }
  bool conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return cpu::onednn_conv2d_backward_filter(dt, x, gy, gw, g) || cpu::conv2d_backward_filter(dt, x, gy, gw, g);
  }
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() : cache_(make_host_block_cache()) { init_gemm(); }
  Device device() const override { return Device::cpu(); }
  NnKernels& nn() override { return nn_; }
  LowpKernels& lowp() override { return lowp_; }
  OptimizerKernels& optimizer() override { return optimizer_; }
  LibraryKernels* library() override { return &library_; }

  // --- memory (memory.cpp) ------------------------------------------------------------------
  void* allocate(std::size_t nbytes) override { return cpu::allocate(*cache_, nbytes); }
  void deallocate(void* ptr, std::size_t nbytes) noexcept override { cpu::deallocate(*cache_, ptr, nbytes); }
  void copy_from_host(void* dst, const void* src, std::size_t n) override { cpu::copy_from_host(dst, src, n); }
  void copy_to_host(void* dst, const void* src, std::size_t n) override { cpu::copy_to_host(dst, src, n); }
  void copy(void* dst, const void* src, std::size_t n) override { cpu::copy(dst, src, n); }
  void fill(DType dt, void* dst, std::int64_t n, double value) override { cpu::fill(dt, dst, n, value); }
  void synchronize() override {}  // every primitive has finished when it returns

  // --- element-wise (elementwise.cpp) -------------------------------------------------------
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

  // --- reductions (reduce.cpp) --------------------------------------------------------------
  void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
              std::int64_t inner) override {
    cpu::reduce(op, dt, x, y, outer, r, inner);
  }
  void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                  std::int64_t inner) override {
    cpu::arg_reduce(op, dt, x, y, outer, r, inner);
  }

  // --- linear algebra (gemm.cpp) ------------------------------------------------------------
  void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
            std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b,
            double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) override {
    half_has_no_kernel("gemm", dt);
    cpu::gemm(dt, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
  }

  // --- convolution and pooling helpers (im2col.cpp, pool.cpp) --------------------------------
  void im2col(DType dt, const void* x, void* col, const ConvGeom& g) override {
    half_has_no_kernel("im2col", dt);
    cpu::im2col(dt, x, col, g);
  }
  void col2im(DType dt, const void* col, void* x, const ConvGeom& g) override {
    half_has_no_kernel("col2im", dt);
    cpu::col2im(dt, col, x, g);
  }
  void max_pool_forward(DType dt, const void* x, void* y, std::int64_t* idx, const ConvGeom& g) override {
    half_has_no_kernel("max_pool_forward", dt);
    cpu::max_pool_forward(dt, x, y, idx, g);
  }
  void max_pool_backward(DType dt, const void* gy, const std::int64_t* idx, void* gx, const ConvGeom& g) override {
    half_has_no_kernel("max_pool_backward", dt);
    cpu::max_pool_backward(dt, gy, idx, gx, g);
  }
  void max_pool_gather(DType dt, const void* x, const std::int64_t* idx, void* y, const ConvGeom& g) override {
    half_has_no_kernel("max_pool_gather", dt);
    cpu::max_pool_gather(dt, x, idx, y, g);
  }
  void avg_pool_forward(DType dt, const void* x, void* y, const ConvGeom& g) override {
    half_has_no_kernel("avg_pool_forward", dt);
    cpu::avg_pool_forward(dt, x, y, g);
  }
  void avg_pool_backward(DType dt, const void* /*x*/, const void* /*y*/, const void* gy, void* gx,
                         const ConvGeom& g) override {
    half_has_no_kernel("avg_pool_backward", dt);
    cpu::avg_pool_backward(dt, gy, gx, g);
  }

  // --- indexing (index.cpp) -----------------------------------------------------------------
  void gather(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    cpu::gather(dt, src, off, dst, n);
  }
  void scatter_add(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    cpu::scatter_add(dt, src, off, dst, n);
  }
  void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                   std::int64_t cols) override {
    cpu::gather_rows(dt, src, idx, dst, rows, cols);
  }

  // --- fused neural-network kernels (nn.cpp) ------------------------------------------------
  void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
               bool log_) override {
    half_has_no_kernel("softmax", dt);
    cpu::softmax(dt, x, y, outer, c, inner, log_);
  }
  void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                             std::int64_t c) override {
    half_has_no_kernel("softmax_cross_entropy", dt);
    cpu::softmax_cross_entropy(dt, x, t, loss, n, c);
  }
  void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                  std::int64_t n, std::int64_t c) override {
    half_has_no_kernel("softmax_cross_entropy_grad", dt);
    cpu::softmax_cross_entropy_grad(dt, x, t, gy, gx, n, c);
  }
  // batch normalisation (batch_norm.cpp)
  void batch_norm_forward(DType dt, const void* x, const void* gamma, const void* beta, void* y, void* mean,
                          void* inv_std, void* running_mean, void* running_var, std::int64_t n, std::int64_t c,
                          std::int64_t hw, double decay, double eps, bool train) override {
    half_has_no_kernel("batch_norm_forward", dt);
    cpu::batch_norm_forward(dt, x, gamma, beta, y, mean, inv_std, running_mean, running_var, n, c, hw, decay, eps,
                            train);
  }
  void batch_norm_backward(DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                           const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n, std::int64_t c,
                           std::int64_t hw, bool train) override {
    half_has_no_kernel("batch_norm_backward", dt);
    cpu::batch_norm_backward(dt, x, gy, gamma, mean, inv_std, gx, ggamma, gbeta, n, c, hw, train);
  }
  void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                        std::int64_t n, const UpdateArgs& args) override {
    half_has_no_kernel("optimizer_update", dt);
    cpu::optimizer_update(rule, dt, param, grad, s1, s2, n, args);
  }

  // --- random numbers (random.cpp) ----------------------------------------------------------
  void random_uniform(Generator& g, DType dt, void* dst, std::int64_t n) override {
    half_has_no_kernel("random_uniform", dt);
    cpu::random_uniform(g, dt, dst, n);
  }
  void random_normal(Generator& g, DType dt, void* dst, std::int64_t n) override {
    half_has_no_kernel("random_normal", dt);
    cpu::random_normal(g, dt, dst, n);
  }

 private:
  HostBlockCache* cache_;  // never destroyed, like the backend
  CpuNn nn_{*this};
  CpuLowp lowp_{*this};
  CpuOptimizer optimizer_{*this};
  CpuLibrary library_;
};

}  // namespace

Backend* make_cpu_backend() { return new CpuBackend; }

DEZERO_ISA_END

// This copy's entry points (isa.hpp), under a name of its own: kernel_table_isa_avx2(), ...
#define DEZERO_TABLE_CAT2(a, b) a##b
#define DEZERO_TABLE_CAT(a, b) DEZERO_TABLE_CAT2(a, b)
const KernelTable& DEZERO_TABLE_CAT(kernel_table_, DEZERO_CPU_ISA_NS)() {
  static const KernelTable table = [] {
    init_gemm();  // this copy's Eigen never threads, whichever copy the backend uses
#if defined(__AVX512F__)
    const IsaLevel level = IsaLevel::avx512;
    const char* kernels = "AVX-512 sgemm (14 x 32 tiles) + gemm_small";
#elif defined(__AVX2__) && defined(__FMA__)
    const IsaLevel level = IsaLevel::avx2;
    const char* kernels = "AVX2 sgemm (6 x 16 tiles) + gemm_small";
#else
    const IsaLevel level = IsaLevel::sse2;
    const char* kernels = "Eigen";
#endif
    return KernelTable{level,    kernels,   make_cpu_backend, sgemm_available, sgemm,
                       sgemm_small, gemm, gemm_bias, gemm_lowp, conv2d_forward,
                       conv2d_backward_data, conv2d_backward_filter};
  }();
  return table;
}

}  // namespace dezero::detail::cpu
