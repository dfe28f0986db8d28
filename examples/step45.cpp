// examples/step45.cpp - Step 45: layers inside layers. A Model (TwoLayerNet) registers
// its Linear layers, so model.params() and model.cleargrads() reach every
// parameter; Model::plot writes the graph. The same training as step 44.
//
// The DeZero Python it mirrors (steps/step45.py):
//   np.random.seed(0)
//   x = np.random.rand(100, 1)
//   y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
//
//   lr = 0.2
//   max_iter = 10000
//   hidden_size = 10
//
//   class TwoLayerNet(Model):
//       def __init__(self, hidden_size, out_size):
//           super().__init__()
//           self.l1 = L.Linear(hidden_size)
//           self.l2 = L.Linear(out_size)
//
//       def forward(self, x):
//           y = F.sigmoid(self.l1(x))
//           y = self.l2(y)
//           return y
//
//   model = TwoLayerNet(hidden_size, 1)
//   for i in range(max_iter):
//       y_pred = model(x)
//       loss = F.mean_squared_error(y, y_pred)
//       model.cleargrads()
//       loss.backward()
//       for p in model.params():
//           p.data -= lr * p.grad.data
//       if i % 1000 == 0:
//           print(loss)
//   # variable(0.8165178492839196) ... variable(0.0761876413118557)
//
// The book also draws the model's graph (model.plot(x) -> model.png); here
// model.plot writes two_layer_net.dot (the DOT text; no Graphviz needed).
#include <dezero/dezero.hpp>

#include <cmath>
#include <iostream>
#include <memory>

#include "common/report.hpp"

namespace F = dezero::F;
namespace L = dezero::L;
using dezero::Variable;

class TwoLayerNet : public dezero::Model {
 public:
  TwoLayerNet(std::int64_t hidden_size, std::int64_t out_size) {
    l1 = register_layer("l1", std::make_shared<L::Linear>(hidden_size));
    l2 = register_layer("l2", std::make_shared<L::Linear>(out_size));
  }
  Variable forward(const Variable& x) override {
    Variable y = F::sigmoid(l1(x));
    y = l2(y);
    return y;
  }
  L::LayerRef<L::Linear> l1, l2;
};

int main() try {
  dezero::random::seed(0);
  dezero::Tensor x = dezero::random::rand({100, 1});
  const double pi = std::acos(-1.0);  // np.pi
  dezero::Tensor y = dezero::sin(2.0 * pi * x) + dezero::random::rand({100, 1});

  const double lr = 0.2;
  const int max_iter = 10000;
  const int hidden_size = 10;

  TwoLayerNet model(hidden_size, 1);
  for (int i = 0; i < max_iter; ++i) {
    Variable y_pred = model(x);
    Variable loss = F::mean_squared_error(y, y_pred);

    model.cleargrads();
    loss.backward();

    for (dezero::Parameter& p : model.params()) {
      dezero::Tensor data = p.data();  // shares p's storage: -= updates p in place
      data -= lr * p.grad().data();
    }
    if (i % 1000 == 0) std::cout << loss << "\n";
  }

  std::cout << "wrote " << model.plot(Variable(x, "x"), "two_layer_net.dot") << "\n";
} catch (const std::exception& e) {
  return example::report_error("step45", e);
}
