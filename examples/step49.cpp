// examples/step49.cpp - Step 49: the Dataset class. datasets::Spiral serves (x, t)
// samples by index; a mini-batch is assembled from train_set.get(i) like the
// book's list comprehension. The same training (and trace) as step 48.
//
// The DeZero Python it mirrors (steps/step49.py):
//   max_epoch = 300
//   batch_size = 30
//   hidden_size = 10
//   lr = 1.0
//
//   train_set = dezero.datasets.Spiral(train=True)
//   model = MLP((hidden_size, 3))
//   optimizer = optimizers.SGD(lr).setup(model)
//
//   data_size = len(train_set)
//   max_iter = math.ceil(data_size / batch_size)
//
//   for epoch in range(max_epoch):
//       # Shuffle index for data
//       index = np.random.permutation(data_size)
//       sum_loss = 0
//
//       for i in range(max_iter):
//           # Create minibatch
//           batch_index = index[i * batch_size:(i + 1) * batch_size]
//           batch = [train_set[i] for i in batch_index]
//           batch_x = np.array([example[0] for example in batch])
//           batch_t = np.array([example[1] for example in batch])
//
//           y = model(batch_x)
//           loss = F.softmax_cross_entropy(y, batch_t)
//           model.cleargrads()
//           loss.backward()
//           optimizer.update()
//
//           sum_loss += float(loss.data) * len(batch_t)
//
//       # Print loss every epoch
//       avg_loss = sum_loss / data_size
//       print('epoch %d, loss %.2f' % (epoch + 1, avg_loss))
//   # epoch 1, loss 1.13 ... epoch 300, loss 0.13
#include <dezero/dezero.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Tensor;
using dezero::Variable;

int main() try {
  const int max_epoch = 300;
  const std::int64_t batch_size = 30;
  const std::int64_t hidden_size = 10;
  const double lr = 1.0;

  dezero::datasets::Spiral train_set(/*train=*/true);
  dezero::models::MLP model({hidden_size, 3});
  auto optimizer = dezero::optimizers::SGD(lr).setup(model);  // DeZero's one line

  const std::int64_t data_size = train_set.size();
  const std::int64_t max_iter = (data_size + batch_size - 1) / batch_size;

  for (int epoch = 0; epoch < max_epoch; ++epoch) {
    std::vector<std::int64_t> index = dezero::random::permutation(data_size).to_vector<std::int64_t>();
    double sum_loss = 0;

    for (std::int64_t i = 0; i < max_iter; ++i) {
      // Create a mini-batch
      std::vector<Tensor> xs, ts;
      for (std::int64_t k = i * batch_size; k < std::min((i + 1) * batch_size, data_size); ++k) {
        dezero::Batch example = train_set.get(index[static_cast<std::size_t>(k)]);
        xs.push_back(example.first);
        ts.push_back(example.second);
      }
      Tensor batch_x = dezero::stack(xs);
      Tensor batch_t = dezero::stack(ts);

      Variable y = model(batch_x);
      Variable loss = F::softmax_cross_entropy(y, batch_t);
      model.cleargrads();
      loss.backward();
      optimizer.update();

      sum_loss += loss.data().item<double>() * static_cast<double>(batch_t.len());
    }

    double avg_loss = sum_loss / static_cast<double>(data_size);
    std::printf("epoch %d, loss %.2f\n", epoch + 1, avg_loss);
  }
} catch (const std::exception& e) {
  return example::report_error("step49", e);
}
