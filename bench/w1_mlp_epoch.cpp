// bench/w1_mlp_epoch.cpp - W1: one epoch of the MNIST MLP (784-1000-1000-10, ReLU)
// with SGD (or Adam), batch 100, 60,000 images, softmax cross entropy.
//
// Prints the epoch's seconds, the achieved GFLOP/s against the nominal FLOP count
// 6 x 60000 x (784x1000 + 1000x1000 + 1000x10) (forward + both backward GEMMs of
// every layer; we skip the input gradient of the first layer, so the real work is
// ~15% less), and the peak RSS. The images are synthetic (uniform [0,1)) so the
// benchmark needs no data files; shuffling and batch gathering are done as in training.
// --optimizer adam uses DeZero's Adam defaults (alpha 0.001, betas 0.9 / 0.999, eps 1e-8)
// instead of SGD 0.01; --weight-decay RATE adds the WeightDecay hook (g += RATE * W
// before the update). The "w1adam" workload of compare_libtorch.py runs Adam + 1e-4.
//   w1_mlp_epoch [--device cpu|cuda] [--epochs N] [--optimizer sgd|adam] [--weight-decay RATE]
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "bench_common.hpp"

using namespace dezero;

int main(int argc, char** argv) try {
  Device dev = bench::device_arg(argc, argv);
  int epochs = std::stoi(bench::arg(argc, argv, "--epochs", "1"));
  const std::int64_t N = 60000, D = 784, B = 100;
  random::seed(0);
  Tensor X = random::rand({N, D}, float32).to(dev);
  Tensor T = random::randint(0, 10, {N}, int64).to(dev);
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
  std::cout << "W1: MLP 784-1000-1000-10 ReLU, " << opt_desc << ", batch " << B << ", " << N << " images, device "
            << dev << "\n";
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
  std::cout << "peak RSS: " << bench::peak_rss_mb() << " MB\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "w1_mlp_epoch: " << e.what() << "\n";
  return 1;
}
