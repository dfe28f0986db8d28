// dezero/cpu/parallel.hpp - the host backend's threads: how many a loop may use, and the pool
// that runs a loop's pieces on them (parallel.cpp).
//
// Why a pool of our own and not OpenMP's: on a machine whose cores other programs also want,
// an OpenMP `parallel for schedule(static)` waits at its end for the thread the OS has
// descheduled (a time slice, milliseconds), while the other threads spin at the barrier and
// take the cores that thread needs; libgomp spins for 300,000 rounds before it sleeps. Here:
//   - a loop is cut into a fixed number of pieces (a function of its size and the thread
//     count only, so the results are the same bits run after run); each thread runs its own
//     share of them, then takes the pieces that another thread has not started: a
//     descheduled worker holds up nobody unless it is in the middle of a piece;
//   - a waiting thread spins a few microseconds, then sleeps on a futex, so the cores go to
//     whoever has work (the caller spins about as long as one of its own pieces took);
//   - the thread count is the CPUs this process may use: the affinity mask, and the cgroup's
//     CPU quota when there is one (a container with `--cpus 1.5` on a 64-core host gets 2
//     threads, not 64). OMP_NUM_THREADS and omp_set_num_threads() still set it, as before.
// One loop runs in the pool at a time; a second thread that starts a loop meanwhile runs it
// on itself (as each of several serving threads does). Loops inside a loop run on the thread
// that reaches them. Small loops never enter the pool (loops.hpp's kParallelMin).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "dezero/backend/isa_namespace.hpp"

namespace dezero::detail::cpu {

// ============ compiled once (parallel.cpp) ================================================

// The threads a loop started now may use (>= 1; 1 inside a loop): OMP_NUM_THREADS or
// omp_set_num_threads() when given, else the CPUs of the affinity mask, at most the
// cgroup's quota rounded up.
int max_threads();
// Where max_threads() comes from, for cpu_info(): "OMP_NUM_THREADS=2", "affinity mask (2 CPUs)",
// "cgroup quota (1.50 CPUs of 64)", ...
std::string threads_source();
// True inside a loop of the pool (on any of its threads) or inside an OpenMP parallel region.
bool in_parallel();
// The CPU quota of the cgroup that `proc_cgroup` (/proc/self/cgroup) names, the smallest along its
// parents, read under `root` (/sys/fs/cgroup; v2's cpu.max or v1's cpu/cpu.cfs_quota_us), in CPUs;
// 0 when there is none.
double cgroup_quota_cpus(const std::string& proc_cgroup, const std::string& root);

// fn(ctx, i) once for every i in [0, n), on the calling thread and up to threads - 1 workers,
// which claim the indexes in order, one at a time; returns when all are done. threads <= 1,
// n <= 1, inside a loop, or while another thread's loop has the pool: all on the calling
// thread, in order. An exception from fn is rethrown here (the first one), after the rest
// of the indexes have run.
void run_parallel(std::int64_t n, int threads, void (*fn)(void*, std::int64_t), void* ctx);

// ============ the loops' front end: inline, in each level's namespace =========================
DEZERO_ISA_BEGIN

// body(i) for i in [0, n), each index a piece of the pool (run_parallel).
template <class Body>
inline void parallel_items(std::int64_t n, int threads, Body&& body) {
  using B = std::remove_reference_t<Body>;
  run_parallel(
      n, threads, [](void* ctx, std::int64_t i) { (*static_cast<B*>(ctx))(i); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

// How many pieces a loop of n iterations is cut into on `threads` threads: two per thread (a
// descheduled worker then delays the loop by at most half its share: the others steal the piece
// it has not started), never more than n. Four per thread measured 5-15% slower on the 10^5-element
// loops of a training step (each piece pays a call and a loop prologue); two cost nothing there.
inline std::int64_t pieces_for(std::int64_t n, int threads) {
  const std::int64_t p = std::int64_t(threads) * 2;
  return n < p ? n : p;
}

// body(lo, hi) over consecutive ranges that cover [0, n): `pieces_for` of them, in the pool.
template <class Body>
inline void parallel_ranges(std::int64_t n, int threads, Body&& body) {
  const std::int64_t pieces = pieces_for(n, threads);
  if (pieces <= 1) {
    if (n > 0) body(std::int64_t(0), n);
    return;
  }
  parallel_items(pieces, threads, [&](std::int64_t p) { body(n * p / pieces, n * (p + 1) / pieces); });
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
