// examples/step13.cpp - Step 13: backward with several inputs. Add passes its
// output gradient to both inputs; z = x^2 + y^2 at (2, 3) is 13 with dz/dx = 4,
// dz/dy = 6.
//
// The DeZero Python it mirrors (steps/step13.py):
//   class Add(Function):
//       def forward(self, x0, x1):
//           y = x0 + x1
//           return y
//       def backward(self, gy):
//           return gy, gy
//   class Square(Function):
//       def forward(self, x):
//           y = x ** 2
//           return y
//       def backward(self, gy):
//           x = self.inputs[0].data
//           gx = 2 * x * gy
//           return gx
//   x = Variable(np.array(2.0))
//   y = Variable(np.array(3.0))
//   z = add(square(x), square(y))
//   z.backward()
//   print(z.data)     # 13.0
//   print(x.grad)     # 4.0
//   print(y.grad)     # 6.0
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

class Add : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] + xs[1]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {gys[0], gys[0]}; }
};

class Square : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override {
    const Variable& x = inputs()[0];
    Variable gx = 2.0 * x * gys[0];
    return {gx};
  }
};

Variable add(const Variable& x0, const Variable& x1) { return dezero::call<Add>({x0, x1}); }
Variable square(const Variable& x) { return dezero::call<Square>({x}); }

int main() try {
  Variable x(dezero::array(2.0));
  Variable y(dezero::array(3.0));
  Variable z = add(square(x), square(y));
  z.backward();
  std::cout << z.data() << "\n";
  std::cout << x.grad().data() << "\n";
  std::cout << y.grad().data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step13", e);
}
