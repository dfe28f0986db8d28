// examples/step50.cpp - Step 50: DataLoader and accuracy. Trains MLP((10, 3)) on the
// spiral training set and evaluates on the test set under no_grad() after every
// epoch.
//
// The DeZero Python it mirrors (steps/step50.py; the learning-curve plot is
// left out):
//   max_epoch = 300
//   batch_size = 30
//   hidden_size = 10
//   lr = 1.0
//
//   train_set = dezero.datasets.Spiral(train=True)
//   test_set = dezero.datasets.Spiral(train=False)
//   train_loader = DataLoader(train_set, batch_size)
//   test_loader = DataLoader(test_set, batch_size, shuffle=False)
//
//   model = MLP((hidden_size, 3))
//   optimizer = optimizers.SGD(lr).setup(model)
//
//   for epoch in range(max_epoch):
//       sum_loss, sum_acc = 0, 0
//
//       for x, t in train_loader:
//           y = model(x)
//           loss = F.softmax_cross_entropy(y, t)
//           acc = F.accuracy(y, t)
//           model.cleargrads()
//           loss.backward()
//           optimizer.update()
//
//           sum_loss += float(loss.data) * len(t)
//           sum_acc += float(acc.data) * len(t)
//
//       print('epoch: {}'.format(epoch+1))
//       print('train loss: {:.4f}, accuracy: {:.4f}'.format(
//           sum_loss / len(train_set), sum_acc / len(train_set)))
//
//       sum_loss, sum_acc = 0, 0
//       with dezero.no_grad():
//           for x, t in test_loader:
//               y = model(x)
//               loss = F.softmax_cross_entropy(y, t)
//               acc = F.accuracy(y, t)
//               sum_loss += float(loss.data) * len(t)
//               sum_acc += float(acc.data) * len(t)
//
//       print('test loss: {:.4f}, accuracy: {:.4f}'.format(
//           sum_loss / len(test_set), sum_acc / len(test_set)))
//   # epoch 1:   train 1.0944 / 0.4033, test 1.0468 / 0.3267
//   # epoch 300: train 0.1082 / 0.9667, test 0.1458 / 0.9600
//
// Deterministic without a seed: Spiral seeds the global generator. The program
// ends with "test accuracy >= 0.9: yes" and exits with 1 when the final test
// accuracy misses that target. `--epochs N` trains for N epochs.
#include <dezero/dezero.hpp>

#include <cstdio>

#include "common/example_util.hpp"
#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main(int argc, char** argv) try {
  int max_epoch = example::int_arg(argc, argv, "--epochs", 300);
  const std::int64_t batch_size = 30;
  const std::int64_t hidden_size = 10;
  const double lr = 1.0;

  dezero::datasets::Spiral train_set(/*train=*/true);
  dezero::datasets::Spiral test_set(/*train=*/false);
  dezero::DataLoader train_loader(train_set, batch_size);
  dezero::DataLoader test_loader(test_set, batch_size, /*shuffle=*/false);

  dezero::models::MLP model({hidden_size, 3});
  auto optimizer = dezero::optimizers::SGD(lr).setup(model);  // DeZero's one line

  const double n_train = static_cast<double>(train_set.size());
  const double n_test = static_cast<double>(test_set.size());
  double test_acc = 0;
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
    std::printf("train loss: %.4f, accuracy: %.4f\n", sum_loss / n_train, sum_acc / n_train);

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

    test_acc = sum_acc / n_test;
    std::printf("test loss: %.4f, accuracy: %.4f\n", sum_loss / n_test, test_acc);
  }

  bool ok = test_acc >= 0.9;
  std::printf("test accuracy >= 0.9: %s\n", ok ? "yes" : "no");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  return example::report_error("step50", e);
}
