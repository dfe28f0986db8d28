// dezero/cuda/stream.hpp - dezero::cuda's streams and events (CuPy's Stream and
// Event): the stream every dezero kernel of a device runs on, RAII to change it for
// a scope, and events to order streams and time the GPU.
//
// Needs no CUDA headers: the handles are void* (cudaStream_t, cudaEvent_t). Without
// a GPU every call that needs one throws a DeviceError (cuda/device.hpp's is_available()).
#pragma once

#include <memory>
#include <utility>

namespace dezero::cuda {

// --- streams and events -------------------------------------------------------
class Event;

// A CUDA stream of one device (shared handle: copies refer to the same stream).
// Every dezero kernel and copy runs on the calling thread's current stream of the
// device (the legacy null stream until set_current is called). Memory is cached
// per stream: a tensor allocated on one stream and then used on another must stay
// alive until that other stream's work is done (synchronize or an event), since
// its block goes back to the allocating stream when it is freed. Each stream that
// runs a matmul gets its own cuBLAS workspace from the pool (32 MiB from sm_90 on,
// 4 MiB before), kept while the stream lives. The last copy of a stream made here
// synchronises it, then gives its workspace back and moves its cached blocks, and
// those of its tensors freed later, to the null stream's list of the pool.
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

}  // namespace dezero::cuda
