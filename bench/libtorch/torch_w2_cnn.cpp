// bench/libtorch/torch_w2_cnn.cpp - W2 in LibTorch: the twin of bench/w2_cnn.cpp.
// conv3x3(1->16, pad 1) + ReLU + max pooling 2, conv3x3(16->32, pad 1) + ReLU + max
// pooling 2, Linear(1568 -> 10); SGD lr 0.1, batch 100, one epoch over the first 10,000
// Fashion-MNIST training images (/255, float32), shuffled; softmax cross entropy.
// Then the two convolutions alone (forward + the backward the training loop needs),
// batch 100, for their achieved GFLOP/s. Same FLOP counts and printed lines as ours.
//   torch_w2_cnn [--data DIR] [--epochs N] [--reps N] [--precision fp32|bf16]
// --precision bf16: LibTorch's CPU autocast to bfloat16 around each forward and loss, as
// torch_w1_mlp_epoch.cpp does (the twin of ours under dezero::autocast).
//   DIR holds train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz
//   (default /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist)
#include <ATen/autocast_mode.h>

#include <stdexcept>
#include <vector>

#include "torch_common.hpp"
#include "torch_idx.hpp"

namespace {

// FLOPs of a convolution's forward (2 x N x OC x OH x OW x C x KH x KW); the backward
// for the weights costs the same, the backward for the input (conv2 only) the same again.
double conv_flops(double n, double c, double oc, double hw, double k) { return 2.0 * n * oc * hw * hw * c * k * k; }

struct Net : torch::nn::Module {
  torch::nn::Conv2d c1{torch::nn::Conv2dOptions(1, 16, 3).padding(1)};
  torch::nn::Conv2d c2{torch::nn::Conv2dOptions(16, 32, 3).padding(1)};
  torch::nn::Linear l{1568, 10};
  Net() {
    register_module("c1", c1);
    register_module("c2", c2);
    register_module("l", l);
    tbench::dezero_init(c1->weight, c1->bias, 1 * 3 * 3);
    tbench::dezero_init(c2->weight, c2->bias, 16 * 3 * 3);
    tbench::dezero_init(l->weight, l->bias, 1568);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(c1->forward(x)), 2, 2);
    x = torch::max_pool2d(torch::relu(c2->forward(x)), 2, 2);
    return l->forward(x.reshape({x.size(0), -1}));
  }
};

}  // namespace

int main(int argc, char** argv) try {
  std::string dir = tbench::arg(argc, argv, "--data", "/usr/share/datasets/fashion-mnist");
  int epochs = std::stoi(tbench::arg(argc, argv, "--epochs", "1"));
  int reps = std::stoi(tbench::arg(argc, argv, "--reps", "20"));
  const std::string precision = tbench::arg(argc, argv, "--precision", "fp32");
  if (precision != "fp32" && precision != "bf16") throw std::runtime_error("--precision must be fp32 or bf16");
  const bool amp = precision == "bf16";
  if (amp) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  tbench::setup("W2");
  const std::int64_t N = 10000, B = 100;
  torch::Tensor X, T;
  std::tie(X, T) = tbench::fashion_mnist(dir, "train", N);
  X = X.reshape({N, 1, 28, 28});

  torch::manual_seed(0);
  auto model = std::make_shared<Net>();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  model->forward(X.slice(0, 0, B));  // ours creates its lazy weights with one forward here; so do we
  const double f1 = conv_flops(N, 1, 16, 28, 3), f2 = conv_flops(N, 16, 32, 14, 3);
  const double train_flops = 2 * f1 + 3 * f2;
  std::cout << "W2: CNN conv3x3(1->16)-pool-conv3x3(16->32)-pool-linear, SGD 0.1, batch " << B << ", " << N
            << " Fashion-MNIST images, device cpu (LibTorch), precision " << precision << "\n";
  for (int e = 0; e < epochs; ++e) {
    double t0 = tbench::now_s();
    torch::Tensor perm = torch::randperm(N, torch::kInt64);
    double last = 0;
    for (std::int64_t i = 0; i < N / B; ++i) {
      torch::Tensor idx = perm.slice(0, i * B, (i + 1) * B);
      at::autocast::set_cpu_enabled(amp);
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(X.index_select(0, idx)), T.index_select(0, idx));
      at::autocast::set_cpu_enabled(false);
      if (amp) at::autocast::clear_cache();  // what leaving torch.autocast's scope does
      opt.zero_grad();
      loss.backward();
      opt.step();
      if (i == N / B - 1) last = loss.item<double>();
    }
    double secs = tbench::now_s() - t0;
    std::cout << "epoch " << e + 1 << ": " << secs << " s, convolutions " << train_flops / 1e9 << " GFLOP = "
              << train_flops / secs / 1e9 << " GFLOP/s over the loop, last loss " << last << "\n";
  }

  // The convolutions alone: conv1 forward + weight/bias gradient, conv2 forward + weight/bias
  // and input gradients, on a batch of 100, reps times; the best of three rounds.
  auto conv_alone = [&](torch::nn::Conv2d& conv, torch::Tensor x, bool input_grad, double flops_per_batch,
                        const char* name) {
    x.set_requires_grad(input_grad);
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      double t0 = tbench::now_s();
      for (int r = 0; r < reps; ++r) {
        at::autocast::set_cpu_enabled(amp);
        torch::Tensor y = conv->forward(x).sum();
        at::autocast::set_cpu_enabled(false);
        if (amp) at::autocast::clear_cache();
        conv->zero_grad();
        if (x.grad().defined()) x.grad().zero_();
        y.backward();
      }
      best = std::min(best, (tbench::now_s() - t0) / reps);
    }
    std::cout << name << ": " << best * 1e3 << " ms per forward + backward, " << flops_per_batch / best / 1e9
              << " GFLOP/s\n";
  };
  conv_alone(model->c1, X.slice(0, 0, B).clone(), false, 2 * conv_flops(B, 1, 16, 28, 3), "conv1 1->16 28x28");
  conv_alone(model->c2, torch::rand({B, 16, 14, 14}), true, 3 * conv_flops(B, 16, 32, 14, 3), "conv2 16->32 14x14");
  std::cout << "peak RSS: " << tbench::peak_rss_mb() << " MB\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "torch_w2_cnn: " << e.what() << "\n";
  return 1;
}
