// dezero/gpu/cuda_backend.cu - the CUDA backend: CudaBackend, every primitive of
// backend.hpp for one CUDA device, and cuda_backend(), the backend of each device.
//
// Twin of cpu/cpu_backend.cpp. This file only wires the Backend virtuals to the
// family files, which hold the kernels and their launchers (detail/launchers.hpp):
// memory.cu, elementwise.cu, reduce.cu, gemm.cu (cuBLAS), im2col.cu, pool.cu,
// batch_norm.cu, cudnn_conv.cpp, cudnn_pool.cpp and cudnn_batch_norm.cpp (cuDNN, the
// library_* and conv2d_* entry points), index.cu, nn.cu and random.cu (cuRAND), the same
// stems as cpu/. Everything runs as kernels or library calls on the calling thread's current
// stream of the device; nothing waits for the device except copy_to_host and
// synchronize(). Not here: the device memory pool (memory_pool.cpp), devices
// (device.cpp), streams (stream.cpp) and the library handles (detail/handles.cpp).
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

// The primitives with arithmetic have no 16-bit kernels (tensor/ computes bfloat16 and float16 in
// float32; matmul and convolution reach them through their own paths): a 16-bit dtype here is a
// DtypeError, not a float64 loop over 2-byte elements. The tables hand them to their defaults or decline.
void half_has_no_kernel(const char* primitive, DType dt) {
  if (is_half(dt)) no_half_kernel(primitive, dt);
}

namespace cd = ::dezero::cuda::detail;

// --- the optional tables (backend.hpp) ------------------------------------------------------
// cuBLAS's 16-bit products (gemm.cu); a case it does not take goes to the table's default.
class CudaLowp final : public LowpKernels {
 public:
  CudaLowp(Backend& core, int id) : LowpKernels(core), id_(id) {}
  void gemm(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const Operand& a,
            const Operand& b, const float* bias, float* c, std::int64_t ldc, bool accumulate) override {
    if (gpu::gemm_lowp(id_, compute, ta, tb, m, n, k, a.data, a.dtype, a.ld, b.data, b.dtype, b.ld, bias, c, ldc,
                       accumulate))
      return;
    LowpKernels::gemm(compute, ta, tb, m, n, k, a, b, bias, c, ldc, accumulate);
  }

 private:
  int id_;
};

// One launch per batch of chunks (nn.cu).
class CudaOptimizer final : public OptimizerKernels {
 public:
  CudaOptimizer(Backend& core, int id) : OptimizerKernels(core), id_(id) {}
  void update_multi(UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                    const UpdateArgs& args) override {
    half_has_no_kernel("optimizer_update_multi", dt);
    gpu::optimizer_update_multi(id_, rule, dt, chunks, n, args);
  }

 private:
  int id_;
};

