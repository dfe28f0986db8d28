// examples/step22.cpp - Step 22: operator overloading (3). Negation, subtraction,
// division (with the operand on either side) and powers, each a Function with its
// backward: -2, 0, 1, 1.5 and 8 at x = 2.
//
// The DeZero Python it mirrors (steps/step22.py):
//   x = Variable(np.array(2.0))
//   y = -x
//   print(y)         # variable(-2.0)
//   y1 = 2.0 - x
//   y2 = x - 1.0
//   print(y1)        # variable(0.0)
//   print(y2)        # variable(1.0)
//   y = 3.0 / x
//   print(y)         # variable(1.5)
//   y = x ** 3
//   print(y)         # variable(8.0)
// C++ has no ** operator: x ** 3 is x.pow(3) (or F::pow(x, 3)).
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

int main() try {
  Variable x(dezero::array(2.0));
  Variable y = -x;
  std::cout << y << "\n";

  Variable y1 = 2.0 - x;
  Variable y2 = x - 1.0;
  std::cout << y1 << "\n";
  std::cout << y2 << "\n";

  y = 3.0 / x;
  std::cout << y << "\n";

  y = x.pow(3);
  std::cout << y << "\n";

  // Their gradients: d(-x) = -1, d(2 - x) = -1, d(3 / x) = -3 / x^2, d(x^3) = 3 x^2.
  Variable z = -x + (2.0 - x) + 3.0 / x + x.pow(3);
  z.backward();
  std::cout << "dz/dx: " << x.grad().data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step22", e);
}
