// bench/libtorch/torch_w4_resnet50.cpp - W4 in LibTorch: the twin of bench/w4_resnet50.cpp.
// DeZero's ResNet50 (models.py, inventory §8) from torch::nn modules, no torchvision:
//   conv1 7x7 s2 p3 (with bias, 3->64) -> BN -> ReLU -> max pool 3 s2 (no padding)
//   -> res2..res5 = BuildingBlocks (in, mid, out, stride) (64,64,256,1) x3,
//      (256,128,512,2) x4, (512,256,1024,2) x6, (1024,512,2048,2) x3
//   -> global average pool (7x7) -> Linear(2048 -> 1000).
// BottleneckA: 1x1 (stride here) -> BN -> ReLU -> 3x3 p1 -> BN -> ReLU -> 1x1 -> BN, plus
// a shortcut 1x1 conv (stride) -> BN, relu(h1 + h2); BottleneckB: the same without the
// stride and with the identity shortcut. Convolutions other than conv1 have no bias.
// BatchNorm2d(eps 2e-5, momentum 0.1 = DeZero's decay 0.9), train mode.
// One step = forward + softmax cross entropy on random labels + backward (no
// optimizer step) on a (8, 3, 224, 224) float32 batch; after --warmup steps, --steps
// steps are timed one by one and the median printed. Same printed lines as ours.
//   torch_w4_resnet50 [--batch N] [--steps N] [--warmup N] [--precision fp32|bf16]
// --precision bf16: LibTorch's CPU autocast to bfloat16 around the forward and the loss
// (the convolutions and the linear layer in bfloat16, batch norm in float32, as PyTorch's
// CPU autocast lists say); the twin of ours under dezero::autocast.
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <vector>

#include "torch_common.hpp"

namespace {

namespace nn = torch::nn;

nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s, std::int64_t p, bool bias) {
  nn::Conv2d c(nn::Conv2dOptions(in, out, k).stride(s).padding(p).bias(bias));
  tbench::dezero_init(c->weight, c->bias, in * k * k);
  return c;
}
nn::BatchNorm2d bn(std::int64_t c) { return nn::BatchNorm2d(nn::BatchNorm2dOptions(c).eps(2e-5).momentum(0.1)); }

// BottleneckA (shortcut = true: conv + BN on the shortcut, stride on the first 1x1)
// or BottleneckB (identity shortcut, stride 1).
struct Bottleneck : nn::Module {
  nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, conv4{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr}, bn4{nullptr};
  bool shortcut;
  Bottleneck(std::int64_t in, std::int64_t mid, std::int64_t out, std::int64_t stride, bool sc) : shortcut(sc) {
    conv1 = register_module("conv1", conv(in, mid, 1, stride, 0, false));
    bn1 = register_module("bn1", bn(mid));
    conv2 = register_module("conv2", conv(mid, mid, 3, 1, 1, false));
    bn2 = register_module("bn2", bn(mid));
    conv3 = register_module("conv3", conv(mid, out, 1, 1, 0, false));
    bn3 = register_module("bn3", bn(out));
    if (shortcut) {
      conv4 = register_module("conv4", conv(in, out, 1, stride, 0, false));
      bn4 = register_module("bn4", bn(out));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::relu(bn1->forward(conv1->forward(x)));
    h = torch::relu(bn2->forward(conv2->forward(h)));
    h = bn3->forward(conv3->forward(h));
    return torch::relu(h + (shortcut ? bn4->forward(conv4->forward(x)) : x));
  }
};

struct ResNet50 : nn::Module {
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  std::vector<std::shared_ptr<Bottleneck>> blocks;
  nn::Linear fc6{nullptr};
  ResNet50() {
    conv1 = register_module("conv1", conv(3, 64, 7, 2, 3, true));
    bn1 = register_module("bn1", bn(64));
    const std::int64_t spec[4][5] = {{3, 64, 64, 256, 1}, {4, 256, 128, 512, 2}, {6, 512, 256, 1024, 2},
                                     {3, 1024, 512, 2048, 2}};
    for (int r = 0; r < 4; ++r) {
      const auto& s = spec[r];
      for (std::int64_t i = 0; i < s[0]; ++i) {
        auto b = i == 0 ? std::make_shared<Bottleneck>(s[1], s[2], s[3], s[4], true)
                        : std::make_shared<Bottleneck>(s[3], s[2], s[3], 1, false);
        blocks.push_back(register_module("res" + std::to_string(r + 2) + "_" + std::to_string(i), b));
      }
    }
    fc6 = register_module("fc6", nn::Linear(2048, 1000));
    tbench::dezero_init(fc6->weight, fc6->bias, 2048);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(bn1->forward(conv1->forward(x))), 3, 2);
    for (auto& b : blocks) x = b->forward(x);
    x = torch::avg_pool2d(x, {x.size(2), x.size(3)});
    return fc6->forward(x.reshape({x.size(0), -1}));
  }
};

}  // namespace

int main(int argc, char** argv) try {
  const std::int64_t B = std::stoi(tbench::arg(argc, argv, "--batch", "8"));
  const int steps = std::stoi(tbench::arg(argc, argv, "--steps", "5"));
  const int warmup = std::stoi(tbench::arg(argc, argv, "--warmup", "1"));
  const std::string precision = tbench::arg(argc, argv, "--precision", "fp32");
  if (precision != "fp32" && precision != "bf16") throw std::runtime_error("--precision must be fp32 or bf16");
  const bool amp = precision == "bf16";
  if (amp) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  tbench::setup("W4");
  torch::manual_seed(0);
  auto model = std::make_shared<ResNet50>();
  model->train();
  torch::Tensor x = torch::rand({B, 3, 224, 224});
  torch::Tensor t = torch::randint(0, 1000, {B}, torch::kInt64);
  std::cout << "W4: ResNet50 forward + softmax cross entropy + backward, batch " << B
            << " x 3 x 224 x 224 float32, train mode, device cpu (LibTorch), precision " << precision << "\n";
  std::vector<double> times;
  double loss = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    double t0 = tbench::now_s();
    model->zero_grad();
    at::autocast::set_cpu_enabled(amp);
    torch::Tensor l = torch::nn::functional::cross_entropy(model->forward(x), t);
    at::autocast::set_cpu_enabled(false);
    if (amp) at::autocast::clear_cache();  // what leaving torch.autocast's scope does
    l.backward();
    loss = l.item<double>();
    if (i >= warmup) times.push_back(tbench::now_s() - t0);
  }
  std::sort(times.begin(), times.end());
  std::cout << "step: median " << times[times.size() / 2] << " s/step, best " << times.front() << " s over "
            << steps << " steps, loss " << loss << "\n";
  std::cout << "peak RSS: " << tbench::peak_rss_mb() << " MB\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "torch_w4_resnet50: " << e.what() << "\n";
  return 1;
}
