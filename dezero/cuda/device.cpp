// cuda/cuda_runtime.cpp - dezero::cuda's host side: availability, devices, the
// per-thread current stream, streams and events, transfers, per-device library
// handles (cuBLAS, cuRAND, cuDNN) and the small registries (memo, workspace limit).
//
// Streams: every dezero kernel, copy and library call runs on the calling thread's
// current stream of the device (the legacy null stream until Stream::set_current /
// StreamGuard changes it). Only reading values on the host (copy_to_host) and the
// explicit synchronize() calls wait.
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "dezero/cuda/detail/runtime.hpp"
#include "dezero/cuda/detail/cudnn.hpp"
#include "dezero/cuda.hpp"

namespace dezero::cuda::detail {

// --- availability -------------------------------------------------------------------
namespace {
struct Probe {
  int count = 0;
  std::string why;  // why there is no device
};
const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      r.why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
      cudaGetLastError();
      n = 0;
    } else if (n == 0) {
      r.why = "cudaGetDeviceCount returned 0";
    }
    r.count = n;
    return r;
  }();
  return p;
}
}  // namespace

bool runtime_available() { return probe().count > 0; }
int device_count_cached() { return probe().count; }

std::string no_device_message(const std::string& what) {
  return what + ": no CUDA device is available on this machine (" + probe().why +
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

// --- streams and events: shared handles ----------------------------------------------
struct Stream::Impl {
  cudaStream_t h = nullptr;
  int device = 0;
  bool owned = false;
  ~Impl() {
    if (owned && h) {
      int prev = -1;
      cudaGetDevice(&prev);
      cudaSetDevice(device);
      cudaStreamSynchronize(h);  // blocks cached for this stream become safe for any later stream
      cudaStreamDestroy(h);
      if (prev >= 0) cudaSetDevice(prev);
      cudaGetLastError();
    }
  }
};

struct Event::Impl {
  cudaEvent_t h = nullptr;
  int device = 0;
  ~Impl() {
    if (h) {
      cudaEventDestroy(h);
      cudaGetLastError();
    }
  }
};

namespace {
thread_local std::vector<std::shared_ptr<Stream::Impl>> tl_current_streams;

std::shared_ptr<Stream::Impl> null_impl(int device) {
  auto p = std::make_shared<Stream::Impl>();
  p->device = device;
  return p;
}
}  // namespace

cudaStream_t detail::current_stream(int device) {
  if (device >= 0 && static_cast<std::size_t>(device) < tl_current_streams.size() && tl_current_streams[device])
    return tl_current_streams[device]->h;
  return nullptr;
}

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
// get_device_from_array and get_device: cuda_host.cpp.

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

// --- Stream -------------------------------------------------------------------------
Stream::Stream(bool non_blocking) {
  check_cuda_available();
  auto p = std::make_shared<Impl>();
  p->device = current_device();
  DEZERO_CUDA_CHECK(cudaStreamCreateWithFlags(&p->h, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault));
  p->owned = true;
  impl_ = std::move(p);
}
Stream Stream::null() {
  check_cuda_available();
  return Stream(null_impl(current_device()));
}
Stream Stream::current() {
  check_cuda_available();
  int d = current_device();
  if (static_cast<std::size_t>(d) < tl_current_streams.size() && tl_current_streams[d])
    return Stream(tl_current_streams[d]);
  return Stream(null_impl(d));
}
void Stream::set_current(const Stream& s) {
  int d = s.impl_->device;
  if (static_cast<std::size_t>(d) >= tl_current_streams.size()) tl_current_streams.resize(d + 1);
  tl_current_streams[d] = s.impl_->h ? s.impl_ : nullptr;
}
void Stream::synchronize() const {
  ScopedDevice g(impl_->device);
  DEZERO_CUDA_CHECK(cudaStreamSynchronize(impl_->h));
}
bool Stream::done() const {
  ScopedDevice g(impl_->device);
  cudaError_t e = cudaStreamQuery(impl_->h);
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  DEZERO_CUDA_CHECK(e);
  return true;
}
Event Stream::record() const {
  ScopedDevice g(impl_->device);
  Event e;
  e.record(*this);
  return e;
}
void Stream::wait_event(const Event& e) const {
  ScopedDevice g(impl_->device);
  DEZERO_CUDA_CHECK(cudaStreamWaitEvent(impl_->h, static_cast<cudaEvent_t>(e.handle()), 0));
}
void* Stream::handle() const { return impl_ ? static_cast<void*>(impl_->h) : nullptr; }
int Stream::device_id() const { return impl_ ? impl_->device : -1; }

StreamGuard::StreamGuard(const Stream& s) : prev_(Stream(null_impl(s.device_id()))) {
  int d = s.device_id();
  if (static_cast<std::size_t>(d) < tl_current_streams.size() && tl_current_streams[d])
    prev_ = Stream(tl_current_streams[d]);
  Stream::set_current(s);
}
StreamGuard::~StreamGuard() { Stream::set_current(prev_); }

// --- Event ---------------------------------------------------------------------------
Event::Event(bool blocking, bool disable_timing) {
  check_cuda_available();
  auto p = std::make_shared<Impl>();
  p->device = current_device();
  unsigned flags = (blocking ? cudaEventBlockingSync : 0) | (disable_timing ? cudaEventDisableTiming : 0);
  DEZERO_CUDA_CHECK(cudaEventCreateWithFlags(&p->h, flags));
  impl_ = std::move(p);
}
void Event::record() {
  ScopedDevice g(impl_->device);
  DEZERO_CUDA_CHECK(cudaEventRecord(impl_->h, current_stream(impl_->device)));
}
void Event::record(const Stream& s) {
  if (s.device_id() != impl_->device)
    throw DeviceError("Event::record: the event belongs to cuda:" + std::to_string(impl_->device) +
                      " but the stream to cuda:" + std::to_string(s.device_id()));
  ScopedDevice g(impl_->device);
  DEZERO_CUDA_CHECK(cudaEventRecord(impl_->h, static_cast<cudaStream_t>(s.handle())));
}
void Event::synchronize() const { DEZERO_CUDA_CHECK(cudaEventSynchronize(impl_->h)); }
bool Event::done() const {
  cudaError_t e = cudaEventQuery(impl_->h);
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  DEZERO_CUDA_CHECK(e);
  return true;
}
float Event::elapsed_time(const Event& end) const {
  float ms = 0;
  DEZERO_CUDA_CHECK(cudaEventElapsedTime(&ms, impl_->h, end.impl_->h));
  return ms;
}
void* Event::handle() const { return impl_->h; }
int Event::device_id() const { return impl_->device; }
float get_elapsed_time(const Event& start, const Event& end) { return start.elapsed_time(end); }

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

// --- memo key (the workspace limit and the memo registry are in cuda_host.cpp) ---------------
int detail::memo_device_id() { return runtime_available() ? current_device() : -1; }

}  // namespace dezero::cuda

