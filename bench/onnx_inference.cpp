// bench/onnx_inference.cpp - what running an imported ONNX model costs next to the same model
// built with dezero's layers (issue 30's target: the import adds at most 10%).
//
// The MNIST MLP 784-100-10 with ReLU (models::MLP({100, 10}, F::relu): two L::Linear) is exported
// with onnx::export_model (a symbolic batch) and read back with onnx::OnnxModel; both are timed
// on float32 inputs under no_grad (inference: no graph is recorded) at batch 1 and batch 100, on
// one thread unless --threads says otherwise. The two models alternate: each round times `calls`
// calls of the native model and then as many of the imported one (the order flips every round,
// so both see the same machine load); the figures are medians over the rounds, and the ratio is
// the median of the per-round ratios imported / native.
//
//   build/bench/onnx_inference [--rounds N] [--threads N] [--keep FILE.onnx] [--also FILE.onnx]
//
// --rounds (default 200) per batch size; --keep writes the exported model to FILE.onnx (else it
// goes to a temporary file that is removed); --also times another model of the same shapes
// ((N, 784) -> (N, 10), its own weights) against the native one too, e.g. PyTorch's export of the
// same MLP, tests/data/onnx/mlp.onnx (Gemm nodes where ours writes MatMul + Add).
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/onnx.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds for `calls` forward calls of `model` on `x`.
double time_calls(Model& model, const Variable& x, int calls) {
  const double t0 = bench::now_s();
  for (int i = 0; i < calls; ++i) {
    Variable y = model(x);
    (void)y;
  }
  return bench::now_s() - t0;
}

struct Result {
  double native_us, imported_us, ratio;
  int calls;
};

Result measure(Model& native, Model& imported, const Variable& x, int rounds) {
  // Warm-up (allocator caches, lazily built kernels), then `calls` such that a round of one
  // model takes about 2 ms.
  for (int i = 0; i < 50; ++i) time_calls(native, x, 1), time_calls(imported, x, 1);
  double one = 1;
  for (int i = 0; i < 5; ++i) one = std::min(one, time_calls(native, x, 10) / 10);
  const int calls = std::max(1, static_cast<int>(2e-3 / std::max(one, 1e-9)));
  std::vector<double> tn, ti, ratio;
  for (int r = 0; r < rounds; ++r) {
    double a, b;
    if (r % 2 == 0) {
      a = time_calls(native, x, calls);
      b = time_calls(imported, x, calls);
    } else {
      b = time_calls(imported, x, calls);
      a = time_calls(native, x, calls);
    }
    tn.push_back(a / calls * 1e6);
    ti.push_back(b / calls * 1e6);
    ratio.push_back(b / a);
  }
  return {median(tn), median(ti), median(ratio), calls};
}

// "5 nodes (Add x2, MatMul x2, Relu x1)"
std::string op_counts(const onnx::OnnxModel& m) {
  std::map<std::string, int> ops;
  for (const auto& op : m.op_types()) ++ops[op];
  std::string list;
  for (const auto& [op, n] : ops) list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(n);
  return std::to_string(m.op_types().size()) + " nodes (" + list + ")";
}

}  // namespace

int main(int argc, char** argv) try {
  const int rounds = std::stoi(bench::arg(argc, argv, "--rounds", "200"));
  const int threads = std::stoi(bench::arg(argc, argv, "--threads", "1"));
  const std::string keep = bench::arg(argc, argv, "--keep", "");
  const std::string also = bench::arg(argc, argv, "--also", "");
  if (rounds < 1 || threads < 1) throw ValueError("--rounds and --threads need integers >= 1");
  omp_set_num_threads(threads);

  // --- the two models -----------------------------------------------------------------------------
  random::seed(0);
  models::MLP native({100, 10}, F::relu);
  const Variable x1(random::randn({1, 784}, float32));
  native(x1);  // the Linear layers take their input size from the first call
  const std::string path = !keep.empty() ? keep
                                         : (std::filesystem::temp_directory_path() /
                                            ("dezero_onnx_inference_" + std::to_string(getpid()) + ".onnx"))
                                               .string();
  onnx::ExportOptions opts;
  opts.dynamic_batch = true;
  onnx::export_model(native, {x1}, path, opts);
  onnx::OnnxModel imported(path);
  const auto bytes = std::filesystem::file_size(path);
  if (keep.empty()) std::filesystem::remove(path);

  std::unique_ptr<onnx::OnnxModel> other;
  if (!also.empty()) other = std::make_unique<onnx::OnnxModel>(also);

  std::printf("onnx_inference: MLP 784-100-10 (ReLU), float32, no_grad, %d thread(s) (omp_get_max_threads %d)\n",
              threads, omp_get_max_threads());
  std::printf("exported and imported: %llu bytes, %s\n", static_cast<unsigned long long>(bytes),
              op_counts(imported).c_str());
  if (other) std::printf("--also %s: %s\n", also.c_str(), op_counts(*other).c_str());

  // --- the same outputs, then the times -----------------------------------------------------------
  auto g = no_grad();
  for (const std::int64_t batch : {1, 100}) {
    const Variable x(random::randn({batch, 784}, float32));
    const double diff = abs(native(x).data() - imported(x).data()).max().item<double>();
    const Result r = measure(native, imported, x, rounds);
    std::printf("batch %3lld: native %8.2f us/call, imported %8.2f us/call, import/native %.3f "
                "(max |difference| %.2g; medians of %d rounds of %d calls)\n",
                static_cast<long long>(batch), r.native_us, r.imported_us, r.ratio, diff, rounds, r.calls);
    if (other) {
      const Result o = measure(native, *other, x, rounds);
      std::printf("           native %8.2f us/call, --also   %8.2f us/call, also/native   %.3f\n", o.native_us,
                  o.imported_us, o.ratio);
    }
    std::fflush(stdout);
  }
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "onnx_inference: %s\n", e.what());
  return 1;
}
