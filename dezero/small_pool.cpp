// dezero/small_pool.cpp - the small-object pool: where a graph's nodes, Functions, tensor
// Storage objects and small host tensor data live (issue 24). Host data blocks above 4 KB
// go to the host backend's own cache (cpu/memory.cpp).
//
// A recorded op makes two objects of a few hundred bytes (the Function block with its
// output node, bench/op_profile.cpp, and the Storage of its output) and a backward pass
// frees them again. Through malloc each costs a call, a 16-byte header, and, for a long
// graph, a fresh 4 KB page fault every twenty nodes. Here:
//
//   size classes  8-byte steps up to 256 bytes, 16-byte steps up to 512, 64-byte steps up
//                 to 4 KB (kSmallPoolMax; these are 64-byte aligned, for tensor data);
//                 larger requests go to operator new.
//   pages         64 KB, each of one size class at a time; a 64-byte header at its
//                 start (free list, bump pointer, count of objects out) and objects
//                 after it, so an object's page is its address rounded down.
//   segments      2 MB mappings, aligned to 2 MB and advised MADV_HUGEPAGE: a long
//                 graph takes one page fault per 2 MB instead of one per 4 KB.
//   thread cache  per thread and class, a free list of objects (no lock, no atomic).
//                 An empty list takes a batch from the class's pages under the class's
//                 mutex; a full one gives half back. An object may be freed by another
//                 thread than the one that made it: it goes to the freeing thread's
//                 cache. A thread's cache is given back when the thread ends.
//   returning     a page whose objects are all back is empty and may serve any class
//                 again. Past kMaxEmptyPages (16 MB) empty pages, their memory goes back
//                 to the system (madvise MADV_DONTNEED; the address range is kept for
//                 reuse). So what a freed graph held returns to the system, except the
//                 16 MB cache and what the thread caches hold (at most kBinBytes (64 KB) per
//                 class and thread). Pages are returned 64 at a time, in runs of adjacent
//                 pages (release_some).
//
// AddressSanitizer builds and DEZERO_SMALL_POOL=0 send every request to operator new,
// so that overflows and use-after-free are caught (the decision is made once, before
// the first allocation).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "dezero/env.hpp"
#include "dezero/small_pool.hpp"
#include "dezero/thread_state.hpp"

namespace dezero::detail {

namespace {

constexpr std::size_t kPageBytes = std::size_t(64) << 10;
constexpr std::size_t kSegmentBytes = std::size_t(2) << 20;
constexpr std::size_t kHeaderBytes = 64;
constexpr int kClasses = 32 + 16 + 56;            // 8..256 by 8, 272..512 by 16, 576..4096 by 64
constexpr std::size_t kBatchBytes = 16 << 10;     // moved between a thread cache and the pages at once
constexpr std::size_t kBinBytes = 4 * kBatchBytes;  // a thread cache's bin gives back half past this
constexpr std::size_t kMaxEmptyPages = 256;       // 16 MB of empty pages kept before returning memory
constexpr std::size_t kReleaseBatch = 64;         // pages whose memory is returned at once (4 MB)

int class_of(std::size_t n) {
  if (n <= 256) return static_cast<int>((n + 7) / 8) - 1 + (n == 0);
  if (n <= 512) return 32 + static_cast<int>((n - 256 + 15) / 16) - 1;
  return 48 + static_cast<int>((n - 512 + 63) / 64) - 1;
}
std::size_t class_size(int c) {
  if (c < 32) return std::size_t(c + 1) * 8;
  if (c < 48) return 256 + std::size_t(c - 31) * 16;
  return 512 + std::size_t(c - 47) * 64;
}
std::uint32_t batch_of(int c) {
  std::size_t b = kBatchBytes / class_size(c);
  return static_cast<std::uint32_t>(b < 8 ? 8 : b);
}

// --- pages -------------------------------------------------------------------------------------
struct Page {
  void* free = nullptr;     // objects given back to this page
  char* bump = nullptr;     // the next object never handed out
  char* end = nullptr;      // the end of the object area
  Page* next = nullptr;     // in its class's list of pages with room, or in an empty-page stack
  Page* prev = nullptr;
  std::uint32_t cls = 0;
  std::uint32_t used = 0;   // objects out: in thread caches or in use
  bool listed = false;      // in its class's list of pages with room
};
static_assert(sizeof(Page) <= kHeaderBytes, "the page header must fit before the first object");

Page* page_of(void* p) {
  return reinterpret_cast<Page*>(reinterpret_cast<std::uintptr_t>(p) & ~(static_cast<std::uintptr_t>(kPageBytes) - 1));
}

struct ClassState {
  std::mutex mu;
  Page* with_room = nullptr;  // pages of this class with a free object or bump room
};

// Pages come from 2 MB segments; empty pages go to a stack, and past kMaxEmptyPages their
// memory is returned to the system (they stay mapped, and fault in zero pages on reuse).
class PageSource {
 public:
  Page* take() {
    std::lock_guard<std::mutex> lock(mu_);
    Page* p = nullptr;
    if (committed_) {
      p = committed_;
      committed_ = p->next;
      --n_committed_;
    } else if (!returned_.empty()) {
      p = static_cast<Page*>(returned_.back());
      returned_.pop_back();
    } else {
      if (next_in_segment_ == segment_end_) new_segment();
      p = reinterpret_cast<Page*>(next_in_segment_);
      next_in_segment_ += kPageBytes;
    }
    ++pages_in_use_;
    return p;
  }
  void give_back(Page* p) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    --pages_in_use_;
    p->next = committed_;
    committed_ = p;
    if (++n_committed_ >= kMaxEmptyPages + kReleaseBatch) release_some();
  }
  SmallPoolStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    SmallPoolStats s;
    s.mapped_bytes = segments_ * kSegmentBytes;
    s.page_bytes_in_use = pages_in_use_ * kPageBytes;
    s.empty_page_bytes_kept = n_committed_ * kPageBytes;
    return s;
  }

