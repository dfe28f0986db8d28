// dezero/cuda/device.cpp - dezero::cuda's devices on a CUDA build: whether a GPU
// can be used (probed once), the current device for a scope (detail::ScopedDevice,
// Device, DeviceGuard) and the transfers between the host and the devices.
//
// What needs no GPU (get_device_from_array, get_device) is in host.cpp, shared with
// the build without CUDA; that build's versions of the functions here are in stub.cpp.
#include <string>
#include <type_traits>

#include "dezero/gpu/runtime.hpp"
#include "dezero/cuda/device.hpp"
#include "dezero/cuda/memoize.hpp"

namespace dezero::cuda::detail {

// --- availability -------------------------------------------------------------------
// Probed once. The result is trivially destructible, so it stays readable during
// static destruction: a GPU tensor owned by a static object is freed then, and its
// free still asks for the device count.
namespace {
struct Probe {
  int count;
  cudaError_t error;  // why there is no device (cudaSuccess: the count was 0)
};
static_assert(std::is_trivially_destructible_v<Probe>);
Probe probe() {
  static const Probe p = [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
    return Probe{n, e};
  }();
  return p;
}
}  // namespace

bool runtime_available() { return probe().count > 0; }
int device_count_cached() { return probe().count; }

std::string no_device_message(const std::string& what) {
  cudaError_t e = probe().error;
  std::string why = e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                                     : std::string("cudaGetDeviceCount returned 0");
  return what + ": no CUDA device is available on this machine (" + why +
         "); hint: run on a machine with an NVIDIA GPU and its driver, or keep tensors on the CPU "
         "(Device::cpu()); dezero::cuda::is_available() tells which case applies";
}

void check_device_id(const char* op, int id) {
  if (!runtime_available()) throw DeviceError(no_device_message(std::string(op) + " on cuda:" + std::to_string(id)));
  if (id < 0 || id >= device_count_cached())
    throw DeviceError(std::string(op) + ": cuda:" + std::to_string(id) + " does not exist; this machine has " +
                      std::to_string(device_count_cached()) + " CUDA device(s) (ids 0.." +
                      std::to_string(device_count_cached() - 1) + ")");
}

int current_device() {
  int d = 0;
  DEZERO_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

ScopedDevice::ScopedDevice(int id) {
  int cur = current_device();
  if (cur != id) {
    DEZERO_CUDA_CHECK(cudaSetDevice(id));
    prev_ = cur;
  }
}
ScopedDevice::~ScopedDevice() {
  if (prev_ >= 0) {
    cudaSetDevice(prev_);
    cudaGetLastError();
  }
}

}  // namespace dezero::cuda::detail

namespace dezero::cuda {

using namespace detail;  // NOLINT

// --- is_available, device_count ---------------------------------------------------------
bool is_available() { return runtime_available(); }
int device_count() { return device_count_cached(); }
void check_cuda_available() {
  if (!runtime_available()) throw DeviceError(no_device_message("dezero::cuda"));
}

// --- Device ---------------------------------------------------------------------------
Device::Device() : id_(runtime_available() ? current_device() : -1) {}

std::string Device::name() const {
  if (is_cpu()) return "cpu";
  check_device_id("Device::name", id_);
  cudaDeviceProp prop{};
  DEZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, id_));
  return prop.name;
}
std::string Device::compute_capability() const {
  if (is_cpu()) return "";
  check_device_id("Device::compute_capability", id_);
  int major = 0, minor = 0;
  DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, id_));
  DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, id_));
  return std::to_string(major) + std::to_string(minor);
}
std::size_t Device::total_memory() const {
  if (is_cpu()) return 0;
  check_device_id("Device::total_memory", id_);
  cudaDeviceProp prop{};
  DEZERO_CUDA_CHECK(cudaGetDeviceProperties(&prop, id_));
  return prop.totalGlobalMem;
}
void Device::use() const {
  if (is_cpu()) return;
  check_device_id("Device::use", id_);
  DEZERO_CUDA_CHECK(cudaSetDevice(id_));
}
void Device::synchronize() const {
  if (is_cpu()) return;
  check_device_id("Device::synchronize", id_);
  ScopedDevice g(id_);
  DEZERO_CUDA_CHECK(cudaDeviceSynchronize());
}

Device get_device_from_id(int id) {
  if (id < 0) return Device::cpu();
  check_device_id("get_device_from_id", id);
  return Device(id);
}
// get_device_from_array and get_device: host.cpp.

DeviceGuard::DeviceGuard(int id) {
  if (id < 0) return;
  check_device_id("DeviceGuard", id);
  prev_ = current_device();
  DEZERO_CUDA_CHECK(cudaSetDevice(id));
  active_ = true;
}
DeviceGuard::~DeviceGuard() {
  if (active_) {
    cudaSetDevice(prev_);
    cudaGetLastError();
  }
}

// --- transfers -----------------------------------------------------------------------
Tensor to_gpu(const Tensor& x, int device) {
  check_cuda_available();
  int id = device < 0 ? current_device() : device;
  check_device_id("to_gpu", id);
  if (x.device().is_cuda()) return x.device().index() == id ? x : copy(x, id);
  return x.to(dezero::Device::cuda(id));
}
Tensor to_gpu(const Tensor& x, const Device& device) { return to_gpu(x, device.is_cpu() ? -1 : device.id()); }
Tensor to_cpu(const Tensor& x) { return x.to_cpu(); }

Tensor copy(const Tensor& x, int device) {
  if (!x.defined()) throw ValueError("cuda::copy: the tensor is undefined");
  int src = x.device().is_cuda() ? x.device().index() : -1;
  int dst = device < 0 ? src : device;
  if (src < 0 || src == dst) return dst < 0 ? x.copy() : (src < 0 ? x.to(dezero::Device::cuda(dst)) : x.copy());
  if (dst < 0) return x.to_cpu().copy();
  check_device_id("cuda::copy", dst);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), dezero::Device::cuda(dst));
  if (x.size() == 0) return y;
  cudaStream_t ss = current_stream(src), ds = current_stream(dst);
  cudaEvent_t before = nullptr, after = nullptr;
  {  // the copy waits for dst's stream (the block of y may be reused from it) ...
    ScopedDevice g(dst);
    DEZERO_CUDA_CHECK(cudaEventCreateWithFlags(&before, cudaEventDisableTiming));
    DEZERO_CUDA_CHECK(cudaEventRecord(before, ds));
  }
  {
    ScopedDevice g(src);
    DEZERO_CUDA_CHECK(cudaStreamWaitEvent(ss, before, 0));
    DEZERO_CUDA_CHECK(cudaMemcpyPeerAsync(y.raw_data(), dst, x.raw_data(), src, x.nbytes(), ss));
    DEZERO_CUDA_CHECK(cudaEventCreateWithFlags(&after, cudaEventDisableTiming));
    DEZERO_CUDA_CHECK(cudaEventRecord(after, ss));
  }
  {  // ... and dst's later work waits for the copy
    ScopedDevice g(dst);
    DEZERO_CUDA_CHECK(cudaStreamWaitEvent(ds, after, 0));
  }
  cudaEventDestroy(before);  // released once the waits complete
  cudaEventDestroy(after);
  return y;
}

// --- memo key (the workspace limit and the memo registry are in host.cpp) -------------------
int detail::memo_device_id() { return runtime_available() ? current_device() : -1; }

}  // namespace dezero::cuda
