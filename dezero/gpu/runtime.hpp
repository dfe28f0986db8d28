// dezero/gpu/runtime.hpp - the CUDA runtime state the CUDA sources share
// (internal): which devices exist, the current device for a scope, the calling
// thread's current stream, the device memory pool and the per-device library handles.
//
// Each section names the file that implements it. Nothing here is installed or seen
// by the layers above the backend: they reach the GPU through Backend (cuda_backend.cu)
// and dezero::cuda (the public cuda/*.hpp). The check macros are in detail/check.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <string>

#include "dezero/gpu/check.hpp"

namespace dezero::cuda::detail {

// --- devices (device.cpp) ----------------------------------------------------------------
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

// --- streams (stream.cpp) ----------------------------------------------------------------
// This thread's current stream on `device` (nullptr = the legacy null stream).
cudaStream_t current_stream(int device);

// --- device memory pool (memory_pool.cpp) ------------------------------------------------
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

// A stream the library created is being destroyed (Stream's destructor, stream.cpp,
// after it synchronised): the blocks cached for it in the free lists move to the legacy
// null stream's list, and blocks still in use that were allocated on it go there when
// they are freed. No block stays keyed by the dead handle, so none is stranded, and
// none is handed to a later stream that the driver gives the same handle.
void pool_forget_stream(int device, cudaStream_t stream) noexcept;

// --- dezero::cuda's settings that the library calls read (memory_pool.cpp) ----------------
// cuda::get_max_workspace_size() and cuda::get_allow_tf32() (cuda/memory_pool.hpp), for the
// kernel files, which sit below the public dezero::cuda layer.
std::size_t max_workspace_size();
bool allow_tf32();

// --- per-device library handles (detail/handles.cpp) -------------------------------------
// Lock the mutex while the handle is bound to a stream and used. cublas_handle also
// sets the math mode (TF32 tensor ops only when allow_tf32()) and the stream's own cuBLAS workspace (32 MiB from sm_90 on, 4 MiB before, taken
// from the pool on the stream's first GEMM and kept), so GEMMs on two streams never
// share one.
cublasHandle_t cublas_handle(int device, cudaStream_t stream);
// Gives the stream's workspace back to the pool (Stream's destructor, before
// pool_forget_stream); takes library_mutex(device).
void release_cublas_workspace(int device, cudaStream_t stream) noexcept;
curandGenerator_t curand_generator(int device, cudaStream_t stream);
std::mutex& library_mutex(int device);
int sm_count(int device);

}  // namespace dezero::cuda::detail
