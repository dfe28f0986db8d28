// dezero/cuda/stub.cpp - the dezero::cuda API of a build made without CUDA
// (DEZERO_CUDA=OFF or no toolkit), and its cuda_backend(): every device request is a
// clear DeviceError; statistics are zeros; the pure host helpers (memo, workspace
// limit: host.cpp) work. Built instead of every other .cpp/.cu of this folder but host.cpp.
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#include "dezero/cuda/device.hpp"
#include "dezero/cuda/memoize.hpp"
#include "dezero/cuda/memory_pool.hpp"
#include "dezero/cuda/rtc.hpp"
#include "dezero/cuda/stream.hpp"
#include "dezero/env.hpp"
#include "dezero/error.hpp"

// --- the backend: none -------------------------------------------------------------------
namespace dezero::detail {
namespace {
[[noreturn]] void no_cuda(const std::string& what) {
  throw DeviceError(what +
                    ": this build of dezero has no CUDA backend, so no CUDA device is available on this machine; "
                    "hint: rebuild with the CUDA toolkit installed (cmake -DDEZERO_CUDA=ON)");
}
}  // namespace

bool cuda_runtime_available() { return false; }
Backend& cuda_backend(int device_id) { no_cuda("cuda:" + std::to_string(device_id)); }
}  // namespace dezero::detail

