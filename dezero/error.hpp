// dezero/error.hpp - the exceptions dezero throws.
//
// Every mistake a user can make (a shape that does not fit, a dtype that is not
// supported, tensors on two devices, a file that cannot be read) is reported by
// throwing a subclass of dezero::Error whose message names the operation, the
// operands involved and a hint. The library never calls exit() or abort().
#pragma once

#include <stdexcept>
#include <string>

namespace dezero {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ShapeError : public Error { public: using Error::Error; };     // shapes do not fit
class DtypeError : public Error { public: using Error::Error; };     // dtype not supported / mismatch
class DeviceError : public Error { public: using Error::Error; };    // mixed or unavailable devices
class IndexError : public Error { public: using Error::Error; };     // index or axis out of range
class ValueError : public Error { public: using Error::Error; };     // an argument's value is invalid
class IOError : public Error { public: using Error::Error; };        // files, downloads
class CudaError : public DeviceError { public: using DeviceError::DeviceError; };  // a CUDA library call failed
class OutOfMemoryError : public CudaError { public: using CudaError::CudaError; };
class NotImplementedError : public Error { public: using Error::Error; };

}  // namespace dezero
