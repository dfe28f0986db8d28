// bench/op_profile.cpp - where a recorded op's time and bytes go (issue 24's measurement): the
// heap allocations each op makes and their sizes (counted by replacing operator new, with the
// small-object pool switched off so that every object goes through it), the resident bytes per
// node of a long chain, the nanoseconds per recorded op, the backward and the teardown of that
// chain; then the same counts for one W3 step. The sizeof line names what the objects hold.
//
//   build/bench/op_profile [--nodes N]      (default 1,000,000: y = y + 1 on a 0-d float64)
//
// The allocation counts come from a second run of this program (--allocations) with
// DEZERO_SMALL_POOL=0 and the host block cache off (DEZERO_CPU_MEMORY_POOL=0), so that every
// graph object and tensor data block is a counted operator new or aligned_alloc; the chain's
// time and resident bytes are measured here, with the pool, as programs run.
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <string>

#include "bench_common.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long long> g_allocs{0}, g_bytes{0}, g_chunk{0};
std::map<std::size_t, long long>* g_sizes = nullptr;  // request size -> count, while counting

void note(std::size_t n, void* p) {
  if (!g_counting.load(std::memory_order_relaxed) || !p) return;
  g_counting = false;  // the map itself allocates
  g_allocs += 1;
  g_bytes += static_cast<long long>(n);
  g_chunk += static_cast<long long>(malloc_usable_size(p) + sizeof(std::size_t));  // + glibc's chunk header
  if (g_sizes) ++(*g_sizes)[n];
  g_counting = true;
}

long rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return pages_rss * sysconf(_SC_PAGESIZE);
}

