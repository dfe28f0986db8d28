/// \file
/// CuPy's memoize and clear_memo: a function's results cached
/// per argument list (and per device when asked). Pure host code: works without CUDA.
/// `cuda/rtc.hpp`'s elementwise(), reduce() and raw() memoize their kernel objects, so
/// clear_memo() drops those too.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

namespace dezero::cuda {

// --- memoize / clear_memo ------------------------------------------------------------
/// \cond INTERNAL
namespace detail {
void register_memo(std::function<void()> clear);
int memo_device_id();  // the current CUDA device, or -1
template <class F>
struct fn_traits : fn_traits<decltype(&F::operator())> {};
template <class C, class R, class... A>
struct fn_traits<R (C::*)(A...) const> {
  using result = R;
  using key = std::tuple<int, std::decay_t<A>...>;
};
template <class C, class R, class... A>
struct fn_traits<R (C::*)(A...)> : fn_traits<R (C::*)(A...) const> {};
template <class R, class... A>
struct fn_traits<R (*)(A...)> {
  using result = R;
  using key = std::tuple<int, std::decay_t<A>...>;
};
}  // namespace detail
/// \endcond

/// cupy.memoize: wraps f (a lambda or function with ordered, copyable arguments) so that
/// each distinct argument list (and device, when for_each_device) is computed once.
/// clear_memo() empties every memo made this way.
///
/// The result is a callable taking f's arguments and returning f's result (a copy of the
/// cached value) and is thread-safe. The arguments are kept, decayed, as the key of a
/// std::map, so they must be copyable and ordered (`operator<`). Works without a GPU
/// (for_each_device then makes no difference).
///
/// ```cpp
///   auto square = cuda::memoize([](int n) { return n * n; });
///   square(3);            // computes 9
///   square(3);            // 9 from the cache
///   cuda::clear_memo();   // forgets it
/// ```
template <class F>
auto memoize(F f, bool for_each_device = false) {
  using Traits = detail::fn_traits<F>;
  using Key = typename Traits::key;
  using R = typename Traits::result;
  struct Cache {
    std::recursive_mutex mu;
    std::map<Key, R> values;
  };
  auto cache = std::make_shared<Cache>();
  std::weak_ptr<Cache> weak = cache;
  detail::register_memo([weak] {
    if (auto c = weak.lock()) {
      std::lock_guard<std::recursive_mutex> lock(c->mu);
      c->values.clear();
    }
  });
  return [f = std::move(f), cache, for_each_device](const auto&... args) -> R {
    Key key(for_each_device ? detail::memo_device_id() : -1, args...);
    std::lock_guard<std::recursive_mutex> lock(cache->mu);
    auto it = cache->values.find(key);
    if (it != cache->values.end()) return it->second;
    R value = f(args...);
    cache->values.emplace(std::move(key), value);
    return value;
  };
}
/// Empties every memo made by memoize() (CuPy's clear_memo), including the kernel caches of
/// elementwise(), reduce() and raw(). Thread-safe; works without a GPU.
void clear_memo();

}  // namespace dezero::cuda
