/// \file
/// The devices of dezero::cuda: whether CUDA can be used, the
/// devices and the current one, moving tensors between the host and the devices, and
/// DeZero's get_array_module (Chainer's chainer.backends.cuda device helpers).
///
/// Needs no CUDA headers. On a build without CUDA, or a machine without a GPU,
/// is_available() is false and everything that needs a device throws a DeviceError
/// saying "no CUDA device is available on this machine" with a hint. The CPU is a
/// cuda::Device with id -1 (Chainer's DummyDevice): get_device_from_array(cpu_tensor)
/// .is_cpu() is true, use()/synchronize() do nothing. Streams and events are in
/// `cuda/stream.hpp`, the memory pool in `cuda/memory_pool.hpp`.
#pragma once

#include <cstddef>
#include <string>

#include "dezero/tensor.hpp"

namespace dezero::cuda {

// --- availability -----------------------------------------------------------
/// True when dezero was built with CUDA and a CUDA device can be used now (never throws).
/// The answer is probed once per process; false without CUDA or without a GPU.
bool is_available();
/// Number of CUDA devices (0 without CUDA or without a GPU).
int device_count();
/// Throws DeviceError ("no CUDA device is available on this machine" + hint) unless is_available().
/// Chainer's check_cuda_available (which raises RuntimeError).
void check_cuda_available();

// --- devices ----------------------------------------------------------------
/// A CUDA device by id, or the CPU as id -1 (Chainer's cuda.Device / DummyDevice).
///
/// A small value: constructing one checks nothing; the calls that need the device
/// (name() of a CUDA id, use(), synchronize(), ...) throw a DeviceError when there is no GPU
/// or no device with that id. On the CPU (id -1) they return "cpu", "", 0 or do nothing.
class Device {
 public:
  Device();                                            ///< The current CUDA device (the CPU when none).
  explicit Device(int id) : id_(id < 0 ? -1 : id) {}  ///< Device `id`; id < 0: the CPU (DummyDevice).
  static Device cpu() { return Device(-1); }  ///< The CPU (Chainer's DummyDevice), id -1.

  int id() const { return id_; }  ///< The CUDA device id; -1 for the CPU.
  bool is_cpu() const { return id_ < 0; }  ///< True for the CPU (id -1).
  std::string name() const;                ///< "NVIDIA H200"; "cpu" for the CPU.
  std::string compute_capability() const;  ///< CuPy's string, e.g. "90"; "" for the CPU.
  std::size_t total_memory() const;        ///< Bytes; 0 for the CPU.
  void use() const;                        ///< Makes it the current device (no-op for the CPU).
  void synchronize() const;                ///< cudaDeviceSynchronize (no-op for the CPU).
  /// The same device as a dezero::Device (Device::cpu() or Device::cuda(id)).
  dezero::Device device() const { return is_cpu() ? dezero::Device::cpu() : dezero::Device::cuda(id_); }

  /// Compare the ids (the CPU, -1, sorts first).
  ///@{
  bool operator==(const Device& o) const { return id_ == o.id_; }
  bool operator!=(const Device& o) const { return id_ != o.id_; }
  bool operator<(const Device& o) const { return id_ < o.id_; }
  ///@}

 private:
  int id_ = -1;
};

/// Chainer's get_device_from_id: the cuda::Device of that id.
/// Negative id -> the CPU; otherwise the CUDA device (DeviceError when there is none / out of range).
Device get_device_from_id(int id);
/// The device of the first tensor that lives on a CUDA device; the CPU (id -1) otherwise.
/// Works without a GPU (it only looks at the tensors).
Device get_device_from_array(const Tensor& x);
/// The device of the first of `x`, `rest...` that lives on a CUDA device; the CPU (id -1) otherwise.
template <class... Ts>
Device get_device_from_array(const Tensor& x, const Ts&... rest) {
  Device d = get_device_from_array(x);
  return d.is_cpu() ? get_device_from_array(rest...) : d;
}
/// Chainer's get_device: an id as get_device_from_id(), a dezero::Device (the CPU, or a
/// CUDA device, checked as get_device_from_id()), a tensor as get_device_from_array().
///@{
Device get_device(int id);
Device get_device(const dezero::Device& device);
Device get_device(const Tensor& x);
///@}

/// RAII: makes a device current and restores the previous one (no-op for the CPU).
///
/// DeviceError when the device is a CUDA device and there is no GPU, or no device with that id.
class DeviceGuard {
 public:
  /// Makes device `id`, `d` current for the guard's scope (id < 0 or the CPU: nothing).
  ///@{
  explicit DeviceGuard(int id);
  explicit DeviceGuard(const Device& d) : DeviceGuard(d.id()) {}
  explicit DeviceGuard(const dezero::Device& d) : DeviceGuard(d.index()) {}
  ///@}
  ~DeviceGuard();  ///< Restores the device that was current before.
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  // Unused in a build without the CUDA backend (cuda/stub.cpp).
  [[maybe_unused]] int prev_ = -1;
  [[maybe_unused]] bool active_ = false;
};

// --- transfers ------------------------------------------------------------------
/// A copy of `x` on a CUDA device (Chainer's cuda.to_gpu).
/// To a CUDA device (device < 0: the current one); the same tensor when already there.
/// The Device overload takes the CPU (DummyDevice) as "the current one", like Chainer.
/// DeviceError without a GPU or when the device does not exist.
///@{
Tensor to_gpu(const Tensor& x, int device = -1);
Tensor to_gpu(const Tensor& x, const Device& device);
///@}
/// `x` in host memory (Chainer's cuda.to_cpu); works without a GPU.
/// To host memory; the same tensor when already there (waits for the copy).
Tensor to_cpu(const Tensor& x);
/// A new copy on `device` (< 0: the source's device); GPU -> GPU uses a peer copy
/// (cudaMemcpyPeerAsync) ordered after both devices' current streams, without a host wait.
/// A host tensor copied to the host works without a GPU; a CUDA `device` needs one
/// (DeviceError). ValueError for an undefined tensor.
Tensor copy(const Tensor& x, int device = -1);

}  // namespace dezero::cuda

namespace dezero {

/// Which "module" computes on a tensor (DeZero's cuda.get_array_module).
///
/// DeZero's cuda.get_array_module: says which "module" computes on x: "numpy" for host
/// tensors, "cupy" for CUDA tensors, with the device.
struct ArrayModule {
  dezero::Device device;  ///< The tensor's device.
  bool is_numpy() const { return device.is_cpu(); }   ///< True for host tensors.
  bool is_cupy() const { return device.is_cuda(); }   ///< True for CUDA tensors.
  std::string name() const { return is_cupy() ? "cupy" : "numpy"; }  ///< "numpy" or "cupy".
  /// The device as a cuda::Device (the CPU, id -1, for "numpy").
  cuda::Device cuda_device() const { return cuda::Device(device.is_cpu() ? -1 : device.index()); }
  /// Compare the modules by name, as Python compares numpy and cupy (not the devices).
  ///@{
  bool operator==(const ArrayModule& o) const { return name() == o.name(); }
  bool operator!=(const ArrayModule& o) const { return !(*this == o); }
  ///@}
};
/// The module of `x`: "numpy" for host tensors, "cupy" for CUDA tensors (works without a GPU).
inline ArrayModule get_array_module(const Tensor& x) { return ArrayModule{x.device()}; }

}  // namespace dezero
