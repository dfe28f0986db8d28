// examples/step51.cpp - Step 51: MNIST. The training loop of step 50 on the
// 60 000 handwritten digits: MLP((1000, 10)) with sigmoid, SGD (lr 0.01), batch
// 100, 5 epochs; train loss and accuracy, then test loss and accuracy under
// no_grad, each epoch. (examples/mnist.cpp is the "bigger model" of the text:
// MLP((1000, 1000, 10), relu) with Adam.)
//
// The DeZero Python it mirrors (steps/step51.py):
//   max_epoch = 5
//   batch_size = 100
//   hidden_size = 1000
//   train_set = dezero.datasets.MNIST(train=True)
//   test_set = dezero.datasets.MNIST(train=False)
//   train_loader = DataLoader(train_set, batch_size)
//   test_loader = DataLoader(test_set, batch_size, shuffle=False)
//   model = MLP((hidden_size, 10))
//   optimizer = optimizers.SGD().setup(model)
//   for epoch in range(max_epoch):
//       sum_loss, sum_acc = 0, 0
//       for x, t in train_loader:
//           y = model(x)
//           loss = F.softmax_cross_entropy(y, t)
//           acc = F.accuracy(y, t)
//           model.cleargrads()
//           loss.backward()
//           optimizer.update()
//           sum_loss += float(loss.data) * len(t)
//           sum_acc += float(acc.data) * len(t)
//       print('epoch: {}'.format(epoch+1))
//       print('train loss: {:.4f}, accuracy: {:.4f}'.format(
//           sum_loss / len(train_set), sum_acc / len(train_set)))
//       sum_loss, sum_acc = 0, 0
//       with dezero.no_grad():
//           for x, t in test_loader:
//               y = model(x)
//               loss = F.softmax_cross_entropy(y, t)
//               acc = F.accuracy(y, t)
//               sum_loss += float(loss.data) * len(t)
//               sum_acc += float(acc.data) * len(t)
//       print('test loss: {:.4f}, accuracy: {:.4f}'.format(
//           sum_loss / len(test_set), sum_acc / len(test_set)))
//
// Options (not in the book; they keep the CTest fast and the run reproducible):
//   --epochs N            default 5
//   --data DIR            where the MNIST files are (else $DEZERO_HOME, else ~/.dezero;
//                         missing files are downloaded there)
//   --dataset mnist|fashion-mnist   default mnist (Fashion-MNIST: same format, Debian's
//                         dataset-fashion-mnist package)
//   --limit N             train and test on the first N samples of each set only
//   --seed N              seed the weights and the shuffling (the book does not seed)
#include <dezero/dataloaders.hpp>
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "common/options.hpp"
#include "common/report.hpp"

using dezero::DataLoader;
using dezero::Variable;
namespace F = dezero::F;
namespace datasets = dezero::datasets;

namespace {

struct Options {
  int max_epoch = 5;
  std::string data_dir, dataset = "mnist";
  std::int64_t limit = 0;
  long long seed = -1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) throw dezero::ValueError("step51: option " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--epochs") o.max_epoch = static_cast<int>(example::integer_option(a, v, 0));
    else if (a == "--data") o.data_dir = v;
    else if (a == "--dataset") o.dataset = v;
    else if (a == "--limit") o.limit = example::integer_option(a, v, 0);
    else if (a == "--seed") o.seed = example::integer_option(a, v, 0);
    else throw dezero::ValueError("step51: unknown option " + a +
                                  "; usage: step51 [--epochs N] [--data DIR] [--dataset mnist|fashion-mnist]"
                                  " [--limit N] [--seed N]");
  }
  if (o.dataset != "mnist" && o.dataset != "fashion-mnist")
    throw dezero::ValueError("step51: --dataset must be mnist or fashion-mnist, got " + o.dataset);
  return o;
}

// MNIST (or Fashion-MNIST) with the default transform: x float32 (784,) in [0, 1].
// With a limit, the first `limit` samples as a plain Dataset (already transformed).
datasets::Dataset load(const Options& o, bool train) {
  auto tf = datasets::MNIST::default_transform();
  datasets::Dataset full = o.dataset == "mnist" ? datasets::MNIST(train, tf, {}, o.data_dir)
                                                : datasets::FashionMNIST(train, tf, {}, o.data_dir);
  if (o.limit <= 0 || o.limit >= full.size()) return full;
  dezero::Slice first(0, o.limit);
  return datasets::Dataset(full.data()[first], full.label()[first]);
}

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  if (o.seed >= 0) dezero::random::seed(static_cast<std::uint64_t>(o.seed));

  const int max_epoch = o.max_epoch;
  const std::int64_t batch_size = 100;
  const std::int64_t hidden_size = 1000;

  datasets::Dataset train_set = load(o, true);
  datasets::Dataset test_set = load(o, false);
  DataLoader train_loader(train_set, batch_size);
  DataLoader test_loader(test_set, batch_size, /*shuffle=*/false);

  dezero::models::MLP model({hidden_size, 10});
  auto optimizer = dezero::optimizers::SGD().setup(model);  // DeZero's one line

  for (int epoch = 0; epoch < max_epoch; ++epoch) {
    double sum_loss = 0, sum_acc = 0;
    for (auto& [x, t] : train_loader) {
      Variable y = model(x);
      Variable loss = F::softmax_cross_entropy(y, t);
      Variable acc = F::accuracy(y, t);
      model.cleargrads();
      loss.backward();
      optimizer.update();
      sum_loss += loss.data().item<double>() * static_cast<double>(t.len());
      sum_acc += acc.data().item<double>() * static_cast<double>(t.len());
    }
    std::printf("epoch: %d\n", epoch + 1);
    std::printf("train loss: %.4f, accuracy: %.4f\n", sum_loss / static_cast<double>(train_set.size()),
                sum_acc / static_cast<double>(train_set.size()));

    sum_loss = 0, sum_acc = 0;
    {
      auto guard = dezero::no_grad();
      for (auto& [x, t] : test_loader) {
        Variable y = model(x);
        Variable loss = F::softmax_cross_entropy(y, t);
        Variable acc = F::accuracy(y, t);
        sum_loss += loss.data().item<double>() * static_cast<double>(t.len());
        sum_acc += acc.data().item<double>() * static_cast<double>(t.len());
      }
    }
    std::printf("test loss: %.4f, accuracy: %.4f\n", sum_loss / static_cast<double>(test_set.size()),
                sum_acc / static_cast<double>(test_set.size()));
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  return example::report_error("step51", e);
}
