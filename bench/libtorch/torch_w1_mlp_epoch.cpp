// bench/libtorch/torch_w1_mlp_epoch.cpp - W1 in LibTorch: the twin of bench/w1_mlp_epoch.cpp.
// One epoch of the MLP 784-1000-1000-10 (ReLU) with SGD lr 0.01, batch 100, 60,000
// synthetic images (uniform [0,1)), shuffled each epoch, softmax cross entropy; the
// same nominal FLOP count and printed lines as ours.
//   torch_w1_mlp_epoch [--epochs N]
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
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  model->forward(X.slice(0, 0, B));  // ours creates its lazy weights with one forward here; so do we
  const double flops = 6.0 * N * (784.0 * 1000 + 1000.0 * 1000 + 1000.0 * 10);
  std::cout << "W1: MLP 784-1000-1000-10 ReLU, SGD, batch " << B << ", " << N << " images, device cpu (LibTorch)\n";
  for (int e = 0; e < epochs; ++e) {
    double t0 = tbench::now_s();
    torch::Tensor perm = torch::randperm(N, torch::kInt64);
    double last = 0;
    for (std::int64_t i = 0; i < N / B; ++i) {
      torch::Tensor idx = perm.slice(0, i * B, (i + 1) * B);
      torch::Tensor x = X.index_select(0, idx), t = T.index_select(0, idx);
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), t);
      opt.zero_grad();
      loss.backward();
      opt.step();
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
