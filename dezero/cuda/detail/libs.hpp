// cuda/cuda_libs.hpp - the GPU libraries that cuda_libs.cpp loads on first use.
#pragma once

#include <string>
#include <vector>

namespace dezero::cuda::detail {
// Loads cuBLAS, cuRAND, NVRTC and cuDNN and looks up every entry point dezero calls;
// returns one message per library or symbol that is missing (empty: all present).
// Needs no GPU.
std::vector<std::string> check_gpu_libraries();
}  // namespace dezero::cuda::detail
