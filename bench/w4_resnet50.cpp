// bench/w4_resnet50.cpp - W4: a ResNet50 training step's forward + backward on the host.
//
//   DeZero's ResNet50 (models.py; inventory §8): conv1 7x7 s2 p3 (with bias) -> BN ->
//   ReLU -> max pooling 3 s2 -> res2..res5 (3, 4, 6, 3 bottlenecks) -> global average
//   pooling -> fc6 Linear(1000), on a (8, 3, 224, 224) float32 batch in train mode;
//   softmax cross entropy on random labels, backward, no optimizer step.
//
// After --warmup steps (the weights are created lazily by the first), --steps steps are
// timed one by one; prints the median and the best. The network is models::ResNet50.
// --profile 1 times instead ProfiledResNet50 below, the same architecture built here from
// L::Conv2d / L::BatchNorm / L::Linear with a timer around every layer call, and adds the
// forward / backward split and the forward's seconds per part (conv, batch_norm, relu,
// add, pooling, linear); for the backward's parts use perf record.
// bench/libtorch/torch_w4_resnet50.cpp is the
// LibTorch twin (the same architecture from torch::nn modules, same printed lines).
//   w4_resnet50 [--device cpu|cuda] [--batch N] [--steps N] [--warmup N] [--profile 1]
//               [--precision fp32|bf16|fp16]
// --precision bf16|fp16 runs the steps under dezero::autocast: the convolutions and fc6 in
// bfloat16 or float16 with float32 sums; batch norm, ReLU, pooling, the loss and every
// buffer float32 (issue 31).
#include <algorithm>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "bench_common.hpp"

using namespace dezero;

namespace {

// Per-part timers for --profile: seconds spent in each kind of forward call.
struct Profile {
  bool on = false;
  std::map<std::string, double> fwd;
  template <class F>
  Variable time(const char* part, F&& f) {
    if (!on) return f();
    double t0 = bench::now_s();
    Variable y = f();
    fwd[part] += bench::now_s() - t0;
    return y;
  }
};
Profile prof;

std::shared_ptr<L::Conv2d> conv(std::int64_t out, std::int64_t k, std::int64_t s, std::int64_t p, bool nobias = true) {
  return std::make_shared<L::Conv2d>(out, k, s, p, nobias);
}

Variable cbr(L::Conv2d& c, L::BatchNorm& b, const Variable& x, bool relu) {
  Variable h = prof.time("conv", [&] { return c(x); });
  h = prof.time("batch_norm", [&] { return b(h); });
  return relu ? prof.time("relu", [&] { return F::relu(h); }) : h;
}

// BottleneckA (shortcut: 1x1 conv + BN, stride on the first 1x1) or BottleneckB.
class Bottleneck : public Model {
 public:
  Bottleneck(std::int64_t mid, std::int64_t out, std::int64_t stride, bool shortcut) : shortcut_(shortcut) {
    conv1 = register_layer("conv1", conv(mid, 1, stride, 0));
    bn1 = register_layer("bn1", std::make_shared<L::BatchNorm>());
    conv2 = register_layer("conv2", conv(mid, 3, 1, 1));
    bn2 = register_layer("bn2", std::make_shared<L::BatchNorm>());
    conv3 = register_layer("conv3", conv(out, 1, 1, 0));
    bn3 = register_layer("bn3", std::make_shared<L::BatchNorm>());
    if (shortcut) {
      conv4 = register_layer("conv4", conv(out, 1, stride, 0));
      bn4 = register_layer("bn4", std::make_shared<L::BatchNorm>());
    }
  }
  Variable forward(const Variable& x) override {
    Variable h = cbr(*conv1, *bn1, x, true);
    h = cbr(*conv2, *bn2, h, true);
    h = cbr(*conv3, *bn3, h, false);
    Variable s = shortcut_ ? cbr(*conv4, *bn4, x, false) : x;
    Variable sum = prof.time("add", [&] { return h + s; });
    return prof.time("relu", [&] { return F::relu(sum); });
  }
  L::LayerRef<L::Conv2d> conv1, conv2, conv3, conv4;
  L::LayerRef<L::BatchNorm> bn1, bn2, bn3, bn4;

