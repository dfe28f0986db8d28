// dezero/cuda.hpp - dezero::cuda: Chainer's chainer.backends.cuda utilities in C++
// (devices, streams and events, the memory pool, transfers, and the runtime-compiled
// user kernels elementwise / reduce / raw: CuPy's Elementwise-, Reduction- and RawKernel).
//
// Always available to include: nothing here needs CUDA headers. On a build without
// CUDA, or a machine without a GPU, is_available() is false and everything that
// needs a device throws a DeviceError saying "no CUDA device is available on this
// machine" with a hint. Statistics (memory_pool()) and pure host helpers
// (get_array_module, memoize, workspace limits) work everywhere.
//
// The CPU is represented as a cuda::Device with id -1 (Chainer's DummyDevice):
// get_device_from_array(cpu_tensor).is_cpu() is true, use()/synchronize() do nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "dezero/tensor.hpp"

namespace dezero::cuda {

// --- availability -----------------------------------------------------------
// True when dezero was built with CUDA and a CUDA device can be used now (never throws).
bool is_available();
// Number of CUDA devices (0 without CUDA or without a GPU).
int device_count();
// Throws DeviceError ("no CUDA device is available on this machine" + hint) unless is_available().
void check_cuda_available();

// --- devices ----------------------------------------------------------------
class Device {
 public:
  Device();                                            // the current CUDA device (the CPU when none)
  explicit Device(int id) : id_(id < 0 ? -1 : id) {}  // id < 0: the CPU (DummyDevice)
  static Device cpu() { return Device(-1); }

  int id() const { return id_; }
  bool is_cpu() const { return id_ < 0; }
  std::string name() const;                // "NVIDIA H200"; "cpu" for the CPU
  std::string compute_capability() const;  // CuPy's string, e.g. "90"; "" for the CPU
  std::size_t total_memory() const;        // bytes; 0 for the CPU
  void use() const;                        // make it the current device (no-op for the CPU)
  void synchronize() const;                // cudaDeviceSynchronize (no-op for the CPU)
  dezero::Device device() const { return is_cpu() ? dezero::Device::cpu() : dezero::Device::cuda(id_); }

  bool operator==(const Device& o) const { return id_ == o.id_; }
  bool operator!=(const Device& o) const { return id_ != o.id_; }
  bool operator<(const Device& o) const { return id_ < o.id_; }

 private:
  int id_ = -1;
};

// Negative id -> the CPU; otherwise the CUDA device (DeviceError when there is none / out of range).
Device get_device_from_id(int id);
// The device of the first tensor that lives on a CUDA device; the CPU (id -1) otherwise.
Device get_device_from_array(const Tensor& x);
template <class... Ts>
Device get_device_from_array(const Tensor& x, const Ts&... rest) {
  Device d = get_device_from_array(x);
  return d.is_cpu() ? get_device_from_array(rest...) : d;
}
Device get_device(int id);
Device get_device(const dezero::Device& device);
Device get_device(const Tensor& x);

// RAII: makes a device current and restores the previous one (no-op for the CPU).
class DeviceGuard {
 public:
  explicit DeviceGuard(int id);
  explicit DeviceGuard(const Device& d) : DeviceGuard(d.id()) {}
  explicit DeviceGuard(const dezero::Device& d) : DeviceGuard(d.index()) {}
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
  bool active_ = false;
};

// --- streams and events -------------------------------------------------------
class Event;

// A CUDA stream of one device (shared handle: copies refer to the same stream).
// Every dezero kernel and copy runs on the calling thread's current stream of the
// device (the legacy null stream until set_current is called). Memory is cached
// per stream: a tensor allocated on one stream and then used on another must stay
// alive until that other stream's work is done (synchronize or an event), since
// its block goes back to the allocating stream when it is freed.
class Stream {
 public:
  explicit Stream(bool non_blocking = false);  // a new stream on the current device
  static Stream null();                        // the null (legacy default) stream of the current device
  static Stream current();                     // this thread's current stream on the current device
  static void set_current(const Stream& s);    // for the stream's device, on this thread
  void use() const { set_current(*this); }

  void synchronize() const;
  bool done() const;                   // all work finished
  Event record() const;                // a new event recorded on this stream
  void wait_event(const Event& e) const;

  void* handle() const;                // cudaStream_t
  int device_id() const;
  bool is_null() const { return handle() == nullptr; }
  bool operator==(const Stream& o) const { return handle() == o.handle() && device_id() == o.device_id(); }
  bool operator!=(const Stream& o) const { return !(*this == o); }

