// bench/libtorch/torch_w3_overhead.cpp - W3 in LibTorch: the twin of bench/w3_overhead.cpp.
// An in-10-1 sigmoid MLP on a batch of 100 (--in N: x (100, N), 2 by default), DeZero's mean_squared_error
// (sum((y - t)^2) / len), SGD lr 0.2; 1000 warm-up steps, then five runs of steps/5,
// median microseconds per forward + backward + update step.
//   torch_w3_overhead [--steps N] [--in N]
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "torch_common.hpp"

int main(int argc, char** argv) try {
  int steps = std::stoi(tbench::arg(argc, argv, "--steps", "20000"));
  int in = std::stoi(tbench::arg(argc, argv, "--in", "2"));
  if (in < 1) throw std::invalid_argument("--in must be >= 1, got " + std::to_string(in));
  tbench::setup("W3");
  torch::manual_seed(0);
  torch::Tensor x = torch::rand({100, in});
  torch::Tensor t = torch::sin(x.slice(1, 0, 1) * 6.28) + torch::rand({100, 1});
  torch::nn::Linear l1(in, 10), l2(10, 1);
  tbench::dezero_init(l1->weight, l1->bias, in);
  tbench::dezero_init(l2->weight, l2->bias, 10);
  std::vector<torch::Tensor> params = l1->parameters();
  for (auto& p : l2->parameters()) params.push_back(p);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.2));
  auto step = [&]() {
    torch::Tensor y = l2->forward(torch::sigmoid(l1->forward(x)));
    torch::Tensor loss = (y - t).pow(2).sum() / y.size(0);
    opt.zero_grad();
    loss.backward();
    opt.step();
    return loss;
  };
  for (int i = 0; i < 1000; ++i) step();
  std::vector<double> us;
  double final_loss = 0;
  for (int r = 0; r < 5; ++r) {
    double t0 = tbench::now_s();
    torch::Tensor loss;
    for (int i = 0; i < steps / 5; ++i) loss = step();
    final_loss = loss.item<double>();
    us.push_back((tbench::now_s() - t0) / (steps / 5) * 1e6);
  }
  std::sort(us.begin(), us.end());
  std::cout << "W3: " << in << "-10-1 sigmoid MLP, batch 100, MSE + SGD on cpu (LibTorch): median " << us[2] << " us/step (min "
            << us[0] << ", max " << us[4] << "), loss " << final_loss << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "torch_w3_overhead: " << e.what() << "\n";
  return 1;
}
