// examples/step37.cpp - Step 37: tensors. The functions built for scalars work element by
// element on arrays; F::sum reduces to a scalar, and every gradient is an array
// of ones of its variable's shape (retain_grad keeps the intermediate t.grad).
//
// The DeZero Python it mirrors (steps/step37.py):
//   x = Variable(np.array([[1, 2, 3], [4, 5, 6]]))
//   c = Variable(np.array([[10, 20, 30], [40, 50, 60]]))
//   t = x + c
//   y = F.sum(t)
//   y.backward(retain_grad=True)
//   print(y.grad)
//   print(t.grad)
//   print(x.grad)
//   print(c.grad)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main() try {
  Variable x(dezero::array({{1, 2, 3}, {4, 5, 6}}));
  Variable c(dezero::array({{10, 20, 30}, {40, 50, 60}}));
  Variable t = x + c;
  Variable y = F::sum(t);

  y.backward(/*retain_grad=*/true);
  std::cout << y.grad() << "\n";
  std::cout << t.grad() << "\n";
  std::cout << x.grad() << "\n";
  std::cout << c.grad() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step37", e);
}
