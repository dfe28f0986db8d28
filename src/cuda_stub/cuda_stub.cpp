// cuda_stub/cuda_stub.cpp - the CUDA entry points of a build made without CUDA
// (DEZERO_CUDA=OFF or no toolkit): every device request is a clear DeviceError.
#include "backend.hpp"
#include "dezero/cuda.hpp"
#include "dezero/error.hpp"

namespace dezero::detail {
bool cuda_runtime_available() { return false; }
Backend& cuda_backend(int device_id) {
  throw DeviceError("cuda:" + std::to_string(device_id) +
                    ": this build of dezero has no CUDA backend; hint: rebuild with the CUDA toolkit "
                    "installed (cmake -DDEZERO_CUDA=ON)");
}
}  // namespace dezero::detail

namespace dezero::cuda {
bool is_available() { return false; }
int device_count() { return 0; }
}  // namespace dezero::cuda
