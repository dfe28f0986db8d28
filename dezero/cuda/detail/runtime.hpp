// cuda/cuda_common.hpp - what the CUDA sources share (not installed): the check
// macros that turn every failed CUDA / cuBLAS / cuRAND call into a dezero::CudaError
// naming the call, file:line and the library's message; the per-thread current
// stream; the device memory pool; per-device library handles.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <cstddef>
#include <mutex>
#include <string>

#include "dezero/error.hpp"

namespace dezero::cuda::detail {

[[noreturn]] void throw_error(const char* library, const std::string& what, const char* call, const char* file,
                              int line);
const char* curand_status_string(curandStatus_t s);

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

// The message used whenever a device is needed and there is none.
std::string no_device_message(const std::string& what);
bool runtime_available();
int device_count_cached();
void check_device_id(const char* op, int id);  // DeviceError when no GPU or id out of range

// Makes `id` current for a scope when it is not already (cheap: no-op when equal).
class ScopedDevice {
 public:
  explicit ScopedDevice(int id);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int prev_ = -1;
};
int current_device();

// This thread's current stream on `device` (nullptr = the legacy null stream).
cudaStream_t current_stream(int device);

// --- device memory pool (cuda_memory.cpp) ---------------------------------------------
void* pool_malloc(int device, std::size_t nbytes, cudaStream_t stream);
void pool_free(int device, void* ptr) noexcept;
// A pool buffer for temporaries freed in stream order: free it right after the
// kernels that use it are enqueued on the same stream (a later reuse of the block
// is ordered after them on that stream).
class DeviceBuffer {
 public:
  DeviceBuffer(int device, std::size_t nbytes, cudaStream_t stream)
      : device_(device), ptr_(pool_malloc(device, nbytes, stream)) {}
  ~DeviceBuffer() { pool_free(device_, ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  int device_;
  void* ptr_;
};

// --- per-device library handles (cuda_runtime.cpp) --------------------------------------
// Lock the mutex while the handle is bound to a stream and used.
cublasHandle_t cublas_handle(int device, cudaStream_t stream);
curandGenerator_t curand_generator(int device, cudaStream_t stream);
std::mutex& library_mutex(int device);
int sm_count(int device);

}  // namespace dezero::cuda::detail
