/// \file
/// Where a tensor's storage lives: host memory or a CUDA device.
#pragma once

#include <ostream>
#include <string>

namespace dezero {

/// Where a tensor's storage lives: the CPU (host memory) or one CUDA device, by index.
///
/// `Device::cpu()` and `Device::cuda(id)` name one; naming a device checks nothing. The first
/// allocation on a CUDA device that this build or machine does not have is a DeviceError.
/// (dezero::cuda::Device, in cuda/device.hpp, is the CUDA utilities' own device type.)
class Device {
 public:
  /// The kind of device: host memory or a CUDA GPU.
  enum class Type { CPU, CUDA };

  /// The CPU, as Device::cpu().
  constexpr Device() = default;
  /// The CPU: host memory.
  static constexpr Device cpu() { return Device(); }
  /// CUDA device `id` ("cuda:0" by default); the id is checked when the device is first used.
  static constexpr Device cuda(int id = 0) { return Device(Type::CUDA, id); }

  /// Whether this is the CPU or a CUDA device.
  constexpr Type type() const { return type_; }
  /// The CUDA device's id; -1 for the CPU (Chainer's DummyDevice id).
  constexpr int index() const { return index_; }
  /// Whether this is the CPU.
  constexpr bool is_cpu() const { return type_ == Type::CPU; }
  /// Whether this is a CUDA device.
  constexpr bool is_cuda() const { return type_ == Type::CUDA; }
  /// The device's name as in error messages: "cpu", "cuda:0", "cuda:1", ...
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index_); }

  /// Equal when the type and the index are.
  ///@{
  constexpr bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }
  ///@}

 private:
  constexpr Device(Type t, int id) : type_(t), index_(id) {}
  Type type_ = Type::CPU;
  int index_ = -1;
};

/// Writes `d.str()` to `os`.
inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace dezero