namespace dezero::cuda {

using ::dezero::detail::no_cuda;

// --- availability, devices (cuda/device.hpp) ---------------------------------------------
bool is_available() { return false; }
int device_count() { return 0; }
void check_cuda_available() { no_cuda("dezero::cuda"); }

Device::Device() : id_(-1) {}
std::string Device::name() const {
  if (is_cpu()) return "cpu";
  no_cuda("Device::name");
}
std::string Device::compute_capability() const {
  if (is_cpu()) return "";
  no_cuda("Device::compute_capability");
}
std::size_t Device::total_memory() const {
  if (is_cpu()) return 0;
  no_cuda("Device::total_memory");
}
void Device::use() const {
  if (!is_cpu()) no_cuda("Device::use");
}
void Device::synchronize() const {
  if (!is_cpu()) no_cuda("Device::synchronize");
}

Device get_device_from_id(int id) {
  if (id < 0) return Device::cpu();
  no_cuda("get_device_from_id(" + std::to_string(id) + ")");
}
// get_device_from_array and get_device: host.cpp.

DeviceGuard::DeviceGuard(int id) {
  if (id >= 0) no_cuda("DeviceGuard(" + std::to_string(id) + ")");
}
DeviceGuard::~DeviceGuard() = default;

// --- streams and events (cuda/stream.hpp) ------------------------------------------------
Stream::Stream(bool) { no_cuda("Stream"); }
Stream Stream::null() { no_cuda("Stream::null"); }
Stream Stream::current() { no_cuda("Stream::current"); }
void Stream::set_current(const Stream&) { no_cuda("Stream::set_current"); }
void Stream::synchronize() const { no_cuda("Stream::synchronize"); }
bool Stream::done() const { no_cuda("Stream::done"); }
Event Stream::record() const { no_cuda("Stream::record"); }
void Stream::wait_event(const Event&) const { no_cuda("Stream::wait_event"); }
void* Stream::handle() const { return nullptr; }
int Stream::device_id() const { return -1; }
StreamGuard::StreamGuard(const Stream& s) : prev_(s) { no_cuda("StreamGuard"); }
StreamGuard::~StreamGuard() = default;

Event::Event(bool, bool) { no_cuda("Event"); }
void Event::record() { no_cuda("Event::record"); }
void Event::record(const Stream&) { no_cuda("Event::record"); }
void Event::synchronize() const { no_cuda("Event::synchronize"); }
bool Event::done() const { no_cuda("Event::done"); }
float Event::elapsed_time(const Event&) const { no_cuda("Event::elapsed_time"); }
void* Event::handle() const { return nullptr; }
int Event::device_id() const { return -1; }
float get_elapsed_time(const Event&, const Event&) { no_cuda("get_elapsed_time"); }

// --- transfers (cuda/device.hpp) ---------------------------------------------------------
Tensor to_gpu(const Tensor&, int device) { no_cuda("to_gpu(cuda:" + std::to_string(device < 0 ? 0 : device) + ")"); }
Tensor to_gpu(const Tensor& x, const Device& device) { return to_gpu(x, device.id()); }
Tensor to_cpu(const Tensor& x) { return x.to_cpu(); }
Tensor copy(const Tensor& x, int device) {
  if (device >= 0) no_cuda("cuda::copy to cuda:" + std::to_string(device));
  return x.copy();
}

// --- memory (cuda/memory_pool.hpp) -------------------------------------------------------
namespace {
bool caching_from_env() {
  const char* v = ::dezero::detail::env_value("DEZERO_CUDA_MEMORY_POOL");
  return !(v && std::string(v) == "0");
}
}  // namespace
std::size_t MemoryPool::used_bytes() const { return 0; }
std::size_t MemoryPool::free_bytes() const { return 0; }
std::size_t MemoryPool::total_bytes() const { return 0; }
std::size_t MemoryPool::n_free_blocks() const { return 0; }
std::size_t MemoryPool::n_used_blocks() const { return 0; }
std::size_t MemoryPool::n_malloc_calls() const { return 0; }
bool MemoryPool::caching() const { return caching_from_env(); }
void MemoryPool::free_all_blocks() {}
MemoryPool memory_pool(int device) { return MemoryPool(device < 0 ? 0 : device); }

PinnedMemory alloc_pinned_memory(std::size_t) { no_cuda("alloc_pinned_memory"); }
PinnedPoolStats pinned_memory_pool_stats() { return {}; }
void free_all_pinned_blocks() {}

// --- memo key (cuda/memoize.hpp) ---------------------------------------------------------
// The workspace limit and the memo registry are in host.cpp.
int detail::memo_device_id() { return -1; }

// --- runtime-compiled kernels (cuda/rtc.hpp): made, never run ----------------------------
struct ElementwiseKernel::Impl {
  std::string name;
};
ElementwiseKernel::ElementwiseKernel(std::string, std::string, std::string, std::string name, std::string)
    : impl_(std::make_shared<Impl>(Impl{std::move(name)})) {}
std::vector<Tensor> ElementwiseKernel::operator()(const std::vector<KernelArg>&, std::vector<Tensor>) const {
  no_cuda("ElementwiseKernel '" + impl_->name + "'");
}
const std::string& ElementwiseKernel::name() const { return impl_->name; }
ElementwiseKernel elementwise(const std::string& in_params, const std::string& out_params,
                              const std::string& operation, const std::string& name, const std::string& preamble) {
  return ElementwiseKernel(in_params, out_params, operation, name, preamble);
}

struct RawKernel::Impl {
  std::string name;
};
RawKernel::RawKernel(std::string, std::string name, std::vector<std::string>)
    : impl_(std::make_shared<Impl>(Impl{std::move(name)})) {}
void RawKernel::operator()(Dim3, Dim3, const std::vector<KernelArg>&, std::size_t) const {
  no_cuda("RawKernel '" + impl_->name + "'");
}
const std::string& RawKernel::name() const { return impl_->name; }
RawKernel raw(const std::string& code, const std::string& name, const std::vector<std::string>& options) {
  return RawKernel(code, name, options);
}

struct ReductionKernel::Impl {
  std::string name;
};
ReductionKernel::ReductionKernel(std::string, std::string, std::string, std::string, std::string, std::string,
                                 std::string name, std::string, std::string)
    : impl_(std::make_shared<Impl>(Impl{std::move(name)})) {}
std::vector<Tensor> ReductionKernel::operator()(const std::vector<KernelArg>&, const Axes&, bool,
                                                 std::vector<Tensor>) const {
  no_cuda("ReductionKernel '" + impl_->name + "'");
}
const std::string& ReductionKernel::name() const { return impl_->name; }
ReductionKernel reduce(const std::string& in_params, const std::string& out_params, const std::string& map_expr,
                       const std::string& reduce_expr, const std::string& post_map_expr, const std::string& identity,
                       const std::string& name, const std::string& reduce_type, const std::string& preamble) {
  return ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, reduce_type,
                         preamble);
}

}  // namespace dezero::cuda

// --- the cuDNN convolution's test hooks (detail/conv_algo.hpp): nothing to hook -------------------
// The GPU test cases that use them skip without a device; they still have to link.
namespace dezero::cuda::detail {
void cudnn_conv_fail_next_calls(int) noexcept {}
bool cudnn_conv_cached_choice(const ConvAlgoKey&, ConvAlgoChoice&) { return false; }
std::string cudnn_conv_last_failure() { return ""; }
}  // namespace dezero::cuda::detail
