// examples/step35.cpp - Step 35: the computational graph of higher-order derivatives.
// Differentiating tanh (y' = 1 - y^2) again and again builds ever larger graphs;
// the graph of the (iters+1)-th derivative is written with plot_dot_graph
// (tanh.dot, and tanh.png when Graphviz is installed). The book uses iters = 1
// (the 2nd derivative); examples/tanh.py uses iters = 3. Usage: step35 [--iters N]
// [--out FILE]. Also prints tanh and its derivatives of orders 1..4 at x = 1, and
// draws them over [-4, 4] (tanh_derivatives.csv, and tanh_derivatives.png through
// gnuplot: examples/common/plot.hpp).
//
// The DeZero Python it mirrors (steps/step35.py):
//   x = Variable(np.array(1.0))
//   y = F.tanh(x)
//   x.name = 'x'
//   y.name = 'y'
//   y.backward(create_graph=True)
//   iters = 1
//   for i in range(iters):
//       gx = x.grad
//       x.cleargrad()
//       gx.backward(create_graph=True)
//   gx = x.grad
//   gx.name = 'gx' + str(iters + 1)
//   plot_dot_graph(gx, to_file='tanh.png')
// At x = 1: 0.7615941559557649, 0.41997434161402614, -0.6397000084492246,
// 0.6216266807712962, 0.6650910447505024 (orders 0..4).
#include <dezero/dezero.hpp>

#include <cstdlib>
#include <iostream>
#include <fstream>
#include <string>
#include <vector>

#include "common/plot.hpp"
#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main(int argc, char** argv) try {
  int iters = 1;
  std::string to_file = "tanh.png";
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--iters" && a + 1 < argc) {
      iters = std::atoi(argv[++a]);
    } else if (arg == "--out" && a + 1 < argc) {
      to_file = argv[++a];
    } else {
      std::cerr << "usage: step35 [--iters N] [--out FILE]\n";
      return 2;
    }
  }

  // --- the book: the graph of the (iters+1)-th derivative ---
  {
    Variable x(dezero::array(1.0));
    Variable y = F::tanh(x);
    x.set_name("x");
    y.set_name("y");
    y.backward(/*retain_grad=*/false, /*create_graph=*/true);

    for (int i = 0; i < iters; ++i) {
      Variable gx = x.grad();
      x.cleargrad();
      gx.backward(/*retain_grad=*/false, /*create_graph=*/true);
    }

    Variable gx = x.grad();
    gx.set_name("gx" + std::to_string(iters + 1));
    std::string dot = dezero::utils::get_dot_graph(gx);
    std::size_t n_funcs = 0;
    for (auto p = dot.find("shape=box"); p != std::string::npos; p = dot.find("shape=box", p + 1)) ++n_funcs;
    std::string written = dezero::utils::plot_dot_graph(gx, /*verbose=*/true, to_file);
    std::cout << gx.name() << ": " << n_funcs << " functions in the graph, wrote " << written << "\n";
  }

  // --- the derivatives at x = 1, orders 1..4 ---
  Variable x(dezero::array(1.0));
  Variable y = F::tanh(x);
  std::cout << "tanh(1) = " << y.data() << "\n";
  y.backward(/*retain_grad=*/false, /*create_graph=*/true);
  for (int order = 1; order <= 4; ++order) {
    Variable gx = x.grad();
    std::cout << "order " << order << ": " << gx.data() << "\n";
    x.cleargrad();
    gx.backward(/*retain_grad=*/false, /*create_graph=*/true);
  }

  // --- tanh and its derivatives of orders 1..4 over linspace(-4, 4, 200), drawn ---
  Variable xs(dezero::linspace(-4, 4, 200));
  Variable ys = F::tanh(xs);
  ys.backward(/*retain_grad=*/false, /*create_graph=*/true);
  std::vector<std::vector<double>> cols = {xs.data().to_vector<double>(), ys.data().to_vector<double>()};
  for (int order = 1; order <= 4; ++order) {
    Variable gx = xs.grad();
    cols.push_back(gx.data().to_vector<double>());
    xs.cleargrad();
    if (order < 4) gx.backward(/*retain_grad=*/false, /*create_graph=*/true);
  }
  const std::string csv = "tanh_derivatives.csv";
  {
    std::ofstream out(csv);
    out << "x,y,dy,d2y,d3y,d4y\n";
    out.precision(12);
    for (std::size_t j = 0; j < cols[0].size(); ++j) {
      for (std::size_t c = 0; c < cols.size(); ++c) out << (c ? "," : "") << cols[c][j];
      out << "\n";
    }
  }
  std::cout << "wrote " << cols[0].size() << " rows to " << csv << "\n";
  plot::Panel panel{"y = tanh(x) and its derivatives of orders 1 to 4", "x", "y", {}, ""};
  const char* labels[] = {"y = tanh(x)", "y'", "y''", "y'''", "y''''"};
  for (int c = 0; c < 5; ++c) panel.layers.push_back({csv, "1:" + std::to_string(c + 2), labels[c]});
  panel.setup = "set xrange [-4:4]\nset key outside right top";
  plot::draw("tanh_derivatives.png", plot::Figure{"Step 35: higher-order derivatives of tanh", {panel}, 900, 480});
} catch (const std::exception& e) {
  return example::report_error("step35", e);
}
