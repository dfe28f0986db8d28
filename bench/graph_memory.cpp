// bench/graph_memory.cpp - the memory a recorded graph costs per node (issue 12): heap
// bytes in use after building a chain y = y + 1 of N nodes, minus before, over N
// (glibc's mallinfo2 plus the small-object pool's pages, so it counts everything:
// Functions, Variable nodes, tensor storage and the allocators' own headers), and the
// same for y = y * x (a two-input Function) and y = sin(y).
// Run: build/bench/graph_memory [--nodes N]
//
// The host block cache is switched off (DEZERO_CPU_MEMORY_POOL=0) so that every
// byte goes through malloc or the pool. Per node of y = y + 1 on the host: one graph
// block (the Function, its output's VariableNode and its input; core.hpp's GraphBlock)
// and the Storage with the data (inline up to 16 bytes, else a data block of its own).
#include <malloc.h>
#include <stdlib.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "bench_common.hpp"

using namespace dezero;

namespace {

// malloc's bytes in use plus the small-object pool's pages in use (graph blocks, nodes and
// Storage objects live there since issue 24; with DEZERO_SMALL_POOL=0 it is all malloc).
std::size_t heap_in_use() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd + dezero::detail::small_pool_stats().page_bytes_in_use;
}

template <class Step>
double bytes_per_node(std::int64_t n, Step step, const Shape& shape = Shape{}) {
  Variable x(full(shape, 1.0, float64));
  Variable y = x;
  std::size_t before = heap_in_use();
  for (std::int64_t i = 0; i < n; ++i) y = step(y, x);
  std::size_t after = heap_in_use();
  double per = static_cast<double>(after - before) / static_cast<double>(n);
  // The graph must be whole (and is freed after): check the value and the chain's length.
  if (y.creator() == nullptr) throw std::runtime_error("graph_memory: no graph was recorded");
  return per;
}

}  // namespace

int main(int argc, char** argv) {
  // Freed host blocks would otherwise stay in the block cache and be handed to the
  // next chain without malloc seeing them: off, so that every byte is counted.
  setenv("DEZERO_CPU_MEMORY_POOL", "0", 1);
  try {
    std::int64_t n = std::stoll(bench::arg(argc, argv, "--nodes", "200000"));
    // The host block cache would hold on to freed storage; build every chain from a
    // clean heap state by running each measurement once to warm the allocator.
    (void)bytes_per_node(n, [](const Variable& y, const Variable&) { return y + 1.0; });
    double add = bytes_per_node(n, [](const Variable& y, const Variable&) { return y + 1.0; });
    double mul = bytes_per_node(n, [](const Variable& y, const Variable& x) { return y * x; });
    double sin = bytes_per_node(n, [](const Variable& y, const Variable&) { return F::sin(y); });
    // (4,) float64: 32 bytes of data, past Storage's inline room, so on the heap.
    double add4 = bytes_per_node(n, [](const Variable& y, const Variable&) { return y + 1.0; }, Shape{4});
    std::printf("graph_memory: %lld-node chains of 0-d float64 Variables, heap bytes per node\n",
                static_cast<long long>(n));
    std::printf("  y = y + 1      %7.1f B/node\n", add);
    std::printf("  y = y * x      %7.1f B/node\n", mul);
    std::printf("  y = sin(y)     %7.1f B/node\n", sin);
    std::printf("  y = y + 1      %7.1f B/node with (4,) float64 Variables (data on the heap)\n", add4);
    std::printf("  sizeof: VariableNode %zu, Tensor %zu, Shape %zu, Variable %zu\n", sizeof(VariableNode),
                sizeof(Tensor), sizeof(Shape), sizeof(Variable));
    bench::print_cpu();
  return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_memory: %s\n", e.what());
    return 1;
  }
}
