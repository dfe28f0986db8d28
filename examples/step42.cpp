// examples/step42.cpp - Step 42: linear regression on a toy data set, with a hand-written
// mean squared error and plain gradient descent on W and b.
//
// The DeZero Python it mirrors (steps/step42.py; the plot is left out):
//   np.random.seed(0)
//   x = np.random.rand(100, 1)
//   y = 5 + 2 * x + np.random.rand(100, 1)
//   x, y = Variable(x), Variable(y)
//
//   W = Variable(np.zeros((1, 1)))
//   b = Variable(np.zeros(1))
//
//   def predict(x):
//       y = F.matmul(x, W) + b
//       return y
//
//   def mean_squared_error(x0, x1):
//       diff = x0 - x1
//       return F.sum(diff ** 2) / len(diff)
//
//   lr = 0.1
//   iters = 100
//   for i in range(iters):
//       y_pred = predict(x)
//       loss = mean_squared_error(y, y_pred)
//       W.cleargrad()
//       b.cleargrad()
//       loss.backward()
//       W.data -= lr * W.grad.data
//       b.data -= lr * b.grad.data
//       print(W, b, loss)
//   # last line: variable([[2.11807369]]) variable([5.46608905]) variable(0.07908606512411756)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main() try {
  dezero::random::seed(0);
  Variable x(dezero::random::rand({100, 1}));
  Variable y(5.0 + 2.0 * x.data() + dezero::random::rand({100, 1}));

  Variable W(dezero::zeros({1, 1}, dezero::float64));
  Variable b(dezero::zeros({1}, dezero::float64));

  auto predict = [&](const Variable& x) { return F::matmul(x, W) + b; };
  auto mean_squared_error = [](const Variable& x0, const Variable& x1) {
    Variable diff = x0 - x1;
    return F::sum(diff.pow(2)) / static_cast<double>(diff.len());
  };

  const double lr = 0.1;
  const int iters = 100;
  for (int i = 0; i < iters; ++i) {
    Variable y_pred = predict(x);
    Variable loss = mean_squared_error(y, y_pred);

    W.cleargrad();
    b.cleargrad();
    loss.backward();

    W.set_data(W.data() - lr * W.grad().data());
    b.set_data(b.data() - lr * b.grad().data());
    std::cout << W << " " << b << " " << loss << "\n";
  }
} catch (const std::exception& e) {
  return example::report_error("step42", e);
}