// cuDNN: convolutions, pooling, batch normalisation. false: the case is declined (see
// cudnn_conv.cpp, cudnn_pool.cpp, cudnn_batch_norm.cpp), the core's kernels run it.
class CudaLibrary final : public LibraryKernels {
 public:
  explicit CudaLibrary(int id) : id_(id) {}
  // convolution (cudnn_conv.cpp; false: tensor/conv.cpp's im2col path)
  bool conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_conv2d_forward(id_, dt, x, w, b, y, g);
  }
  bool conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_conv2d_backward_data(id_, dt, w, gy, gx, g);
  }
  bool conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_conv2d_backward_filter(id_, dt, x, gy, gw, g);
  }
  // max pooling without indexes through cuDNN (unpadded windows only; cudnn_pool.cpp)
  bool max_pool_forward(DType dt, const void* x, void* y, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_pool2d_forward(id_, true, dt, x, y, g);
  }
  bool max_pool_backward(DType dt, const void* x, const void* y, const void* gy, void* gx,
                         const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_pool2d_backward(id_, true, dt, x, y, gy, gx, g);
  }
  // average pooling through cuDNN (padding smaller than the window; cudnn_pool.cpp)
  bool avg_pool_forward(DType dt, const void* x, void* y, const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_pool2d_forward(id_, false, dt, x, y, g);
  }
  bool avg_pool_backward(DType dt, const void* x, const void* y, const void* gy, void* gx,
                         const ConvGeom& g) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_pool2d_backward(id_, false, dt, x, y, gy, gx, g);
  }
  // batch normalisation through cuDNN (cudnn_batch_norm.cpp; false: batch_norm.cu's kernels)
  bool batch_norm_forward(DType dt, const void* x, const void* gamma, const void* beta, void* y, void* mean,
                          void* inv_std, void* running_mean, void* running_var, std::int64_t n, std::int64_t c,
                          std::int64_t hw, double decay, double eps, bool train) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_batch_norm_forward(id_, dt, x, gamma, beta, y, mean, inv_std, running_mean, running_var, n, c,
                                         hw, decay, eps, train);
  }
  bool batch_norm_backward(DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                           const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n, std::int64_t c,
                           std::int64_t hw, double eps, bool train) override {
    if (is_half(dt)) return false;
    return gpu::cudnn_batch_norm_backward(id_, dt, x, gy, gamma, mean, inv_std, gx, ggamma, gbeta, n, c, hw, eps,
                                          train);
  }

 private:
  int id_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int id) : id_(id), lowp_(*this, id), optimizer_(*this, id), library_(id) {}
  LowpKernels& lowp() override { return lowp_; }
  OptimizerKernels& optimizer() override { return optimizer_; }
  LibraryKernels* library() override { return &library_; }
  Device device() const override { return Device::cuda(id_); }

  // --- memory (memory.cu) ---------------------------------------------------------------
  void* allocate(std::size_t nbytes) override { return gpu::allocate(id_, nbytes); }
  void deallocate(void* ptr, std::size_t) noexcept override { gpu::deallocate(id_, ptr); }
  void copy_from_host(void* dst, const void* src, std::size_t n) override { gpu::copy_from_host(id_, dst, src, n); }
  void copy_to_host(void* dst, const void* src, std::size_t n) override { gpu::copy_to_host(id_, dst, src, n); }
  void copy(void* dst, const void* src, std::size_t n) override { gpu::copy(id_, dst, src, n); }
  void fill(DType dt, void* dst, std::int64_t n, double value) override { gpu::fill(id_, dt, dst, n, value); }
  void synchronize() override { gpu::synchronize(id_); }

  // --- element-wise (elementwise.cu) ----------------------------------------------------
  void cast(DType from, const void* x, DType to, void* y, std::int64_t n) override {
    gpu::cast(id_, from, x, to, y, n);
  }
  void unary(UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha) override {
    gpu::unary(id_, op, dt, x, y, n, alpha);
  }
  void binary(BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y,
              const Strided& out) override {
    gpu::binary(id_, op, dt, a, sa, b, sb, y, out);
  }
  void where(DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
             const Strided& sb, void* y, const Strided& out) override {
    gpu::where(id_, dt, cond, sc, a, sa, b, sb, y, out);
  }
  void copy_strided(DType dt, const void* src, const Strided& s, void* dst, const Strided& d,
                    bool accumulate) override {
    gpu::copy_strided(id_, dt, src, s, dst, d, accumulate);
  }

  // --- reductions (reduce.cu) -----------------------------------------------------------
  void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
              std::int64_t inner) override {
    gpu::reduce(id_, op, dt, x, y, outer, r, inner);
  }
  void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                  std::int64_t inner) override {
    gpu::arg_reduce(id_, op, dt, x, y, outer, r, inner);
  }

  // --- GEMM (gemm.cu; gemm_bias and the squared error: the NnKernels defaults) -----------
  void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
            std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b,
            double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) override {
    half_has_no_kernel("gemm", dt);
    gpu::gemm(id_, dt, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
  }

  // --- convolution and pooling helpers (im2col.cu, pool.cu) ---------------------------------
  void im2col(DType dt, const void* x, void* col, const ConvGeom& g) override {
    half_has_no_kernel("im2col", dt);
    gpu::im2col(id_, dt, x, col, g);
  }
  void col2im(DType dt, const void* col, void* x, const ConvGeom& g) override {
    half_has_no_kernel("col2im", dt);
    gpu::col2im(id_, dt, col, x, g);
  }
  void max_pool_forward(DType dt, const void* x, void* y, std::int64_t* idx, const ConvGeom& g) override {
    half_has_no_kernel("max_pool_forward", dt);
    gpu::max_pool_forward(id_, dt, x, y, idx, g);
  }
  void max_pool_backward(DType dt, const void* gy, const std::int64_t* idx, void* gx, const ConvGeom& g) override {
    half_has_no_kernel("max_pool_backward", dt);
    gpu::max_pool_backward(id_, dt, gy, idx, gx, g);
  }
  void max_pool_gather(DType dt, const void* x, const std::int64_t* idx, void* y, const ConvGeom& g) override {
    half_has_no_kernel("max_pool_gather", dt);
    gpu::max_pool_gather(id_, dt, x, idx, y, g);
  }
  void avg_pool_forward(DType dt, const void* x, void* y, const ConvGeom& g) override {
    half_has_no_kernel("avg_pool_forward", dt);
    gpu::avg_pool_forward(id_, dt, x, y, g);
  }
  void avg_pool_backward(DType dt, const void*, const void*, const void* gy, void* gx, const ConvGeom& g) override {
    half_has_no_kernel("avg_pool_backward", dt);
    gpu::avg_pool_backward(id_, dt, gy, gx, g);
  }


  // --- indexing (index.cu) --------------------------------------------------------------
  void gather(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    gpu::gather(id_, dt, src, off, dst, n);
  }
  void scatter_add(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    gpu::scatter_add(id_, dt, src, off, dst, n);
  }
  void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                   std::int64_t cols) override {
    gpu::gather_rows(id_, dt, src, idx, dst, rows, cols);
  }

  // --- fused neural-network kernels (nn.cu) ---------------------------------------------
  void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
               bool log_) override {
    half_has_no_kernel("softmax", dt);
    gpu::softmax(id_, dt, x, y, outer, c, inner, log_);
  }
  void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                             std::int64_t c) override {
    half_has_no_kernel("softmax_cross_entropy", dt);
    gpu::softmax_cross_entropy(id_, dt, x, t, loss, n, c);
  }
  void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                  std::int64_t n, std::int64_t c) override {
    half_has_no_kernel("softmax_cross_entropy_grad", dt);
    gpu::softmax_cross_entropy_grad(id_, dt, x, t, gy, gx, n, c);
  }
  // batch normalisation (batch_norm.cu's kernels)
  void batch_norm_forward(DType dt, const void* x, const void* gamma, const void* beta, void* y, void* mean,
                          void* inv_std, void* running_mean, void* running_var, std::int64_t n, std::int64_t c,
                          std::int64_t hw, double decay, double eps, bool train) override {
    half_has_no_kernel("batch_norm_forward", dt);
    gpu::batch_norm_forward(id_, dt, x, gamma, beta, y, mean, inv_std, running_mean, running_var, n, c, hw, decay,
                            eps, train);
  }
  void batch_norm_backward(DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                           const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n, std::int64_t c,
                           std::int64_t hw, bool train) override {
    half_has_no_kernel("batch_norm_backward", dt);
    gpu::batch_norm_backward(id_, dt, x, gy, gamma, mean, inv_std, gx, ggamma, gbeta, n, c, hw, train);
  }
  void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                        std::int64_t n, const UpdateArgs& args) override {
    half_has_no_kernel("optimizer_update", dt);
    gpu::optimizer_update(id_, rule, dt, param, grad, s1, s2, n, args);
  }

  // --- random numbers (random.cu) -------------------------------------------------------
  void random_uniform(Generator& g, DType dt, void* dst, std::int64_t n) override {
    half_has_no_kernel("random_uniform", dt);
    gpu::random_uniform(id_, g, dt, dst, n);
  }
  void random_normal(Generator& g, DType dt, void* dst, std::int64_t n) override {
    half_has_no_kernel("random_normal", dt);
    gpu::random_normal(id_, g, dt, dst, n);
  }

 private:
  int id_;
  CudaLowp lowp_;
  CudaOptimizer optimizer_;
  CudaLibrary library_;
};

}  // namespace

// --- the backend of each device -------------------------------------------------------------
bool cuda_runtime_available() { return cd::runtime_available(); }

Backend& cuda_backend(int device_id) {
  cd::check_device_id("tensor storage", device_id);
  static std::mutex mu;
  static auto* backends = new std::vector<CudaBackend*>();  // one per device, never destroyed
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<std::size_t>(device_id) >= backends->size()) backends->resize(device_id + 1, nullptr);
  auto& b = (*backends)[device_id];
  if (!b) b = new CudaBackend(device_id);
  return *b;
}

}  // namespace dezero::detail