 private:
  void new_segment() {
    // Map twice the size and keep the 2 MB-aligned middle, so that the kernel can back it
    // with one huge page.
    const std::size_t len = 2 * kSegmentBytes;
    void* raw = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (a + kSegmentBytes - 1) & ~(static_cast<std::uintptr_t>(kSegmentBytes) - 1);
    if (aligned > a) munmap(raw, aligned - a);
    const std::uintptr_t tail = aligned + kSegmentBytes, stop = a + len;
    if (stop > tail) munmap(reinterpret_cast<void*>(tail), stop - tail);
#ifdef MADV_HUGEPAGE
    madvise(reinterpret_cast<void*>(aligned), kSegmentBytes, MADV_HUGEPAGE);
#endif
    next_in_segment_ = reinterpret_cast<char*>(aligned);
    segment_end_ = next_in_segment_ + kSegmentBytes;
    ++segments_;
  }

  // Returns the memory of the kReleaseBatch most recently emptied pages to the system, in
  // runs of adjacent pages (a freed graph empties its pages in address order, so the runs
  // are long: few madvise calls, and whole 2 MB huge pages are dropped without being split).
  // Their addresses are kept apart from the pages, which are not touched again until reuse.
  void release_some() noexcept {
    Page* batch[kReleaseBatch];
    for (std::size_t i = 0; i < kReleaseBatch; ++i) {
      batch[i] = committed_;
      committed_ = committed_->next;
    }
    try {
      returned_.reserve(returned_.size() + kReleaseBatch);
    } catch (...) {  // no room to remember them: keep them resident
      for (std::size_t i = kReleaseBatch; i-- > 0;) {
        batch[i]->next = committed_;
        committed_ = batch[i];
      }
      return;
    }
    n_committed_ -= kReleaseBatch;
    std::sort(batch, batch + kReleaseBatch);
    for (std::size_t i = 0; i < kReleaseBatch;) {
      std::size_t j = i + 1;
      while (j < kReleaseBatch && reinterpret_cast<char*>(batch[j]) == reinterpret_cast<char*>(batch[j - 1]) + kPageBytes)
        ++j;
      madvise(batch[i], (j - i) * kPageBytes, MADV_DONTNEED);
      for (std::size_t k = i; k < j; ++k) returned_.push_back(batch[k]);
      i = j;
    }
  }

  std::mutex mu_;
  Page* committed_ = nullptr;   // empty pages whose memory is still resident
  std::vector<void*> returned_;  // empty pages whose memory went back to the system
  std::size_t n_committed_ = 0, pages_in_use_ = 0, segments_ = 0;
  char* next_in_segment_ = nullptr;
  char* segment_end_ = nullptr;
};

// The process-wide state, never destroyed: objects are freed until the process ends.
struct Global {
  ClassState classes[kClasses];
  PageSource pages;
};
Global& global() {
  static Global* g = new Global;
  return *g;
}

bool pool_enabled() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool on = [] {
    const char* env = ::dezero::detail::env_value("DEZERO_SMALL_POOL");
    return !(env && std::string(env) == "0");
  }();
  return on;
#endif
}

// --- a class's pages (under its mutex) -----------------------------------------------------
void list_page(ClassState& cs, Page* p) {
  p->listed = true;
  p->prev = nullptr;
  p->next = cs.with_room;
  if (cs.with_room) cs.with_room->prev = p;
  cs.with_room = p;
}
void unlist_page(ClassState& cs, Page* p) {
  if (p->prev) p->prev->next = p->next;
  else cs.with_room = p->next;
  if (p->next) p->next->prev = p->prev;
  p->listed = false;
  p->next = p->prev = nullptr;
}

