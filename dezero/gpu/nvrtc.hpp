// dezero/gpu/nvrtc.hpp - compiling and caching the runtime-compiled kernels
// of cuda/rtc.hpp (internal): CUDA source to a loaded kernel of one device, through
// NVRTC and the runtime's library API; rtc.cpp implements both.
//
// Apart from the tensor-side helpers (cuda/rtc_binding.hpp) because it is CUDA-side:
// it names CUDA types and sees no tensor.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace dezero::cuda::detail {

// A kernel loaded on one device; the library stays loaded for the whole process.
struct Compiled {
  cudaLibrary_t lib = nullptr;
  cudaKernel_t kernel = nullptr;
};

// `source` compiled for `device`'s architecture and loaded there; the extern "C"
// __global__ function `name` of it. CudaError with NVRTC's log when it does not compile.
Compiled compile(const std::string& source, const std::string& name, int device,
                 const std::vector<std::string>& extra_options);

// The kernel for `key` (device, bound types, argument kinds) from a user kernel's cache,
// or compiled from make_source() and cached; under the lock, so NVRTC runs once a key.
Compiled cached_kernel(std::mutex& mu, std::map<std::string, Compiled>& cache, const std::string& key,
                       const std::string& name, int device, const std::function<std::string()>& make_source);

}  // namespace dezero::cuda::detail
