// dezero/cpu/kernels.hpp - the entry points of the host backend's family files, one
// per Backend primitive (backend/backend.hpp) and in the order of its sections: the
// same names, parameters and contracts (allocate and deallocate also take the
// backend's block cache). cpu_backend.cpp's CpuBackend forwards each virtual to one
// of these; each family file (memory.cpp, elementwise.cpp, reduce.cpp, gemm.cpp,
// index.cpp, nn.cpp, random.cpp) dispatches on the dtype and runs its loops. Not a
// public interface: tensor/ reaches these through the Backend. The GEMM kernels that
// gemm.cpp calls are declared in gemm.hpp.
//
// Two kinds of entry point (isa.hpp): the compute kernels, compiled once per instruction-set
// level in DEZERO_ISA_BEGIN ... DEZERO_ISA_END (each level's CpuBackend calls its own), and
// the rest, compiled once for the baseline: memory, the random streams, the 16-bit
// converters (half.cpp asks CPUID itself) and oneDNN (which picks its kernels itself).
#pragma once

#include <cstddef>
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/isa_namespace.hpp"
#include "dezero/dtype.hpp"

namespace dezero::detail::cpu {

// ============ compiled once, for the baseline ============================================

// --- memory (memory.cpp): 64-byte aligned host blocks through a cache of freed ones ----
// The backend makes the one cache when it is made, never destroys it (tensors in
// static storage may be freed after main returns) and passes it to allocate and
// deallocate.
class HostBlockCache;
HostBlockCache* make_host_block_cache();
void* allocate(HostBlockCache& cache, std::size_t nbytes);
void deallocate(HostBlockCache& cache, void* ptr, std::size_t nbytes) noexcept;
void copy_from_host(void* dst, const void* host_src, std::size_t nbytes);
void copy_to_host(void* host_dst, const void* src, std::size_t nbytes);
void copy(void* dst, const void* src, std::size_t nbytes);
void fill(DType dt, void* dst, std::int64_t n, double value);

// --- the 16-bit floats (half.cpp): cast where `from` or `to` is bfloat16 or float16 (cast
// forwards to it), and fill of those dtypes (fill forwards) --------------------------------------
void cast_half(DType from, const void* x, DType to, void* y, std::int64_t n);
void fill_half(DType dt, void* dst, std::int64_t n, double value);

// --- oneDNN (onednn_conv.cpp, onednn_matmul.cpp; onednn_stub.cpp without oneDNN) ---------------
// The three convolution products on oneDNN: float32 only, and only while DEZERO_ONEDNN is not 0
// in the environment; false, with nothing done, otherwise (the caller then runs the im2col +
// GEMM ones below).
// onednn_usable: the build has oneDNN and its CPU engine was made (is_onednn_available());
// onednn_enabled: usable and not turned off by DEZERO_ONEDNN=0.
bool onednn_usable();
bool onednn_enabled();
bool onednn_conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g);
bool onednn_conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g);
bool onednn_conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g);
// Mixed precision (onednn_matmul.cpp): C (m, n) = op(A) op(B) (+ bias (n), or + C when
// accumulate) into float32 C, A and B float32 (rounded to `compute`, bfloat16 or float16)
// or already `compute` (a_dt, b_dt), the products summed in float32; false, with nothing done, without oneDNN, with it turned
// off, or where it has no fast kernel for the type on this CPU.
bool onednn_gemm_lowp(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                      const void* a, DType a_dt, std::int64_t lda, const void* b, DType b_dt, std::int64_t ldb,
                      const float* bias, float* c, std::int64_t ldc, bool accumulate);
// Caps oneDNN's instruction set at `level` (an IsaLevel of isa.hpp, as an int) before its first
// primitive; a no-op without oneDNN or when oneDNN has already chosen.
void onednn_cap_isa(int level);

// --- random numbers (random.cpp): samples from the host generator's MT19937 stream ------
void random_uniform(Generator& g, DType dt, void* dst, std::int64_t n);
void random_normal(Generator& g, DType dt, void* dst, std::int64_t n);

// ============ compiled once per instruction-set level (isa.hpp) =============================
DEZERO_ISA_BEGIN

// --- element-wise (elementwise.cpp) ------------------------------------------------------
void cast(DType from, const void* x, DType to, void* y, std::int64_t n);
void unary(UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha);
// y (contiguous, out's shape) = op(a viewed by sa, b viewed by sb); where: y = cond != 0 ? a : b.
void binary(BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y,
            const Strided& out);
