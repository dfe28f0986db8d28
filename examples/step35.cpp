// examples/step35.cpp - Step 35: the computational graph of higher-order derivatives.
// Differentiating tanh (y' = 1 - y^2) again and again builds ever larger graphs;
// the graph of the (iters+1)-th derivative is written with plot_dot_graph
// (tanh.dot, and tanh.png when Graphviz is installed). The book uses iters = 1
// (the 2nd derivative); examples/tanh.py uses iters = 3. Usage: step35 [--iters N]
// [--out FILE]. Also prints tanh and its derivatives of orders 1..4 at x = 1.
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
#include <string>

namespace F = dezero::F;
using dezero::Variable;

int main(int argc, char** argv) {
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
}
