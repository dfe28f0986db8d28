// examples/step11.cpp - Step 11: Functions with several inputs and outputs. apply()
// takes a list of Variables and returns a list; forward() gets a list of Tensors.
// Add adds its two inputs: 2 + 3 = 5.
//
// The DeZero Python it mirrors (steps/step11.py):
//   class Function:
//       def __call__(self, inputs):
//           xs = [x.data for x in inputs]
//           ys = self.forward(xs)
//           outputs = [Variable(as_array(y)) for y in ys]
//           ...
//           return outputs
//   class Add(Function):
//       def forward(self, xs):
//           x0, x1 = xs
//           y = x0 + x1
//           return (y,)
//   xs = [Variable(np.array(2)), Variable(np.array(3))]
//   f = Add()
//   ys = f(xs)
//   y = ys[0]
//   print(y.data)     # 5
#include <dezero/dezero.hpp>

#include <iostream>
#include <memory>

#include "common/report.hpp"

using dezero::Variable;

class Add : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override {
    const dezero::Tensor& x0 = xs[0];
    const dezero::Tensor& x1 = xs[1];
    dezero::Tensor y = x0 + x1;
    return {y};
  }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {gys[0], gys[0]}; }  // step 13
};

int main() try {
  dezero::VariableList xs = {Variable(dezero::array(2)), Variable(dezero::array(3))};
  auto f = std::make_shared<Add>();
  dezero::VariableList ys = f->apply(xs);
  Variable y = ys[0];
  std::cout << y.data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step11", e);
}
