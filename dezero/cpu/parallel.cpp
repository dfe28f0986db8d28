// dezero/cpu/parallel.cpp - the host backend's thread pool and thread count (parallel.hpp says
// why it is ours and not OpenMP's).
//
// One job at a time. The caller writes the job (fn, ctx, the pieces) and opens the `gate_` for a
// new epoch, wakes the workers that sleep, and works too. Each of the job's T threads owns a
// slot, a consecutive range of the pieces with its own counter on its own cache line: a thread
// claims its pieces with an increment no other core sees, then steals from the other slots
// what nobody has started (a worker the OS has descheduled, or one that never woke, leaves its
// pieces to the others). A worker enters the job through the gate (a compare-and-swap that
// fails once the gate is closed or another job has opened), and the job's fields stay as they
// are while anyone is inside: a late worker never touches a job that has ended, and the
// caller's stack (ctx) is only read by pieces it waits for. The caller closes the gate after
// its own pieces and steals, then waits for the pieces still running (`done_`): it spins for
// about twice its own mean piece time (5 to 100 us), then sleeps on `done_` until the last
// worker wakes it. A worker spins about 50 us for the next job (DEZERO_SPIN_US), the gap
// between two loops of a training step, then sleeps on `epoch_`. Sleeping is a futex: nothing
// is spent while the cores belong to others.
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
#include <system_error>
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

}  // namespace

// The CPU quota of this process's cgroup and its parents (the smallest), in CPUs; 0 when there is
// none. cgroup v2: cpu.max ("max 100000" or "150000 100000"); v1: cpu.cfs_quota_us (-1: none) over
// cpu.cfs_period_us. proc_cgroup: /proc/self/cgroup; root: /sys/fs/cgroup (tests pass others).
double cgroup_quota_cpus(const std::string& proc_cgroup, const std::string& root) {
  std::ifstream f(proc_cgroup);
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
      std::istringstream in(read_line(root + (p == "/" ? std::string() : p) + "/cpu.max"));
      std::string quota;
      double period = 0;
      if (in >> quota >> period && quota != "max" && period > 0) take(std::atof(quota.c_str()) / period);
    });
  if (!v1_path.empty())
    for (const char* v1 : {"/cpu", "/cpu,cpuacct"})
      walk(v1_path, [&](const std::string& p) {
        const std::string dir = root + v1 + (p == "/" ? std::string() : p);
        const std::string q = read_line(dir + "/cpu.cfs_quota_us"), per = read_line(dir + "/cpu.cfs_period_us");
        if (!q.empty() && !per.empty() && std::atof(per.c_str()) > 0) take(std::atof(q.c_str()) / std::atof(per.c_str()));
      });
  return best;
}

namespace {

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
    t.quota = cgroup_quota_cpus("/proc/self/cgroup", "/sys/fs/cgroup");
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
  static constexpr int kMaxSlots = 256;

