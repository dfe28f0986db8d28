// bench/w2_cnn.cpp - W2: the small CNN of the anchors on the host (or a GPU).
//
//   conv3x3(1->16, pad 1) + ReLU + max pooling 2, conv3x3(16->32, pad 1) + ReLU + max
//   pooling 2, Linear(1568 -> 10); softmax cross entropy, SGD lr 0.1, batch 100, one epoch
//   over the first 10,000 Fashion-MNIST training images (/255, float32), shuffled.
//
// Prints the loop's seconds and the convolutions' rate over it: their FLOPs per epoch
// are 2 x conv1 + 3 x conv2 forward FLOPs (conv1 needs its forward and its weight
// gradient, its input gradient is never computed; conv2 needs all three), where a
// forward is 2 x N x OC x OH x OW x C x KH x KW: 58.7 GFLOP for 10,000 images. Then it
// times the two convolutions alone (the same forward + backward, batch 100) for their
// achieved GFLOP/s. bench/libtorch/torch_w2_cnn.cpp is the LibTorch twin.
//   w2_cnn [--device cpu|cuda] [--data DIR] [--epochs N] [--reps N] [--precision fp32|bf16|fp16]
//   DIR as for datasets::FashionMNIST (default: the cache, then Debian's
//   /usr/share/datasets/fashion-mnist)
// --precision bf16|fp16 runs the loop and the convolutions alone under dezero::autocast: the
// convolutions and the linear layer in bfloat16 or float16 with float32 sums, everything
// else float32 (issue 31).
#include <algorithm>
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>
#include <iostream>

#include "bench_common.hpp"

using namespace dezero;

namespace {

double conv_flops(double n, double c, double oc, double hw, double k) { return 2.0 * n * oc * hw * hw * c * k * k; }

class Net : public Model {
 public:
  Net() {
    c1 = register_layer("c1", std::make_shared<L::Conv2d>(16, 3, 1, 1));
    c2 = register_layer("c2", std::make_shared<L::Conv2d>(32, 3, 1, 1));
    l = register_layer("l", std::make_shared<L::Linear>(10));
  }
  // x: (N, 1, 28, 28) -> (N, 16, 14, 14) -> (N, 32, 7, 7) -> (N, 1568) -> (N, 10)
  Variable forward(const Variable& x) override {
    Variable h = F::pooling(F::relu(c1(x)), 2, 2);
    h = F::pooling(F::relu(c2(h)), 2, 2);
    return l(F::reshape(h, {h.shape()[0], -1}));
  }
  L::LayerRef<L::Conv2d> c1, c2;
  L::LayerRef<L::Linear> l;
};

}  // namespace

int main(int argc, char** argv) try {
  Device dev = bench::device_arg(argc, argv);
  std::string dir = bench::arg(argc, argv, "--data", "");
  int epochs = std::stoi(bench::arg(argc, argv, "--epochs", "1"));
  int reps = std::stoi(bench::arg(argc, argv, "--reps", "20"));
  const std::string precision = bench::arg(argc, argv, "--precision", "fp32");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16")
    throw ValueError("--precision must be fp32, bf16 or fp16, got " + precision);
  auto amp = autocast(precision == "bf16" ? bfloat16 : precision == "fp16" ? float16 : float32);
  const std::int64_t N = 10000, B = 100;
  datasets::FashionMNIST train(true, transforms::Compose({transforms::ToFloat(), transforms::Normalize(0.0, 255.0)}),
                               transforms::Transform{}, dir);
  Tensor X = train.data()[Slice(0, N)].copy().to(dev);  // (N, 1, 28, 28) float32
  Tensor T = train.label()[Slice(0, N)].copy().to(dev);
  random::seed(0);
  Net model;
  optimizers::SGD opt(0.1);
  opt.setup(model);
  model(X[Slice(0, B)]);  // create the lazily-initialised weights
  const double f1 = conv_flops(N, 1, 16, 28, 3), f2 = conv_flops(N, 16, 32, 14, 3);
  const double train_flops = 2 * f1 + 3 * f2;
  std::cout << "W2: CNN conv3x3(1->16)-pool-conv3x3(16->32)-pool-linear, SGD 0.1, batch " << B << ", " << N
            << " Fashion-MNIST images, device " << dev << ", precision " << precision << "\n";
  for (int e = 0; e < epochs; ++e) {
    double t0 = bench::now_s();
    Tensor perm = random::permutation(N).to(dev);
    double last = 0;
    for (std::int64_t i = 0; i < N / B; ++i) {
      Tensor idx = perm[Slice(i * B, (i + 1) * B)];
      Variable loss = F::softmax_cross_entropy(model(take(X, idx)), take(T, idx));
      model.cleargrads();
      loss.backward();
      opt.update();
      if (i == N / B - 1) last = loss.data().item<double>();  // the only host read: ends the epoch
    }
    double secs = bench::now_s() - t0;
    std::cout << "epoch " << e + 1 << ": " << secs << " s, convolutions " << train_flops / 1e9 << " GFLOP = "
              << train_flops / secs / 1e9 << " GFLOP/s over the loop, last loss " << last << "\n";
  }

  // The convolutions alone: conv1 forward + weight/bias gradient, conv2 forward + weight/bias
  // and input gradients, on a batch of 100, reps times; the best of three rounds.
  auto conv_alone = [&](L::Conv2d& conv, const Tensor& xdata, bool input_grad, double flops_per_batch,
                        const char* name) {
    Variable x(xdata);
    x.set_requires_grad(input_grad);
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      double t0 = bench::now_s();
      for (int r = 0; r < reps; ++r) {
        Variable y = F::sum(conv(x));
        conv.cleargrads();
        x.cleargrad();
        y.backward();
        (void)conv.W.grad().data().sum().item<double>();  // waits for a GPU
      }
      best = std::min(best, (bench::now_s() - t0) / reps);
    }
    std::cout << name << ": " << best * 1e3 << " ms per forward + backward, " << flops_per_batch / best / 1e9
              << " GFLOP/s\n";
  };
  conv_alone(*model.c1, X[Slice(0, B)].copy(), false, 2 * conv_flops(B, 1, 16, 28, 3), "conv1 1->16 28x28");
  conv_alone(*model.c2, random::rand({B, 16, 14, 14}, float32).to(dev), true, 3 * conv_flops(B, 16, 32, 14, 3),
             "conv2 16->32 14x14");
  std::cout << "peak RSS: " << bench::peak_rss_mb() << " MB\n";
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::cerr << "w2_cnn: " << e.what() << "\n";
  return 1;
}
