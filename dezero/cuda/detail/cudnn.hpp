// dezero/cuda/detail/cudnn.hpp - the per-device cuDNN handle and its check macro
// (internal). Apart from detail/check.hpp so that only the files that call cuDNN
// include cudnn.h; the handle is made in detail/handles.cpp with the others.
#pragma once

#include <cudnn.h>

#include "dezero/cuda/detail/runtime.hpp"

#define DEZERO_CUDNN_CHECK(call)                                                                              \
  do {                                                                                                        \
    cudnnStatus_t dz_s_ = (call);                                                                             \
    if (dz_s_ != CUDNN_STATUS_SUCCESS)                                                                        \
      ::dezero::cuda::detail::throw_error("cuDNN", cudnnGetErrorString(dz_s_), #call, __FILE__, __LINE__);    \
  } while (0)

namespace dezero::cuda::detail {
// Created on first use; bound to `stream` (hold library_mutex(device) while using it).
cudnnHandle_t cudnn_handle(int device, cudaStream_t stream);
}  // namespace dezero::cuda::detail
