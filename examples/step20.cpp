// examples/step20.cpp - Step 20: operator overloading (1). * and + on Variables
// build the graph (Mul, Add) like mul() and add() do: y = a * b + c at (3, 2, 1) is
// 7 with dy/da = b = 2 and dy/db = a = 3.
//
// The DeZero Python it mirrors (steps/step20.py):
//   class Mul(Function):
//       def forward(self, x0, x1):
//           y = x0 * x1
//           return y
//       def backward(self, gy):
//           x0, x1 = self.inputs[0].data, self.inputs[1].data
//           return gy * x1, gy * x0
//   Variable.__add__ = add
//   Variable.__mul__ = mul
//   a = Variable(np.array(3.0))
//   b = Variable(np.array(2.0))
//   c = Variable(np.array(1.0))
//   # y = add(mul(a, b), c)
//   y = a * b + c
//   y.backward()
//   print(y)         # variable(7.0)
//   print(a.grad)    # 2.0
//   print(b.grad)    # 3.0
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;
namespace F = dezero::F;

int main() try {
  Variable a(dezero::array(3.0));
  Variable b(dezero::array(2.0));
  Variable c(dezero::array(1.0));

  // Variable y = F::add(F::mul(a, b), c);   // the same graph, spelled with functions
  Variable y = a * b + c;
  y.backward();

  std::cout << y << "\n";
  std::cout << a.grad().data() << "\n";
  std::cout << b.grad().data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step20", e);
}
