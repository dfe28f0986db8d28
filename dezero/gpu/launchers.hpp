// dezero/gpu/launchers.hpp - the CUDA backend's primitives, one function per
// Backend virtual (dezero/backend/backend.hpp), in the order of its sections; each
// section names the family file that implements it. cuda_backend.cu forwards every
// virtual of CudaBackend to these (internal).
//
// Every function takes the device id first and does the rest itself: makes the device
// current for the call, runs on the calling thread's current stream of it and checks
// every launch and library call (detail/check.hpp). Arguments are as backend.hpp
// documents them (validated by the caller).
// The namespace is gpu, not cuda: inside dezero::detail a nested `cuda` would hide
// ::dezero::cuda.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/dtype.hpp"

namespace dezero::detail::gpu {

// --- memory (memory.cu) ------------------------------------------------------------------
void* allocate(int device, std::size_t nbytes);
void deallocate(int device, void* ptr) noexcept;
void copy_from_host(int device, void* dst, const void* src, std::size_t n);
void copy_to_host(int device, void* dst, const void* src, std::size_t n);
void copy(int device, void* dst, const void* src, std::size_t n);
void fill(int device, DType dt, void* dst, std::int64_t n, double value);
void synchronize(int device);

// --- element-wise (elementwise.cu) -------------------------------------------------------
void cast(int device, DType from, const void* x, DType to, void* y, std::int64_t n);
void unary(int device, UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha);
void binary(int device, BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb,
            void* y, const Strided& out);
void where(int device, DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
           const Strided& sb, void* y, const Strided& out);
void copy_strided(int device, DType dt, const void* src, const Strided& s, void* dst, const Strided& d,
                  bool accumulate);

// --- the 16-bit floats (half.cu): what moves or converts bfloat16 / float16 elements ------
// cast_half: cast where `from` or `to` is bfloat16 or float16 (elementwise.cu's cast forwards);
// copy_strided_16: copy_strided of 2-byte elements, never accumulating.
void cast_half(int device, DType from, const void* x, DType to, void* y, std::int64_t n);
void copy_strided_16(int device, const void* src, const Strided& s, void* dst, const Strided& d);

// --- reductions (reduce.cu) --------------------------------------------------------------
void reduce(int device, ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
            std::int64_t inner);
void arg_reduce(int device, ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer,
                std::int64_t r, std::int64_t inner);

// --- linear algebra: row-major batched GEMM (gemm.cu) ------------------------------------
void gemm(int device, DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const void* a, std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb,
          std::int64_t stride_b, double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch);
// CudaLowp::gemm (LowpKernels::gemm): false, with C untouched, where cuBLAS has no such product
// here; the table's default then rounds the operands for the float32 gemm.
bool gemm_lowp(int device, DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
               const void* a, DType a_dt, std::int64_t lda, const void* b, DType b_dt, std::int64_t ldb,
               const float* bias, float* c, std::int64_t ldc, bool accumulate);

// --- convolution and pooling helpers (im2col.cu, pool.cu) -------------------------------
void im2col(int device, DType dt, const void* x, void* col, const ConvGeom& g);
void col2im(int device, DType dt, const void* col, void* x, const ConvGeom& g);
void max_pool_forward(int device, DType dt, const void* x, void* y, std::int64_t* idx, const ConvGeom& g);
void max_pool_backward(int device, DType dt, const void* gy, const std::int64_t* idx, void* gx, const ConvGeom& g);
void max_pool_gather(int device, DType dt, const void* x, const std::int64_t* idx, void* y, const ConvGeom& g);
// The NaN rule for cuDNN's max-pooling backward (cudnn_pool.cpp): out (n) = gy where y is
// a number, 0 where y is NaN; gx += gy of each NaN window at its first NaN.
void max_pool_nan_mask(int device, DType dt, const void* y, const void* gy, void* out, std::int64_t n);
void max_pool_nan_route(int device, DType dt, const void* x, const void* y, const void* gy, void* gx,
                        const ConvGeom& g);
void avg_pool_forward(int device, DType dt, const void* x, void* y, const ConvGeom& g);
void avg_pool_backward(int device, DType dt, const void* gy, void* gx, const ConvGeom& g);

// --- convolution through cuDNN (cudnn_conv.cpp) --------------------------------------------
// LibraryKernels::conv2d_forward / conv2d_backward_data / conv2d_backward_filter: false, with
// nothing done, where cuDNN does not take the case (the caller uses im2col + GEMM).
bool cudnn_conv2d_forward(int device, DType dt, const void* x, const void* w, const void* b, void* y,
                          const ConvGeom& g);
bool cudnn_conv2d_backward_data(int device, DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g);
bool cudnn_conv2d_backward_filter(int device, DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g);

// --- pooling through cuDNN (cudnn_pool.cpp) --------------------------------------------------
// max (no padding) or average (padding counted); false, with nothing done, where cuDNN does
// not take the case (the caller uses pool.cu's kernels).
bool cudnn_pool2d_forward(int device, bool max, DType dt, const void* x, void* y, const ConvGeom& g);
bool cudnn_pool2d_backward(int device, bool max, DType dt, const void* x, const void* y, const void* gy, void* gx,
                           const ConvGeom& g);

// --- indexing (index.cu) -----------------------------------------------------------------
void gather(int device, DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n);
void scatter_add(int device, DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n);
void gather_rows(int device, DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                 std::int64_t cols);

// --- fused neural-network kernels (nn.cu) ------------------------------------------------
void softmax(int device, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
             bool log_);
void softmax_cross_entropy(int device, DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                           std::int64_t c);
void softmax_cross_entropy_grad(int device, DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                std::int64_t n, std::int64_t c);
void optimizer_update(int device, UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                      std::int64_t n, const UpdateArgs& args);
// One launch per batch of up to kUpdateChunksPerLaunch chunks (nn.cu), the table passed by value.
void optimizer_update_multi(int device, UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                            const UpdateArgs& args);

// --- batch normalisation (batch_norm.cu) -------------------------------------------------
void batch_norm_forward(int device, DType dt, const void* x, const void* gamma, const void* beta, void* y, void* mean,
                        void* inv_std, void* running_mean, void* running_var, std::int64_t n, std::int64_t c,
                        std::int64_t hw, double decay, double eps, bool train);
void batch_norm_backward(int device, DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                         const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n, std::int64_t c,
                         std::int64_t hw, bool train);

// Test mode's mean (c,) = running_mean and inv_std (c,) = 1 / sqrt(running_var + eps), as
// batch_norm_forward writes them, for the backward after cuDNN's inference forward.
void batch_norm_test_stats(int device, DType dt, const void* running_mean, const void* running_var, void* mean,
                           void* inv_std, std::int64_t c, double eps);
// --- batch normalisation through cuDNN (cudnn_batch_norm.cpp) ----------------------------
// LibraryKernels::batch_norm_forward / _backward: false, with nothing done, where cuDNN does
// not take the case (the caller uses the two above).
bool cudnn_batch_norm_forward(int device, DType dt, const void* x, const void* gamma, const void* beta, void* y,
                              void* mean, void* inv_std, void* running_mean, void* running_var, std::int64_t n,
                              std::int64_t c, std::int64_t hw, double decay, double eps, bool train);
bool cudnn_batch_norm_backward(int device, DType dt, const void* x, const void* gy, const void* gamma,
                               const void* mean, const void* inv_std, void* gx, void* ggamma, void* gbeta,
                               std::int64_t n, std::int64_t c, std::int64_t hw, double eps, bool train);
// --- random numbers (random.cu) ----------------------------------------------------------
void random_uniform(int device, Generator& g, DType dt, void* dst, std::int64_t n);
void random_normal(int device, Generator& g, DType dt, void* dst, std::int64_t n);

}  // namespace dezero::detail::gpu
