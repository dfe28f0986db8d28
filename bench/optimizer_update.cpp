// bench/optimizer_update.cpp - the cost of Optimizer::update() alone (issue 24, item 4: the
// multi-tensor step), on fixed parameters and gradients: W3's MLP 2-10-1 (4 parameters, 41
// elements), W1's MLP 784-1000-1000-10 (6 parameters, 1.8M elements) and a model of many small
// parameters (200 of 64 to 1,024 elements, 109,568 in all: the batch-norm scales and shifts,
// biases and 1x1 convolutions of a small ResNet). Each with SGD, Adam and Adam + WeightDecay
// 1e-4; microseconds per update(), the median of 5 runs. Gradients stay set between steps
// (update() does not clear them), so only the optimizer runs.
//   optimizer_update [--device cpu|cuda] [--steps N] (N for W3 and the small model, N / 100 for W1)
#include <algorithm>
#include <cstdio>
#include <dezero/dezero.hpp>
#include <dezero/optimizers.hpp>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

namespace {

std::vector<Shape> w3_shapes() { return {Shape{2, 10}, Shape{10}, Shape{10, 1}, Shape{1}}; }
std::vector<Shape> w1_shapes() {
  return {Shape{784, 1000}, Shape{1000}, Shape{1000, 1000}, Shape{1000}, Shape{1000, 10}, Shape{10}};
}
std::vector<Shape> small_shapes() {
  std::vector<Shape> s;
  for (int i = 0; i < 200; ++i) s.push_back(Shape{64 << (i % 5)});  // 64, 128, 256, 512, 1024
  return s;
}

// The median microseconds of one update() over 5 runs of `steps` updates (after 10 to warm up).
double time_update(optimizers::Optimizer& opt, const std::vector<Shape>& shapes, Device dev, int steps) {
  random::seed(0);
  std::vector<Parameter> ps;
  for (const auto& s : shapes) {
    Parameter p(random::randn(s, float32).to(dev));
    p.set_grad(Variable(random::randn(s, float32).to(dev) * 1e-3));
    ps.push_back(p);
  }
  opt.setup(ps);
  for (int i = 0; i < 10; ++i) opt.update();
  std::vector<double> us;
  for (int r = 0; r < 5; ++r) {
    if (!dev.is_cpu()) ps[0].data().to_cpu();  // waits for the device
    const double t0 = bench::now_s();
    for (int i = 0; i < steps; ++i) opt.update();
    if (!dev.is_cpu()) ps[0].data().to_cpu();
    us.push_back((bench::now_s() - t0) / steps * 1e6);
  }
  std::sort(us.begin(), us.end());
  return us[2];
}

void run(const char* model, const std::vector<Shape>& shapes, Device dev, int steps) {
  optimizers::SGD sgd(0.01);
  optimizers::Adam adam, adam_wd;
  adam_wd.add_hook(optimizers::WeightDecay(1e-4));
  const double a = time_update(sgd, shapes, dev, steps), b = time_update(adam, shapes, dev, steps),
               c = time_update(adam_wd, shapes, dev, steps);
  std::printf("%-28s %4zu parameters: SGD %10.2f us, Adam %10.2f us, Adam + WeightDecay %10.2f us per update()\n",
              model, shapes.size(), a, b, c);
}

}  // namespace

int main(int argc, char** argv) try {
  Device dev = bench::device_arg(argc, argv);
  const int steps = std::stoi(bench::arg(argc, argv, "--steps", "20000"));
  std::printf("optimizer update() alone on %s:\n", dev.str().c_str());
  run("W3 (MLP 2-10-1)", w3_shapes(), dev, steps);
  run("200 small (64-1024 each)", small_shapes(), dev, std::max(1, steps / 10));
  run("W1 (MLP 784-1000-1000-10)", w1_shapes(), dev, std::max(1, steps / 100));
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "optimizer_update: %s\n", e.what());
  return 1;
}