  void run(std::int64_t n, int threads, void (*fn)(void*, std::int64_t), void* ctx) {
    std::unique_lock<std::mutex> lock(submit_, std::try_to_lock);
    if (!lock.owns_lock() || n > std::int64_t(INT32_MAX)) return run_here(n, fn, ctx);
    const int slots = static_cast<int>(std::min<std::int64_t>({threads, n, kMaxSlots}));
    grow(slots - 1);
    fn_ = fn;
    ctx_ = ctx;
    slots_used_ = slots;
    for (int t = 0; t < slots; ++t) {
      slot_[t].next.store(static_cast<std::uint32_t>(n * t / slots), std::memory_order_relaxed);
      slot_[t].end = static_cast<std::uint32_t>(n * (t + 1) / slots);
    }
    total_ = static_cast<std::uint32_t>(n);
    done_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    helpers_.store(slots - 1, std::memory_order_relaxed);
    const std::uint32_t e = epoch_.load(std::memory_order_relaxed) + 1;
    gate_.store((std::uint64_t(e) << 33) | kOpen, std::memory_order_release);
    epoch_.store(e, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(&epoch_, INT_MAX);

    // The caller's share (slot 0, then steals), timed: it waits spinning for about as long as two
    // of its pieces took.
    const auto t0 = Clock::now();
    const std::uint32_t mine = work(0);
    const std::int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    gate_.fetch_and(~kOpen, std::memory_order_acq_rel);  // no one enters any more
    const std::int64_t spin = std::clamp<std::int64_t>(mine ? 2 * took / mine : 20000, 5000, 100000);
    const std::uint32_t total = total_;
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
    // Workers still inside have nothing left to claim: they leave at once.
    for (int i = 0; (gate_.load(std::memory_order_acquire) & kActive) != 0; ++i) {
      if (i < 4096) DEZERO_CPU_RELAX();
      else sched_yield();
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
  static constexpr std::uint64_t kOpen = std::uint64_t(1) << 32, kActive = kOpen - 1;

  struct alignas(64) Slot {
    std::atomic<std::uint32_t> next{0};  // the slot's next unclaimed piece
    std::uint32_t end = 0;               // one past its last piece
  };

  void run_piece(std::uint32_t i) {
    try {
      fn_(ctx_, static_cast<std::int64_t>(i));
    } catch (...) {
      std::lock_guard<std::mutex> g(error_mu_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_release);
    }
  }

  void finished(std::uint32_t count) {
    if (count == 0) return;
    if (done_.fetch_add(count, std::memory_order_seq_cst) + count == total_ && waiting_.load(std::memory_order_seq_cst))
      futex_wake(&done_, 1);
  }

  // Runs slot s's pieces, then any other slot's not yet started; returns how many it ran.
  std::uint32_t work(int s) {
    const bool outer = t_in_region;
    t_in_region = true;
    std::uint32_t own = 0, stolen = 0, i;
    Slot& mine = slot_[s];
    while ((i = mine.next.fetch_add(1, std::memory_order_relaxed)) < mine.end) {
      run_piece(i);
      ++own;
    }
    finished(own);
    for (int k = 1; k < slots_used_; ++k) {
      Slot& other = slot_[(s + k) % slots_used_];
      while (other.next.load(std::memory_order_relaxed) < other.end &&
             (i = other.next.fetch_add(1, std::memory_order_relaxed)) < other.end) {
        run_piece(i);
        finished(1);
        ++stolen;
      }
    }
    t_in_region = outer;
    return own + stolen;
  }

  // Enters job e through the gate; false when it is closed or another job's.
  bool enter(std::uint32_t e) {
    std::uint64_t g = gate_.load(std::memory_order_acquire);
    for (;;) {
      if ((g >> 33) != (e & 0x7FFFFFFFu) || !(g & kOpen)) return false;  // the gate holds 31 bits of the epoch
      if (gate_.compare_exchange_weak(g, g + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
    }
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
      if (id >= helpers_.load(std::memory_order_relaxed) || !enter(e)) continue;
      if (id + 1 < slots_used_) work(id + 1);
      gate_.fetch_sub(1, std::memory_order_release);
    }
  }

  // Starts workers until there are `want` (they live as long as the process). Where the system
  // refuses a thread (a container's task limit), the pool goes on with those it has: a slot whose
  // worker does not exist is taken over by the others, as a descheduled worker's is.
  void grow(int want) {
    while (static_cast<int>(started_) < want && !refused_) {
      const int id = static_cast<int>(started_);
      try {
        std::thread t([this, id] {
          pthread_setname_np(pthread_self(), "dezero-worker");
          worker(id);
        });
        t.detach();
      } catch (const std::system_error&) {
        refused_ = true;
        return;
      }
      ++started_;
    }
  }

  // The job: written by the caller before the gate opens, read by those inside.
  void (*fn_)(void*, std::int64_t) = nullptr;
  void* ctx_ = nullptr;
  int slots_used_ = 0;
  std::uint32_t total_ = 0;
  Slot slot_[kMaxSlots];
  // gate_: (epoch << 33) | open << 32 | workers inside.
  alignas(64) std::atomic<std::uint64_t> gate_{0};
  alignas(64) std::atomic<std::uint32_t> epoch_{0};   // futex word of the sleeping workers
  std::atomic<int> sleepers_{0};
  std::atomic<int> helpers_{0};
  alignas(64) std::atomic<std::uint32_t> done_{0};    // futex word of the waiting caller
  std::atomic<int> waiting_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
  std::mutex submit_;
  std::size_t started_ = 0;  // under submit_
  bool refused_ = false;     // under submit_: the system refused a thread
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

bool in_parallel() { return t_in_region || omp_in_parallel() != 0; }

void run_parallel(std::int64_t n, int threads, void (*fn)(void*, std::int64_t), void* ctx) {
  if (n <= 0) return;
  if (threads <= 1 || n == 1 || t_in_region) return Pool::run_here(n, fn, ctx);
  pool().run(n, threads, fn, ctx);
}

}  // namespace dezero::detail::cpu