  struct Impl;
  explicit Stream(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

// RAII: sets the current stream of the stream's device, restores the previous one.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream prev_;
};

class Event {
 public:
  explicit Event(bool blocking = false, bool disable_timing = false);  // on the current device
  void record();                   // on the current stream
  void record(const Stream& s);
  void synchronize() const;
  bool done() const;
  float elapsed_time(const Event& end) const;  // milliseconds from this event to `end`
  void* handle() const;            // cudaEvent_t
  int device_id() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};
// CuPy's get_elapsed_time(start, end) in milliseconds.
float get_elapsed_time(const Event& start, const Event& end);

// --- transfers ------------------------------------------------------------------
// To a CUDA device (device < 0: the current one); the same tensor when already there.
Tensor to_gpu(const Tensor& x, int device = -1);
Tensor to_gpu(const Tensor& x, const Device& device);
// To host memory; the same tensor when already there (waits for the copy).
Tensor to_cpu(const Tensor& x);
// A new copy on `device` (< 0: the source's device); GPU -> GPU uses a peer copy
// (cudaMemcpyPeerAsync) ordered after both devices' current streams, without a host wait.
Tensor copy(const Tensor& x, int device = -1);

// --- memory pool ------------------------------------------------------------------
// A caching allocator per device (CuPy's MemoryPool): blocks rounded up to 512 B,
// freed blocks kept per stream and reused by later allocations of similar size, so
// a training loop stops calling cudaMalloc after its first iteration. On out of
// memory the cache is released and the allocation retried once, then
// OutOfMemoryError. DEZERO_CUDA_MEMORY_POOL=0 in the environment disables caching.
class MemoryPool {
 public:
  explicit MemoryPool(int device) : device_(device) {}
  int device_id() const { return device_; }
  std::size_t used_bytes() const;     // bytes in blocks held by tensors
  std::size_t free_bytes() const;     // bytes cached in free blocks
  std::size_t total_bytes() const;    // used + free (all obtained from the driver)
  std::size_t n_free_blocks() const;
  std::size_t n_used_blocks() const;
  std::size_t n_malloc_calls() const; // cudaMalloc calls made so far
  bool caching() const;               // false when DEZERO_CUDA_MEMORY_POOL=0
  void free_all_blocks();             // return every cached block to the driver

 private:
  int device_;
};
// The pool of a device (device < 0: the current one). Callable without a GPU: all zeros.
MemoryPool memory_pool(int device = -1);

// Page-locked host memory (cudaHostAlloc) for fast, asynchronous transfers;
// cached by a pinned pool and returned to it when the last copy goes away.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  void* data() const { return ptr_.get(); }
  std::size_t size() const { return size_; }

