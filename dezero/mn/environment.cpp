// dezero/mn/environment.cpp - mn::Environment (MPI_Init_thread ... MPI_Finalize), what happens
// when an exception ends a rank, and the MPI helpers of mn/detail.hpp.
//
// One rank that stops early must not leave the others waiting: they would sit in their next
// collective until mpirun's user kills the job. So the Environment never runs MPI_Finalize (a
// collective) while an exception unwinds; it aborts the job instead, once the exception's
// handler has had its say (std::atexit), and a terminate handler does the same for an exception
// that nothing catches. MPI_Abort is the library's one exit: DESIGN.md's "no exit/abort in the
// library" has this exception, named in the issue that asked for dezero::mn.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dezero/env.hpp"
#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn {

namespace {
using dezero::detail::fail;

std::mutex g_states_mutex;
std::vector<std::weak_ptr<Communicator::State>> g_states;
bool g_abort_at_exit = false;
std::terminate_handler g_previous_terminate = nullptr;

int world_rank() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  int r = -1;
  if (initialised && !finalised) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

[[noreturn]] void abort_job(const std::string& why) {
  std::fflush(stdout);
  std::fprintf(stderr, "dezero::mn: rank %d: %s; aborting the MPI job so that the other ranks do not wait for this one\n",
               world_rank(), why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this is for the compiler
}

// An exception no handler caught: its message, then the job ends.
void on_terminate() {
  std::string why = "std::terminate was called";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      why = std::string("uncaught exception: ") + ex.what();
    } catch (...) {
      why = "uncaught exception of an unknown type";
    }
  }
  abort_job(why);
}

// The Environment was destroyed by an exception; its handler has run (it printed the message).
void abort_at_exit() {
  if (g_abort_at_exit) abort_job("an exception ended this rank (its message is above)");
}

// --- the watchdog: no MPI call waits for ever ------------------------------------------------------
// Each thread in an MPI call holds a slot: when it entered (steady-clock ns, 0: free) and what.
// A thread of the Environment looks at them every second and aborts the job when one has waited
// longer than the timeout: a peer that died without MPI noticing, or stopped sending, would
// otherwise hold every other rank in its next collective until someone kills the job.
struct CallSlot {
  std::atomic<std::int64_t> since_ns{0};
  std::atomic<const char*> call{nullptr};
  std::atomic<const char*> file{nullptr};
  std::atomic<int> line{0};
};
constexpr int kSlots = 256;
CallSlot g_slots[kSlots];
std::atomic<int> g_next_slot{0};
thread_local int t_slot = -1;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// DEZERO_MN_TIMEOUT in seconds: default 1800; 0 turns the watchdog off.
double timeout_s() {
  const char* v = ::dezero::detail::env_value("DEZERO_MN_TIMEOUT");
  if (!v) return 1800.0;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s >= 0.0))
    fail<ValueError>("mn::Environment", "DEZERO_MN_TIMEOUT='", v,
                     "' is not a number of seconds; hint: 600, or 0 to wait for ever");
  return s;
}

struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
  void start(double seconds) {
    if (seconds <= 0.0) return;
    stop = false;
    const auto limit = static_cast<std::int64_t>(seconds * 1e9);
    thread = std::thread([this, limit, seconds] {
      std::unique_lock<std::mutex> lock(mu);
      while (!cv.wait_for(lock, std::chrono::seconds(1), [this] { return stop; })) {
        const std::int64_t now = now_ns();
        const int n = std::min(g_next_slot.load(), kSlots);
        for (int i = 0; i < n; ++i) {
          const std::int64_t since = g_slots[i].since_ns.load(std::memory_order_acquire);
          if (since == 0 || now - since < limit) continue;
          const char* call = g_slots[i].call.load();
          const char* file = g_slots[i].file.load();
          char why[768];
          std::snprintf(why, sizeof why,
                        "waited %.0f s in %s (%s:%d) without the other ranks taking part (a peer stopped sending, "
                        "or died where MPI did not notice); DEZERO_MN_TIMEOUT=%g sets the limit in seconds, 0 waits "
                        "for ever",
                        static_cast<double>(now - since) / 1e9, call ? call : "an MPI call", file ? file : "?",
                        g_slots[i].line.load(), seconds);
          abort_job(why);
        }
      }
    });
  }
  void end() {
    if (!thread.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    thread.join();
  }
};
Watchdog g_watchdog;

void initialise(int* argc, char*** argv) {
  const double timeout = timeout_s();  // a bad value is refused before MPI starts
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised)
    throw Error("mn::Environment: MPI is already initialised; hint: make one Environment, at the top of main");
  int provided = 0;
  detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread", __FILE__,
                    __LINE__);
  g_previous_terminate = std::set_terminate(on_terminate);
  g_watchdog.start(timeout);
  static bool registered = false;
  if (!registered) {
    std::atexit(abort_at_exit);
    registered = true;
  }
}

}  // namespace

