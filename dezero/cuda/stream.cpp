// dezero/cuda/stream.cpp - dezero::cuda's streams and events on a CUDA build, and
// the calling thread's current stream of each device (detail::current_stream).
//
// Every dezero kernel, copy and library call runs on the calling thread's current
// stream of the device (the legacy null stream until Stream::set_current /
// StreamGuard changes it). Only reading values on the host (copy_to_host) and the
// explicit synchronize() calls wait. Stream and Event are shared handles: copies
// refer to the same CUDA object, destroyed with the last copy.
#include <memory>
#include <string>
#include <vector>

#include "dezero/gpu/runtime.hpp"
#include "dezero/cuda/device.hpp"
#include "dezero/cuda/stream.hpp"

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
      release_cublas_workspace(device, h);
      pool_forget_stream(device, h);  // before the driver can hand h to a new stream
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

// --- this thread's current stream of each device ---------------------------------------
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

}  // namespace dezero::cuda
