// dezero/mn/staging.cpp - moving the bytes of a tensor between its device and a host buffer that
// MPI reads (mn/detail.hpp). No CUDA-aware MPI is assumed: a GPU tensor is copied to host memory
// before MPI sees it and back after. On the host a copy is a memcpy. On a GPU it is one
// cudaMemcpyAsync on the current stream of the tensor's device (so it follows the kernels that
// computed the gradient), and wait_for_copies synchronises those streams; the buffer is
// page-locked (cuda::alloc_pinned_memory), which is what lets the copies run at full speed.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "dezero/cuda.hpp"
#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

#ifdef DEZERO_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace dezero::mn::detail {

namespace {
using dezero::detail::fail;

#ifdef DEZERO_WITH_CUDA
void check_cuda(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) fail<CudaError>("dezero::mn", call, " failed: ", cudaGetErrorString(rc));
}
cudaStream_t current_stream() { return static_cast<cudaStream_t>(cuda::Stream::current().handle()); }
#endif

#ifndef DEZERO_WITH_CUDA
[[noreturn]] void no_cuda(const Tensor& t) {
  fail<DeviceError>("dezero::mn", "a tensor on ", t.device(),
                    " but this libdezero_mn was built without CUDA; hint: rebuild with the CUDA toolkit present");
}
#endif
}  // namespace

void HostBuffer::reserve(std::size_t nbytes, bool pinned) {
  const bool want_pinned = pinned && cuda::is_available();
  if (nbytes <= capacity_ && want_pinned == is_pinned_ && data_) return;
  if (want_pinned) {
    cuda::PinnedMemory mem = cuda::alloc_pinned_memory(nbytes ? nbytes : 1);
    data_ = mem.data();
    pinned_ = std::shared_ptr<void>(std::make_shared<cuda::PinnedMemory>(std::move(mem)), data_);
    plain_.clear();
    plain_.shrink_to_fit();
  } else {
    plain_.resize(nbytes ? nbytes : 1);
    data_ = plain_.data();
    pinned_.reset();
  }
  capacity_ = nbytes;
  is_pinned_ = want_pinned;
}

void copy_to_host(const Tensor& t, void* dst) {
  if (t.device().is_cpu()) {
    if (t.nbytes()) std::memcpy(dst, t.raw_data(), t.nbytes());
    return;
  }
#ifdef DEZERO_WITH_CUDA
  cuda::DeviceGuard guard(t.device());
  check_cuda(cudaMemcpyAsync(dst, t.raw_data(), t.nbytes(), cudaMemcpyDeviceToHost, current_stream()),
             "cudaMemcpyAsync (device to host)");
#else
  no_cuda(t);
#endif
}

void copy_from_host(const void* src, const Tensor& t) {
  if (t.device().is_cpu()) {
    if (t.nbytes()) std::memcpy(t.raw_data(), src, t.nbytes());
    return;
  }
#ifdef DEZERO_WITH_CUDA
  cuda::DeviceGuard guard(t.device());
  check_cuda(cudaMemcpyAsync(t.raw_data(), src, t.nbytes(), cudaMemcpyHostToDevice, current_stream()),
             "cudaMemcpyAsync (host to device)");
#else
  no_cuda(t);
#endif
}

void wait_for_copies(const std::vector<Tensor>& tensors) {
#ifdef DEZERO_WITH_CUDA
  std::set<int> devices;
  for (const Tensor& t : tensors)
    if (!t.device().is_cpu()) devices.insert(t.device().index());
  for (int d : devices) {
    cuda::DeviceGuard guard(d);
    check_cuda(cudaStreamSynchronize(current_stream()), "cudaStreamSynchronize");
  }
#else
  (void)tensors;
#endif
}

}  // namespace dezero::mn::detail
