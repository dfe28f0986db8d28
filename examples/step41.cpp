// examples/step41.cpp - Step 41: matrix products. F::matmul and its backward
// (gx = gy W^T, gW = x^T gy): each gradient has its variable's shape.
//
// The DeZero Python it mirrors (steps/step41.py; the file in the repository
// calls y.backward() on an undefined y, the book's text reads y = F.matmul(x, w)):
//   x = Variable(np.random.randn(2, 3))
//   w = Variable(np.random.randn(3, 4))
//   y = F.matmul(x, w)
//   y.backward()
//   print(x.grad.shape)   # (2, 3)
//   print(w.grad.shape)   # (3, 4)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main() try {
  Variable x(dezero::random::randn({2, 3}));
  Variable w(dezero::random::randn({3, 4}));
  Variable y = F::matmul(x, w);
  y.backward();

  std::cout << x.grad().shape() << "\n";
  std::cout << w.grad().shape() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step41", e);
}