 private:
  bool shortcut_;
};

// models::ResNet50 as models/resnet.cpp builds it (BottleneckA with the stride on its first
// 1x1 and a 1x1 conv + BN shortcut, BottleneckB with the identity; other keys), timed per part.
class ProfiledResNet50 : public Model {
 public:
  ProfiledResNet50() {
    conv1 = register_layer("conv1", conv(64, 7, 2, 3, false));
    bn1 = register_layer("bn1", std::make_shared<L::BatchNorm>());
    const std::int64_t spec[4][4] = {{3, 64, 256, 1}, {4, 128, 512, 2}, {6, 256, 1024, 2}, {3, 512, 2048, 2}};
    for (int r = 0; r < 4; ++r)
      for (std::int64_t i = 0; i < spec[r][0]; ++i)
        blocks.push_back(register_layer("res" + std::to_string(r + 2) + "_" + std::to_string(i),
                                        std::make_shared<Bottleneck>(spec[r][1], spec[r][2], i == 0 ? spec[r][3] : 1,
                                                                     i == 0)));
    fc6 = register_layer("fc6", std::make_shared<L::Linear>(1000));
  }
  // (N, 3, 224, 224) -> conv1 (N, 64, 112, 112) -> pool (N, 64, 55, 55) -> res2 (N, 256, 55, 55)
  // -> res3 (N, 512, 28, 28) -> res4 (N, 1024, 14, 14) -> res5 (N, 2048, 7, 7) -> (N, 2048) -> (N, 1000)
  Variable forward(const Variable& x) override {
    Variable h = cbr(*conv1, *bn1, x, true);
    h = prof.time("pooling", [&] { return F::pooling(h, 3, 2); });
    for (auto& b : blocks) h = (*b)(h);
    h = prof.time("pooling", [&] { return F::average_pooling(h, Pair(h.shape()[2], h.shape()[3])); });
    return prof.time("linear", [&] { return (*fc6)(F::reshape(h, {h.shape()[0], -1})); });
  }
  L::LayerRef<L::Conv2d> conv1;
  L::LayerRef<L::BatchNorm> bn1;
  std::vector<L::LayerRef<Bottleneck>> blocks;
  L::LayerRef<L::Linear> fc6;
};

}  // namespace

int main(int argc, char** argv) try {
  Device dev = bench::device_arg(argc, argv);
  const std::int64_t B = std::stoi(bench::arg(argc, argv, "--batch", "8"));
  const int steps = std::stoi(bench::arg(argc, argv, "--steps", "5"));
  const int warmup = std::stoi(bench::arg(argc, argv, "--warmup", "1"));
  const bool profile = bench::arg(argc, argv, "--profile", "0") != std::string("0");
  const std::string precision = bench::arg(argc, argv, "--precision", "fp32");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16")
    throw ValueError("--precision must be fp32, bf16 or fp16, got " + precision);
  auto amp = autocast(precision == "bf16" ? bfloat16 : precision == "fp16" ? float16 : float32);
  random::seed(0);
  std::unique_ptr<Model> net;
  if (profile) net = std::make_unique<ProfiledResNet50>();
  else net = std::make_unique<models::ResNet50>();
  Model& model = *net;
  Tensor x = random::rand({B, 3, 224, 224}, float32).to(dev);
  Tensor t = random::randint(0, 1000, {B}).to(dev);
  std::cout << "W4: ResNet50 forward + softmax cross entropy + backward, batch " << B
            << " x 3 x 224 x 224 float32, train mode, device " << dev << ", precision " << precision
            << (profile ? " (the profiled twin of models::ResNet50)" : "") << "\n";
  std::vector<double> times;
  double loss = 0, fwd_total = 0, bwd_total = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    prof.on = profile && i >= warmup;
    double t0 = bench::now_s();
    model.cleargrads();
    Variable l = F::softmax_cross_entropy(model(x), t);
    double t1 = bench::now_s();
    l.backward();
    loss = l.data().item<double>();  // waits for a GPU
    double t2 = bench::now_s();
    if (i >= warmup) {
      times.push_back(t2 - t0);
      fwd_total += t1 - t0;
      bwd_total += t2 - t1;
    }
  }
  std::sort(times.begin(), times.end());
  std::cout << "step: median " << times[times.size() / 2] << " s/step, best " << times.front() << " s over "
            << steps << " steps, loss " << loss << "\n";
  if (profile) {
    std::cout << "profile (mean per step): forward " << fwd_total / steps << " s, backward " << bwd_total / steps
              << " s\n";
    for (auto& [part, secs] : prof.fwd) std::cout << "  forward " << part << ": " << secs / steps << " s\n";
  }
  std::cout << "peak RSS: " << bench::peak_rss_mb() << " MB\n";
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::cerr << "w4_resnet50: " << e.what() << "\n";
  return 1;
}