void where(DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
           const Strided& sb, void* y, const Strided& out);
void copy_strided(DType dt, const void* src, const Strided& s, void* dst, const Strided& d, bool accumulate);

// --- reductions (reduce.cpp): x viewed as (outer, r, inner), y as (outer, inner) --------
void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r, std::int64_t inner);
void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                std::int64_t inner);

// --- linear algebra (gemm.cpp): row-major batched GEMM ------------------------------------
// init_gemm turns Eigen's own threading off (gemm splits products into per-thread slabs
// itself); the backend calls it once, before its first product.
void init_gemm();
// gemm: C[i] (m, n) = alpha op(A[i]) (m, k) op(B[i]) (k, n) + beta C[i] for i < batch.
// gemm_bias: C (m, n) = op(A) op(B) + bias (n) in one pass, or false with nothing done.
void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
          std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b, double beta,
          void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch);
bool gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
               std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c, std::int64_t ldc);
// gemm_lowp: LowpKernels::gemm on the float32 kernels, for a CPU where oneDNN has no 16-bit product:
// the operands rounded to `compute` as they are packed (gemm.hpp's Round). false only for arguments
// it does not take (another compute type or operand dtype, an empty product).
bool gemm_lowp(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
               DType a_dt, std::int64_t lda, const void* b, DType b_dt, std::int64_t ldb, const float* bias, float* c,
               std::int64_t ldc, bool accumulate);

// --- convolution and pooling helpers (im2col.cpp, pool.cpp): float32 and float64 -----
void im2col(DType dt, const void* x, void* col, const ConvGeom& g);
void col2im(DType dt, const void* col, void* x, const ConvGeom& g);
// The convolution products on im2col + GEMM one image at a time (im2col.cpp): always true.
bool conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g);
bool conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g);
bool conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g);
void max_pool_forward(DType dt, const void* x, void* y, std::int64_t* idx, const ConvGeom& g);
void max_pool_backward(DType dt, const void* gy, const std::int64_t* idx, void* gx, const ConvGeom& g);
void max_pool_gather(DType dt, const void* x, const std::int64_t* idx, void* y, const ConvGeom& g);
void avg_pool_forward(DType dt, const void* x, void* y, const ConvGeom& g);
void avg_pool_backward(DType dt, const void* gy, void* gx, const ConvGeom& g);

// --- indexing (index.cpp): element offsets as int64 ----------------------------------------
void gather(DType dt, const void* src, const std::int64_t* offsets, void* dst, std::int64_t n);
void scatter_add(DType dt, const void* src, const std::int64_t* offsets, void* dst, std::int64_t n);
// dst (rows, cols) = src[idx[i], :]
void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows, std::int64_t cols);

// --- fused neural-network kernels (nn.cpp): float32 and float64 only --------------------
// softmax: over the middle axis of (outer, c, inner). softmax_cross_entropy: x (n, c),
// t (n,) -> loss (one element); its grad: gx (n, c) from gy (one element).
void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner, bool log);
void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n, std::int64_t c);
void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                std::int64_t n, std::int64_t c);
// mean_squared_error's loss and gradient in one pass each (backend.hpp's mse_forward and
// mse_backward); false for other dtypes and from kParallelMin elements on, where the
// composed element-wise ops and sum run on threads.
bool mse_forward(DType dt, const void* x0, const void* x1, void* loss, std::int64_t n, double divisor);
bool mse_backward(DType dt, const void* x0, const void* x1, const void* gy, void* gx, std::int64_t n, double scale);
void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2, std::int64_t n,
                      const UpdateArgs& args);
// optimizer_update over n chunks in one pass: on the calling thread below kParallelMin
// elements in all, else the total split evenly over the OpenMP threads (a chunk may be
// shared by two of them); the same arithmetic per element as optimizer_update.
void optimizer_update_multi(UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                            const UpdateArgs& args);

// --- batch normalisation (batch_norm.cpp): float32 and float64, x as (n, c, hw) ----------
void batch_norm_forward(DType dt, const void* x, const void* gamma, const void* beta, void* y, void* mean,
                        void* inv_std, void* running_mean, void* running_var, std::int64_t n, std::int64_t c,
                        std::int64_t hw, double decay, double eps, bool train);
void batch_norm_backward(DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                         const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n, std::int64_t c,
                         std::int64_t hw, bool train);

// This level's CpuBackend (cpu_backend.cpp), made once by cpu/isa.cpp's cpu_backend().
Backend* make_cpu_backend();

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
