// dezero/cpu/random.cpp - the host backend's random fills: samples drawn one by one,
// in order, from the generator the caller names (the process-wide one behind
// dezero::random, or a random::Generator's; backend/generator.hpp: NumPy's legacy
// MT19937 stream, so that a seed gives the book's NumPy values), under its lock. Serial on purpose: the stream's order
// is the result. Not the GPU's generator (cuRAND, seeded from this stream).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "dezero/backend/dispatch.hpp"
#include "dezero/backend/generator.hpp"
#include "dezero/cpu/kernels.hpp"

namespace dezero::detail::cpu {

// --- the random primitives -------------------------------------------------------------------
void random_uniform(Generator& g, DType dt, void* dst, std::int64_t n) {
  std::lock_guard<std::mutex> lock(g.mutex());
  DEZERO_DISPATCH(dt, T, {
    T* p = static_cast<T*>(dst);
    if constexpr (std::is_same_v<T, float>) {
      // a double in [0, 1) within 2^-25 of 1 rounds to 1.0f: keep float32 draws in [0, 1) too
      const float below_one = std::nextafter(1.0f, 0.0f);
      for (std::int64_t i = 0; i < n; ++i) p[i] = std::min(static_cast<float>(g.uniform()), below_one);
    } else {
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(g.uniform());
    }
  })
}

void random_normal(Generator& g, DType dt, void* dst, std::int64_t n) {
  std::lock_guard<std::mutex> lock(g.mutex());
  DEZERO_DISPATCH(dt, T, {
    T* p = static_cast<T*>(dst);
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(g.gauss());
  })
}

}  // namespace dezero::detail::cpu