// Up to `want` objects of class c, linked through their first word; returns the count.
std::uint32_t take_batch(int c, std::uint32_t want, void** head) {
  Global& g = global();
  ClassState& cs = g.classes[c];
  const std::size_t size = class_size(c);
  std::uint32_t got = 0;
  void* list = nullptr;
  std::lock_guard<std::mutex> lock(cs.mu);
  while (got < want) {
    Page* p = cs.with_room;
    if (!p) {
      p = g.pages.take();
      p->free = nullptr;
      p->bump = reinterpret_cast<char*>(p) + kHeaderBytes;
      p->end = reinterpret_cast<char*>(p) + kPageBytes;
      p->cls = static_cast<std::uint32_t>(c);
      p->used = 0;
      list_page(cs, p);
    }
    while (got < want && p->free) {
      void* o = p->free;
      p->free = *static_cast<void**>(o);
      *static_cast<void**>(o) = list;
      list = o;
      ++got;
      ++p->used;
    }
    while (got < want && p->bump + size <= p->end) {
      void* o = p->bump;
      p->bump += size;
      *static_cast<void**>(o) = list;
      list = o;
      ++got;
      ++p->used;
    }
    if (!p->free && p->bump + size > p->end) unlist_page(cs, p);
  }
  *head = list;
  return got;
}

// Gives `n` objects of class c (linked through their first word) back to their pages.
void give_batch(int c, void* head, std::uint32_t n) noexcept {
  Global& g = global();
  ClassState& cs = g.classes[c];
  std::lock_guard<std::mutex> lock(cs.mu);
  for (std::uint32_t i = 0; i < n && head; ++i) {
    void* o = head;
    head = *static_cast<void**>(o);
    Page* p = page_of(o);
    *static_cast<void**>(o) = p->free;
    p->free = o;
    if (--p->used == 0) {  // every object is back: the page may serve any class again
      if (p->listed) unlist_page(cs, p);
      g.pages.give_back(p);
    } else if (!p->listed) {
      list_page(cs, p);
    }
  }
}

// --- the thread cache ---------------------------------------------------------------------
struct Bin {
  void* head = nullptr;
  std::uint32_t count = 0;
};
// One per thread (thread_state.hpp): given back to the pages when the thread ends, after
// which the thread frees straight to the pages.
struct ThreadCache {
  Bin bins[kClasses];
  void flush() noexcept {
    for (int c = 0; c < kClasses; ++c) {
      if (bins[c].count) give_batch(c, bins[c].head, bins[c].count);
      bins[c] = Bin{};
    }
  }
  ~ThreadCache() { flush(); }
};
inline ThreadCache* thread_cache() { return ThreadState<ThreadCache>::get(); }

// Outside the pool (operator new), and the requests of a thread whose cache is gone.
[[gnu::noinline]] void* alloc_slow(std::size_t n) {
  if (n > kSmallPoolMax || !pool_enabled()) return ::operator new(n);
  void* head = nullptr;
  take_batch(class_of(n), 1, &head);
  return head;
}
[[gnu::noinline]] void free_slow(void* p, std::size_t n) noexcept {
  if (n > kSmallPoolMax || !pool_enabled()) {
    ::operator delete(p);
    return;
  }
  *static_cast<void**>(p) = nullptr;
  give_batch(class_of(n), p, 1);
}

[[gnu::noinline]] void* refill(ThreadCache* tc, int c) {
  Bin& b = tc->bins[c];
  void* head = nullptr;
  std::uint32_t n = take_batch(c, batch_of(c), &head);
  void* o = head;
  b.head = *static_cast<void**>(o);
  b.count = n - 1;
  return o;
}

[[gnu::noinline]] void spill(ThreadCache* tc, int c) noexcept {
  // Give back the older half of the bin (the most recently freed objects stay: they are warm).
  Bin& b = tc->bins[c];
  const std::uint32_t keep = b.count / 2;
  void* last_kept = b.head;
  for (std::uint32_t i = 1; i < keep; ++i) last_kept = *static_cast<void**>(last_kept);
  void* rest = *static_cast<void**>(last_kept);
  *static_cast<void**>(last_kept) = nullptr;
  give_batch(c, rest, b.count - keep);
  b.count = keep;
}

}  // namespace

void* small_alloc(std::size_t n) {
  if (n > kSmallPoolMax || !pool_enabled()) return alloc_slow(n);
  ThreadCache* tc = thread_cache();
  if (!tc) return alloc_slow(n);
  const int c = class_of(n);
  Bin& b = tc->bins[c];
  if (void* o = b.head) {
    b.head = *static_cast<void**>(o);
    --b.count;
    return o;
  }
  return refill(tc, c);
}

void small_free(void* p, std::size_t n) noexcept {
  if (!p) return;
  ThreadCache* tc = ThreadState<ThreadCache>::peek();
  if (n > kSmallPoolMax || !pool_enabled() || (!tc && !(tc = thread_cache()))) return free_slow(p, n);
  const int c = class_of(n);
  Bin& b = tc->bins[c];
  *static_cast<void**>(p) = b.head;
  b.head = p;
  if (++b.count * class_size(c) > kBinBytes) spill(tc, c);
}

bool small_pool_enabled() { return pool_enabled(); }

SmallPoolStats small_pool_stats() {
  if (!pool_enabled()) return SmallPoolStats{};
  SmallPoolStats s = global().pages.stats();
  s.enabled = true;
  return s;
}

void small_pool_flush_thread_cache() noexcept {
  if (ThreadCache* tc = ThreadState<ThreadCache>::peek()) tc->flush();
}

}  // namespace dezero::detail
