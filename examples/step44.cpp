// examples/step44.cpp - Step 44: Parameter and Layer. L::Linear creates its weight lazily
// (in_size from the first input) and owns it; params() and cleargrads() walk the
// layer's parameters. The same network as step 43.
//
// The DeZero Python it mirrors (steps/step44.py; the plot is left out):
//   np.random.seed(0)
//   x = np.random.rand(100, 1)
//   y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
//
//   l1 = L.Linear(10)
//   l2 = L.Linear(1)
//
//   def predict(x):
//       y = l1(x)
//       y = F.sigmoid(y)
//       y = l2(y)
//       return y
//
//   lr = 0.2
//   iters = 10000
//   for i in range(iters):
//       y_pred = predict(x)
//       loss = F.mean_squared_error(y, y_pred)
//       l1.cleargrads()
//       l2.cleargrads()
//       loss.backward()
//       for l in [l1, l2]:
//           for p in l.params():
//               p.data -= lr * p.grad.data
//       if i % 1000 == 0:
//           print(loss)
//   # variable(0.8165178492839196) ... variable(0.0761876413118557)
//
// The weights are float32 (Linear's default dtype) and x is float64, so the loss
// is float64; `p.data -= ...` updates in place and keeps the weights float32.
// The book's figure (the data and the fitted curve) is drawn by gnuplot into
// step44.png from step44_data.csv and step44_fit.csv (examples/common/plot.hpp).
#include <dezero/dezero.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <vector>

#include "common/plot.hpp"
#include "common/report.hpp"

namespace F = dezero::F;
namespace L = dezero::L;
using dezero::Variable;

int main() try {
  dezero::random::seed(0);
  dezero::Tensor x = dezero::random::rand({100, 1});
  const double pi = std::acos(-1.0);  // np.pi
  dezero::Tensor y = dezero::sin(2.0 * pi * x) + dezero::random::rand({100, 1});

  L::Linear l1(10);
  L::Linear l2(1);

  auto predict = [&](const Variable& x) {
    Variable y = l1(x);
    y = F::sigmoid(y);
    y = l2(y);
    return y;
  };

  const double lr = 0.2;
  const int iters = 10000;
  for (int i = 0; i < iters; ++i) {
    Variable y_pred = predict(x);
    Variable loss = F::mean_squared_error(y, y_pred);

    l1.cleargrads();
    l2.cleargrads();
    loss.backward();

    for (L::Linear* l : {&l1, &l2}) {
      for (dezero::Parameter& p : l->params()) {
        dezero::Tensor data = p.data();  // shares p's storage: -= updates p in place
        data -= lr * p.grad().data();
      }
    }
    if (i % 1000 == 0) std::cout << loss << "\n";
  }

  // --- the figure: the data and predict(x) over [0, 1] ---
  dezero::Tensor grid = dezero::linspace(0, 1, 100).reshape({100, 1});
  std::vector<double> gx = grid.to_vector<double>(), gy;
  {
    auto guard = dezero::no_grad();
    gy = predict(grid).data().astype(dezero::float64).to_vector<double>();
  }
  std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>();
  std::ofstream data("step44_data.csv"), fit("step44_fit.csv");
  data.precision(12);
  fit.precision(12);
  data << "x,y\n";
  for (std::size_t i = 0; i < xs.size(); ++i) data << xs[i] << "," << ys[i] << "\n";
  fit << "x,y_pred\n";
  for (std::size_t i = 0; i < gx.size(); ++i) fit << gx[i] << "," << gy[i] << "\n";
  data.close();
  fit.close();
  std::cout << "wrote step44_data.csv (" << xs.size() << " points) and step44_fit.csv (" << gx.size() << " points)\n";
  plot::Panel panel{"y = sin(2 pi x) + noise, fitted by Linear(10) -> sigmoid -> Linear(1)", "x", "y", {}, ""};
  panel.layers = {{"step44_data.csv", "1:2", "data (100 points)", "points pt 7 ps 0.8 lc rgb '#1f77b4'"},
                  {"step44_fit.csv", "1:2", "predict(x) after 10000 iterations", "lines lw 3 lc rgb '#d62728'"}};
  panel.setup = "set xrange [0:1]\nset key outside right top";
  plot::draw("step44.png", plot::Figure{"Step 44: non-linear regression with layers", {panel}, 1000, 520});
} catch (const std::exception& e) {
  return example::report_error("step44", e);
}
