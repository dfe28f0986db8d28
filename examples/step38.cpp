// examples/step38.cpp - Step 38: functions that change shapes. reshape and transpose move
// elements without computing; their backward passes reshape / transpose the
// gradient back to the input's shape.
//
// The DeZero Python it mirrors (steps/step38.py):
//   x = Variable(np.array([[0, 1, 2], [3, 4, 5]]))
//   y = F.reshape(x, (6,))  # y = x.reshape(6)
//   y.backward(retain_grad=True)
//   print(x.grad)
//   x = Variable(np.array([[1, 2, 3], [4, 5, 6]]))
//   y = F.transpose(x)  # y = x.T
//   y.backward()
//   print(x.grad)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main() try {
  {
    Variable x(dezero::array({{0, 1, 2}, {3, 4, 5}}));
    Variable y = F::reshape(x, {6});  // y = x.reshape({6})
    y.backward(/*retain_grad=*/true);
    std::cout << x.grad() << "\n";
  }
  {
    Variable x(dezero::array({{1, 2, 3}, {4, 5, 6}}));
    Variable y = F::transpose(x);  // y = x.T()
    y.backward();
    std::cout << x.grad() << "\n";
  }
} catch (const std::exception& e) {
  return example::report_error("step38", e);
}
