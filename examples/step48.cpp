// examples/step48.cpp - Step 48: multi-class classification of the spiral data set with
// shuffled mini-batches (MLP((10, 3)), softmax cross entropy, SGD lr 1.0).
//
// The DeZero Python it mirrors (steps/step48.py; the decision-boundary plot is
// left out):
//   max_epoch = 300
//   batch_size = 30
//   hidden_size = 10
//   lr = 1.0
//
//   x, t = dezero.datasets.get_spiral(train=True)
//   model = MLP((hidden_size, 3))
//   optimizer = optimizers.SGD(lr).setup(model)
//
//   data_size = len(x)
//   max_iter = math.ceil(data_size / batch_size)
//
//   for epoch in range(max_epoch):
//       # Shuffle index for data
//       index = np.random.permutation(data_size)
//       sum_loss = 0
//
//       for i in range(max_iter):
//           batch_index = index[i * batch_size:(i + 1) * batch_size]
//           batch_x = x[batch_index]
//           batch_t = t[batch_index]
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
//
// Deterministic without a seed: get_spiral seeds the global generator.
#include <dezero/dezero.hpp>

#include <cstdio>

namespace F = dezero::F;
using dezero::Slice;
using dezero::Tensor;
using dezero::Variable;

int main() {
  const int max_epoch = 300;
  const std::int64_t batch_size = 30;
  const std::int64_t hidden_size = 10;
  const double lr = 1.0;

  auto [x, t] = dezero::datasets::get_spiral(/*train=*/true);
  dezero::models::MLP model({hidden_size, 3});
  dezero::optimizers::SGD optimizer(lr);
  optimizer.setup(model);

  const std::int64_t data_size = x.len();
  const std::int64_t max_iter = (data_size + batch_size - 1) / batch_size;

  for (int epoch = 0; epoch < max_epoch; ++epoch) {
    Tensor index = dezero::random::permutation(data_size);
    double sum_loss = 0;

    for (std::int64_t i = 0; i < max_iter; ++i) {
      Tensor batch_index = index[Slice(i * batch_size, (i + 1) * batch_size)];
      Tensor batch_x = x[batch_index];
      Tensor batch_t = t[batch_index];

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
}
