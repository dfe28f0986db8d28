// dezero/gpu/gemm.cu - the CUDA backend's row-major batched GEMM: cuBLAS for
// float32 / float64, a plain kernel (one thread per output element) for the integer
// dtypes, which cuBLAS has none for; and the mixed-precision product of autocast
// (LowpKernels::gemm, issue 31): cublasGemmEx on bfloat16 / float16 copies of the
// float32 operands, summed in float32 (CUBLAS_COMPUTE_32F) into the float32 C.
//
// Twin of cpu/gemm.cpp (and of cpu/onednn_matmul.cpp for gemm_lowp). backend.hpp's
// gemm_bias is not overridden: the CUDA backend answers false and the caller adds the
// bias and calls gemm with beta = 1.
#include <climits>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"
#include "dezero/error.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

// Integer GEMM (cuBLAS has none for these types): one thread per output element.
template <class T>
__global__ void gemm_naive_kernel(bool ta, bool tb, i64 m, i64 n, i64 k, T alpha, const T* a, i64 lda, i64 sa,
                                  const T* b, i64 ldb, i64 sb, T beta, T* c, i64 ldc, i64 sc, i64 batch) {
  DEZERO_GRID_LOOP(t, batch * m * n) {
    i64 bi = t / (m * n), rem = t - bi * m * n, i = rem / n, j = rem - i * n;
    const T* A = a + bi * sa;
    const T* B = b + bi * sb;
    T acc = 0;
    for (i64 l = 0; l < k; ++l) acc += (ta ? A[l * lda + i] : A[i * lda + l]) * (tb ? B[j * ldb + l] : B[l * ldb + j]);
    T* C = c + bi * sc + i * ldc + j;
    *C = beta == T(0) ? alpha * acc : alpha * acc + beta * *C;
  }
}

// gemm_lowp's bias: C (m, n), rows ldc apart, += the row bias (n).
__global__ void add_bias_rows_kernel(float* c, const float* bias, i64 m, i64 n, i64 ldc) {
  DEZERO_GRID_LOOP(t, m * n) {
    i64 i = t / n, j = t - i * n;
    c[i * ldc + j] += bias[j];
  }
}

}  // namespace

