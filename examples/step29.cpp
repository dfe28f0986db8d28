// examples/step29.cpp - Step 29: Newton's method for f(x) = x^4 - 2x^2, with the second
// derivative written by hand (f''(x) = 12x^2 - 4). Converges to the minimum at
// x = 1 in about 7 iterations, where gradient descent needs thousands.
//
// The DeZero Python it mirrors (steps/step29.py, with core_simple):
//   def f(x):
//       y = x ** 4 - 2 * x ** 2
//       return y
//   def gx2(x):
//       return 12 * x ** 2 - 4
//   x = Variable(np.array(2.0))
//   iters = 10
//   for i in range(iters):
//       print(i, x)
//       y = f(x)
//       x.cleargrad()
//       y.backward()
//       x.data -= x.grad / gx2(x.data)
// Prints 0 variable(2.0), 1 variable(1.4545454545454546), 2 variable(1.1510467893775467), ...
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Tensor;
using dezero::Variable;

Variable f(const Variable& x) {
  Variable y = x.pow(4) - 2 * x.pow(2);
  return y;
}

Tensor gx2(const Tensor& x) { return 12.0 * dezero::pow(x, 2) - 4.0; }

int main() try {
  Variable x(dezero::array(2.0));
  const int iters = 10;

  for (int i = 0; i < iters; ++i) {
    std::cout << i << " " << x << "\n";

    Variable y = f(x);
    x.cleargrad();
    y.backward();

    x.set_data(x.data() - x.grad().data() / gx2(x.data()));
  }
} catch (const std::exception& e) {
  return example::report_error("step29", e);
}
