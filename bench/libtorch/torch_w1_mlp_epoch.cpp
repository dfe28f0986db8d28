// bench/libtorch/torch_w1_mlp_epoch.cpp - W1 in LibTorch: the twin of bench/w1_mlp_epoch.cpp.
// One epoch of the MLP 784-1000-1000-10 (ReLU) with SGD lr 0.01, batch 100, the 60,000
// Fashion-MNIST training images (/255, float32; --data DIR, default Debian's
// /usr/share/datasets/fashion-mnist), shuffled each epoch, softmax cross entropy, then the
// test accuracy on the 10,000 test images; the same nominal FLOP count and printed lines as
// ours. --dataset synthetic: uniform [0,1) images with random labels, as ours.
// --optimizer adam: torch::optim::Adam with DeZero's Adam defaults (lr 0.001, betas
// 0.9 / 0.999, eps 1e-8). --weight-decay RATE: what a LibTorch user writes,
// AdamOptions(...).weight_decay(RATE) or SGDOptions(...).weight_decay(RATE), which add
// RATE * W to the gradient inside step(), the same math as DeZero's WeightDecay hook
// (L2, not AdamW's decoupled decay). --flush-denormal 1 sets
// at::globalContext().setFlushDenormal(true) (FTZ and DAZ in MXCSR, torch.set_flush_denormal):
// subnormal floats become 0, which is how bench/README.md shows that LibTorch's Adam is slow
// on random labels because of subnormals.
//   torch_w1_mlp_epoch [--epochs N] [--optimizer sgd|adam] [--weight-decay RATE]
//                      [--dataset fashion-mnist|synthetic] [--data DIR] [--flush-denormal 0|1]
//                      [--precision fp32|bf16]
// --precision bf16: LibTorch's CPU mixed precision, autocast to bfloat16
// (at::autocast::set_cpu_enabled, set_autocast_cpu_dtype(at::kBFloat16)) around the forward
// pass and the loss, as torch.autocast("cpu") does; the twin of ours under dezero::autocast.
#include <ATen/autocast_mode.h>

#include <memory>
#include <vector>
#include <string>

#include "torch_common.hpp"
#include "torch_idx.hpp"

int main(int argc, char** argv) try {
  int epochs = std::stoi(tbench::arg(argc, argv, "--epochs", "1"));
  tbench::setup("W1");
  const std::int64_t N = 60000, D = 784, B = 100;
  const std::string dataset = tbench::arg(argc, argv, "--dataset", "fashion-mnist");
  const bool synthetic = dataset == "synthetic";
  if (!synthetic && dataset != "fashion-mnist")
    throw std::invalid_argument("--dataset must be fashion-mnist or synthetic, got " + dataset);
  if (tbench::arg(argc, argv, "--flush-denormal", "0") != std::string("0")) {
    // MXCSR is per thread: set it on this thread and on each of the intra-op pool's threads (one
    // index each), where LibTorch's element-wise kernels, Adam's among them, run.
    if (!at::globalContext().setFlushDenormal(true)) throw std::runtime_error("this CPU cannot flush denormals");
    const int threads = at::get_num_threads();
    std::vector<int> done(static_cast<std::size_t>(threads), 0);
    at::parallel_for(0, threads, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) done[static_cast<std::size_t>(i)] = at::globalContext().setFlushDenormal(true);
    });
    std::cout << "flush denormal: on (FTZ + DAZ) on the main thread and " << threads << " intra-op threads\n";
  }
  torch::manual_seed(0);
  torch::Tensor X, T, X_test, T_test;
  if (synthetic) {
    X = torch::rand({N, D});
    T = torch::randint(0, 10, {N}, torch::kInt64);
  } else {
    const std::string dir = tbench::arg(argc, argv, "--data", "/usr/share/datasets/fashion-mnist");
    std::tie(X, T) = tbench::fashion_mnist(dir, "train", N);
    std::tie(X_test, T_test) = tbench::fashion_mnist(dir, "t10k", 10000);
  }
  torch::nn::Sequential model(torch::nn::Linear(784, 1000), torch::nn::ReLU(), torch::nn::Linear(1000, 1000),
                              torch::nn::ReLU(), torch::nn::Linear(1000, 10));
  for (auto& m : model->modules(false))
    if (auto* l = m->as<torch::nn::Linear>()) tbench::dezero_init(l->weight, l->bias, l->options.in_features());
  const std::string precision = tbench::arg(argc, argv, "--precision", "fp32");
  if (precision != "fp32" && precision != "bf16") throw std::runtime_error("--precision must be fp32 or bf16");
  const bool amp = precision == "bf16";
  const std::string opt_name = tbench::arg(argc, argv, "--optimizer", "sgd");
  const double decay = std::stod(tbench::arg(argc, argv, "--weight-decay", "0"));
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (opt_name == "sgd")
    opt = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.01).weight_decay(decay));
  else if (opt_name == "adam")
    opt = std::make_unique<torch::optim::Adam>(
        model->parameters(),
        torch::optim::AdamOptions(0.001).betas(std::make_tuple(0.9, 0.999)).eps(1e-8).weight_decay(decay));
  else throw std::invalid_argument("--optimizer must be sgd or adam, got " + opt_name);
  const std::string opt_desc = (opt_name == "sgd" ? std::string("SGD") : std::string("Adam")) +
                               (decay != 0 ? " + WeightDecay " + tbench::arg(argc, argv, "--weight-decay", "0") : "");
  model->forward(X.slice(0, 0, B));  // ours creates its lazy weights with one forward here; so do we
  const double flops = 6.0 * N * (784.0 * 1000 + 1000.0 * 1000 + 1000.0 * 10);
  std::cout << "W1: MLP 784-1000-1000-10 ReLU, " << opt_desc << ", batch " << B << ", " << N
            << (synthetic ? " synthetic images (random labels)" : " Fashion-MNIST images") << ", device cpu (LibTorch)"
            << ", precision " << precision << "\n";
  if (amp) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  for (int e = 0; e < epochs; ++e) {
    double t0 = tbench::now_s();
    torch::Tensor perm = torch::randperm(N, torch::kInt64);
    double last = 0;
    for (std::int64_t i = 0; i < N / B; ++i) {
      torch::Tensor idx = perm.slice(0, i * B, (i + 1) * B);
      torch::Tensor x = X.index_select(0, idx), t = T.index_select(0, idx);
      at::autocast::set_cpu_enabled(amp);
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), t);
      at::autocast::set_cpu_enabled(false);
      if (amp) at::autocast::clear_cache();  // what leaving torch.autocast's scope does
      opt->zero_grad();
      loss.backward();
      opt->step();
      if (i == N / B - 1) last = loss.item<double>();
    }
    double secs = tbench::now_s() - t0;
    std::cout << "epoch " << e + 1 << ": " << secs << " s, " << flops / secs / 1e9 << " GFLOP/s (nominal), last loss "
              << last << "\n";
  }
  if (!synthetic) {  // outside the timed epochs
    torch::NoGradGuard no_grad;
    at::autocast::set_cpu_enabled(amp);
    torch::Tensor pred = model->forward(X_test).argmax(1);
    std::cout << "test accuracy: " << pred.eq(T_test).to(torch::kFloat64).mean().item<double>() << "\n";
  }
  std::cout << "peak RSS: " << tbench::peak_rss_mb() << " MB\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "torch_w1_mlp_epoch: " << e.what() << "\n";
  return 1;
}
