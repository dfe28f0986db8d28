// dezero/cpu/memory.cpp - host memory for the CPU backend: 64-byte aligned blocks
// through a cache of freed ones (HostBlockCache), the copies (plain memcpy/memmove:
// host and device memory are the same here) and fill. Not the packing buffers of the
// GEMM kernels (sgemm.cpp keeps its own per thread).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dezero/backend/dispatch.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"
#include "dezero/env.hpp"
#include "dezero/error.hpp"
#include "dezero/small_pool.hpp"

namespace dezero::detail::cpu {

// --- host memory: a cache of freed blocks ------------------------------------------------
// A training step frees and allocates the same sizes every iteration; handing the
// blocks back to malloc costs a malloc/free pair per tensor (bench/w3_overhead.cpp)
// and, for large blocks, fresh zeroed pages from the kernel every step (the 4 MB
// gradients of bench/w1_mlp_epoch.cpp's MNIST MLP).
// Freed blocks up to 64 MB are kept per rounded size (64 B steps up to 4 KB, then
// eighths of a power of two), at most 2 GB in all (a quarter of the physical memory
// when that is less): a ResNet50 step on a batch of 8 frees about 1 GB of activations
// and gradients and allocates them again in the next step, and with a 256 MB cap each
// step took some 190,000 page faults of fresh zeroed pages (bench/w4_resnet50.cpp).
// DEZERO_CPU_MEMORY_POOL=0 turns the cache off, and it is off under AddressSanitizer so
// that use-after-free is caught.
class HostBlockCache {
 public:
  HostBlockCache() {
    const char* env = ::dezero::detail::env_value("DEZERO_CPU_MEMORY_POOL");
    enabled_ = !(env && std::string(env) == "0");
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      max_cached_ = std::min(max_cached_, static_cast<std::size_t>(pages) / 4 * static_cast<std::size_t>(page));
#if defined(__SANITIZE_ADDRESS__)
    enabled_ = false;
#endif
  }

  void* get(std::size_t nbytes) {
    std::size_t n = rounded(nbytes);
    if (enabled_) {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<void*>* list = nullptr;
      if (n <= kSmallBlock) {
        list = &small_[n / 64 - 1];
      } else {
        auto it = free_.find(n);
        if (it != free_.end()) list = &it->second;
      }
      if (list && !list->empty()) {
        void* p = list->back();
        list->pop_back();
        cached_ -= n;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, n);
    if (!p) {
      release();
      p = std::aligned_alloc(64, n);
    }
    if (!p) throw OutOfMemoryError("cpu: out of host memory allocating " + std::to_string(nbytes) + " bytes");
    return p;
  }

  void put(void* p, std::size_t nbytes) noexcept {
    std::size_t n = rounded(nbytes);
    if (enabled_ && n <= kMaxBlock) {
      try {
        std::lock_guard<std::mutex> lock(mu_);
        if (cached_ + n <= max_cached_) {
          (n <= kSmallBlock ? small_[n / 64 - 1] : free_[n]).push_back(p);
          cached_ += n;
          return;
        }
      } catch (...) {  // bad_alloc growing the free list: free the block instead
      }
    }
    std::free(p);
  }

  void release() noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    for (auto& blocks : small_) {
      for (void* p : blocks) std::free(p);
      blocks.clear();
    }
    cached_ = 0;
  }

 private:
  static constexpr std::size_t kMaxBlock = std::size_t(64) << 20;
  static constexpr std::size_t kMaxCached = std::size_t(2) << 30;
  static constexpr std::size_t kSmallBlock = 4096;  // up to here sizes are multiples of 64: one list each

  static std::size_t rounded(std::size_t nbytes) {
    std::size_t n = std::max<std::size_t>(nbytes, 1);
    if (n <= 4096) return (n + 63) / 64 * 64;
    std::size_t top = std::size_t(1) << (63 - __builtin_clzll(n));
    std::size_t step = top / 8;
    return (n + step - 1) / step * step;
  }

  bool enabled_ = true;
  std::mutex mu_;
  std::vector<void*> small_[kSmallBlock / 64];  // small_[n / 64 - 1]: free blocks of n bytes
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_ = 0;
  std::size_t max_cached_ = kMaxCached;
};

// --- the threading threshold (loops.hpp) ------------------------------------------------------
std::int64_t parallel_min_from_env() {
  const char* env = ::dezero::detail::env_value("DEZERO_PARALLEL_MIN");
  if (env && *env) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end && *end == '\0' && v >= 0) return v;
    std::fprintf(stderr, "dezero: DEZERO_PARALLEL_MIN='%s' is not a number of elements (an integer >= 0); using %lld\n",
                 env, 1LL << 15);
  }
  return std::int64_t(1) << 15;
}

// --- the memory primitives ------------------------------------------------------------------
HostBlockCache* make_host_block_cache() { return new HostBlockCache; }

// Blocks of at most 4 KB (a small network's tensors: W3's largest is 100 x 10 floats) come
// from the small-object pool's per-thread caches, 64-byte aligned, without the cache's lock.
namespace {
std::size_t pooled_size(std::size_t nbytes) {
  static const bool pooled = small_pool_enabled();
  if (!pooled || nbytes > kSmallPoolMax) return 0;
  return (std::max<std::size_t>(nbytes, 1) + 63) / 64 * 64;
}
}  // namespace
void* allocate(HostBlockCache& cache, std::size_t nbytes) {
  if (std::size_t n = pooled_size(nbytes)) return small_alloc(n);
  return cache.get(nbytes);
}
void deallocate(HostBlockCache& cache, void* ptr, std::size_t nbytes) noexcept {
  if (std::size_t n = pooled_size(nbytes)) return small_free(ptr, n);
  cache.put(ptr, nbytes);
}

void copy_from_host(void* dst, const void* host_src, std::size_t nbytes) { std::memcpy(dst, host_src, nbytes); }
void copy_to_host(void* host_dst, const void* src, std::size_t nbytes) { std::memcpy(host_dst, src, nbytes); }
void copy(void* dst, const void* src, std::size_t nbytes) {
  if (dst != src) std::memmove(dst, src, nbytes);
}

void fill(DType dt, void* dst, std::int64_t n, double value) {
  if (is_half(dt)) return fill_half(dt, dst, n, value);  // half.cpp
  DEZERO_DISPATCH(dt, T, {
    T* p = static_cast<T*>(dst);
    T v = static_cast<T>(value);
    par_for(n, n, [&](std::int64_t i) { p[i] = v; });
  })
}

}  // namespace dezero::detail::cpu
