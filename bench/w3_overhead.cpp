// bench/w3_overhead.cpp - W3: framework overhead. An in-10-1 sigmoid MLP on a
// batch of 100, mean squared error, SGD: microseconds per forward + backward +
// update step. The arithmetic is tiny, so this measures the cost of building
// and walking the graph.
//   w3_overhead [--device cpu|cuda] [--steps N] [--in N] [--plan 1]
// --in: input features, x (100, N); 2 by default (the figures published so far),
// 1 is step 43's own network (x (100, 1)). --plan 1: the step recorded once by
// dezero::compile_step and replayed (forward, backward, update without a graph);
// the same losses bit for bit.
#include <algorithm>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>
#include <dezero/plan.hpp>
#include <iostream>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

int main(int argc, char** argv) try {
  Device dev = bench::device_arg(argc, argv);
  int steps = std::stoi(bench::arg(argc, argv, "--steps", "20000"));
  int in = std::stoi(bench::arg(argc, argv, "--in", "2"));
  const bool planned = bench::arg(argc, argv, "--plan", "0") == std::string("1");
  bench::W3 w3(dev, in);
  StepPlan plan;
  const Variable x(w3.x), t(w3.t);
  if (planned)
    plan = compile_step(
        w3.model, [&](const VariableList& b) { return F::mean_squared_error(w3.model(b[0]), b[1]); }, w3.opt, {x, t});
  auto step = [&]() { return planned ? plan({x, t}) : w3.step(); };
  for (int i = 0; i < 1000; ++i) step();  // warm-up (lazy init, allocator)
  std::vector<double> us;
  double final_loss = 0;
  for (int r = 0; r < 5; ++r) {
    double t0 = bench::now_s();
    Variable loss;
    for (int i = 0; i < steps / 5; ++i) loss = step();
    final_loss = loss.data().item<double>();
    us.push_back((bench::now_s() - t0) / (steps / 5) * 1e6);
  }
  std::sort(us.begin(), us.end());
  std::cout << "W3" << (planned ? " (planned)" : "") << ": " << in << "-10-1 sigmoid MLP, batch 100, MSE + SGD on "
            << dev << ": median " << us[2]
            << " us/step (min " << us[0] << ", max " << us[4] << "), loss " << final_loss << "\n";
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::cerr << "w3_overhead: " << e.what() << "\n";
  return 1;
}