namespace gpu {

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets the operands
// swapped with the same transpose flags and (n, m) in place of (m, n).
void gemm(int device, DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const void* a, std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb,
          std::int64_t stride_b, double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) {
  if (m <= 0 || n <= 0 || batch <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  if (is_integer(dt)) {
    auto run = [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      DEZERO_LAUNCH(gemm_naive_kernel<T>, batch * m * n, s, ta, tb, m, n, k, static_cast<T>(alpha),
                    static_cast<const T*>(a), lda, stride_a, static_cast<const T*>(b), ldb, stride_b,
                    static_cast<T>(beta), static_cast<T*>(c), ldc, stride_c, batch);
    };
    if (dt == int32) run(static_cast<std::int32_t*>(nullptr));
    else run(static_cast<std::int64_t*>(nullptr));
    return;
  }
  constexpr i64 kMax = INT_MAX;
  if (m > kMax || n > kMax || k > kMax || lda > kMax || ldb > kMax || ldc > kMax || batch > kMax)
    throw ValueError("matmul on cuda:" + std::to_string(device) + ": a dimension exceeds cuBLAS's 32-bit limit (m=" +
                     std::to_string(m) + ", n=" + std::to_string(n) + ", k=" + std::to_string(k) +
                     "); hint: split the product");
  cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  std::lock_guard<std::mutex> lock(cd::library_mutex(device));
  cublasHandle_t h = cd::cublas_handle(device, s);
  if (dt == float32) {
    float al = static_cast<float>(alpha), be = static_cast<float>(beta);
    DEZERO_CUBLAS_CHECK(cublasSgemmStridedBatched(
        h, opb, opa, int(n), int(m), int(k), &al, static_cast<const float*>(b), int(ldb), stride_b,
        static_cast<const float*>(a), int(lda), stride_a, &be, static_cast<float*>(c), int(ldc), stride_c, int(batch)));
  } else {
    DEZERO_CUBLAS_CHECK(cublasDgemmStridedBatched(h, opb, opa, int(n), int(m), int(k), &alpha,
                                                  static_cast<const double*>(b), int(ldb), stride_b,
                                                  static_cast<const double*>(a), int(lda), stride_a, &beta,
                                                  static_cast<double*>(c), int(ldc), stride_c, int(batch)));
  }
}

// --- mixed precision: C (m, n) = op(A) op(B) (+ bias) (+ C) ------------------------------
//   a: (m, k), or (k, m) when ta, rows lda apart -- float32 (rounded to `compute`) or `compute`
//   b: (k, n), or (n, k) when tb, rows ldb apart -- float32 (rounded to `compute`) or `compute`
//   c: (m, n), rows ldc apart                    -- float32, the sums' type
// Each float32 operand is rounded (half.cu's cast, round to nearest even) into a pool buffer
// with the same layout, the span from its first to its last element, so lda / ldb carry over
// (an operand already of type `compute`, a copy F::linear kept, is read where it is); the
// product is one cublasGemmEx with the operands swapped as in gemm() above, C in float32 and
// beta 1 when accumulating; the bias is added afterwards, so a cuBLAS refusal (a status
// other than success, returned before anything runs) leaves C as it was and answers false.
// Tensor cores: cuBLAS's default math uses them for 16-bit inputs with CUBLAS_COMPUTE_32F.
bool gemm_lowp(int device, DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
               const void* a, DType a_dt, std::int64_t lda, const void* b, DType b_dt, std::int64_t ldb,
               const float* bias, float* c, std::int64_t ldc, bool accumulate) {
  if (!is_half(compute) || m <= 0 || n <= 0 || k <= 0) return false;
  if ((a_dt != DType::Float32 && a_dt != compute) || (b_dt != DType::Float32 && b_dt != compute)) return false;
  constexpr i64 kMax = INT_MAX;
  if (m > kMax || n > kMax || k > kMax || lda > kMax || ldb > kMax || ldc > kMax) return false;
  // stored (rows, cols) of each operand and the span of elements they cover
  const i64 ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
  if (lda < ca || ldb < cb || ldc < n) return false;
  const i64 span_a = (ra - 1) * lda + ca, span_b = (rb - 1) * ldb + cb;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  std::optional<cd::DeviceBuffer> al, bl;
  const void* a16 = a;
  const void* b16 = b;
  if (a_dt != compute) {
    al.emplace(device, static_cast<std::size_t>(span_a) * 2, s);
    cast_half(device, DType::Float32, a, compute, al->get(), span_a);
    a16 = al->get();
  }
  if (b_dt != compute) {
    bl.emplace(device, static_cast<std::size_t>(span_b) * 2, s);
    cast_half(device, DType::Float32, b, compute, bl->get(), span_b);
    b16 = bl->get();
  }
  const cudaDataType type = compute == DType::BFloat16 ? CUDA_R_16BF : CUDA_R_16F;
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t st;
  {
    std::lock_guard<std::mutex> lock(cd::library_mutex(device));
    cublasHandle_t h = cd::cublas_handle(device, s);
    st = cublasGemmEx(h, opb, opa, int(n), int(m), int(k), &one, b16, type, int(ldb), a16, type, int(lda),
                      &beta, c, CUDA_R_32F, int(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
  if (st != CUBLAS_STATUS_SUCCESS) {
    (void)cudaGetLastError();  // nothing of cuBLAS's for the next kernel's check
    return false;
  }
  if (bias != nullptr) DEZERO_LAUNCH(add_bias_rows_kernel, m * n, s, c, bias, m, n, ldc);
  return true;
}

}  // namespace gpu

}  // namespace dezero::detail
