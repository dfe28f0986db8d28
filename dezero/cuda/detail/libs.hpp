// dezero/cuda/detail/libs.hpp - the check on the GPU libraries that libs.cpp loads
// on first use (internal; tests/test_cuda.cpp calls it).
#pragma once

#include <string>
#include <vector>

namespace dezero::cuda::detail {
// Loads cuBLAS, cuRAND, NVRTC and cuDNN and looks up every entry point dezero calls;
// returns one message per library or symbol that is missing (empty: all present).
// Needs no GPU.
std::vector<std::string> check_gpu_libraries();
}  // namespace dezero::cuda::detail
