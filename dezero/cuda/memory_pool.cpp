// dezero/cuda/memory_pool.cpp - the device memory pool and the pinned host pool behind
// cuda/memory_pool.hpp (CUDA build; stub.cpp has the zeros of a build without CUDA).
//
// Device pool (CuPy's MemoryPool, simplified): sizes are rounded up to 512 B; a
// freed block goes back to a free list of the stream that allocated it instead of
// cudaFree. An allocation on stream S reuses the smallest free block of S that is
// at least as large (and at most twice as large), so a block is only ever reused
// in S's order: no event or host wait is needed. When a Stream the library created
// is destroyed (after it synchronised), its cached blocks move to the legacy null
// stream's list, and blocks still in use that were allocated on it are marked to go
// there when freed (forget_stream): no block stays keyed by a dead handle, which the
// driver may give to a later stream. Blocks are never split. A
// training step that allocates the same sizes each iteration therefore takes
// nothing from the driver after the first one (n_malloc_calls stays flat).
// On cudaErrorMemoryAllocation every cached block is freed and the call retried
// once; then OutOfMemoryError with the request and the pool's state.
// DEZERO_CUDA_MEMORY_POOL=0 turns caching off (every free is a cudaFree).
//
// Pools live for the whole process and are deliberately never destroyed: tensors
// held by static objects may be freed after static destructors ran.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dezero/gpu/runtime.hpp"
#include "dezero/cuda/device.hpp"
#include "dezero/cuda/memory_pool.hpp"
#include "dezero/env.hpp"

namespace dezero::cuda::detail {

namespace {

// --- the device pool ---------------------------------------------------------------------
constexpr std::size_t kRound = 512;

bool pool_enabled_from_env() {
  const char* v = ::dezero::detail::env_value("DEZERO_CUDA_MEMORY_POOL");
  return !(v && std::string(v) == "0");
}

std::string bytes_str(std::size_t n) {
  return std::to_string(n) + " bytes (" + std::to_string(n / (1024.0 * 1024.0)).substr(0, 8) + " MiB)";
}

class DevicePool {
 public:
  explicit DevicePool(int device) : device_(device), caching_(pool_enabled_from_env()) {}

  void* malloc(std::size_t nbytes, cudaStream_t stream) {
    std::size_t size = (std::max<std::size_t>(nbytes, 1) + kRound - 1) / kRound * kRound;
    std::lock_guard<std::mutex> lock(mu_);
    if (caching_) {
      auto it = free_.lower_bound({stream, size});
      if (it != free_.end() && it->first.first == stream && it->first.second <= 2 * size) {
        void* p = it->second;
        std::size_t bsize = it->first.second;
        free_.erase(it);
        free_bytes_ -= bsize;
        live_[p] = Block{bsize, stream};
        used_bytes_ += bsize;
        return p;
      }
    }
    ScopedDevice g(device_);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, size);
    ++n_malloc_;
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached_locked();
      e = cudaMalloc(&p, size);
      ++n_malloc_;
    }
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      std::size_t dev_free = 0, dev_total = 0;
      cudaMemGetInfo(&dev_free, &dev_total);
      cudaGetLastError();
      throw OutOfMemoryError("cuda:" + std::to_string(device_) + ": out of device memory allocating " +
                             bytes_str(nbytes) + "; memory pool: " + bytes_str(used_bytes_) + " in use in " +
                             std::to_string(live_.size()) + " blocks, cache already released; device: " +
                             bytes_str(dev_free) + " free of " + bytes_str(dev_total) +
                             "; hint: use a smaller batch size or free tensors you no longer need");
    }
    DEZERO_CUDA_CHECK(e);
    live_[p] = Block{size, stream};
    used_bytes_ += size;
    return p;
  }

  void free(void* p) noexcept {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return;  // not ours: ignore rather than crash in a destructor
    Block b = it->second;
    live_.erase(it);
    used_bytes_ -= b.size;
    if (caching_) {
      free_.emplace(std::make_pair(b.stream, b.size), p);
      free_bytes_ += b.size;
    } else {
      ScopedDeviceNoThrow g(device_);
      cudaFree(p);
      cudaGetLastError();
    }
  }

  void free_all_blocks() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  }

  // `stream` is gone and everything enqueued on it has finished: its free blocks are
  // safe on the null stream, which is ordered after the work of every blocking stream.
  void forget_stream(cudaStream_t stream) noexcept {
    if (!stream) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound({stream, 0});
    while (it != free_.end() && it->first.first == stream) {
      free_.emplace(std::make_pair(cudaStream_t{nullptr}, it->first.second), it->second);
      it = free_.erase(it);
    }
    for (auto& kv : live_)
      if (kv.second.stream == stream) kv.second.stream = nullptr;
  }

  struct Stats {
    std::size_t used, free, n_free, n_used, n_malloc;
    bool caching;
  };
  Stats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return Stats{used_bytes_, free_bytes_, free_.size(), live_.size(), n_malloc_, caching_};
  }

 private:
  struct Block {
    std::size_t size;
    cudaStream_t stream;
  };
  // Like ScopedDevice but for noexcept paths.
  struct ScopedDeviceNoThrow {
    int prev = -1;
    explicit ScopedDeviceNoThrow(int id) {
      if (cudaGetDevice(&prev) != cudaSuccess || prev == id) prev = -1;
      else cudaSetDevice(id);
      cudaGetLastError();
    }
    ~ScopedDeviceNoThrow() {
      if (prev >= 0) cudaSetDevice(prev);
    }
  };
  void release_cached_locked() noexcept {
    if (free_.empty()) return;
    ScopedDeviceNoThrow g(device_);
    for (auto& kv : free_) cudaFree(kv.second);  // cudaFree waits for pending work on the block
    cudaGetLastError();
    free_.clear();
    free_bytes_ = 0;
  }

  int device_;
  bool caching_;
  std::mutex mu_;
  std::multimap<std::pair<cudaStream_t, std::size_t>, void*> free_;
  std::unordered_map<void*, Block> live_;
  std::size_t used_bytes_ = 0, free_bytes_ = 0, n_malloc_ = 0;
};

