/// \file
/// The memory of dezero::cuda: the caching pool of device
/// memory (CuPy's MemoryPool), page-locked host memory and the cuDNN workspace limit.
///
/// Needs no CUDA headers. The statistics and the workspace limit work without a GPU
/// (all zeros); only alloc_pinned_memory needs one.
#pragma once

#include <cstddef>
#include <memory>

namespace dezero::cuda {

// --- memory pool ------------------------------------------------------------------
/// The statistics and controls of a device's caching allocator (CuPy's MemoryPool).
///
/// A caching allocator per device (CuPy's MemoryPool): blocks rounded up to 512 B,
/// freed blocks kept per stream and reused by later allocations of similar size, so
/// a training loop stops calling cudaMalloc after its first iteration. On out of
/// memory the cache is released and the allocation retried once, then
/// OutOfMemoryError. DEZERO_CUDA_MEMORY_POOL=0 in the environment disables caching.
/// The blocks of a destroyed Stream go to the null stream's list (`cuda/stream.hpp`).
/// used_bytes() counts the cuBLAS workspace of each stream that ran a matmul
/// (32 MiB from sm_90 on, 4 MiB before), taken at its first GEMM and kept.
///
/// A MemoryPool is a view of device `device_id()`'s pool: every call works without a GPU
/// (the counts are 0, free_all_blocks() does nothing).
///
/// ```cpp
///   auto pool = cuda::memory_pool();
///   std::printf("%zu bytes in use, %zu cached\n", pool.used_bytes(), pool.free_bytes());
/// ```
class MemoryPool {
 public:
  explicit MemoryPool(int device) : device_(device) {}  ///< The pool of CUDA device `device`.
  int device_id() const { return device_; }  ///< The id of the pool's device.
  std::size_t used_bytes() const;     ///< Bytes in blocks held by tensors.
  std::size_t free_bytes() const;     ///< Bytes cached in free blocks.
  std::size_t total_bytes() const;    ///< used + free (all obtained from the driver).
  std::size_t n_free_blocks() const;  ///< The number of cached free blocks.
  std::size_t n_used_blocks() const;  ///< The number of blocks held by tensors.
  std::size_t n_malloc_calls() const; ///< cudaMalloc calls made so far.
  bool caching() const;               ///< False when DEZERO_CUDA_MEMORY_POOL=0.
  void free_all_blocks();             ///< Returns every cached block to the driver.

 private:
  int device_;
};
/// The pool of a device (device < 0: the current one). Callable without a GPU: all zeros.
MemoryPool memory_pool(int device = -1);

/// Page-locked host memory (cudaHostAlloc) for fast, asynchronous transfers.
/// Cached by a pinned pool and returned to it when the last copy goes away.
/// A default-constructed PinnedMemory is empty (data() is nullptr, size() 0).
class PinnedMemory {
 public:
  PinnedMemory() = default;  ///< Empty: no memory.
  void* data() const { return ptr_.get(); }  ///< The host address (nullptr when empty).
  std::size_t size() const { return size_; }  ///< The size in bytes.

 private:
  friend PinnedMemory alloc_pinned_memory(std::size_t nbytes);
  std::shared_ptr<void> ptr_;
  std::size_t size_ = 0;
};
/// `nbytes` of page-locked host memory from the pinned pool (CuPy's alloc_pinned_memory).
/// DeviceError without a GPU; OutOfMemoryError when the host has no more to pin.
PinnedMemory alloc_pinned_memory(std::size_t nbytes);
/// The state of the pinned memory pool (pinned_memory_pool_stats()).
struct PinnedPoolStats {
  /// Bytes held by PinnedMemory objects, bytes cached in free blocks, and the number of
  /// free blocks.
  ///@{
  std::size_t used_bytes = 0, free_bytes = 0, n_free_blocks = 0;
  ///@}
};
/// The pinned pool's statistics (all zeros without a GPU).
PinnedPoolStats pinned_memory_pool_stats();
/// Returns every cached pinned block to the driver (does nothing without a GPU).
void free_all_pinned_blocks();

// --- cuDNN workspace and math mode --------------------------------------------------
/// Set and get the upper bound, in bytes, on the scratch memory of a cuDNN algorithm.
///
/// Upper bound on the scratch memory a cuDNN algorithm may use (CuPy's default: 8 MiB).
/// The convolutions choose their algorithm among those that fit (an algorithm is chosen
/// once per geometry, dtype, device and limit); thread-safe. Works without a GPU.
///@{
void set_max_workspace_size(std::size_t bytes);
std::size_t get_max_workspace_size();
///@}

/// Set and get whether float32 convolutions and matmuls may use TF32 tensor cores.
///
/// TF32 tensor cores for float32 convolutions (cuDNN) and matmuls (cuBLAS): off by
/// default, so float32 results on the GPU match the CPU's to float32 precision. On
/// (Ampere and later) they run faster and keep about 10 bits of mantissa in the
/// products (PyTorch's torch.backends.cudnn.allow_tf32 / cuda.matmul.allow_tf32).
/// float64 is never affected; thread-safe; applies to the calls made after it.
/// Works without a GPU.
///@{
void set_allow_tf32(bool allow);
bool get_allow_tf32();
///@}

}  // namespace dezero::cuda
