/// \file
/// The exceptions dezero throws.
///
/// Every mistake a user can make (a shape that does not fit, a dtype that is not
/// supported, tensors on two devices, a file that cannot be read) is reported by
/// throwing a subclass of dezero::Error whose message names the operation, the
/// operands involved and a hint. The library never calls exit() or abort().
#pragma once

#include <stdexcept>
#include <string>

namespace dezero {

/// The base of every exception dezero throws: a std::runtime_error whose what() names the
/// operation, the operands involved and a hint.
///
/// Catch dezero::Error for any of them, or one of its subclasses for one kind of mistake.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown when shapes do not fit (a broadcast, a matmul, a reshape, a negative extent).
class ShapeError : public Error { public: using Error::Error; };
/// Thrown when a dtype is not supported or two dtypes do not match.
class DtypeError : public Error { public: using Error::Error; };
/// Thrown for mixed or unavailable devices: operands on two devices, or a CUDA device this
/// build or machine does not have.
class DeviceError : public Error { public: using Error::Error; };
/// Thrown when an index or an axis is out of range.
class IndexError : public Error { public: using Error::Error; };
/// Thrown when an argument's value is invalid (an empty Variable included).
class ValueError : public Error { public: using Error::Error; };
/// Thrown when a file or a download fails (reading, writing, parsing).
class IOError : public Error { public: using Error::Error; };
/// Thrown when a CUDA library call failed (a DeviceError).
class CudaError : public DeviceError { public: using DeviceError::DeviceError; };
/// Thrown when an allocation finds no memory left: on a CUDA device, in pinned host memory or
/// in host memory.
///
/// It is a CudaError for host memory too: catch OutOfMemoryError itself for all three.
class OutOfMemoryError : public CudaError { public: using CudaError::CudaError; };
/// Thrown for something not implemented, such as a Layer subclass that defines no forward().
class NotImplementedError : public Error { public: using Error::Error; };

}  // namespace dezero