 private:
  friend PinnedMemory alloc_pinned_memory(std::size_t nbytes);
  std::shared_ptr<void> ptr_;
  std::size_t size_ = 0;
};
PinnedMemory alloc_pinned_memory(std::size_t nbytes);
struct PinnedPoolStats {
  std::size_t used_bytes = 0, free_bytes = 0, n_free_blocks = 0;
};
PinnedPoolStats pinned_memory_pool_stats();
void free_all_pinned_blocks();

// --- cuDNN workspace ---------------------------------------------------------------
// Upper bound on the scratch memory a cuDNN algorithm may use (CuPy's default: 8 MiB).
void set_max_workspace_size(std::size_t bytes);
std::size_t get_max_workspace_size();

// --- memoize / clear_memo ------------------------------------------------------------
namespace detail {
void register_memo(std::function<void()> clear);
int memo_device_id();  // the current CUDA device, or -1
template <class F>
struct fn_traits : fn_traits<decltype(&F::operator())> {};
template <class C, class R, class... A>
struct fn_traits<R (C::*)(A...) const> {
  using result = R;
  using key = std::tuple<int, std::decay_t<A>...>;
};
template <class C, class R, class... A>
struct fn_traits<R (C::*)(A...)> : fn_traits<R (C::*)(A...) const> {};
template <class R, class... A>
struct fn_traits<R (*)(A...)> {
  using result = R;
  using key = std::tuple<int, std::decay_t<A>...>;
};
}  // namespace detail

// cupy.memoize: wraps f (a lambda or function with ordered, copyable arguments) so that
// each distinct argument list (and device, when for_each_device) is computed once.
// clear_memo() empties every memo made this way.
template <class F>
auto memoize(F f, bool for_each_device = false) {
  using Traits = detail::fn_traits<F>;
  using Key = typename Traits::key;
  using R = typename Traits::result;
  struct Cache {
    std::recursive_mutex mu;
    std::map<Key, R> values;
  };
  auto cache = std::make_shared<Cache>();
  std::weak_ptr<Cache> weak = cache;
  detail::register_memo([weak] {
    if (auto c = weak.lock()) {
      std::lock_guard<std::recursive_mutex> lock(c->mu);
      c->values.clear();
    }
  });
  return [f = std::move(f), cache, for_each_device](const auto&... args) -> R {
    Key key(for_each_device ? detail::memo_device_id() : -1, args...);
    std::lock_guard<std::recursive_mutex> lock(cache->mu);
    auto it = cache->values.find(key);
    if (it != cache->values.end()) return it->second;
    R value = f(args...);
    cache->values.emplace(std::move(key), value);
    return value;
  };
}
void clear_memo();

// --- runtime-compiled kernels (NVRTC) ------------------------------------------------------
// An argument of a user kernel: a tensor (passed as a pointer) or a scalar.
using KernelArg = std::variant<Tensor, double, std::int64_t, std::int32_t, float>;

// cupy.ElementwiseKernel. Parameters are "type name" pairs separated by commas; a type
// is float32/float64/int32/int64 (or float/double/int/long long) or a placeholder such
// as T bound by the dtype of the first argument that uses it; "raw T x" passes the
// whole array to be indexed by hand. Non-raw arrays share one shape (0-d tensors and
// scalars broadcast); `operation` is C++ run for each index `i` in [0, _n). Compiled
// with NVRTC for the device's architecture on first use per (device, dtypes), cached.
//   auto k = cuda::elementwise("T x, T y", "T z", "z = x * y + 1", "fma1");
//   Tensor z = k({x, y})[0];
class ElementwiseKernel {
 public:
  ElementwiseKernel(std::string in_params, std::string out_params, std::string operation, std::string name,
                    std::string preamble = "");
  // Outputs not given are allocated with the broadcast shape on the inputs' device.
  std::vector<Tensor> operator()(const std::vector<KernelArg>& inputs, std::vector<Tensor> outputs = {}) const;
  const std::string& name() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};
ElementwiseKernel elementwise(const std::string& in_params, const std::string& out_params,
                              const std::string& operation, const std::string& name,
                              const std::string& preamble = "");

// cupy.RawKernel: CUDA C++ source with an extern "C" __global__ function `name`.
// Tensors are passed as pointers, scalars by value in their own C++ type.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
class RawKernel {
 public:
  RawKernel(std::string code, std::string name, std::vector<std::string> options = {});
  // Launch on the current stream of the first tensor's device (or the current device).
  void operator()(Dim3 grid, Dim3 block, const std::vector<KernelArg>& args, std::size_t shared_mem = 0) const;
  const std::string& name() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};
RawKernel raw(const std::string& code, const std::string& name, const std::vector<std::string>& options = {});

// cupy.ReductionKernel: y = post_map(reduce over axes of map(x...)). Parameters as for
// elementwise (no raw arrays). For each output element, every input index along the
// reduced axes is mapped with `map_expr` (over the input names), the values are
// combined with `reduce_expr` (over `a` and `b`) starting from `identity` (a C++
// expression; "" = none: reducing an empty axis is then an error), and `post_map_expr`
// stores the result `a` into the outputs. The reduction type is `reduce_type` (a
// dtype name or placeholder; "" = the type of the first output). `_in_ind.size()` and
// `_out_ind.size()` are the input and output sizes (CuPy's names, for means).
// One block per output element, a shared-memory tree reduction; compiled with NVRTC
// per (device, dtypes) on first use, cached like elementwise.
//   auto ssq = cuda::reduce("T x", "T y", "x * x", "a + b", "y = a", "0", "ssq");
//   Tensor y = ssq({x}, Axes(1))[0];               // x: (N, D) -> y: (N,)
class ReductionKernel {
 public:
  ReductionKernel(std::string in_params, std::string out_params, std::string map_expr, std::string reduce_expr,
                  std::string post_map_expr, std::string identity, std::string name, std::string reduce_type = "",
                  std::string preamble = "");
  // axes: Axes() = all (the default), Axes(1), Axes({0, 2}); Axes(std::vector<int>{}) reduces
  // nothing. keepdims keeps reduced axes as length 1. Outputs not given are allocated on
  // the inputs' device with the reduced shape; given ones must have it.
  std::vector<Tensor> operator()(const std::vector<KernelArg>& inputs, const Axes& axes = Axes(),
                                 bool keepdims = false, std::vector<Tensor> outputs = {}) const;
  const std::string& name() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};
ReductionKernel reduce(const std::string& in_params, const std::string& out_params, const std::string& map_expr,
                       const std::string& reduce_expr, const std::string& post_map_expr, const std::string& identity,
                       const std::string& name, const std::string& reduce_type = "",
                       const std::string& preamble = "");

}  // namespace dezero::cuda

namespace dezero {

// DeZero's cuda.get_array_module: says which "module" computes on x: "numpy" for host
// tensors, "cupy" for CUDA tensors, with the device.
struct ArrayModule {
  dezero::Device device;
  bool is_numpy() const { return device.is_cpu(); }
  bool is_cupy() const { return device.is_cuda(); }
  std::string name() const { return is_cupy() ? "cupy" : "numpy"; }
  cuda::Device cuda_device() const { return cuda::Device(device.is_cpu() ? -1 : device.index()); }
  bool operator==(const ArrayModule& o) const { return name() == o.name(); }
  bool operator!=(const ArrayModule& o) const { return !(*this == o); }
};
inline ArrayModule get_array_module(const Tensor& x) { return ArrayModule{x.device()}; }

}  // namespace dezero
