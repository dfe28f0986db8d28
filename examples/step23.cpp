// examples/step23.cpp - Step 23: the code becomes a package. From here on the book
// imports dezero; in C++ the library is one #include (or the per-area headers).
// y = (x + 3)^2 at 1 is 16 with dy/dx = 8.
//
// The DeZero Python it mirrors (steps/step23.py):
//   if '__file__' in globals():
//       import os, sys
//       sys.path.append(os.path.join(os.path.dirname(__file__), '..'))
//   import numpy as np
//   from dezero import Variable
//   x = Variable(np.array(1.0))
//   y = (x + 3) ** 2
//   y.backward()
//   print(y)         # variable(16.0)
//   print(x.grad)    # 8.0
// (Built in this tree, CMake links the example to dezero::dezero; a project of your
// own does find_package(dezero) and links the same target - see tests/consumer.)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

int main() try {
  Variable x(dezero::array(1.0));
  Variable y = (x + 3).pow(2);
  y.backward();
  std::cout << y << "\n";
  std::cout << x.grad().data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step23", e);
}
