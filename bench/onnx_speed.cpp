// bench/onnx_speed.cpp - the time of one call of an ONNX model imported with onnx::OnnxModel:
// inference, or a fine-tuning step (issue 47's speed targets; bench/compare_ort.py runs it beside
// ONNX Runtime and PyTorch, alternating).
//
//   build/bench/onnx_speed MODEL.onnx [--batch N] [--threads N] [--calls K] [--warmup W] [--train 1]
//                          [--plan 1 [--summary 1]]
//
// The input is random normal values of the model's first input shape with its symbolic axes
// ("batch") set to --batch (default 1). Inference: test mode under no_grad (BatchNorm's running
// statistics). --train 1: one step of train mode (batch statistics), softmax cross entropy against
// random labels of an (N, C) output (the mean of the squared outputs for any other), backward and
// SGD (lr 0.01). --plan 1: inference through dezero::compile(model, {x}) (issue 47's plan; the
// compile is not timed), with the plan's counts and its largest difference from the unplanned
// output printed first (--summary 1: its steps too). After --warmup calls (default 3), --calls
// (default 20) timed calls; prints
//   onnx_speed: <file> batch N threads T (infer|train|plan): median M ms, best B ms
// and the CPU line last.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <dezero/dezero.hpp>
#include <dezero/onnx.hpp>
#include <dezero/optimizers.hpp>
#include <dezero/plan.hpp>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: onnx_speed MODEL.onnx [--batch N] [--threads N] [--calls K] [--warmup W] [--train 1]\n");
    return 2;
  }
  const std::int64_t batch = std::stoll(bench::arg(argc, argv, "--batch", "1"));
  const int threads = std::stoi(bench::arg(argc, argv, "--threads", "1"));
  const int calls = std::stoi(bench::arg(argc, argv, "--calls", "20"));
  const int warmup = std::stoi(bench::arg(argc, argv, "--warmup", "3"));
  const bool train = bench::arg(argc, argv, "--train", "0") == std::string("1");
  const bool planned = bench::arg(argc, argv, "--plan", "0") == std::string("1");
  const bool summary = bench::arg(argc, argv, "--summary", "0") == std::string("1");
  omp_set_num_threads(threads);
  try {
    onnx::OnnxModel model(argv[1]);
    const onnx::ValueInfo& in = model.input_info().at(0);
    Shape shape;
    for (std::int64_t d : in.shape) shape.push_back(d < 0 ? batch : d);
    random::Generator gen(0);
    Variable x(gen.randn(shape, float32));

    std::vector<double> ms;
    if (planned) {
      const Plan plan = compile(model, {x});
      Tensor want = [&] {
        auto test = test_mode();
        auto ng = no_grad();
        return model(x).data();
      }();
      const Tensor got = plan(x).data();
      const double diff = max(abs(got.astype(float64) - want.astype(float64))).item<double>();
      const double scale = max(abs(want.astype(float64))).item<double>();
      const Plan::Stats st = plan.stats();
      std::printf("onnx_speed: plan: %zu recorded, %zu folded, %zu fused, %zu oneDNN ops, %zu reorders, %zu replayed; "
                  "arena %.1f MB, weights %.1f MB; max |planned - unplanned| %.3g (output scale %.3g)\n",
                  st.recorded, st.folded, st.fused, st.onednn, st.reorders, st.replayed, st.arena_bytes / 1e6,
                  st.weight_bytes / 1e6, diff, scale);
      if (summary) std::printf("%s", plan.summary().c_str());
      for (int i = 0; i < warmup + calls; ++i) {
        const double t0 = bench::now_s();
        Variable y = plan(x);
        if (i >= warmup) ms.push_back((bench::now_s() - t0) * 1e3);
      }
    } else if (!train) {
      auto test = test_mode();
      auto ng = no_grad();
      for (int i = 0; i < warmup + calls; ++i) {
        const double t0 = bench::now_s();
        Variable y = model(x);
        if (i >= warmup) ms.push_back((bench::now_s() - t0) * 1e3);
      }
    } else {
      optimizers::SGD opt(0.01);
      opt.setup(model);
      Variable probe = [&] {
        auto test = test_mode();
        auto ng = no_grad();
        return model(x);
      }();
      const bool classifier = probe.ndim() == 2;
      const std::int64_t classes = probe.shape().back();
      Tensor t = (gen.rand({shape[0]}, float64) * static_cast<double>(classes)).astype(int64);
      for (int i = 0; i < warmup + calls; ++i) {
        const double t0 = bench::now_s();
        model.cleargrads();
        Variable y = model(x);
        Variable loss = classifier ? F::softmax_cross_entropy(y, Variable(t)) : F::mean(y * y);
        loss.backward();
        opt.update();
        if (i >= warmup) ms.push_back((bench::now_s() - t0) * 1e3);
      }
    }
    std::sort(ms.begin(), ms.end());
    std::printf("onnx_speed: %s batch %lld threads %d (%s): median %.3f ms, best %.3f ms\n", argv[1],
                static_cast<long long>(batch), threads, planned ? "plan" : train ? "train" : "infer", ms[ms.size() / 2], ms.front());
    bench::print_cpu();
    return 0;
  } catch (const std::exception& e) {
    std::printf("onnx_speed: %s: FAILED: %s\n", argv[1], e.what());
    return 1;
  }
}
