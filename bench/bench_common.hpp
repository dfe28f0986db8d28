// bench/bench_common.hpp - command-line and timing helpers shared by the benchmarks.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>
#include <string>

namespace bench {

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// One line naming the CPU, the host kernels' instruction-set level and the threads
// (dezero::cpu_info()): every benchmark prints it last, so that a figure is never quoted
// without its CPU (it is not printed first: asking whether the CPU has bfloat16 products makes a
// oneDNN primitive, whose OpenMP threads would then spin beside the timed work).
inline void print_cpu() { std::printf("%s\n", dezero::cpu_info().summary().c_str()); }

// --device cpu|cuda (default cpu), --flag VALUE lookups.
inline std::string arg(int argc, char** argv, const char* name, const char* def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return def;
}

inline dezero::Device device_arg(int argc, char** argv) {
  std::string d = arg(argc, argv, "--device", "cpu");
  if (d == "cuda") return dezero::Device::cuda(0);
  if (d != "cpu") throw dezero::ValueError("--device must be cpu or cuda, got " + d);
  return dezero::Device::cpu();
}

// W3 (bench/w3_overhead, bench/op_profile): an in-10-1 sigmoid MLP on a batch of 100, mean squared
// error, SGD 0.2; step() is one forward + backward + update. x is (100, in), in = 2 by default (the
// benchmark's historical shape); in = 1 is step 43's own network (x (100, 1)). t = sin(2 pi x[:, 0]) + noise.
struct W3 {
  dezero::Tensor x, t;
  dezero::models::MLP model{{10, 1}, dezero::F::sigmoid};
  dezero::optimizers::SGD opt{0.2};
  explicit W3(dezero::Device dev, int in = 2) {
    using namespace dezero;
    if (in < 1) throw ValueError("W3: the number of input features must be >= 1, got " + std::to_string(in));
    random::seed(0);
    x = random::rand({100, in}, float32).to(dev);
    t = (dezero::sin(x[{Slice(), Slice(0, 1)}] * 6.28) + random::rand({100, 1}, float32).to(dev));
    opt.setup(model);
  }
  dezero::Variable step() {
    dezero::Variable loss = dezero::F::mean_squared_error(model(x), t);
    model.cleargrads();
    loss.backward();
    opt.update();
    return loss;
  }
};

}  // namespace bench
