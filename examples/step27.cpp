// examples/step27.cpp - Step 27: the derivative of a Taylor series. my_sin adds
// the terms (-1)^i x^(2i+1) / (2i+1)! until one is smaller than the threshold; its
// graph is built from + * pow only, so backward differentiates the series itself.
// At pi/4: sin 0.7071067811865476, grad 0.7071067811865477; my_sin (threshold 1e-4)
// 0.7071064695751781, grad 0.7071032148228457. The graph is plotted like step 26.
//
// The DeZero Python it mirrors (steps/step27.py):
//   class Sin(Function):
//       def forward(self, x):
//           y = np.sin(x)
//           return y
//       def backward(self, gy):
//           x = self.inputs[0].data
//           gx = gy * np.cos(x)
//           return gx
//   def my_sin(x, threshold=0.0001):
//       y = 0
//       for i in range(100000):
//           c = (-1) ** i / math.factorial(2 * i + 1)
//           t = c * x ** (2 * i + 1)
//           y = y + t
//           if abs(t.data) < threshold:
//               break
//       return y
//   x = Variable(np.array(np.pi / 4))
//   y = sin(x)
//   y.backward()
//   print(y.data)    # 0.7071067811865476
//   print(x.grad)    # 0.7071067811865477
//   x = Variable(np.array(np.pi / 4))
//   y = my_sin(x)    # , threshold=1e-150)
//   y.backward()
//   print(y.data)    # 0.7071064695751781
//   print(x.grad)    # 0.7071032148228457
//   x.name = 'x'
//   y.name = 'y'
//   plot_dot_graph(y, verbose=False, to_file='my_sin.png')
// Here sin and cos of pi/4 print 0.7071067811865475 and 0.7071067811865476, the
// correctly rounded values of the C library; NumPy 1.24's own sin/cos are one ulp
// higher, hence the book's digits. my_sin's values, built from + * pow, are the book's.
// Options: --threshold T (default 1e-4), --out FILE (default my_sin.png).
#include <dezero/dezero.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "common/report.hpp"

using dezero::Variable;
namespace F = dezero::F;

double factorial(int n) {  // exact in a double up to 22!, far past what the series needs
  double f = 1;
  for (int k = 2; k <= n; ++k) f *= k;
  return f;
}

Variable my_sin(const Variable& x, double threshold = 0.0001) {
  Variable y(dezero::array(0.0));  // y = 0 (Python's 0 + t wraps the 0 in a Variable too)
  for (int i = 0; i < 100000; ++i) {
    double c = (i % 2 == 0 ? 1.0 : -1.0) / factorial(2 * i + 1);
    Variable t = c * x.pow(2 * i + 1);
    y = y + t;
    if (std::abs(t.data().item<double>()) < threshold) break;
  }
  return y;
}

int main(int argc, char** argv) try {
  double threshold = 0.0001;
  std::string to_file = "my_sin.png";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threshold") == 0) threshold = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--out") == 0) to_file = argv[i + 1];
  }

  const double pi = std::acos(-1.0);  // np.pi
  Variable x(dezero::array(pi / 4));
  Variable y = F::sin(x);
  y.backward();
  std::cout << y.data() << "\n";
  std::cout << x.grad().data() << "\n";

  x = Variable(dezero::array(pi / 4));
  y = my_sin(x, threshold);
  y.backward();
  std::cout << y.data() << "\n";
  std::cout << x.grad().data() << "\n";

  x.set_name("x");
  y.set_name("y");
  std::string written = dezero::utils::plot_dot_graph(y, false, to_file);
  std::cout << "wrote " << written << "\n";
  if (written != to_file) std::cout << "(Graphviz 'dot' is not installed: only the DOT text was written)\n";
  return 0;
} catch (const std::exception& e) {
  return example::report_error("step27", e);
}
