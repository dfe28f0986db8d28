// dezero/cuda/host.cpp - the parts of dezero::cuda that need no GPU and are the same
// with and without the CUDA backend: get_device_from_array / get_device (on top of
// each build's get_device_from_id), the cuDNN workspace limit and the TF32 switch, and the registry of
// memoised functions (cuda::memoize) that clear_memo() empties. memo_device_id()
// lives with each build (device.cpp, stub.cpp).
#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

#include "dezero/cuda/device.hpp"
#include "dezero/cuda/memoize.hpp"
#include "dezero/cuda/memory_pool.hpp"

namespace dezero::cuda {

namespace {
std::atomic<std::size_t> g_workspace{8u * 1024u * 1024u};
std::atomic<bool> g_allow_tf32{false};
std::mutex g_memo_mu;
std::vector<std::function<void()>>& memo_clearers() {
  static auto* v = new std::vector<std::function<void()>>();  // leaked on purpose: used at exit
  return *v;
}
}  // namespace

// --- get_device_from_array, get_device (cuda/device.hpp) ---------------------------------
Device get_device_from_array(const Tensor& x) {
  if (x.defined() && x.device().is_cuda()) return Device(x.device().index());
  return Device::cpu();
}
Device get_device(int id) { return get_device_from_id(id); }
Device get_device(const dezero::Device& d) { return d.is_cpu() ? Device::cpu() : get_device_from_id(d.index()); }
Device get_device(const Tensor& x) { return get_device_from_array(x); }

// --- the cuDNN workspace limit and the TF32 switch (cuda/memory_pool.hpp) ----------------
void set_max_workspace_size(std::size_t bytes) { g_workspace = bytes; }
std::size_t get_max_workspace_size() { return g_workspace; }
void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool get_allow_tf32() { return g_allow_tf32; }

// --- the memo registry (cuda/memoize.hpp) ------------------------------------------------
void detail::register_memo(std::function<void()> clear) {
  std::lock_guard<std::mutex> lock(g_memo_mu);
  memo_clearers().push_back(std::move(clear));
}

void clear_memo() {
  std::vector<std::function<void()>> v;
  {
    std::lock_guard<std::mutex> lock(g_memo_mu);
    v = memo_clearers();
  }
  for (auto& f : v) f();
}

}  // namespace dezero::cuda
