// dezero/cuda.hpp - dezero::cuda: Chainer's chainer.backends.cuda utilities in C++.
//
// Always available to include; on a build without CUDA, or a machine without a
// GPU, is_available() is false and everything that needs a device throws a
// DeviceError that says so.
#pragma once

#include "dezero/tensor.hpp"

namespace dezero::cuda {

// True when dezero was built with CUDA and a CUDA device can be used now.
bool is_available();
// Number of CUDA devices (0 without CUDA or without a GPU).
int device_count();

}  // namespace dezero::cuda
