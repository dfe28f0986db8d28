// dezero/cpu/parallel.cpp - the host backend's thread pool and thread count (parallel.hpp says
// why it is ours and not OpenMP's).
//
// One job at a time: the caller publishes (fn, ctx, n) and a new epoch, wakes the workers that
// sleep, and claims pieces itself. A piece is claimed by a compare-and-swap on `next_`, which
// holds (epoch << 32 | next index): a claim succeeds only while the job it read is still the
// current one, so a worker that wakes late can never run a piece of a job that has ended, and
// the caller's stack (ctx) is only touched by pieces it waits for. The job has ended when
// `done_` reaches n; the caller spins for about twice its own mean piece time (at least 5 us,
// at most 100 us), then sleeps on `done_` until the last worker wakes it. A worker spins about
// 50 us for the next job (DEZERO_SPIN_US), the gap between two loops of a training step, then
// sleeps on `epoch_`. Sleeping is a futex: nothing is spent while the cores belong to others.
#include "dezero/cpu/parallel.hpp"

#include <linux/futex.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DEZERO_CPU_RELAX() _mm_pause()
#else
#define DEZERO_CPU_RELAX() ((void)0)
#endif

#include "dezero/env.hpp"

namespace dezero::detail::cpu {

namespace {

using Clock = std::chrono::steady_clock;

// --- futex: wait while *word == expected; wake up to n waiters ----------------------------------
void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<std::uint32_t>* word, int n) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0);
}

// --- how many CPUs this process may use ---------------------------------------------------------
int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// The CPU quota of this process's cgroup and its parents (the smallest), in CPUs; 0 when there is
// none. cgroup v2: cpu.max ("max 100000" or "150000 100000"); v1: cpu.cfs_quota_us (-1: none) over
// cpu.cfs_period_us.
double cgroup_quota_cpus() {
  std::ifstream f("/proc/self/cgroup");
  std::string line, v2_path, v1_path;
  while (std::getline(f, line)) {
    // hierarchy-id:controllers:path
    const auto a = line.find(':'), b = line.find(':', a == std::string::npos ? a : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && ctrl.empty()) v2_path = path;
    std::stringstream cs(ctrl);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == "cpu") v1_path = path;
  }
  double best = 0;
  auto take = [&](double q) {
    if (q > 0 && (best == 0 || q < best)) best = q;
  };
  auto walk = [&](std::string path, auto&& at) {
    for (;;) {
      at(path);
      if (path.empty() || path == "/") break;
      const auto s = path.find_last_of('/');
      path = s == 0 || s == std::string::npos ? "/" : path.substr(0, s);
    }
  };
  if (!v2_path.empty())
    walk(v2_path, [&](const std::string& p) {
      std::istringstream in(read_line("/sys/fs/cgroup" + (p == "/" ? std::string() : p) + "/cpu.max"));
      std::string quota;
      double period = 0;
      if (in >> quota >> period && quota != "max" && period > 0) take(std::atof(quota.c_str()) / period);
    });
  if (!v1_path.empty())
    for (const char* root : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"})
      walk(v1_path, [&](const std::string& p) {
        const std::string dir = std::string(root) + (p == "/" ? std::string() : p);
        const std::string q = read_line(dir + "/cpu.cfs_quota_us"), per = read_line(dir + "/cpu.cfs_period_us");
        if (!q.empty() && !per.empty() && std::atof(per.c_str()) > 0) take(std::atof(q.c_str()) / std::atof(per.c_str()));
      });
  return best;
}

struct ThreadDefaults {
  int omp_initial;       // omp_get_max_threads() before anyone changed it
  bool omp_env;          // OMP_NUM_THREADS is set
  int affinity;          // CPUs in the affinity mask
  double quota;          // cgroup CPU quota, 0 when none
  int quota_threads;     // ceil(quota), 0 when none
};

