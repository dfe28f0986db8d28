// dezero/gpu/check.hpp - the check macros of the CUDA sources (internal).
//
// Every call into the CUDA runtime, cuBLAS or cuRAND is wrapped in one of these:
// a failed call becomes a dezero::CudaError that names the library, its message,
// the call as written and file:line (throw_error, detail/check.cpp). The cuDNN
// check lives with the cuDNN handle (detail/cudnn.hpp), NVRTC's with the one
// function that compiles (rtc.cpp), so cudnn.h and nvrtc.h stay out of the rest.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <string>

#include "dezero/error.hpp"

namespace dezero::cuda::detail {

// Throws CudaError("<library> error: <what>\n  in <call>\n  at dezero/<file>:<line>").
[[noreturn]] void throw_error(const char* library, const std::string& what, const char* call, const char* file,
                              int line);
// cuRAND has no curandGetErrorString: the status's name and what it means.
const char* curand_status_string(curandStatus_t s);

}  // namespace dezero::cuda::detail

// --- the checks ------------------------------------------------------------------------
#define DEZERO_CUDA_CHECK(call)                                                                               \
  do {                                                                                                        \
    cudaError_t dz_e_ = (call);                                                                               \
    if (dz_e_ != cudaSuccess) {                                                                               \
      cudaGetLastError();                                                                                     \
      ::dezero::cuda::detail::throw_error("CUDA", std::string(cudaGetErrorName(dz_e_)) + ": " +               \
                                                      cudaGetErrorString(dz_e_), #call, __FILE__, __LINE__);  \
    }                                                                                                         \
  } while (0)
#define DEZERO_CUBLAS_CHECK(call)                                                                                 \
  do {                                                                                                            \
    cublasStatus_t dz_s_ = (call);                                                                                \
    if (dz_s_ != CUBLAS_STATUS_SUCCESS)                                                                           \
      ::dezero::cuda::detail::throw_error("cuBLAS", std::string(cublasGetStatusName(dz_s_)) + ": " +              \
                                                        cublasGetStatusString(dz_s_), #call, __FILE__, __LINE__); \
  } while (0)
#define DEZERO_CURAND_CHECK(call)                                                                               \
  do {                                                                                                          \
    curandStatus_t dz_s_ = (call);                                                                              \
    if (dz_s_ != CURAND_STATUS_SUCCESS)                                                                         \
      ::dezero::cuda::detail::throw_error("cuRAND", ::dezero::cuda::detail::curand_status_string(dz_s_), #call, \
                                          __FILE__, __LINE__);                                                  \
  } while (0)
// After a kernel launch: reports launch errors (bad configuration) without waiting.
#define DEZERO_CUDA_CHECK_LAUNCH() DEZERO_CUDA_CHECK(cudaGetLastError())
