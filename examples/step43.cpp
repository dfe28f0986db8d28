// examples/step43.cpp - Step 43: a two-layer neural network written by hand (F::linear,
// F::sigmoid) fitting a noisy sine; gradient descent on W1, b1, W2, b2.
//
// The DeZero Python it mirrors (steps/step43.py; the plot is left out):
//   np.random.seed(0)
//   x = np.random.rand(100, 1)
//   y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
//
//   I, H, O = 1, 10, 1
//   W1 = Variable(0.01 * np.random.randn(I, H))
//   b1 = Variable(np.zeros(H))
//   W2 = Variable(0.01 * np.random.randn(H, O))
//   b2 = Variable(np.zeros(O))
//
//   def predict(x):
//       y = F.linear(x, W1, b1)
//       y = F.sigmoid(y)
//       y = F.linear(y, W2, b2)
//       return y
//
//   lr = 0.2
//   iters = 10000
//   for i in range(iters):
//       y_pred = predict(x)
//       loss = F.mean_squared_error(y, y_pred)
//       W1.cleargrad(); b1.cleargrad(); W2.cleargrad(); b2.cleargrad()
//       loss.backward()
//       W1.data -= lr * W1.grad.data
//       b1.data -= lr * b1.grad.data
//       W2.data -= lr * W2.grad.data
//       b2.data -= lr * b2.grad.data
//       if i % 1000 == 0:
//           print(loss)
//   # variable(0.8473695850105871) ... variable(0.07722132399559321)
#include <dezero/dezero.hpp>

#include <cmath>
#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Variable;

int main() try {
  dezero::random::seed(0);
  dezero::Tensor x = dezero::random::rand({100, 1});
  const double pi = std::acos(-1.0);  // np.pi
  dezero::Tensor y = dezero::sin(2.0 * pi * x) + dezero::random::rand({100, 1});

  const int I = 1, H = 10, O = 1;
  Variable W1(0.01 * dezero::random::randn({I, H}));
  Variable b1(dezero::zeros({H}, dezero::float64));
  Variable W2(0.01 * dezero::random::randn({H, O}));
  Variable b2(dezero::zeros({O}, dezero::float64));

  auto predict = [&](const Variable& x) {
    Variable y = F::linear(x, W1, b1);
    y = F::sigmoid(y);
    y = F::linear(y, W2, b2);
    return y;
  };

  const double lr = 0.2;
  const int iters = 10000;
  for (int i = 0; i < iters; ++i) {
    Variable y_pred = predict(x);
    Variable loss = F::mean_squared_error(y, y_pred);

    for (Variable* p : {&W1, &b1, &W2, &b2}) p->cleargrad();
    loss.backward();

    for (Variable* p : {&W1, &b1, &W2, &b2}) p->set_data(p->data() - lr * p->grad().data());
    if (i % 1000 == 0) std::cout << loss << "\n";
  }
} catch (const std::exception& e) {
  return example::report_error("step43", e);
}