const ThreadDefaults& defaults() {
  static const ThreadDefaults d = [] {
    ThreadDefaults t;
    t.omp_initial = omp_get_max_threads();
    t.omp_env = env_value("OMP_NUM_THREADS") != nullptr;
    t.affinity = affinity_cpus();
    t.quota = cgroup_quota_cpus();
    t.quota_threads = t.quota > 0 ? std::max(1, static_cast<int>(std::ceil(t.quota - 1e-9))) : 0;
    return t;
  }();
  return d;
}

thread_local bool t_in_region = false;

std::int64_t spin_ns_from_env() {
  const char* v = env_value("DEZERO_SPIN_US");
  if (v) {
    char* end = nullptr;
    const double us = std::strtod(v, &end);
    if (end && *end == '\0' && us >= 0 && us <= 1e6) return static_cast<std::int64_t>(us * 1000);
    std::fprintf(stderr, "dezero: DEZERO_SPIN_US='%s' is not a number of microseconds (0 to 1e6); using 50\n", v);
  }
  return 50000;
}

// --- the pool ---------------------------------------------------------------------------------
class Pool {
 public:
  void run(std::int64_t n, int threads, void (*fn)(void*, std::int64_t), void* ctx) {
    std::unique_lock<std::mutex> lock(submit_, std::try_to_lock);
    if (!lock.owns_lock() || n > std::int64_t(UINT32_MAX / 2)) return run_here(n, fn, ctx);
    const int helpers = std::min<std::int64_t>(threads - 1, n - 1);
    grow(helpers);
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    count_.store(static_cast<std::uint32_t>(n), std::memory_order_relaxed);
    helpers_.store(helpers, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    const std::uint32_t e = epoch_.load(std::memory_order_relaxed) + 1;
    next_.store(std::uint64_t(e) << 32, std::memory_order_release);
    epoch_.store(e, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(&epoch_, INT_MAX);

    // The caller's share, timed: it spins for about as long as two of its pieces took.
    const auto t0 = Clock::now();
    const std::uint32_t mine = work(e);
    const std::int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    const std::int64_t spin = std::clamp<std::int64_t>(mine ? 2 * took / mine : 20000, 5000, 100000);
    const std::uint32_t total = static_cast<std::uint32_t>(n);
    if (done_.load(std::memory_order_acquire) != total) {
      const auto until = Clock::now() + std::chrono::nanoseconds(spin);
      for (int i = 0; done_.load(std::memory_order_acquire) != total; ++i) {
        if ((i & 7) == 7 && Clock::now() > until) break;
        DEZERO_CPU_RELAX();
      }
      std::uint32_t d;
      if ((d = done_.load(std::memory_order_seq_cst)) != total) {
        waiting_.store(1, std::memory_order_seq_cst);
        while ((d = done_.load(std::memory_order_seq_cst)) != total) futex_wait(&done_, d);
        waiting_.store(0, std::memory_order_relaxed);
      }
    }
    if (failed_.load(std::memory_order_acquire)) {
      std::exception_ptr ex;
      {
        std::lock_guard<std::mutex> g(error_mu_);
        std::swap(ex, error_);
      }
      std::rethrow_exception(ex);
    }
  }

  static void run_here(std::int64_t n, void (*fn)(void*, std::int64_t), void* ctx) {
    for (std::int64_t i = 0; i < n; ++i) fn(ctx, i);
  }

 private:
  // Claims and runs pieces of job e until none is left; returns how many it ran.
  std::uint32_t work(std::uint32_t e) {
    const bool outer = t_in_region;
    t_in_region = true;
    auto* fn = fn_.load(std::memory_order_relaxed);
    void* ctx = ctx_.load(std::memory_order_relaxed);
    const std::uint32_t n = count_.load(std::memory_order_relaxed);
    std::uint32_t ran = 0;
    for (;;) {
      std::uint64_t cur = next_.load(std::memory_order_acquire);
      if ((cur >> 32) != e || static_cast<std::uint32_t>(cur) >= n) break;
      if (!next_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) continue;
      try {
        fn(ctx, static_cast<std::int64_t>(static_cast<std::uint32_t>(cur)));
      } catch (...) {
        std::lock_guard<std::mutex> g(error_mu_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_release);
      }
      ++ran;
      if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == n && waiting_.load(std::memory_order_seq_cst))
        futex_wake(&done_, 1);
    }
    t_in_region = outer;
    return ran;
  }

  void worker(int id) {
    std::uint32_t seen = epoch_.load(std::memory_order_acquire);
    for (;;) {
      std::uint32_t e;
      const auto until = Clock::now() + std::chrono::nanoseconds(spin_ns_);
      for (int i = 0; (e = epoch_.load(std::memory_order_acquire)) == seen; ++i) {
        if ((i & 7) == 7 && Clock::now() > until) {
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          while ((e = epoch_.load(std::memory_order_seq_cst)) == seen) futex_wait(&epoch_, seen);
          sleepers_.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
        DEZERO_CPU_RELAX();
      }
      seen = e;
      if (id < helpers_.load(std::memory_order_relaxed)) work(e);
    }
  }

  // Starts workers until there are `want` (they live as long as the process).
  void grow(int want) {
    while (static_cast<int>(started_) < want) {
      const int id = static_cast<int>(started_);
      std::thread t([this, id] {
        pthread_setname_np(pthread_self(), "dezero-worker");
        worker(id);
      });
      t.detach();
      ++started_;
    }
  }

  // Read by the workers of a job: fn, ctx, count, helpers. next_: (epoch << 32) | next index.
  std::atomic<void (*)(void*, std::int64_t)> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<std::uint32_t> count_{0};
  std::atomic<int> helpers_{0};
  std::atomic<std::uint64_t> next_{0};
  alignas(64) std::atomic<std::uint32_t> epoch_{0};   // futex word of the sleeping workers
  std::atomic<int> sleepers_{0};
  alignas(64) std::atomic<std::uint32_t> done_{0};    // futex word of the waiting caller
  std::atomic<int> waiting_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
  std::mutex submit_;
  std::size_t started_ = 0;  // under submit_
  const std::int64_t spin_ns_ = spin_ns_from_env();
};

// The process's pool, made on first use and never destroyed (loops may run from static
// destructors). A child of fork() has none of the parent's workers: it makes a new pool.
std::atomic<Pool*> g_pool{nullptr};
std::once_flag g_atfork_once;

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return *p;
  std::call_once(g_atfork_once, [] {
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_relaxed); });
  });
  Pool* fresh = new Pool;
  if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *p;
}

}  // namespace

