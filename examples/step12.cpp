// examples/step12.cpp - Step 12: easier multi-input calls. add(x0, x1) takes the
// inputs as separate arguments and returns the single output itself, not a list.
//
// The DeZero Python it mirrors (steps/step12.py):
//   class Function:
//       def __call__(self, *inputs):
//           ...
//           return outputs if len(outputs) > 1 else outputs[0]
//   class Add(Function):
//       def forward(self, x0, x1):
//           y = x0 + x1
//           return y
//   def add(x0, x1):
//       return Add()(x0, x1)
//   x0 = Variable(np.array(2))
//   x1 = Variable(np.array(3))
//   y = add(x0, x1)
//   print(y.data)     # 5
// (Function::operator() takes one, two or three Variables and returns the first
// output; dezero::call<Fn>({...}) is the library's own way to call a Function.)
#include <dezero/dezero.hpp>

#include <iostream>
#include <memory>

#include "common/report.hpp"

using dezero::Variable;

class Add : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] + xs[1]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {gys[0], gys[0]}; }
};

Variable add(const Variable& x0, const Variable& x1) { return (*std::make_shared<Add>())(x0, x1); }

int main() try {
  Variable x0(dezero::array(2));
  Variable x1(dezero::array(3));
  Variable y = add(x0, x1);
  std::cout << y.data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step12", e);
}
