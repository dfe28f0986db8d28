// bench/libtorch/torch_w1_mlp_epoch.cpp - W1 in LibTorch: the twin of bench/w1_mlp_epoch.cpp.
// One epoch of the MLP 784-1000-1000-10 (ReLU) with SGD lr 0.01, batch 100, 60,000
// synthetic images (uniform [0,1)), shuffled each epoch, softmax cross entropy; the
// same nominal FLOP count and printed lines as ours. --optimizer adam: torch::optim::Adam
// with DeZero's Adam defaults (lr 0.001, betas 0.9 / 0.999, eps 1e-8); --weight-decay RATE
// adds RATE * W to every gradient before step(), as DeZero's WeightDecay hook does (not
// AdamOptions::weight_decay, which LibTorch applies inside the step: the same math for
// Adam, but written out here so that both sides do the same work in the same order).
//   torch_w1_mlp_epoch [--epochs N] [--optimizer sgd|adam] [--weight-decay RATE]
#include <memory>
#include <string>

#include "torch_common.hpp"

int main(int argc, char** argv) try {
  int epochs = std::stoi(tbench::arg(argc, argv, "--epochs", "1"));
  tbench::setup("W1");
  const std::int64_t N = 60000, D = 784, B = 100;
  torch::manual_seed(0);
  torch::Tensor X = torch::rand({N, D});
  torch::Tensor T = torch::randint(0, 10, {N}, torch::kInt64);
  torch::nn::Sequential model(torch::nn::Linear(784, 1000), torch::nn::ReLU(), torch::nn::Linear(1000, 1000),
                              torch::nn::ReLU(), torch::nn::Linear(1000, 10));
  for (auto& m : model->modules(false))
    if (auto* l = m->as<torch::nn::Linear>()) tbench::dezero_init(l->weight, l->bias, l->options.in_features());
  const std::string opt_name = tbench::arg(argc, argv, "--optimizer", "sgd");
  const double decay = std::stod(tbench::arg(argc, argv, "--weight-decay", "0"));
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (opt_name == "sgd")
    opt = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.01));
  else if (opt_name == "adam")
    opt = std::make_unique<torch::optim::Adam>(
        model->parameters(), torch::optim::AdamOptions(0.001).betas(std::make_tuple(0.9, 0.999)).eps(1e-8));
  else throw std::invalid_argument("--optimizer must be sgd or adam, got " + opt_name);
  const std::vector<torch::Tensor> params = model->parameters();
  const std::string opt_desc = (opt_name == "sgd" ? std::string("SGD") : std::string("Adam")) +
                               (decay != 0 ? " + WeightDecay " + tbench::arg(argc, argv, "--weight-decay", "0") : "");
  model->forward(X.slice(0, 0, B));  // ours creates its lazy weights with one forward here; so do we
  const double flops = 6.0 * N * (784.0 * 1000 + 1000.0 * 1000 + 1000.0 * 10);
  std::cout << "W1: MLP 784-1000-1000-10 ReLU, " << opt_desc << ", batch " << B << ", " << N
            << " images, device cpu (LibTorch)\n";
  for (int e = 0; e < epochs; ++e) {
    double t0 = tbench::now_s();
    torch::Tensor perm = torch::randperm(N, torch::kInt64);
    double last = 0;
    for (std::int64_t i = 0; i < N / B; ++i) {
      torch::Tensor idx = perm.slice(0, i * B, (i + 1) * B);
      torch::Tensor x = X.index_select(0, idx), t = T.index_select(0, idx);
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), t);
      opt->zero_grad();
      loss.backward();
      if (decay != 0) {
        torch::NoGradGuard no_grad;
        for (const auto& p : params) p.grad().add_(p, decay);  // g += decay * W, DeZero's WeightDecay hook
      }
      opt->step();
      if (i == N / B - 1) last = loss.item<double>();
    }
    double secs = tbench::now_s() - t0;
    std::cout << "epoch " << e + 1 << ": " << secs << " s, " << flops / secs / 1e9 << " GFLOP/s (nominal), last loss "
              << last << "\n";
  }
  std::cout << "peak RSS: " << tbench::peak_rss_mb() << " MB\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "torch_w1_mlp_epoch: " << e.what() << "\n";
  return 1;
}
