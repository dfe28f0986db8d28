// examples/step46.cpp - Step 46: the Optimizer class. optimizers::SGD(lr).setup(model)
// and optimizer.update() replace the hand-written update loop; MLP replaces
// TwoLayerNet. The same loss trace as step 44.
//
// The DeZero Python it mirrors (steps/step46.py):
//   np.random.seed(0)
//   x = np.random.rand(100, 1)
//   y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
//
//   lr = 0.2
//   max_iter = 10000
//   hidden_size = 10
//
//   model = MLP((hidden_size, 1))
//   optimizer = optimizers.SGD(lr).setup(model)
//   # or use MomentumSGD
//   # optimizer = optimizers.MomentumSGD(lr).setup(model)
//
//   for i in range(max_iter):
//       y_pred = model(x)
//       loss = F.mean_squared_error(y, y_pred)
//       model.cleargrads()
//       loss.backward()
//       optimizer.update()
//       if i % 1000 == 0:
//           print(loss)
//   # variable(0.8165178492839196) ... variable(0.0761876413118557)
//
// `step46 --momentum` uses MomentumSGD(lr) instead.
#include <dezero/dezero.hpp>

#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>

#include "common/report.hpp"

namespace F = dezero::F;
namespace optimizers = dezero::optimizers;
using dezero::Variable;

int main(int argc, char** argv) try {
  bool momentum = argc > 1 && std::strcmp(argv[1], "--momentum") == 0;

  dezero::random::seed(0);
  dezero::Tensor x = dezero::random::rand({100, 1});
  const double pi = std::acos(-1.0);  // np.pi
  dezero::Tensor y = dezero::sin(2.0 * pi * x) + dezero::random::rand({100, 1});

  const double lr = 0.2;
  const int max_iter = 10000;
  const int hidden_size = 10;

  dezero::models::MLP model({hidden_size, 1});
  std::unique_ptr<optimizers::Optimizer> optimizer;
  if (momentum)
    optimizer = std::make_unique<optimizers::MomentumSGD>(lr);
  else
    optimizer = std::make_unique<optimizers::SGD>(lr);
  optimizer->setup(model);

  for (int i = 0; i < max_iter; ++i) {
    Variable y_pred = model(x);
    Variable loss = F::mean_squared_error(y, y_pred);

    model.cleargrads();
    loss.backward();
    optimizer->update();
    if (i % 1000 == 0) std::cout << loss << "\n";
  }
} catch (const std::exception& e) {
  return example::report_error("step46", e);
}
