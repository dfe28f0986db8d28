// examples/mnist.cpp - DeZero's examples/mnist.py in C++ (book step 51 with the
// "bigger model" of the text, and step 52's GPU switch).
//
//   MLP (1000, 1000, 10) with ReLU, Adam, WeightDecay(1e-4), batch 100, 5 epochs.
//
// Options (common/mnist_train.hpp, shared with examples/mnist_cnn.cpp):
//   --dataset mnist|fashion-mnist   default: MNIST when its files are in the data
//                                   directory or can be downloaded, else Fashion-MNIST
//                                   (Debian's dataset-fashion-mnist package)
//   --data DIR                      data directory (else $DEZERO_HOME, else ~/.dezero)
//   --epochs N  --batch-size N
//   --precision fp32|bf16|fp16      mixed precision: the products (linear) in bfloat16 or
//                                   float16 with float32 sums (dezero::autocast); fp16 with
//                                   dynamic loss scaling
//   --device cpu|cuda               default: cuda when a GPU is present
//   --save FILE.npz  --load FILE.npz   weights (DeZero's key scheme)
//   --plot FILE.png                 learning curves (default mnist_curves.png, drawn by
//                                   gnuplot; the numbers go to FILE.csv either way)
#include <iostream>

#include "common/mnist_train.hpp"
#include "common/report.hpp"

using namespace dezero;

int main(int argc, char** argv) try {
  mnist_train::Options o = mnist_train::parse(argc, argv, "mnist", "mnist_curves.png");
  Device dev = mnist_train::pick_device(o);
  auto [train_set, test_set] = mnist_train::load_data(o, datasets::MNIST::default_transform());

  models::MLP model({1000, 1000, 10}, F::relu);
  optimizers::Adam optimizer;
  optimizer.setup(model);
  optimizer.add_hook(optimizers::WeightDecay(1e-4));
  mnist_train::train(model, optimizer, *train_set, *test_set, o, dev, "MLP(1000, 1000, 10), Adam");
  return 0;
} catch (const std::exception& e) {
  return example::report_error("mnist", e);
}