int max_threads() {
  if (in_parallel()) return 1;
  const ThreadDefaults& d = defaults();
  const int omp = omp_get_max_threads();
  // The cgroup quota caps the default only: OMP_NUM_THREADS or omp_set_num_threads() win.
  if (!d.omp_env && omp == d.omp_initial && d.quota_threads > 0) return std::max(1, std::min(omp, d.quota_threads));
  return std::max(1, omp);
}

std::string threads_source() {
  const ThreadDefaults& d = defaults();
  const int omp = omp_get_max_threads();
  char buf[160];
  if (d.omp_env && omp == d.omp_initial)
    std::snprintf(buf, sizeof buf, "OMP_NUM_THREADS=%s", env_value("OMP_NUM_THREADS"));
  else if (omp != d.omp_initial)
    std::snprintf(buf, sizeof buf, "omp_set_num_threads(%d)", omp);
  else if (d.quota_threads > 0 && d.quota_threads < omp)
    std::snprintf(buf, sizeof buf, "cgroup CPU quota (%.2f CPUs; affinity mask %d)", d.quota, d.affinity);
  else
    std::snprintf(buf, sizeof buf, "affinity mask (%d CPUs)", d.affinity);
  return buf;
}

bool in_parallel() { return t_in_region || omp_in_parallel(); }

void run_parallel(std::int64_t n, int threads, void (*fn)(void*, std::int64_t), void* ctx) {
  if (n <= 0) return;
  if (threads <= 1 || n == 1 || t_in_region) return Pool::run_here(n, fn, ctx);
  pool().run(n, threads, fn, ctx);
}

}  // namespace dezero::detail::cpu
