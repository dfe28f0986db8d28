// dezero/gpu/cudnn.hpp - the per-device cuDNN handle, its check macro and what
// cudnn_conv.cpp, cudnn_pool.cpp and cudnn_batch_norm.cpp share: the tensor descriptor,
// aligned copies of the inputs and alpha/beta (internal). Apart from detail/check.hpp so
// that only the files that call cuDNN include cudnn.h; the handle is made in
// detail/handles.cpp with the others.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dezero/dtype.hpp"

#include "dezero/gpu/conv_algo.hpp"
#include "dezero/gpu/runtime.hpp"

#define DEZERO_CUDNN_CHECK(call)                                                                              \
  do {                                                                                                        \
    cudnnStatus_t dz_s_ = (call);                                                                             \
    if (dz_s_ != CUDNN_STATUS_SUCCESS)                                                                        \
      ::dezero::cuda::detail::throw_error("cuDNN", cudnnGetErrorString(dz_s_), #call, __FILE__, __LINE__);    \
  } while (0)

namespace dezero::cuda::detail {
// Created on first use; bound to `stream` (hold library_mutex(device) while using it).
cudnnHandle_t cudnn_handle(int device, cudaStream_t stream);
// The same, or null when creating it failed the first time for this device (a cuDNN that
// loads but cannot initialise: the callers decline and the backend's own kernels run).
// Later failures are errors. Defined in cudnn_conv.cpp.
cudnnHandle_t cudnn_handle_or_null(int device, cudaStream_t stream);

// The tensor descriptors' data type: float32, float64, and autocast's bfloat16 / float16
// copies (cudnn_conv.cpp). cuDNN's headers before 8.1 have no bfloat16 (declined earlier).
inline cudnnDataType_t cudnn_data_type(DType dt) {
  switch (dt) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float16: return CUDNN_DATA_HALF;
#if CUDNN_VERSION >= 8100
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
#endif
    default: return CUDNN_DATA_DOUBLE;
  }
}

// Owns one cuDNN descriptor: Create at construction, Destroy with its scope. The classes
// below derive from it and set the descriptor in their constructors; when setting throws,
// this base is already whole, so its destructor still destroys the descriptor.
template <class D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { DEZERO_CUDNN_CHECK(Create(&d_)); }
  ~CudnnDescriptor() { Destroy(d_); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  operator D() const { return d_; }

 private:
  D d_ = nullptr;
};

// An NCHW tensor descriptor (float32 or float64; bfloat16 / float16 for autocast's convolutions).
class CudnnTensorDesc : public CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                               cudnnDestroyTensorDescriptor> {
 public:
  CudnnTensorDesc(DType dt, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    DEZERO_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(*this, CUDNN_TENSOR_NCHW, cudnn_data_type(dt), int(n), int(c), int(h), int(w)));
  }
};

// The inputs of one cuDNN call at 16-byte aligned addresses (conv_algo.hpp's cudnn_aligned):
// add(p, bytes) leaves an aligned p alone and points an unaligned one (an offset view's data)
// at a copy of its bytes in a pool buffer, copied on `stream`. The copies go back to the pool
// with this object, so destroy it once the call is enqueued (like a workspace).
class CudnnAlignedInputs {
 public:
  CudnnAlignedInputs(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  void add(const void*& p, std::size_t bytes) {
    if (p == nullptr || bytes == 0 || cudnn_aligned(p)) return;
    auto buf = std::make_unique<DeviceBuffer>(device_, bytes, stream_);
    DEZERO_CUDA_CHECK(cudaMemcpyAsync(buf->get(), p, bytes, cudaMemcpyDeviceToDevice, stream_));
    p = buf->get();
    copies_.push_back(std::move(buf));
  }
  std::size_t copies() const { return copies_.size(); }

 private:
  int device_;
  cudaStream_t stream_;
  std::vector<std::unique_ptr<DeviceBuffer>> copies_;
};

// alpha = 1, beta = 0 (or 1) as cuDNN reads them: get(dt, 0) or get(dt, 1); double for
// float64 data, float for every other type (the 16-bit ones included).
struct CudnnScalars {
  float f[2] = {0.0f, 1.0f};
  double d[2] = {0.0, 1.0};
  const void* get(DType dt, int v) const { return dt == float64 ? static_cast<const void*>(&d[v]) : &f[v]; }
};
}  // namespace dezero::cuda::detail
