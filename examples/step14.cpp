// examples/step14.cpp - Step 14: using the same variable twice. Gradients that
// reach x along several paths are added up (y = x + x gives 2, x + x + x gives 3);
// cleargrad() resets x.grad before x is reused in a new computation.
//
// The DeZero Python it mirrors (steps/step14.py):
//   class Variable:
//       def backward(self):
//           ...
//               if x.grad is None:
//                   x.grad = gx
//               else:
//                   x.grad = x.grad + gx
//       def cleargrad(self):
//           self.grad = None
//   x = Variable(np.array(3.0))
//   y = add(x, x)
//   y.backward()
//   print(x.grad)     # 2.0
//   x.cleargrad()
//   y = add(add(x, x), x)
//   y.backward()
//   print(x.grad)     # 3.0
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

class Add : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] + xs[1]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {gys[0], gys[0]}; }
};

Variable add(const Variable& x0, const Variable& x1) { return dezero::call<Add>({x0, x1}); }

int main() try {
  Variable x(dezero::array(3.0));
  Variable y = add(x, x);
  y.backward();
  std::cout << x.grad().data() << "\n";

  x.cleargrad();
  y = add(add(x, x), x);
  y.backward();
  std::cout << x.grad().data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step14", e);
}
