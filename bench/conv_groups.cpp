// bench/conv_groups.cpp - depthwise convolutions (groups = C, MobileNet's 3x3 layers): one grouped
// F::conv2d against what the ONNX importer did before F::conv2d had `groups`, one groups = 1
// conv2d per channel on F::get_item slices (whose results the importer then concatenated; here
// their sums are added instead, which costs less than the concatenation). x (N, C, H, H) float32,
// W (C, 1, 3, 3), b (C,), stride 1, pad 1; the loss is sum(y), so a step is the forward and the
// backward to x, W and b. Milliseconds per step, the median of --reps runs after one to warm up.
//   conv_groups [--device cpu|cuda] [--batch 8] [--size 56] [--channels 32,64,144] [--reps 5]
//               [--loop 1]   (--loop 0 skips the per-channel loop, which grows as C^2)
// DEZERO_ONEDNN=0 in the environment times the host's per-group im2col products instead of oneDNN's.
#include <algorithm>
#include <cstdio>
#include <dezero/dezero.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

namespace {

// Waits for the device: a host copy of one element.
void sync(const Variable& v) {
  if (!v.device().is_cpu()) (void)v.data().reshape({-1})[Indices{Slice(0, 1)}].to_cpu();
}

// The median milliseconds of step() over reps runs, after one to warm up.
template <class Step>
double median_ms(int reps, Step step) {
  step();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double t0 = bench::now_s();
    step();
    ms.push_back((bench::now_s() - t0) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  const Device dev = bench::device_arg(argc, argv);
  const std::int64_t n = std::stoll(bench::arg(argc, argv, "--batch", "8"));
  const std::int64_t hw = std::stoll(bench::arg(argc, argv, "--size", "56"));
  const int reps = std::stoi(bench::arg(argc, argv, "--reps", "5"));
  const bool loop = bench::arg(argc, argv, "--loop", "1") != std::string("0");
  std::vector<std::int64_t> channels;
  std::stringstream list(bench::arg(argc, argv, "--channels", "32,64,144"));
  for (std::string c; std::getline(list, c, ',');) channels.push_back(std::stoll(c));

  std::printf("depthwise 3x3 conv (stride 1, pad 1), float32, forward + backward, on %s, oneDNN %s:\n",
              dev.str().c_str(), is_onednn_available() ? "built in" : "absent");
  for (std::int64_t c : channels) {
    random::seed(0);
    Parameter x(random::randn({n, c, hw, hw}, float32).to(dev), "x");
    Parameter W(random::randn({c, 1, 3, 3}, float32).to(dev) * (1.0 / 3.0), "W");
    Parameter b(random::randn({c}, float32).to(dev), "b");
    auto clear = [&] {
      x.cleargrad();
      W.cleargrad();
      b.cleargrad();
    };
    const double fwd = median_ms(reps, [&] {
      auto g = no_grad();
      sync(F::conv2d(x, W, b, 1, 1, c));
    });
    const double grouped = median_ms(reps, [&] {
      clear();
      F::sum(F::conv2d(x, W, b, 1, 1, c)).backward();
      sync(x.grad());
    });
    double looped = -1;
    if (loop)
      looped = median_ms(reps, [&] {
        clear();
        Variable loss;
        for (std::int64_t j = 0; j < c; ++j) {
          Variable yj = F::conv2d(F::get_item(x, Indices{Slice(), Slice(j, j + 1)}),
                                  F::get_item(W, Indices{Slice(j, j + 1)}), F::get_item(b, Indices{Slice(j, j + 1)}),
                                  1, 1);
          loss = j == 0 ? F::sum(yj) : loss + F::sum(yj);
        }
        loss.backward();
        sync(x.grad());
      });
    std::printf("  N %lld, C %4lld, %lldx%lld: groups = C forward %8.2f ms, forward + backward %8.2f ms",
                static_cast<long long>(n), static_cast<long long>(c), static_cast<long long>(hw),
                static_cast<long long>(hw), fwd, grouped);
    if (loop) std::printf("; per-channel loop %9.2f ms (%.1fx)", looped, looped / grouped);
    std::printf("\n");
  }
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "conv_groups: %s\n", e.what());
  return 1;
}
