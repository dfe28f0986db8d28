// examples/step34.cpp - Step 34: higher-order derivatives of sin. Repeating
// "gx = x.grad; x.cleargrad(); gx.backward(create_graph=True)" differentiates
// again each time: sin -> cos -> -sin -> -cos.
//
// The book plots y, y', y'', y''' over linspace(-7, 7, 200) with matplotlib.
// Here the values at x = 1 are printed, the curves are written to a CSV file
// (x,y,dy,d2y,d3y; default sin.csv, or argv[1]) and drawn by gnuplot into sin.png
// (examples/common/plot.hpp; without gnuplot it prints the command that draws it).
//
// The DeZero Python it mirrors (steps/step34.py):
//   x = Variable(np.linspace(-7, 7, 200))
//   y = F.sin(x)
//   y.backward(create_graph=True)
//   logs = [y.data.flatten()]
//   for i in range(3):
//       logs.append(x.grad.data.flatten())
//       gx = x.grad
//       x.cleargrad()
//       gx.backward(create_graph=True)
//   labels = ["y=sin(x)", "y'", "y''", "y'''"]
//   for i, v in enumerate(logs):
//       plt.plot(x.data, logs[i], label=labels[i])
// At x = 1: 0.8414709848078965 0.5403023058681397 -0.8414709848078965 -0.5403023058681397
#include <dezero/dezero.hpp>

#include <charconv>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "common/plot.hpp"
#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Tensor;
using dezero::Variable;

// y, y', y'', y''' of sin at every element of x_data.
std::vector<Tensor> sin_derivatives(const Tensor& x_data) {
  Variable x(x_data);
  Variable y = F::sin(x);
  y.backward(/*retain_grad=*/false, /*create_graph=*/true);

  std::vector<Tensor> logs = {y.data().flatten()};
  for (int i = 0; i < 3; ++i) {
    logs.push_back(x.grad().data().flatten());
    Variable gx = x.grad();
    x.cleargrad();
    gx.backward(/*retain_grad=*/false, /*create_graph=*/true);
  }
  return logs;
}

std::string repr(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

int main(int argc, char** argv) try {
  const std::string csv_path = argc > 1 ? argv[1] : "sin.csv";
  const char* labels[] = {"y=sin(x)", "y'", "y''", "y'''"};

  // --- the derivatives at x = 1 ---
  std::vector<Tensor> at1 = sin_derivatives(dezero::array(1.0));
  for (int i = 0; i < 4; ++i) std::cout << labels[i] << " at x=1: " << at1[i].reshape({}) << "\n";

  // --- the book's curves over linspace(-7, 7, 200), to CSV ---
  Tensor x = dezero::linspace(-7, 7, 200);
  std::vector<Tensor> logs = sin_derivatives(x);
  std::ofstream out(csv_path);
  if (!out) {
    std::cerr << "step34: cannot write " << csv_path << "\n";
    return 1;
  }
  out << "x,y,dy,d2y,d3y\n";
  std::vector<double> xs = x.to_vector<double>();
  std::vector<std::vector<double>> cols;
  for (const Tensor& t : logs) cols.push_back(t.to_vector<double>());
  for (std::size_t j = 0; j < xs.size(); ++j) {
    out << repr(xs[j]);
    for (const auto& c : cols) out << "," << repr(c[j]);
    out << "\n";
  }
  out.close();
  std::cout << "wrote " << xs.size() << " rows to " << csv_path << "\n";

  // --- the book's figure: plt.plot(x.data, logs[i], label=labels[i]) ---
  plot::Panel panel{"y = sin(x) and its derivatives, by backward(create_graph=true)", "x", "y", {}, ""};
  for (int i = 0; i < 4; ++i) panel.layers.push_back({csv_path, "1:" + std::to_string(i + 2), labels[i]});
  panel.setup = "set xrange [-7:7]\nset yrange [-1.2:1.2]\nset key outside right top";
  plot::draw(plot::stem_of(csv_path) + ".png", plot::Figure{"Step 34: higher-order derivatives", {panel}, 900, 480});
} catch (const std::exception& e) {
  return example::report_error("step34", e);
}
