// examples/step54.cpp - Step 54: dropout and test mode. In training F::dropout zeroes
// each element with probability 0.5 and scales the survivors by 1 / (1 - 0.5);
// under test_mode() it passes x through unchanged.
//
// The DeZero Python it mirrors (steps/step54.py):
//   x = np.ones(5)
//   print(x)
//
//   # When training
//   y = F.dropout(x)
//   print(y)
//
//   # When testing (predicting)
//   with test_mode():
//       y = F.dropout(x)
//       print(y)
//
// step54.py does not seed; this program seeds with 0 (as np.random.seed(0)
// would) so the mask is reproducible: rand(5) = [0.549 0.715 0.603 0.545 0.424].
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main() try {
  dezero::random::seed(0);
  dezero::Tensor x = dezero::ones({5}, dezero::float64);
  std::cout << x << "\n";

  // When training
  Variable y = F::dropout(x);
  std::cout << y << "\n";

  // When testing (predicting)
  {
    auto guard = dezero::test_mode();
    y = F::dropout(x);
    std::cout << y << "\n";
  }
} catch (const std::exception& e) {
  return example::report_error("step54", e);
}
