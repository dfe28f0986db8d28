// examples/step28.cpp - Step 28: function optimisation. Gradient descent on the
// Rosenbrock function from (0, 2), lr 0.001, 1000 iterations: the first use of
// gradients to minimise something. Prints (x0, x1) before each update, like the
// book (1000 lines; the minimum is at (1, 1), which 1000 steps do not reach).
//
// The DeZero Python it mirrors (steps/step28.py, with core_simple):
//   def rosenbrock(x0, x1):
//       y = 100 * (x1 - x0 ** 2) ** 2 + (x0 - 1) ** 2
//       return y
//   x0 = Variable(np.array(0.0)); x1 = Variable(np.array(2.0))
//   iters = 1000; lr = 0.001
//   for i in range(iters):
//       print(x0, x1)
//       y = rosenbrock(x0, x1)
//       x0.cleargrad(); x1.cleargrad()
//       y.backward()
//       x0.data -= lr * x0.grad
//       x1.data -= lr * x1.grad
// Last line printed: variable(0.6834917840420289) variable(0.46565059996514135)
#include <dezero/dezero.hpp>

#include <iostream>

using dezero::Variable;

Variable rosenbrock(const Variable& x0, const Variable& x1) {
  Variable y = 100 * (x1 - x0.pow(2)).pow(2) + (x0 - 1).pow(2);
  return y;
}

int main() {
  Variable x0(dezero::array(0.0));
  Variable x1(dezero::array(2.0));
  const int iters = 1000;
  const double lr = 0.001;

  for (int i = 0; i < iters; ++i) {
    std::cout << x0 << " " << x1 << "\n";

    Variable y = rosenbrock(x0, x1);

    x0.cleargrad();
    x1.cleargrad();
    y.backward();

    x0.set_data(x0.data() - lr * x0.grad().data());
    x1.set_data(x1.data() - lr * x1.grad().data());
  }
}
