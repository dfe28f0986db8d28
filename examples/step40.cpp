// examples/step40.cpp - Step 40: broadcasting. Arithmetic between different shapes
// broadcasts like NumPy, and the backward pass sums the gradient back to each
// input's shape (sum_to), so x1 of shape (1,) gets grad [3].
//
// The DeZero Python it mirrors (steps/step40.py):
//   x0 = Variable(np.array([1, 2, 3]))
//   x1 = Variable(np.array([10]))
//   y = x0 + x1
//   print(y)          # variable([11 12 13])
//   y.backward()
//   print(x1.grad)    # variable([3])
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

int main() try {
  Variable x0(dezero::array({1, 2, 3}));
  Variable x1(dezero::array({10}));
  Variable y = x0 + x1;
  std::cout << y << "\n";

  y.backward();
  std::cout << x1.grad() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step40", e);
}
