// examples/common/device.hpp - the --device option the training examples share: cuda when
// asked for, or when none was asked for and a GPU is present; cpu otherwise. Prints the
// choice; asking for cuda without a GPU is a DeviceError whose message ends with `hint`.
#pragma once

#include <dezero/dezero.hpp>

#include <iostream>
#include <string>

namespace example {

inline dezero::Device pick_device(const std::string& device, const std::string& hint = "; hint: use --device cpu") {
  using namespace dezero;
  Device dev = Device::cpu();
  if (device == "cuda" || (device.empty() && cuda::is_available())) dev = Device::cuda(0);
  if (dev.is_cuda() && !cuda::is_available())
    throw DeviceError("--device cuda: no CUDA device is available on this machine" + hint);
  std::cout << "device: " << (dev.is_cuda() ? "cuda:0 (" + cuda::Device(0).name() + ")" : std::string("cpu")) << "\n";
  return dev;
}

}  // namespace example