DevicePool* pool_if_exists(int device, bool create) {
  static std::mutex mu;
  static auto* pools = new std::vector<DevicePool*>();  // leaked on purpose (see header comment)
  std::lock_guard<std::mutex> lock(mu);
  if (device < 0) return nullptr;
  if (static_cast<std::size_t>(device) >= pools->size()) {
    if (!create) return nullptr;
    pools->resize(device + 1, nullptr);
  }
  auto& p = (*pools)[device];
  if (!p && create) p = new DevicePool(device);
  return p;
}

// --- pinned host pool: exact-size reuse; buffers are handed out as shared_ptr ---------
class PinnedPool {
 public:
  void* malloc(std::size_t nbytes) {
    std::size_t size = (std::max<std::size_t>(nbytes, 1) + kRound - 1) / kRound * kRound;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= 2 * size) {
      void* p = it->second;
      std::size_t b = it->first;
      free_.erase(it);
      free_bytes_ -= b;
      live_[p] = b;
      used_bytes_ += b;
      return p;
    }
    void* p = nullptr;
    cudaError_t e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_locked();
      e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    }
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemoryError("cuda: out of pinned host memory allocating " + bytes_str(nbytes) +
                             "; pinned pool: " + bytes_str(used_bytes_) + " in use");
    }
    DEZERO_CUDA_CHECK(e);
    live_[p] = size;
    used_bytes_ += size;
    return p;
  }
  void free(void* p) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return;
    free_.emplace(it->second, p);
    free_bytes_ += it->second;
    used_bytes_ -= it->second;
    live_.erase(it);
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    release_locked();
  }
  PinnedPoolStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return PinnedPoolStats{used_bytes_, free_bytes_, free_.size()};
  }

 private:
  void release_locked() noexcept {
    for (auto& kv : free_) cudaFreeHost(kv.second);
    cudaGetLastError();
    free_.clear();
    free_bytes_ = 0;
  }
  std::mutex mu_;
  std::multimap<std::size_t, void*> free_;
  std::unordered_map<void*, std::size_t> live_;
  std::size_t used_bytes_ = 0, free_bytes_ = 0;
};

PinnedPool& pinned_pool() {
  static auto* p = new PinnedPool();  // leaked on purpose
  return *p;
}

}  // namespace

// --- what the backend calls (detail/runtime.hpp) -----------------------------------------
void* pool_malloc(int device, std::size_t nbytes, cudaStream_t stream) {
  return pool_if_exists(device, true)->malloc(nbytes, stream);
}
void pool_free(int device, void* ptr) noexcept {
  try {
    if (DevicePool* p = pool_if_exists(device, false)) p->free(ptr);
  } catch (...) {
  }
}
std::size_t max_workspace_size() { return ::dezero::cuda::get_max_workspace_size(); }
bool allow_tf32() { return ::dezero::cuda::get_allow_tf32(); }

void pool_forget_stream(int device, cudaStream_t stream) noexcept {
  try {
    if (DevicePool* p = pool_if_exists(device, false)) p->forget_stream(stream);
  } catch (...) {
  }
}

}  // namespace dezero::cuda::detail

namespace dezero::cuda {

// --- MemoryPool, pinned memory (cuda/memory_pool.hpp) ------------------------------------
using detail::pool_if_exists;

namespace {
detail::DevicePool::Stats pool_stats(int device) {
  if (auto* p = pool_if_exists(device, false)) return p->stats();
  const char* v = ::dezero::detail::env_value("DEZERO_CUDA_MEMORY_POOL");
  return {0, 0, 0, 0, 0, !(v && std::string(v) == "0")};
}
}  // namespace

std::size_t MemoryPool::used_bytes() const { return pool_stats(device_).used; }
std::size_t MemoryPool::free_bytes() const { return pool_stats(device_).free; }
std::size_t MemoryPool::total_bytes() const {
  auto s = pool_stats(device_);
  return s.used + s.free;
}
std::size_t MemoryPool::n_free_blocks() const { return pool_stats(device_).n_free; }
std::size_t MemoryPool::n_used_blocks() const { return pool_stats(device_).n_used; }
std::size_t MemoryPool::n_malloc_calls() const { return pool_stats(device_).n_malloc; }
bool MemoryPool::caching() const { return pool_stats(device_).caching; }
void MemoryPool::free_all_blocks() {
  if (auto* p = pool_if_exists(device_, false)) p->free_all_blocks();
}

MemoryPool memory_pool(int device) {
  if (device < 0) device = is_available() ? detail::current_device() : 0;
  return MemoryPool(device);
}

PinnedMemory alloc_pinned_memory(std::size_t nbytes) {
  check_cuda_available();
  PinnedMemory m;
  void* p = detail::pinned_pool().malloc(nbytes);
  m.ptr_ = std::shared_ptr<void>(p, [](void* q) { detail::pinned_pool().free(q); });
  m.size_ = nbytes;
  return m;
}
PinnedPoolStats pinned_memory_pool_stats() { return detail::pinned_pool().stats(); }
void free_all_pinned_blocks() { detail::pinned_pool().release(); }

}  // namespace dezero::cuda