// --- Environment ------------------------------------------------------------------------------------
Environment::Environment(int& argc, char**& argv) { initialise(&argc, &argv); }
Environment::Environment() { initialise(nullptr, nullptr); }

Environment::~Environment() {
  if (std::uncaught_exceptions() > 0) {
    // No MPI_Finalize (it waits for the other ranks) and no collective: the job ends at exit.
    g_abort_at_exit = true;
    std::fflush(stdout);
    std::fprintf(stderr, "dezero::mn: rank %d: an exception is leaving the scope of the mn::Environment; the MPI "
                 "job is aborted when this process ends\n", world_rank());
    std::fflush(stderr);
    return;
  }
  detail::free_all_states();
  std::set_terminate(g_previous_terminate);
  g_watchdog.end();
  MPI_Finalize();
}

bool Environment::thread_multiple() const { return detail::mpi_thread_multiple(); }

namespace detail {
bool mpi_thread_multiple() {
  int initialised = 0, finalised = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Query_thread(&level);
  return level == MPI_THREAD_MULTIPLE;
}
}  // namespace detail

int Environment::rank() const {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int Environment::size() const {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// --- Communicator::State and the helpers -----------------------------------------------------------
void Communicator::State::free() noexcept {
  if (freed) return;
  freed = true;
  for (auto& r : release) {
    try {
      r();
    } catch (...) {  // a destructor: nothing to report to
    }
  }
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised) return;
  if (intra != MPI_COMM_NULL) MPI_Comm_free(&intra);
  if (world != MPI_COMM_NULL) MPI_Comm_free(&world);
}

namespace detail {

MpiCall::MpiCall(const char* call, const char* file, int line) noexcept {
  if (t_slot < 0) {
    t_slot = g_next_slot.fetch_add(1);
    if (t_slot >= kSlots) t_slot = kSlots;  // past the slots: not watched (more threads than any use makes)
  }
  if (t_slot >= kSlots) return;
  CallSlot& s = g_slots[t_slot];
  s.call.store(call);
  s.file.store(file);
  s.line.store(line);
  s.since_ns.store(now_ns(), std::memory_order_release);
}
MpiCall::~MpiCall() {
  if (t_slot >= 0 && t_slot < kSlots) g_slots[t_slot].since_ns.store(0, std::memory_order_release);
}

void check_mpi(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int cls = rc;
  MPI_Error_class(rc, &cls);
  if (cls == MPI_ERR_TRUNCATE)
    fail<ValueError>("dezero::mn", call, ": a peer sent a longer message than this rank, rank ", world_rank(),
                     ", expected (MPI_ERR_TRUNCATE: ", std::string(text, static_cast<std::size_t>(len)), ", ", file,
                     ":", line, ")", kPeerHint);
  fail<Error>("dezero::mn", call, " failed: ", std::string(text, static_cast<std::size_t>(len)), " (", file, ":",
              line, ")");
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int32: return MPI_INT32_T;
    case DType::Int64: return MPI_INT64_T;
    case DType::BFloat16:
    case DType::Float16:  // MPI has no 16-bit float type (nor a sum for one)
      fail<DtypeError>("dezero::mn", "no MPI datatype for ", dtype,
                       " tensors; hint: communicate them as float32 (astype), or use "
                       "CommunicatorOptions::allreduce_grad_dtype for 16-bit gradients on the wire");
  }
  fail<DtypeError>("dezero::mn", "no MPI datatype for this dtype");
}

MPI_Datatype mpi_transfer_type(DType dtype) { return is_half(dtype) ? MPI_UINT16_T : mpi_type(dtype); }

void require_mpi(const char* op) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised)
    throw Error(std::string(op) + ": MPI is not " + (finalised ? "running any more (the mn::Environment is gone)" :
                "initialised") + "; hint: make a dezero::mn::Environment env(argc, argv) at the top of main");
}

void register_state(const std::shared_ptr<Communicator::State>& state) {
  std::lock_guard<std::mutex> lock(g_states_mutex);
  g_states.push_back(state);
}

void free_all_states() noexcept {
  std::vector<std::shared_ptr<Communicator::State>> live;
  {
    std::lock_guard<std::mutex> lock(g_states_mutex);
    for (auto& w : g_states)
      if (auto s = w.lock()) live.push_back(std::move(s));
    g_states.clear();
  }
  for (auto& s : live) s->free();
}

void in_chunks(std::int64_t n, const std::function<void(std::int64_t, int)>& fn) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 30;
  for (std::int64_t off = 0; off < n; off += kChunk) fn(off, static_cast<int>(std::min(kChunk, n - off)));
}

}  // namespace detail
}  // namespace dezero::mn
