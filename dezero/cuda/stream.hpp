/// \file
/// The streams and events of dezero::cuda (CuPy's Stream and
/// Event): the stream every dezero kernel of a device runs on, RAII to change it for
/// a scope, and events to order streams and time the GPU.
///
/// Needs no CUDA headers: the handles are `void*` (cudaStream_t, cudaEvent_t). Without
/// a GPU every call that needs one throws a DeviceError (`cuda/device.hpp`'s is_available()).
#pragma once

#include <memory>
#include <utility>

namespace dezero::cuda {

// --- streams and events -------------------------------------------------------
class Event;

/// A CUDA stream of one device (shared handle: copies refer to the same stream).
///
/// Every dezero kernel and copy runs on the calling thread's current stream of the
/// device (the legacy null stream until set_current is called). Memory is cached
/// per stream: a tensor allocated on one stream and then used on another must stay
/// alive until that other stream's work is done (synchronize or an event), since
/// its block goes back to the allocating stream when it is freed. Each stream that
/// runs a matmul gets its own cuBLAS workspace from the pool (32 MiB from sm_90 on,
/// 4 MiB before), kept while the stream lives. The last copy of a stream made here
/// synchronises it, then gives its workspace back and moves its cached blocks, and
/// those of its tensors freed later, to the null stream's list of the pool.
///
/// Without a GPU no Stream can be made: the constructor, null() and current() throw a
/// DeviceError.
///
/// ```cpp
///   cuda::Stream s(true);
///   {
///     cuda::StreamGuard g(s);     // dezero's kernels of this device now run on s
///     y = F::relu(x);
///   }
///   s.synchronize();
/// ```
class Stream {
 public:
  explicit Stream(bool non_blocking = false);  ///< A new stream on the current device.
  /// The null (legacy default) stream of the current device.
  static Stream null();
  /// This thread's current stream on the current device.
  static Stream current();
  /// Makes `s` this thread's current stream, for the stream's device.
  static void set_current(const Stream& s);
  void use() const { set_current(*this); }  ///< `set_current(*this)`: makes this stream current.

  void synchronize() const;  ///< Waits on the host until all work queued on the stream is done.
  bool done() const;                   ///< True when all work finished.
  Event record() const;                ///< A new event recorded on this stream.
  void wait_event(const Event& e) const;  ///< Makes later work on this stream wait for `e` (no host wait).

  void* handle() const;                ///< The cudaStream_t (nullptr for the null stream).
  int device_id() const;  ///< The id of the stream's device.
  bool is_null() const { return handle() == nullptr; }  ///< True for the null (legacy default) stream.
  /// Compare the handles and the devices.
  ///@{
  bool operator==(const Stream& o) const { return handle() == o.handle() && device_id() == o.device_id(); }
  bool operator!=(const Stream& o) const { return !(*this == o); }
  ///@}

  /// \cond INTERNAL
  struct Impl;
  explicit Stream(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  /// \endcond

 private:
  std::shared_ptr<Impl> impl_;
};

/// RAII: sets the current stream of the stream's device, restores the previous one.
///
/// For the calling thread; DeviceError without a GPU.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);  ///< Makes `s` current for the guard's scope.
  ~StreamGuard();  ///< Restores the stream that was current before.
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream prev_;
};

/// A CUDA event of one device (CuPy's Event; shared handle): orders streams and times the GPU.
///
/// Without a GPU no Event can be made: the constructor throws a DeviceError.
///
/// ```cpp
///   cuda::Event start, end;
///   start.record();
///   ...                                            // GPU work on the current stream
///   end.record();
///   end.synchronize();
///   float ms = cuda::get_elapsed_time(start, end);
/// ```
class Event {
 public:
  /// A new event on the current device; `blocking`: synchronize() sleeps instead of spinning;
  /// `disable_timing`: cheaper, but no elapsed_time().
  explicit Event(bool blocking = false, bool disable_timing = false);
  void record();                   ///< Records the event on the current stream.
  /// Records the event on `s` (DeviceError when `s` belongs to another device).
  void record(const Stream& s);
  void synchronize() const;  ///< Waits on the host until the recorded work is done.
  bool done() const;  ///< True when the recorded work is done.
  float elapsed_time(const Event& end) const;  ///< Milliseconds from this event to `end`.
  void* handle() const;            ///< The cudaEvent_t.
  int device_id() const;  ///< The id of the event's device.

  /// \cond INTERNAL
  struct Impl;
  /// \endcond

 private:
  std::shared_ptr<Impl> impl_;
};
/// CuPy's get_elapsed_time(start, end) in milliseconds.
/// The events must have been recorded, with timing (not `disable_timing`); CudaError otherwise.
float get_elapsed_time(const Event& start, const Event& end);

}  // namespace dezero::cuda
