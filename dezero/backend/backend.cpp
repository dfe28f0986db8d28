// dezero/backend/backend.cpp - picks the backend of a device.
#include "dezero/backend/backend.hpp"

#include "dezero/error.hpp"

namespace dezero::detail {

Backend& backend_for(const Device& device) {
  if (device.is_cpu()) return cpu_backend();
  return cuda_backend(device.index());
}

}  // namespace dezero::detail
