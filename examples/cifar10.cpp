// examples/cifar10.cpp - a small VGG-style network with batch normalisation on CIFAR-10,
// with the options, output and learning curves of examples/mnist_cnn.cpp
// (common/mnist_train.hpp is the classifier loop the image examples share).
//
//   x (N, 3, 32, 32) in [-1, 1] (CIFAR10's default transform)
//     -> [Conv2d(32, 3x3, pad 1) -> BatchNorm -> ReLU] x 2 -> max pooling 2  -> (N, 32, 16, 16)
//     -> [Conv2d(64, 3x3, pad 1) -> BatchNorm -> ReLU] x 2 -> max pooling 2  -> (N, 64, 8, 8)
//     -> [Conv2d(128, 3x3, pad 1) -> BatchNorm -> ReLU] x 2 -> max pooling 2 -> (N, 128, 4, 4)
//     -> reshape (N, 2048) -> Linear(256) -> ReLU -> dropout 0.5 -> Linear(10)
//   DeZero's initialisation, Adam (alpha 0.001), batch 100, 5 epochs, seed 0.
//
// The data: cifar-10-binary.tar.gz in --data DIR (else $DEZERO_HOME, else ~/.dezero),
// downloaded from https://www.cs.toronto.edu/~kriz/ (or $DEZERO_CIFAR10_MIRROR) when missing.
// Options: --data, --epochs, --batch-size, --device cpu|cuda, --save, --load, --plot
// (default cifar10_curves.png, CSV next to it).
#include <iostream>

#include "common/mnist_train.hpp"
#include "common/report.hpp"

using namespace dezero;

namespace {

// Conv2d(c, 3x3, pad 1) -> BatchNorm -> ReLU, twice, then 2x2 max pooling: halves H and W.
class ConvBlock : public L::Layer {
 public:
  explicit ConvBlock(std::int64_t channels) {
    c1 = register_layer("c1", std::make_shared<L::Conv2d>(channels, 3, 1, 1));
    b1 = register_layer("b1", std::make_shared<L::BatchNorm>());
    c2 = register_layer("c2", std::make_shared<L::Conv2d>(channels, 3, 1, 1));
    b2 = register_layer("b2", std::make_shared<L::BatchNorm>());
  }
  Variable forward(const Variable& x) override {
    Variable h = F::relu(b1(c1(x)));
    h = F::relu(b2(c2(h)));
    return F::pooling(h, 2, 2);
  }
  L::LayerRef<L::Conv2d> c1, c2;
  L::LayerRef<L::BatchNorm> b1, b2;
};

class SmallVGG : public Model {
 public:
  SmallVGG() {
    block1 = register_layer("block1", std::make_shared<ConvBlock>(32));
    block2 = register_layer("block2", std::make_shared<ConvBlock>(64));
    block3 = register_layer("block3", std::make_shared<ConvBlock>(128));
    fc1 = register_layer("fc1", std::make_shared<L::Linear>(256));
    fc2 = register_layer("fc2", std::make_shared<L::Linear>(10));
  }
  Variable forward(const Variable& x) override {
    Variable h = block3(block2(block1(x)));                    // (N, 128, 4, 4)
    h = F::dropout(F::relu(fc1(F::reshape(h, {h.shape()[0], -1}))), 0.5);
    return fc2(h);                                            // (N, 10)
  }
  L::LayerRef<ConvBlock> block1, block2, block3;
  L::LayerRef<L::Linear> fc1, fc2;
};

}  // namespace

int main(int argc, char** argv) try {
  mnist_train::Options o = mnist_train::parse(argc, argv, "cifar10", "cifar10_curves.png");
  if (!o.dataset.empty()) throw ValueError("cifar10 trains on CIFAR-10 only: it takes no --dataset");
  Device dev = mnist_train::pick_device(o);
  datasets::CIFAR10 train_set(true, datasets::CIFAR10::default_transform(), {}, o.data_dir);
  datasets::CIFAR10 test_set(false, datasets::CIFAR10::default_transform(), {}, o.data_dir);
  std::cout << "dataset: CIFAR-10 (" << train_set.size() << " train, " << test_set.size() << " test images)\n";

  random::seed(0);
  SmallVGG model;
  optimizers::Adam optimizer;
  optimizer.setup(model);
  mnist_train::train(model, optimizer, train_set, test_set, o, dev,
                     "VGG-style CNN 3x[conv-BN-ReLU x2, pool]-Linear(256)-Linear(10), Adam");
  return 0;
} catch (const std::exception& e) {
  return example::report_error("cifar10", e);
}
