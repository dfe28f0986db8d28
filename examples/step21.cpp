// examples/step21.cpp - Step 21: operator overloading (2). A Tensor or a double on
// either side of an operator is turned into a Variable (DeZero's as_variable /
// as_array and __radd__ / __rmul__); a double takes the Variable's dtype.
//
// The DeZero Python it mirrors (steps/step21.py):
//   x = Variable(np.array(2.0))
//   y = x + np.array(3.0)
//   print(y)         # variable(5.0)
//   y = x + 3.0
//   print(y)         # variable(5.0)
//   y = 3.0 * x + 1.0
//   print(y)         # variable(7.0)
// (Python needs __array_priority__ so that np.array(3.0) + x stays a Variable; in
// C++ the Variable overloads are always chosen, in either order.)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

int main() try {
  Variable x(dezero::array(2.0));
  Variable y = x + dezero::array(3.0);
  std::cout << y << "\n";

  y = x + 3.0;
  std::cout << y << "\n";

  y = 3.0 * x + 1.0;
  std::cout << y << "\n";

  y = dezero::array(3.0) + x;  // the Tensor on the left
  std::cout << y << "\n";
} catch (const std::exception& e) {
  return example::report_error("step21", e);
}
