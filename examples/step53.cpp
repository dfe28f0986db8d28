// examples/step53.cpp - Step 53: saving and loading weights. The model's parameters are
// written to my_mlp.npz (NumPy's .npz, DeZero's keys l0/W, l0/b, ...) after
// training; a later run that finds the file loads it first and resumes from there.
//
// The DeZero Python it mirrors (steps/step53.py):
//   max_epoch = 3
//   batch_size = 100
//
//   train_set = dezero.datasets.MNIST(train=True)
//   train_loader = DataLoader(train_set, batch_size)
//   model = MLP((1000, 10))
//   optimizer = optimizers.SGD().setup(model)
//
//   if os.path.exists('my_mlp.npz'):
//       model.load_weights('my_mlp.npz')
//
//   for epoch in range(max_epoch):
//       sum_loss = 0
//
//       for x, t in train_loader:
//           y = model(x)
//           loss = F.softmax_cross_entropy(y, t)
//           model.cleargrads()
//           loss.backward()
//           optimizer.update()
//           sum_loss += float(loss.data) * len(t)
//
//       print('epoch: {}, loss: {:.4f}'.format(
//           epoch + 1, sum_loss / len(train_set)))
//
//   model.save_weights('my_mlp.npz')
//
// MNIST needs its files (downloaded into ~/.dezero on first use). `step53
// --spiral` runs the same program on the spiral data set instead (no download;
// what the tests use). my_mlp.npz goes to the working directory. The program
// says whether it loaded the file and that it saved it.
#include <dezero/dezero.hpp>

#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main(int argc, char** argv) try {
  bool spiral = argc > 1 && std::strcmp(argv[1], "--spiral") == 0;
  const int max_epoch = 3;
  const std::int64_t batch_size = 100;

  std::unique_ptr<dezero::datasets::Dataset> train_set;
  try {
    if (spiral)
      train_set = std::make_unique<dezero::datasets::Spiral>(/*train=*/true);
    else
      train_set = std::make_unique<dezero::datasets::MNIST>(/*train=*/true);
  } catch (const std::exception& e) {
    example::report_error("step53", e);
    std::fprintf(stderr, "hint: run `step53 --spiral` to use the spiral data set (no download)\n");
    return 1;
  }
  dezero::DataLoader train_loader(*train_set, batch_size);
  dezero::models::MLP model({1000, 10});
  auto optimizer = dezero::optimizers::SGD().setup(model);  // DeZero's one line

  if (std::filesystem::exists("my_mlp.npz")) {
    model.load_weights("my_mlp.npz");
    std::printf("loaded my_mlp.npz\n");
  }

  for (int epoch = 0; epoch < max_epoch; ++epoch) {
    double sum_loss = 0;

    for (auto& [x, t] : train_loader) {
      Variable y = model(x);
      Variable loss = F::softmax_cross_entropy(y, t);
      model.cleargrads();
      loss.backward();
      optimizer.update();
      sum_loss += loss.data().item<double>() * static_cast<double>(t.len());
    }

    std::printf("epoch: %d, loss: %.4f\n", epoch + 1, sum_loss / static_cast<double>(train_set->size()));
  }

  model.save_weights("my_mlp.npz");
  std::printf("saved my_mlp.npz\n");
} catch (const std::exception& e) {
  return example::report_error("step53", e);
}
