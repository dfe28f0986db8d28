// bench/w1_mlp_epoch.cpp - W1: one epoch of the MNIST MLP (784-1000-1000-10, ReLU)
// with SGD (or Adam), batch 100, 60,000 images, softmax cross entropy.
//
// Prints the epoch's seconds, the achieved GFLOP/s against the nominal FLOP count
// 6 x 60000 x (784x1000 + 1000x1000 + 1000x10) (forward + both backward GEMMs of
// every layer; we skip the input gradient of the first layer, so the real work is
// ~15% less), and the peak RSS. The images are Fashion-MNIST's 60,000 training images
// (/255, float32; Debian's dataset-fashion-mnist, or --data DIR as for datasets::FashionMNIST),
// what a user trains on; after the epochs the test accuracy on its 10,000 test images.
// --dataset synthetic uses uniform [0,1) images with random labels instead (no data
// files needed); label it as such when quoting it: on random labels LibTorch's Adam runs
// into subnormal numbers (bench/README.md, "W1 on real data") and the comparison says
// nothing about training. Shuffling and batch gathering are done as in training.
// --optimizer adam uses DeZero's Adam defaults (alpha 0.001, betas 0.9 / 0.999, eps 1e-8)
// instead of SGD 0.01; --weight-decay RATE adds the WeightDecay hook (g += RATE * W
// before the update). The "w1adam" workload of compare_libtorch.py runs Adam + 1e-4.
//   w1_mlp_epoch [--device cpu|cuda] [--epochs N] [--optimizer sgd|adam] [--weight-decay RATE]
//                [--dataset fashion-mnist|synthetic] [--data DIR] [--precision fp32|bf16|fp16]
// --precision bf16|fp16 trains (and tests) under dezero::autocast: the products in bfloat16
// or float16 with float32 sums, everything else float32 (issue 31).
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

#include "bench_common.hpp"

using namespace dezero;

int main(int argc, char** argv) try {
  Device dev = bench::device_arg(argc, argv);
  int epochs = std::stoi(bench::arg(argc, argv, "--epochs", "1"));
  const std::int64_t N = 60000, D = 784, B = 100;
  const std::string dataset = bench::arg(argc, argv, "--dataset", "fashion-mnist");
  const bool synthetic = dataset == "synthetic";
  if (!synthetic && dataset != "fashion-mnist")
    throw ValueError("--dataset must be fashion-mnist or synthetic, got " + dataset);
  random::seed(0);
  Tensor X, T, X_test, T_test;
  if (synthetic) {
    X = random::rand({N, D}, float32).to(dev);
    T = random::randint(0, 10, {N}, int64).to(dev);
  } else {
    const std::string dir = bench::arg(argc, argv, "--data", "");
    auto scale = transforms::Compose({transforms::ToFloat(), transforms::Normalize(0.0, 255.0)});
    datasets::FashionMNIST train(true, scale, transforms::Transform{}, dir);
    datasets::FashionMNIST test(false, scale, transforms::Transform{}, dir);
    X = train.data().reshape({N, D}).to(dev);  // (60000, 1, 28, 28) -> (60000, 784)
    T = train.label().to(dev);
    X_test = test.data().reshape({test.size(), D}).to(dev);
    T_test = test.label().to(dev);
  }
  const std::string precision = bench::arg(argc, argv, "--precision", "fp32");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16")
    throw ValueError("--precision must be fp32, bf16 or fp16, got " + precision);
  auto amp = autocast(precision == "bf16" ? bfloat16 : precision == "fp16" ? float16 : float32);
  const std::string opt_name = bench::arg(argc, argv, "--optimizer", "sgd");
  const double decay = std::stod(bench::arg(argc, argv, "--weight-decay", "0"));
  models::MLP model({1000, 1000, 10}, F::relu);
  std::unique_ptr<optimizers::Optimizer> opt_owner;
  if (opt_name == "sgd") opt_owner = std::make_unique<optimizers::SGD>(0.01);
  else if (opt_name == "adam") opt_owner = std::make_unique<optimizers::Adam>();
  else throw ValueError("--optimizer must be sgd or adam, got " + opt_name);
  optimizers::Optimizer& opt = *opt_owner;
  opt.setup(model);
  if (decay != 0) opt.add_hook(optimizers::WeightDecay(decay));
  const std::string opt_desc = (opt_name == "sgd" ? std::string("SGD") : std::string("Adam")) +
                               (decay != 0 ? " + WeightDecay " + bench::arg(argc, argv, "--weight-decay", "0") : "");
  model(X[Slice(0, B)]);  // create the lazily-initialised weights
  if (!dev.is_cpu()) model.to(dev);
  const double flops = 6.0 * N * (784.0 * 1000 + 1000.0 * 1000 + 1000.0 * 10);
  std::cout << "W1: MLP 784-1000-1000-10 ReLU, " << opt_desc << ", batch " << B << ", " << N
            << (synthetic ? " synthetic images (random labels)" : " Fashion-MNIST images") << ", device " << dev
            << ", precision " << precision << "\n";
  for (int e = 0; e < epochs; ++e) {
    double t0 = bench::now_s();
    Tensor perm = random::permutation(N).to(dev);
    double last = 0;
    for (std::int64_t i = 0; i < N / B; ++i) {
      Tensor idx = perm[Slice(i * B, (i + 1) * B)];
      Tensor x = take(X, idx), t = take(T, idx);
      Variable loss = F::softmax_cross_entropy(model(x), t);
      model.cleargrads();
      loss.backward();
      opt.update();
      if (i == N / B - 1) last = loss.data().item<double>();  // the only host read: ends the epoch
    }
    double secs = bench::now_s() - t0;
    std::cout << "epoch " << e + 1 << ": " << secs << " s, " << flops / secs / 1e9 << " GFLOP/s (nominal), last loss "
              << last << "\n";
  }
  if (!synthetic) {  // outside the timed epochs
    auto g = no_grad();
    double correct = 0;
    const std::int64_t M = X_test.shape()[0];
    for (std::int64_t i = 0; i < M; i += 1000) {
      const std::int64_t j = std::min(M, i + 1000);
      correct += F::accuracy(model(X_test[Slice(i, j)]), T_test[Slice(i, j)]).data().item<double>() * double(j - i);
    }
    std::cout << "test accuracy: " << correct / double(M) << "\n";
  }
  std::cout << "peak RSS: " << bench::peak_rss_mb() << " MB\n";
  bench::print_cpu();
  return 0;
} catch (const std::exception& e) {
  std::cerr << "w1_mlp_epoch: " << e.what() << "\n";
  return 1;
}
