// dezero/cuda/memory_pool.hpp - dezero::cuda's memory: the caching pool of device
// memory (CuPy's MemoryPool), page-locked host memory and the cuDNN workspace limit.
//
// Needs no CUDA headers. The statistics and the workspace limit work without a GPU
// (all zeros); only alloc_pinned_memory needs one.
#pragma once

#include <cstddef>
#include <memory>

namespace dezero::cuda {

// --- memory pool ------------------------------------------------------------------
// A caching allocator per device (CuPy's MemoryPool): blocks rounded up to 512 B,
// freed blocks kept per stream and reused by later allocations of similar size, so
// a training loop stops calling cudaMalloc after its first iteration. On out of
// memory the cache is released and the allocation retried once, then
// OutOfMemoryError. DEZERO_CUDA_MEMORY_POOL=0 in the environment disables caching.
// The blocks of a destroyed Stream go to the null stream's list (cuda/stream.hpp).
// used_bytes() counts the cuBLAS workspace of each stream that ran a matmul
// (32 MiB from sm_90 on, 4 MiB before), taken at its first GEMM and kept.
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

// --- cuDNN workspace and math mode --------------------------------------------------
// Upper bound on the scratch memory a cuDNN algorithm may use (CuPy's default: 8 MiB).
// The convolutions choose their algorithm among those that fit (an algorithm is chosen
// once per geometry, dtype, device and limit); thread-safe.
void set_max_workspace_size(std::size_t bytes);
std::size_t get_max_workspace_size();

// TF32 tensor cores for float32 convolutions (cuDNN) and matmuls (cuBLAS): off by
// default, so float32 results on the GPU match the CPU's to float32 precision. On
// (Ampere and later) they run faster and keep about 10 bits of mantissa in the
// products (PyTorch's torch.backends.cudnn.allow_tf32 / cuda.matmul.allow_tf32).
// float64 is never affected; thread-safe; applies to the calls made after it.
void set_allow_tf32(bool allow);
bool get_allow_tf32();

}  // namespace dezero::cuda