// --- per-device library handles -------------------------------------------------------------
namespace dezero::cuda::detail {

namespace {
struct Handles {
  std::mutex mu;
  cublasHandle_t cublas = nullptr;
  curandGenerator_t curand = nullptr;
  cudnnHandle_t cudnn = nullptr;
  int sms = 0;
};
Handles& handles(int device) {
  static std::mutex mu;
  static auto* all = new std::vector<std::unique_ptr<Handles>>();  // leaked on purpose
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<std::size_t>(device) >= all->size()) all->resize(device + 1);
  auto& h = (*all)[device];
  if (!h) h = std::make_unique<Handles>();
  return *h;
}
}  // namespace

std::mutex& library_mutex(int device) { return handles(device).mu; }

cublasHandle_t cublas_handle(int device, cudaStream_t stream) {
  Handles& h = handles(device);
  if (!h.cublas) {
    ScopedDevice g(device);
    DEZERO_CUBLAS_CHECK(cublasCreate(&h.cublas));
  }
  DEZERO_CUBLAS_CHECK(cublasSetStream(h.cublas, stream));
  return h.cublas;
}

curandGenerator_t curand_generator(int device, cudaStream_t stream) {
  Handles& h = handles(device);
  if (!h.curand) {
    ScopedDevice g(device);
    DEZERO_CURAND_CHECK(curandCreateGenerator(&h.curand, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  }
  DEZERO_CURAND_CHECK(curandSetStream(h.curand, stream));
  return h.curand;
}

cudnnHandle_t cudnn_handle(int device, cudaStream_t stream) {
  Handles& h = handles(device);
  if (!h.cudnn) {
    ScopedDevice g(device);
    DEZERO_CUDNN_CHECK(cudnnCreate(&h.cudnn));
  }
  DEZERO_CUDNN_CHECK(cudnnSetStream(h.cudnn, stream));
  return h.cudnn;
}

int sm_count(int device) {
  Handles& h = handles(device);
  if (!h.sms) DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&h.sms, cudaDevAttrMultiProcessorCount, device));
  return h.sms;
}

}  // namespace dezero::cuda::detail
