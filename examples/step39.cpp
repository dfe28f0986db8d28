// examples/step39.cpp - Step 39: the sum function. Summing (all axes, one axis, or with
// keepdims) and its backward, which broadcasts the gradient back to the input's
// shape.
//
// The DeZero Python it mirrors (steps/step39.py):
//   x = Variable(np.array([1, 2, 3, 4, 5, 6]))
//   y = F.sum(x); y.backward(); print(y); print(x.grad)
//   x = Variable(np.array([[1, 2, 3], [4, 5, 6]]))
//   y = F.sum(x); y.backward(); print(y); print(x.grad)
//   x = Variable(np.array([[1, 2, 3], [4, 5, 6]]))
//   y = F.sum(x, axis=0); y.backward(); print(y); print(x.grad)
//   x = Variable(np.random.randn(2, 3, 4, 5))
//   y = x.sum(keepdims=True)
//   print(y.shape)   # (1, 1, 1, 1)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main() try {
  {
    Variable x(dezero::array({1, 2, 3, 4, 5, 6}));
    Variable y = F::sum(x);
    y.backward();
    std::cout << y << "\n";
    std::cout << x.grad() << "\n";
  }
  {
    Variable x(dezero::array({{1, 2, 3}, {4, 5, 6}}));
    Variable y = F::sum(x);
    y.backward();
    std::cout << y << "\n";
    std::cout << x.grad() << "\n";
  }
  {
    Variable x(dezero::array({{1, 2, 3}, {4, 5, 6}}));
    Variable y = F::sum(x, /*axis=*/0);
    y.backward();
    std::cout << y << "\n";
    std::cout << x.grad() << "\n";
  }
  {
    Variable x(dezero::random::randn({2, 3, 4, 5}));
    Variable y = x.sum(dezero::Axes::all(), /*keepdims=*/true);
    std::cout << y.shape() << "\n";
  }
} catch (const std::exception& e) {
  return example::report_error("step39", e);
}
