// dezero/gpu/check.cpp - what the check macros of detail/check.hpp call: the
// CudaError of a failed call (its file path cut to dezero/... so messages do not
// carry the build machine's folders) and the messages of cuRAND's status codes.
#include "dezero/gpu/check.hpp"

#include <string>

namespace dezero::cuda::detail {

void throw_error(const char* library, const std::string& what, const char* call, const char* file, int line) {
  std::string f = file;
  auto pos = f.find("dezero/");
  if (pos != std::string::npos) f = f.substr(pos);
  throw CudaError(std::string(library) + " error: " + what + "\n  in " + call + "\n  at " + f + ":" +
                  std::to_string(line));
}

const char* curand_status_string(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH: header and library versions differ";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED: generator not initialized";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED: memory allocation failed";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR: generator is the wrong type";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE: argument out of range";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE: length must be a multiple of 2";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE: kernel launch failure";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE: an earlier error is pending";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH: the GPU does not support this";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "unknown cuRAND status";
}

}  // namespace dezero::cuda::detail
