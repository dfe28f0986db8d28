// dezero/cpu/onednn_engine.hpp - what the host's oneDNN files share (onednn_conv.cpp,
// onednn_matmul.cpp; only they include it, since only they see oneDNN's headers): the
// process's CPU engine, a growing, 64-byte aligned per-thread buffer, and the cache of
// primitives ("plans") keyed by a product's integers.
#pragma once

#include <dnnl.hpp>
#include <omp.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

namespace dezero::detail::cpu {

// The CPU engine, made on first use; null where oneDNN cannot make one. Never destroyed
// (products may run from static destructors).
dnnl::engine* onednn_engine();

// omp_set_num_threads(1) for a scope, on the calling thread: a primitive made and run inside it
// runs on that thread alone, without entering OpenMP (its plan is keyed by the thread count). The
// library runs oneDNN's products in the pieces of its own pool this way (onednn_conv.cpp,
// onednn_matmul.cpp), so that libgomp's threads, which spin for milliseconds after each primitive,
// do not take the cores the pool's threads need.
struct OneOmpThread {
  int saved = omp_get_max_threads();
  OneOmpThread() { omp_set_num_threads(1); }
  ~OneOmpThread() { omp_set_num_threads(saved); }
  OneOmpThread(const OneOmpThread&) = delete;
  OneOmpThread& operator=(const OneOmpThread&) = delete;
};

// A buffer that grows to the largest size asked of it (reorder targets, scratchpads).
struct OnednnBuffer {
  std::unique_ptr<void, void (*)(void*)> p{nullptr, std::free};
  std::size_t size = 0;
  void* get(std::size_t bytes) {
    if (bytes > size) {
      std::size_t rounded = (bytes + 63) / 64 * 64;
      p.reset(std::aligned_alloc(64, rounded));
      if (!p) throw std::bad_alloc();
      size = rounded;
    }
    return p.get();
  }
};

// N integers that say which primitive a call needs (the geometry, the options, the thread
// count: a primitive splits its work for the threads there were when it was made).
template <std::size_t N>
struct OnednnKey {
  std::int64_t v[N];
  bool operator==(const OnednnKey& o) const { return std::memcmp(v, o.v, sizeof v) == 0; }
  struct Hash {
    std::size_t operator()(const OnednnKey& k) const {
      std::size_t h = 1469598103934665603ULL;  // FNV-1a over the integers
      for (std::int64_t x : k.v) h = (h ^ static_cast<std::size_t>(x)) * 1099511628211ULL;
      return h;
    }
  };
};

// The plan for `key`, made by make(key) once and shared by all threads (a mutex around
// the map; plans are immutable once made). The map is cleared when it grows past 512
// (a program feeding ever new shapes); plans in use stay alive through their shared_ptr.
// One cache per (Key, Plan, Make), so each file's call site has its own.
template <class Plan, class Key, class Make>
std::shared_ptr<const Plan> onednn_plan(const Key& key, Make make) {
  static std::mutex mu;
  static auto* plans = new std::unordered_map<Key, std::shared_ptr<const Plan>, typename Key::Hash>();
  constexpr std::size_t kMaxPlans = 512;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans->find(key);
    if (it != plans->end()) return it->second;
  }
  std::shared_ptr<const Plan> plan = make(key);  // outside the lock: making primitives takes a while
  std::lock_guard<std::mutex> lock(mu);
  if (plans->size() >= kMaxPlans) plans->clear();
  return plans->emplace(key, plan).first->second;  // another thread's, if it was first
}

}  // namespace dezero::detail::cpu
