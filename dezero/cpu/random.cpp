// dezero/cpu/random.cpp - the host backend's random fills: samples drawn one by one,
// in order, from the generator the caller names (the process-wide one behind
// dezero::random, or a random::Generator's; backend/generator.hpp: NumPy's legacy
// MT19937 stream, so that a seed gives the book's NumPy values), under its lock. Serial on purpose: the stream's order
// is the result. Not the GPU's generator (cuRAND, seeded from this stream).
#include <cstdint>
#include <mutex>

#include "dezero/backend/dispatch.hpp"
#include "dezero/backend/generator.hpp"
#include "dezero/cpu/kernels.hpp"

namespace dezero::detail::cpu {

// --- the random primitives -------------------------------------------------------------------
void random_uniform(Generator& g, DType dt, void* dst, std::int64_t n) {
  std::lock_guard<std::mutex> lock(g.mutex());
  DEZERO_DISPATCH(dt, T, {
    T* p = static_cast<T*>(dst);
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(g.uniform());
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