// A Function like the library's AddConst (one double), for the size of its graph block.
class AddConstLike : public dezero::Function {
 public:
  explicit AddConstLike(double c) : c_(c) {}
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] + c_}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {gys[0]}; }

 private:
  double c_;
};
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  note(n, p);
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
// libdezero's host blocks (cpu/memory.cpp) come from aligned_alloc, not operator new: this
// definition interposes on it (the library calls it through its PLT) and counts them too.
using AlignedAlloc = void* (*)(std::size_t, std::size_t);
AlignedAlloc real_aligned_alloc() {
  static AlignedAlloc f = reinterpret_cast<AlignedAlloc>(dlsym(RTLD_NEXT, "aligned_alloc"));
  return f;
}
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t n) {
  void* p = real_aligned_alloc()(alignment, n);
  note(n, p);
  return p;
}
void* operator new(std::size_t n, std::align_val_t a) {
  const std::size_t al = static_cast<std::size_t>(a);
  void* p = real_aligned_alloc()(al, (n + al - 1) / al * al);
  if (!p) throw std::bad_alloc();
  note(n, p);
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace dezero;

namespace {

// The allocations of one y = y + 1 and of one W3 step, by size (run with the pool off).
void allocations() {
  {
    Variable x(array(1.0));
    Variable y = x + 1.0;  // warm-up
    std::map<std::size_t, long long> sizes;
    g_sizes = &sizes;
    g_allocs = g_bytes = g_chunk = 0;
    const int ops = 1000;
    g_counting = true;
    for (int i = 0; i < ops; ++i) y = y + 1.0;
    g_counting = false;
    g_sizes = nullptr;
    std::printf("  per op: %.2f allocations, %.0f bytes asked, %.0f bytes of malloc chunks\n",
                static_cast<double>(g_allocs) / ops, static_cast<double>(g_bytes) / ops,
                static_cast<double>(g_chunk) / ops);
    for (auto& [size, count] : sizes)
      std::printf("    %5zu bytes x %.2f per op\n", size, static_cast<double>(count) / ops);
  }
  bench::W3 w3(Device::cpu());
  for (int i = 0; i < 100; ++i) w3.step();
  const int steps = 1000;
  g_allocs = g_bytes = g_chunk = 0;
  g_counting = true;
  for (int i = 0; i < steps; ++i) w3.step();
  g_counting = false;
  std::printf("  W3 step: %.1f allocations, %.0f bytes asked per step\n", static_cast<double>(g_allocs) / steps,
              static_cast<double>(g_bytes) / steps);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::string(argv[1]) == "--allocations") {  // the child run (see the header)
      allocations();
      return 0;
    }
    const std::int64_t n = std::stoll(bench::arg(argc, argv, "--nodes", "1000000"));
    std::printf("op_profile: what one recorded op costs (y = y + 1 on a 0-d float64 Variable)\n");
    std::printf("  sizeof: Variable %zu, VariableNode %zu, Tensor %zu, Shape %zu, Storage %zu, Function %zu, "
                "the graph block of y = y + 1 %zu (with its control block)\n",
                sizeof(Variable), sizeof(VariableNode), sizeof(Tensor), sizeof(Shape), sizeof(Storage),
                sizeof(Function), sizeof(detail::GraphBlock<AddConstLike, 1>) + 2 * sizeof(void*));
    std::printf("  allocations (a run with DEZERO_SMALL_POOL=0 DEZERO_CPU_MEMORY_POOL=0):\n");
    std::fflush(stdout);
    const std::string cmd = "DEZERO_SMALL_POOL=0 DEZERO_CPU_MEMORY_POOL=0 '" +
                            std::filesystem::read_symlink("/proc/self/exe").string() + "' --allocations";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("the allocation-counting run failed: " + cmd);

    // --- the chain: time and resident bytes per node, backward, teardown --------------------------
    {
      Variable x(array(1.0));
      Variable y = x;
      const long rss0 = rss_bytes();
      const auto pool0 = detail::small_pool_stats();
      const double t0 = bench::now_s();
      for (std::int64_t i = 0; i < n; ++i) y = y + 1.0;
      const double t1 = bench::now_s();
      const long rss1 = rss_bytes();
      const auto pool1 = detail::small_pool_stats();
      y.backward();
      const double t2 = bench::now_s();
      const double gx = x.grad().data().item<double>();
      y = Variable();
      const double t3 = bench::now_s();
      std::printf("  chain of %lld ops: %.0f ns per recorded op, %.0f resident bytes per node (%.0f bytes of pool "
                  "pages per node)\n",
                  static_cast<long long>(n), (t1 - t0) / static_cast<double>(n) * 1e9,
                  static_cast<double>(rss1 - rss0) / static_cast<double>(n),
                  static_cast<double>(pool1.page_bytes_in_use - pool0.page_bytes_in_use) / static_cast<double>(n));
      std::printf("  backward %.3f s (x.grad = %.0f), teardown %.3f s\n", t2 - t1, gx, t3 - t2);
    }

    // --- a W3 step (bench/w3_overhead) -------------------------------------------------------------
    {
      bench::W3 w3(Device::cpu());
      for (int i = 0; i < 1000; ++i) w3.step();
      const int steps = 20000;
      const double a = bench::now_s();
      for (int i = 0; i < steps; ++i) w3.step();
      const double b = bench::now_s();
      std::printf("  W3 step: %.2f us\n", (b - a) / steps * 1e6);
      // The same step in its phases, a clock read between them (about 20 ns each, in the figures):
      // forward (model and loss), cleargrads, backward, update, and freeing the graph.
      double ph[5] = {0, 0, 0, 0, 0};
      for (int i = 0; i < steps; ++i) {
        const double t0 = bench::now_s();
        Variable loss = F::mean_squared_error(w3.model(w3.x), w3.t);
        const double t1 = bench::now_s();
        w3.model.cleargrads();
        const double t2 = bench::now_s();
        loss.backward();
        const double t3 = bench::now_s();
        w3.opt.update();
        const double t4 = bench::now_s();
        loss = Variable();
        const double t5 = bench::now_s();
        ph[0] += t1 - t0, ph[1] += t2 - t1, ph[2] += t3 - t2, ph[3] += t4 - t3, ph[4] += t5 - t4;
      }
      std::printf("  W3 phases (us): forward %.2f, cleargrads %.2f, backward %.2f, update %.2f, freeing the graph %.2f\n",
                  ph[0] / steps * 1e6, ph[1] / steps * 1e6, ph[2] / steps * 1e6, ph[3] / steps * 1e6,
                  ph[4] / steps * 1e6);
    }
    bench::print_cpu();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "op_profile: %s\n", e.what());
    return 1;
  }
}
