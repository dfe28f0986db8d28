// examples/step36.cpp - Step 36: uses of double backprop beyond Newton's method. The
// gradient gx = dy/dx = 2x is a Variable, so it can appear in a new expression
// z = gx^3 + y whose derivative dz/dx = 24x^2 + 2x is 100 at x = 2.
//
// The DeZero Python it mirrors (steps/step36.py):
//   x = Variable(np.array(2.0))
//   y = x ** 2
//   y.backward(create_graph=True)
//   gx = x.grad
//   x.cleargrad()
//   z = gx ** 3 + y
//   z.backward()
//   print(x.grad)   # variable(100.0)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

int main() try {
  Variable x(dezero::array(2.0));
  Variable y = x.pow(2);
  y.backward(/*retain_grad=*/false, /*create_graph=*/true);
  Variable gx = x.grad();
  x.cleargrad();

  Variable z = gx.pow(3) + y;
  z.backward();
  std::cout << x.grad() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step36", e);
}
