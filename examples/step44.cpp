// examples/step44.cpp - Step 44: Parameter and Layer. L::Linear creates its weight lazily
// (in_size from the first input) and owns it; params() and cleargrads() walk the
// layer's parameters. The same network as step 43.
//
// The DeZero Python it mirrors (steps/step44.py; the plot is left out):
//   np.random.seed(0)
//   x = np.random.rand(100, 1)
//   y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
//
//   l1 = L.Linear(10)
//   l2 = L.Linear(1)
//
//   def predict(x):
//       y = l1(x)
//       y = F.sigmoid(y)
//       y = l2(y)
//       return y
//
//   lr = 0.2
//   iters = 10000
//   for i in range(iters):
//       y_pred = predict(x)
//       loss = F.mean_squared_error(y, y_pred)
//       l1.cleargrads()
//       l2.cleargrads()
//       loss.backward()
//       for l in [l1, l2]:
//           for p in l.params():
//               p.data -= lr * p.grad.data
//       if i % 1000 == 0:
//           print(loss)
//   # variable(0.8165178492839196) ... variable(0.0761876413118557)
//
// The weights are float32 (Linear's default dtype) and x is float64, so the loss
// is float64; `p.data -= ...` updates in place and keeps the weights float32.
#include <dezero/dezero.hpp>

#include <cmath>
#include <iostream>

namespace F = dezero::F;
namespace L = dezero::L;
using dezero::Variable;

int main() {
  dezero::random::seed(0);
  dezero::Tensor x = dezero::random::rand({100, 1});
  dezero::Tensor y = dezero::sin(2.0 * M_PI * x) + dezero::random::rand({100, 1});

  L::Linear l1(10);
  L::Linear l2(1);

  auto predict = [&](const Variable& x) {
    Variable y = l1(x);
    y = F::sigmoid(y);
    y = l2(y);
    return y;
  };

  const double lr = 0.2;
  const int iters = 10000;
  for (int i = 0; i < iters; ++i) {
    Variable y_pred = predict(x);
    Variable loss = F::mean_squared_error(y, y_pred);

    l1.cleargrads();
    l2.cleargrads();
    loss.backward();

    for (L::Linear* l : {&l1, &l2}) {
      for (dezero::Parameter& p : l->params()) {
        dezero::Tensor data = p.data();  // shares p's storage: -= updates p in place
        data -= lr * p.grad().data();
      }
    }
    if (i % 1000 == 0) std::cout << loss << "\n";
  }
}
