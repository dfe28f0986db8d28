// cuda/cuda_backend.cu - placeholder until the CUDA backend lands (issue 4):
// device discovery works; kernels are not there yet.
#include <cuda_runtime.h>

#include "backend.hpp"
#include "dezero/cuda.hpp"
#include "dezero/error.hpp"

namespace dezero::detail {
bool cuda_runtime_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
Backend& cuda_backend(int device_id) {
  if (!cuda_runtime_available())
    throw DeviceError("cuda:" + std::to_string(device_id) + ": no CUDA device is available on this machine");
  throw NotImplementedError("cuda:" + std::to_string(device_id) + ": the CUDA kernels are not built yet");
}
}  // namespace dezero::detail

namespace dezero::cuda {
bool is_available() { return detail::cuda_runtime_available(); }
int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}
}  // namespace dezero::cuda
