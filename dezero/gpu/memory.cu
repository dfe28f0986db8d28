// dezero/gpu/memory.cu - the memory primitives of the CUDA backend (backend.hpp's
// "memory" section): allocations from the device pool, copies between the host and
// the device and within it, fill, and the device-wide wait.
//
// Twin of cpu/memory.cpp. The pool itself is memory_pool.cpp; everything here runs
// on the calling thread's current stream of the device, and only copy_to_host and
// synchronize wait for it.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {
namespace cd = ::dezero::cuda::detail;
}  // namespace

namespace gpu {

void* allocate(int device, std::size_t nbytes) { return cd::pool_malloc(device, nbytes, cd::current_stream(device)); }
void deallocate(int device, void* ptr) noexcept { cd::pool_free(device, ptr); }

// From pageable memory the driver stages the source before returning, so the caller may
// free it at once; the transfer itself completes in stream order (no host wait).
void copy_from_host(int device, void* dst, const void* src, std::size_t n) {
  if (!n) return;
  cd::ScopedDevice g(device);
  DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, cd::current_stream(device)));
}

// The one place (with synchronize) that waits: the caller reads the values next.
void copy_to_host(int device, void* dst, const void* src, std::size_t n) {
  if (!n) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s));
  DEZERO_CUDA_CHECK(cudaStreamSynchronize(s));
}

void copy(int device, void* dst, const void* src, std::size_t n) {
  if (!n || dst == src) return;
  cd::ScopedDevice g(device);
  DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, cd::current_stream(device)));
}

void fill(int device, DType dt, void* dst, std::int64_t n, double value) {
  if (n <= 0) return;
  cd::ScopedDevice g(device);
  if (value == 0.0 && !std::signbit(value)) {  // all-zero bits for every dtype
    DEZERO_CUDA_CHECK(
        cudaMemsetAsync(dst, 0, static_cast<std::size_t>(n) * dtype_size(dt), cd::current_stream(device)));
    return;
  }
  if (is_half(dt)) {  // the value's 16 bits, rounded once on the host
    const std::uint16_t bits = dt == DType::BFloat16 ? bfloat16_t(value).bits : float16_t(value).bits;
    DEZERO_LAUNCH(fill_kernel<std::uint16_t>, n, cd::current_stream(device), static_cast<std::uint16_t*>(dst), n, bits);
    return;
  }
  DEZERO_DISPATCH(dt, T,
                  DEZERO_LAUNCH(fill_kernel<T>, n, cd::current_stream(device), static_cast<T*>(dst), n,
                                static_cast<T>(value)))
}

void synchronize(int device) {
  cd::ScopedDevice g(device);
  DEZERO_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace gpu

}  // namespace dezero::detail
