// bench/zoo_parity.cpp - one model of PyTorch's model zoo, exported by PyTorch, imported with
// onnx::OnnxModel, against PyTorch's own numbers (issue 47's first target: every torchvision
// classifier imports, its outputs and gradients within float32 rounding of PyTorch's).
//
//   build/bench/zoo_parity MODEL.onnx DATA.npz [--threads N]
//
// DATA.npz (written by bench/zoo_parity.py with PyTorch): x (the input), y (PyTorch's output in
// eval mode), w (a random weight of y's shape), gx (d sum(y * w) / dx) and g/<initializer> (the
// same for each parameter PyTorch wrote under its state_dict name). The model runs in test mode
// (BatchNorm's running statistics, as PyTorch's eval()); it prints one line:
//   <file>: y rel E, gx rel E, params K/N max rel E (<worst>), forward S s, backward S s
// rel: max |ours - PyTorch| / max |PyTorch| over the array. Exit status 0 when y <= 1e-4 and every
// gradient <= 1e-3 (deep models sum many float32 terms; the figures are printed either way).
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
    std::map<std::string, Tensor> data;
    for (auto& [k, t] : utils::load_npz(argv[2])) data.emplace(k, t);
    onnx::OnnxModel model(argv[1]);
    auto test = test_mode();

    Variable x(data.at("x"));
    double t0 = bench::now_s();
    Variable y = model(x);
    const double fwd = bench::now_s() - t0;
    const double ey = rel_err(y.data(), data.at("y"));
    t0 = bench::now_s();
    F::sum(y * Variable(data.at("w"))).backward();
    const double bwd = bench::now_s() - t0;
    const double egx = x.has_grad() ? rel_err(x.grad().data(), data.at("gx")) : INFINITY;

    int compared = 0, total = 0;
    double worst = 0;
    std::string worst_key = "-";
    for (auto& [key, p] : model.named_params()) {
      auto it = data.find("g/" + key);
      if (it == data.end()) continue;  // a statistic, or an initializer PyTorch folded
      ++total;
      if (!p.has_grad()) {
        worst = INFINITY;
        worst_key = key + " (no gradient)";
        continue;
      }
      const double e = rel_err(p.grad().data(), it->second);
      ++compared;
      if (!(e <= worst)) {
        worst = e;
        worst_key = key;
      }
    }
    std::printf("%s: y rel %.2e, gx rel %.2e, params %d/%d max rel %.2e (%s), forward %.3f s, backward %.3f s\n",
                argv[1], ey, egx, compared, total, worst, worst_key.c_str(), fwd, bwd);
    return ey <= 1e-4 && egx <= 1e-3 && worst <= 1e-3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("%s: FAILED: %s\n", argv[1], e.what());
    return 1;
  }
}
