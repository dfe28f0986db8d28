// examples/step16.cpp - Step 16: complex graphs. Every Variable and Function has a
// generation (its depth from the inputs); backward processes the Function of the
// highest generation first, each once, so a Variable's gradient is complete before
// it is propagated. y = (x^2)^2 + (x^2)^2 at 2 is 32 with dy/dx = 64.
//
// The DeZero Python it mirrors (steps/step16.py):
//   class Variable:
//       def backward(self):
//           funcs = []; seen_set = set()
//           def add_func(f):
//               if f not in seen_set:
//                   funcs.append(f); seen_set.add(f)
//                   funcs.sort(key=lambda x: x.generation)
//           ...
//   x = Variable(np.array(2.0))
//   a = square(x)
//   y = add(square(a), square(a))
//   y.backward()
//   print(y.data)     # 32.0
//   print(x.grad)     # 64.0
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
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
};

Variable add(const Variable& x0, const Variable& x1) { return dezero::call<Add>({x0, x1}); }
Variable square(const Variable& x) { return dezero::call<Square>({x}); }

int main() try {
  Variable x(dezero::array(2.0));
  Variable a = square(x);
  Variable y = add(square(a), square(a));
  y.backward();
  std::cout << y.data() << "\n";
  std::cout << x.grad().data() << "\n";
  // The generations that ordered the backward pass: x 0, a 1, square(a) 2, y 3.
  std::cout << "generations: x " << x.generation() << ", a " << a.generation() << ", y " << y.generation() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step16", e);
}
