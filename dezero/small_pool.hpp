/// \file
/// The small-object pool (internal to the library; declared here because the templates of
/// core.hpp allocate graph blocks from it).
#pragma once

#include <cstddef>

namespace dezero {
/// \cond INTERNAL
namespace detail {
// small_pool.cpp: a graph's Function blocks and nodes, every Storage object and host
// tensor data of at most 4 KB come from it. Requests of at most kSmallPoolMax bytes are
// pooled (8-byte aligned; 64-byte aligned when n is a multiple of 64 above 512), larger
// ones go to operator new. small_free must get the n given to small_alloc.
inline constexpr std::size_t kSmallPoolMax = 4096;
void* small_alloc(std::size_t n);
void small_free(void* p, std::size_t n) noexcept;
// What the pool holds: the 2 MB segments mapped, the 64 KB pages of objects in use, the
// empty pages kept for reuse (their memory is returned to the system past 16 MB).
struct SmallPoolStats {
  bool enabled = false;  // false under AddressSanitizer or DEZERO_SMALL_POOL=0
  std::size_t mapped_bytes = 0, page_bytes_in_use = 0, empty_page_bytes_kept = 0;
};
SmallPoolStats small_pool_stats();
// Whether requests are pooled (fixed before the first allocation).
bool small_pool_enabled();
// Gives this thread's cached objects back to their pages (tests; a thread does it when it ends).
void small_pool_flush_thread_cache() noexcept;
}  // namespace detail
/// \endcond
}  // namespace dezero
