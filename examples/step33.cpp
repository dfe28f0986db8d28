// examples/step33.cpp - Step 33: Newton's method with the second derivative computed by
// double backprop. backward(create_graph=true) records the backward pass, so the
// gradient gx is itself a Variable that can be differentiated again. Gives the
// same sequence as step 29's hand-written f''; f'(2) = 24, f''(2) = 44.
//
// The DeZero Python it mirrors (steps/step33.py):
//   def f(x):
//       y = x ** 4 - 2 * x ** 2
//       return y
//   x = Variable(np.array(2.0))
//   iters = 10
//   for i in range(iters):
//       print(i, x)
//       y = f(x)
//       x.cleargrad()
//       y.backward(create_graph=True)
//       gx = x.grad
//       x.cleargrad()
//       gx.backward()
//       gx2 = x.grad
//       x.data -= gx.data / gx2.data
// Prints 0 variable(2.0), 1 variable(1.4545454545454546), 2 variable(1.1510467893775467),
// 3 variable(1.0253259289766978), ..., 7 variable(1.0), ...
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

Variable f(const Variable& x) {
  Variable y = x.pow(4) - 2 * x.pow(2);
  return y;
}

int main() try {
  Variable x(dezero::array(2.0));
  const int iters = 10;

  for (int i = 0; i < iters; ++i) {
    std::cout << i << " " << x << "\n";

    Variable y = f(x);
    x.cleargrad();
    y.backward(/*retain_grad=*/false, /*create_graph=*/true);

    Variable gx = x.grad();
    x.cleargrad();
    gx.backward();
    Variable gx2 = x.grad();

    x.set_data(x.data() - gx.data() / gx2.data());
  }
} catch (const std::exception& e) {
  return example::report_error("step33", e);
}
