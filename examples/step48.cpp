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
// The book's decision-boundary figure (the class the model predicts at each point of
// a grid, under the training points) is drawn by gnuplot into step48.png from
// step48_grid.csv and step48_data.csv (examples/common/plot.hpp).
#include <dezero/dezero.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/plot.hpp"
#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Slice;
using dezero::Tensor;
using dezero::Variable;

int main() try {
  const int max_epoch = 300;
  const std::int64_t batch_size = 30;
  const std::int64_t hidden_size = 10;
  const double lr = 1.0;

  auto [x, t] = dezero::datasets::get_spiral(/*train=*/true);
  dezero::models::MLP model({hidden_size, 3});
  auto optimizer = dezero::optimizers::SGD(lr).setup(model);  // DeZero's one line

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

  // --- the decision boundary: argmax of model(X) on a grid (the book: h = 0.001) ---
  const double h = 0.01, lo = -1.1, hi = 1.1;
  const int n = static_cast<int>((hi - lo) / h) + 1;
  std::vector<float> grid;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) grid.insert(grid.end(), {static_cast<float>(lo + h * i), static_cast<float>(lo + h * j)});
  Tensor X = dezero::array(grid, {static_cast<std::int64_t>(n) * n, 2});
  Tensor predict_cls;
  {
    auto guard = dezero::no_grad();
    predict_cls = model(X).data().argmax(1);
  }
  std::vector<std::int64_t> cls = predict_cls.to_vector<std::int64_t>();
  std::vector<double> xv = x.astype(dezero::float64).to_vector<double>();
  std::vector<std::int64_t> tv = t.astype(dezero::int64).to_vector<std::int64_t>();
  std::ofstream gout("step48_grid.csv"), dout("step48_data.csv");
  gout << "x0,x1,class\n";  // a blank line after each x0: gnuplot's grid format
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      gout << grid[2 * (i * n + j)] << "," << grid[2 * (i * n + j) + 1] << "," << cls[i * n + j] << "\n";
    gout << "\n";
  }
  dout << "x0,x1,class\n";
  for (std::size_t i = 0; i < tv.size(); ++i) dout << xv[2 * i] << "," << xv[2 * i + 1] << "," << tv[i] << "\n";
  gout.close();
  dout.close();
  std::printf("wrote step48_grid.csv (%d x %d grid) and step48_data.csv (%zu points)\n", n, n, tv.size());
  std::fflush(stdout);

  plot::Panel panel{"the class model(x) predicts (background) and the training data", "x0", "x1", {}, ""};
  panel.layers.push_back({"step48_grid.csv", "1:2:3", "", "image"});
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c"};
  const char* shapes[] = {"pt 6", "pt 4", "pt 8"};  // circle, square, triangle (the book: o x ^)
  for (int c = 0; c < 3; ++c)
    panel.layers.push_back({"step48_data.csv", "1:($3 == " + std::to_string(c) + " ? $2 : NaN)",
                            "class " + std::to_string(c), std::string("points ") + shapes[c] + " ps 1.2 lw 2 lc rgb '" +
                                                              colors[c] + "'"});
  panel.setup =
      "set palette defined (0 '#c6dbef', 1 '#fcbba1', 2 '#c7e9c0')\nset cbrange [0:2]\nunset colorbox\n"
      "set xrange [-1.1:1.1]\nset yrange [-1.1:1.1]\nset size ratio -1\nset key outside right top\nunset grid";
  plot::draw("step48.png", plot::Figure{"Step 48: spiral data, MLP((10, 3)), 300 epochs", {panel}, 900, 700});
} catch (const std::exception& e) {
  return example::report_error("step48", e);
}
