// dezero/cpu/onednn_engine.hpp - what the host's oneDNN files share (onednn_conv.cpp,
// onednn_matmul.cpp; only they include it, since only they see oneDNN's headers): the
// process's CPU engine and a growing, 64-byte aligned per-thread buffer.
#pragma once

#include <dnnl.hpp>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace dezero::detail::cpu {

// The CPU engine, made on first use; null where oneDNN cannot make one. Never destroyed
// (products may run from static destructors).
dnnl::engine* onednn_engine();

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

}  // namespace dezero::detail::cpu
