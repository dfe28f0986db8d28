// examples/mnist_cnn.cpp - a small convolutional network on MNIST (or Fashion-MNIST),
// with the options and output of examples/mnist.cpp (common/mnist_train.hpp).
//
//   x (N, 1, 28, 28) -> Conv2d(16, 3x3, pad 1) -> ReLU -> max pooling 2 -> (N, 16, 14, 14)
//                    -> Conv2d(32, 3x3, pad 1) -> ReLU -> max pooling 2 -> (N, 32, 7, 7)
//                    -> reshape (N, 1568) -> Linear(10)
//   DeZero's initialisation, Adam (alpha 0.001), batch 100, 5 epochs, seed 0.
//   PyTorch with the same model, initialisation and optimizer reaches 0.8946 on
//   Fashion-MNIST; we aim at >= 0.885 there and >= 0.985 on MNIST.
//
// Options: as examples/mnist (--dataset, --data, --epochs, --batch-size, --device, --save,
// --load, --plot, --precision; default plot mnist_cnn_curves.png, CSV next to it). Under
// --precision bf16|fp16 (dezero::autocast) the convolutions' and the Linear layer's products
// run in 16 bits with float32 sums; ReLU, pooling, the loss and Adam stay float32.
#include <iostream>

#include "common/mnist_train.hpp"
#include "common/report.hpp"

using namespace dezero;

namespace {

class SmallCNN : public Model {
 public:
  SmallCNN() {
    c1 = register_layer("c1", std::make_shared<L::Conv2d>(16, 3, 1, 1));
    c2 = register_layer("c2", std::make_shared<L::Conv2d>(32, 3, 1, 1));
    fc = register_layer("fc", std::make_shared<L::Linear>(10));
  }
  Variable forward(const Variable& x) override {
    Variable h = F::pooling(F::relu(c1(x)), 2, 2);  // (N, 16, 14, 14)
    h = F::pooling(F::relu(c2(h)), 2, 2);           // (N, 32, 7, 7)
    return fc(F::reshape(h, {h.shape()[0], -1}));   // (N, 10)
  }
  L::LayerRef<L::Conv2d> c1, c2;
  L::LayerRef<L::Linear> fc;
};

}  // namespace

int main(int argc, char** argv) try {
  mnist_train::Options o = mnist_train::parse(argc, argv, "mnist_cnn", "mnist_cnn_curves.png");
  Device dev = mnist_train::pick_device(o);
  // Images stay (1, 28, 28): ToFloat and /255, no Flatten.
  auto [train_set, test_set] = mnist_train::load_data(
      o, transforms::Compose({transforms::ToFloat(), transforms::Normalize(0.0, 255.0)}));

  random::seed(0);
  SmallCNN model;
  optimizers::Adam optimizer;
  optimizer.setup(model);
  mnist_train::train(model, optimizer, *train_set, *test_set, o, dev, "CNN conv3x3(16)-pool-conv3x3(32)-pool-Linear(10), Adam");
  return 0;
} catch (const std::exception& e) {
  return example::report_error("mnist_cnn", e);
}
