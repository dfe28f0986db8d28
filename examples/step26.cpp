// examples/step26.cpp - Step 26: visualising the graph. get_dot_graph writes the
// graph that produced z in Graphviz's DOT language; plot_dot_graph saves it as
// goldstein.dot and renders goldstein.png with Graphviz `dot` when it is installed
// (without it the .dot file is written and the program says how to render it).
//
// The DeZero Python it mirrors (steps/step26.py):
//   def goldstein(x, y):
//       z = (1 + (x + y + 1)**2 * (19 - 14*x + 3*x**2 - 14*y + 6*x*y + 3*y**2)) *
//           (30 + (2*x - 3*y)**2 * (18 - 32*x + 12*x**2 + 48*y - 36*x*y + 27*y**2))
//       return z
//   x = Variable(np.array(1.0))
//   y = Variable(np.array(1.0))
//   z = goldstein(x, y)
//   z.backward()
//   x.name = 'x'
//   y.name = 'y'
//   z.name = 'z'
//   plot_dot_graph(z, verbose=False, to_file='goldstein.png')
// Options: --out FILE (default goldstein.png; FILE.dot writes only the DOT text).
#include <dezero/dezero.hpp>

#include <cstring>
#include <iostream>
#include <string>

#include "common/report.hpp"

using dezero::Variable;

Variable goldstein(const Variable& x, const Variable& y) {
  Variable z = (1 + (x + y + 1).pow(2) * (19 - 14 * x + 3 * x.pow(2) - 14 * y + 6 * x * y + 3 * y.pow(2))) *
               (30 + (2 * x - 3 * y).pow(2) * (18 - 32 * x + 12 * x.pow(2) + 48 * y - 36 * x * y + 27 * y.pow(2)));
  return z;
}

int main(int argc, char** argv) try {
  std::string to_file = "goldstein.png";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--out") == 0) to_file = argv[i + 1];

  Variable x(dezero::array(1.0));
  Variable y(dezero::array(1.0));
  Variable z = goldstein(x, y);
  z.backward();

  x.set_name("x");
  y.set_name("y");
  z.set_name("z");
  std::string dot = dezero::utils::get_dot_graph(z, false);
  std::size_t functions = 0;
  for (std::size_t p = dot.find("shape=box"); p != std::string::npos; p = dot.find("shape=box", p + 1)) ++functions;
  std::cout << "the graph of z has " << functions << " functions\n";

  std::string written = dezero::utils::plot_dot_graph(z, false, to_file);
  std::cout << "wrote " << written << "\n";
  if (written != to_file) std::cout << "(Graphviz 'dot' is not installed: only the DOT text was written)\n";
  return 0;
} catch (const std::exception& e) {
  return example::report_error("step26", e);
}
