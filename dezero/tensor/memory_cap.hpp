// dezero/tensor/memory_cap.hpp - a cap on the memory one call may take on this thread, checked
// before each tensor is allocated (internal; the ONNX importer runs a file's graph under one, so
// that what a small hostile file asks for is refused, whatever op asks).
//
// While a MemoryCap lives, the tensors this thread makes may hold at most `limit` bytes more
// than this thread's tensors held when it began (what the thread allocated less what it freed,
// Storage's per-thread counters). An allocation past that is a ValueError, with the message
// `describe(asked, held)` makes, thrown before anything is allocated. Host blocks small enough
// to live inside their Storage (16 bytes) are not checked. Caps nest: the innermost applies.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace dezero::detail {

class MemoryCap {
 public:
  using Describe = std::function<std::string(std::int64_t asked, std::int64_t held)>;
  MemoryCap(std::int64_t limit, Describe describe);
  ~MemoryCap();
  MemoryCap(const MemoryCap&) = delete;
  MemoryCap& operator=(const MemoryCap&) = delete;

  // Called by Storage before a block of `nbytes` is allocated on this thread.
  static void check(std::size_t nbytes);

 private:
  std::int64_t limit_, start_;
  Describe describe_;
  MemoryCap* prev_;
};

}  // namespace dezero::detail
