// bench/parallel_threshold.cpp - where an OpenMP region starts to pay on the host (issue 24,
// item 3): the library's element-wise and reduction kernels on n elements, run on the calling
// thread (DEZERO_PARALLEL_MIN past every n) and on OMP_NUM_THREADS threads (DEZERO_PARALLEL_MIN=0),
// float32, for n from 2^8 to 2^20. The ratio serial / parallel above 1 means the threads win.
// cpu/loops.hpp's kParallelMin is set from this table (bench/README.md).
//
//   OMP_NUM_THREADS=2 build/bench/parallel_threshold [--reps R]
//
// Each mode runs in a child process (the threshold is read once at start-up); within a mode
// every size is timed as the best of --reps (default 7) rounds of enough calls for ~20 ms.
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

namespace {

struct Op {
  const char* name;
  Tensor (*run)(const Tensor& x, const Tensor& y);
};
const Op kOps[] = {
    {"add", [](const Tensor& x, const Tensor& y) { return x + y; }},
    {"sigmoid", [](const Tensor& x, const Tensor&) { return dezero::sigmoid(x); }},
    {"sum (r, 16) axis 0", [](const Tensor& x, const Tensor&) { return dezero::sum(x.reshape({x.size() / 16, 16}), 0); }},
    {"sum (r, 256) axis 0",
     [](const Tensor& x, const Tensor&) { return dezero::sum(x.reshape({x.size() / 256, 256}), 0); }},
    {"sum (16, c) axis 1", [](const Tensor& x, const Tensor&) { return dezero::sum(x.reshape({16, x.size() / 16}), 1); }},
};

// ns per call of each op at each size, this process's threshold.
void measure(int reps) {
  for (int e = 8; e <= 20; ++e) {
    const std::int64_t n = std::int64_t(1) << e;
    random::seed(1);
    Tensor x = random::randn({n}, float32), y = random::randn({n}, float32);
    for (const Op& op : kOps) {
      const int calls = static_cast<int>(std::max<std::int64_t>(4, (std::int64_t(1) << 24) / n));
      double best = 1e30;
      for (int r = 0; r < reps; ++r) {
        const double t0 = bench::now_s();
        for (int c = 0; c < calls; ++c) op.run(x, y);
        best = std::min(best, (bench::now_s() - t0) / calls);
      }
      std::printf("%d %s %.1f\n", e, op.name, best * 1e9);
    }
  }
}

std::map<std::pair<int, std::string>, double> run_child(const std::string& self, const char* threshold, int reps) {
  const std::string cmd =
      "DEZERO_PARALLEL_MIN=" + std::string(threshold) + " '" + self + "' --child --reps " + std::to_string(reps);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::map<std::pair<int, std::string>, double> out;
  char line[256];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    const auto a = s.find(' '), b = s.rfind(' ');
    out[{std::stoi(s.substr(0, a)), s.substr(a + 1, b - a - 1)}] = std::stod(s.substr(b + 1));
  }
  if (pclose(p) != 0) throw std::runtime_error("the child run failed: " + cmd);
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  const int reps = std::stoi(bench::arg(argc, argv, "--reps", "7"));
  if (argc > 1 && std::string(argv[1]) == "--child") {
    measure(reps);
    return 0;
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  auto serial = run_child(self, "1099511627776", reps);
  auto parallel = run_child(self, "0", reps);
  const char* threads = std::getenv("OMP_NUM_THREADS");
  std::printf("parallel_threshold: float32, ns per call on 1 thread / on %s threads (ratio > 1: the threads win)\n",
              threads ? threads : "all");
  std::printf("%8s", "n");
  for (const Op& op : kOps) std::printf(" | %28s", op.name);
  std::printf("\n");
  for (int e = 8; e <= 20; ++e) {
    std::printf("%6s%-2d", "2^", e);
    for (const Op& op : kOps) {
      const double s = serial[{e, op.name}], p = parallel[{e, op.name}];
      std::printf(" | %9.0f / %9.0f  %5.2fx", s, p, s / p);
    }
    std::printf("\n");
  }
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "parallel_threshold: %s\n", e.what());
  return 1;
}
