// bench/zoo_parity.cpp - one model of PyTorch's model zoo, exported by PyTorch, imported with
// onnx::OnnxModel, against PyTorch's own numbers (issue 47's first target: every torchvision
// classifier imports, its outputs and gradients within float32 rounding of PyTorch's).
//
//   build/bench/zoo_parity MODEL.onnx DATA.npz [--threads N] [--float64 1]
//
// DATA.npz (written by bench/zoo_parity.py with PyTorch): x (the input), y (PyTorch's output in
// eval mode), w (a random weight of y's shape), gx (d sum(y * w) / dx) and g/<initializer> (the
// same for each parameter PyTorch wrote under its state_dict name), all float32, and ref/y,
// ref/gx, ref/g/<initializer>: the same computed by PyTorch in float64. The model runs in test
// mode (BatchNorm's running statistics, as PyTorch's eval()). Each array's error is
// rel = max |a - ref| / max |ref|, for ours and for PyTorch's float32; it prints one line:
//   <file>: y rel E (PyTorch E), gx rel E (PyTorch E), params K/N worst rel E (PyTorch E, <key>),
//   forward S s, backward S s
// where the worst parameter is the one furthest from the reference relative to PyTorch's error.
// --float64 1 runs the model in float64 (MODEL.onnx then is zoo_parity.py's float64 copy of the file;
// every parameter and statistic is cast, x too) and prints its errors against the float64 reference alone: the same arithmetic as PyTorch's float64 agrees to
// ~1e-12, which separates a wrong formula from float32 rounding (a ReLU or max pooling input near
// a kink can fall on the other side in float32, in PyTorch's float32 as in ours).
// Exit status 0 when every array is within float32 rounding: no further from the reference than
// 10x PyTorch's error, or than issue 30's bounds (the output 1e-5, a gradient 1e-4).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <dezero/dezero.hpp>
#include <dezero/npz.hpp>
#include <dezero/onnx.hpp>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

namespace {

double rel_err(const Tensor& a, const Tensor& b) {
  if (!a.defined() || a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  const std::vector<double> av = a.to_cpu().to_vector<double>(), bv = b.to_cpu().to_vector<double>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(av[i] - bv[i]));
    scale = std::max(scale, std::abs(bv[i]));
  }
  return std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff / std::max(scale, 1e-12);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: zoo_parity MODEL.onnx DATA.npz [--threads N]\n");
    return 2;
  }
  omp_set_num_threads(std::stoi(bench::arg(argc, argv, "--threads", "1")));
  try {
    utils::set_max_npz_bytes(std::int64_t{1} << 36);  // our own arrays: a large model's exceed 2 GiB
    std::map<std::string, Tensor> data;
    for (auto& [k, t] : utils::load_npz(argv[2])) data.emplace(k, t);
    onnx::OnnxModel model(argv[1]);
    auto test = test_mode();
    const bool f64 = bench::arg(argc, argv, "--float64", "0") == std::string("1");
    if (f64)
      for (auto& [key, p] : model.named_params()) p.set_data(p.data().astype(float64));

    Variable x(f64 ? data.at("x").astype(float64) : data.at("x"));
    double t0 = bench::now_s();
    Variable y = model(x);
    const double fwd = bench::now_s() - t0;
    // ours and PyTorch's float32 against PyTorch's float64; within float32 rounding: no further
    // than 10x PyTorch's own error, or than issue 30's bounds (outputs 1e-5, gradients 1e-4)
    auto within = [](double ours, double torch, double floor) { return ours <= std::max(10.0 * torch, floor); };
    const double ey = rel_err(y.data(), data.at("ref/y")), ty = rel_err(data.at("y"), data.at("ref/y"));
    t0 = bench::now_s();
    F::sum(y * Variable(data.at("w"))).backward();
    const double bwd = bench::now_s() - t0;
    const double egx = x.has_grad() ? rel_err(x.grad().data(), data.at("ref/gx")) : INFINITY;
    if (f64) {
      double worst = 0;
      for (auto& [key, p] : model.named_params()) {
        auto it = data.find("ref/g/" + key);
        if (it != data.end()) worst = std::max(worst, p.has_grad() ? rel_err(p.grad().data(), it->second) : INFINITY);
      }
      std::printf("%s: float64: y rel %.1e, gx rel %.1e, parameters' worst rel %.1e\n", argv[1], ey, egx, worst);
      return ey <= 1e-9 && egx <= 1e-9 && worst <= 1e-9 ? 0 : 1;
    }
    const double tgx = rel_err(data.at("gx"), data.at("ref/gx"));
    bool ok = within(ey, ty, 1e-5) && within(egx, tgx, 1e-4);

    int compared = 0, total = 0;
    double worst = -1, worst_e = 0, worst_t = 0;
    std::string worst_key = "-";
    for (auto& [key, p] : model.named_params()) {
      auto it = data.find("ref/g/" + key);
      if (it == data.end()) continue;  // a statistic, or an initializer PyTorch folded
      ++total;
      const double e = p.has_grad() ? rel_err(p.grad().data(), it->second) : INFINITY;
      const double t = rel_err(data.at("g/" + key), it->second);
      compared += p.has_grad();
      ok = ok && within(e, t, 1e-4);
      const double score = e / std::max(t, 1e-6);
      if (!(score <= worst)) {
        worst = score;
        worst_e = e;
        worst_t = t;
        worst_key = p.has_grad() ? key : key + ", no gradient";
      }
    }
    std::printf("%s: y rel %.1e (PyTorch %.1e), gx rel %.1e (PyTorch %.1e), params %d/%d worst rel %.1e (PyTorch "
                "%.1e, %s), forward %.3f s, backward %.3f s\n",
                argv[1], ey, ty, egx, tgx, compared, total, worst_e, worst_t, worst_key.c_str(), fwd, bwd);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("%s: FAILED: %s\n", argv[1], e.what());
    return 1;
  }
}
