// examples/step18.cpp - Step 18: saving memory. backward() keeps only the leaves'
// gradients unless asked to retain them all (retain_grad); with backprop disabled
// (using_config("enable_backprop", false) or no_grad()) no graph is recorded, so
// intermediate results are freed at once.
//
// The DeZero Python it mirrors (steps/step18.py):
//   x0 = Variable(np.array(1.0))
//   x1 = Variable(np.array(1.0))
//   t = add(x0, x1)
//   y = add(x0, t)
//   y.backward()
//   print(y.grad, t.grad)    # None None
//   print(x0.grad, x1.grad)  # 2.0 1.0
//   with using_config('enable_backprop', False):
//       x = Variable(np.array(2.0))
//       y = square(x)
//   with no_grad():
//       x = Variable(np.array(2.0))
//       y = square(x)
// A C++ scope with a guard object is Python's `with` block.
#include <dezero/dezero.hpp>

#include <iostream>
#include <string>

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

// Python prints None for a missing gradient.
std::string grad_str(const Variable& v) { return v.has_grad() ? v.grad().data().str() : "None"; }

int main() try {
  Variable x0(dezero::array(1.0));
  Variable x1(dezero::array(1.0));
  Variable t = add(x0, x1);
  Variable y = add(x0, t);
  y.backward();
  std::cout << grad_str(y) << " " << grad_str(t) << "\n";
  std::cout << grad_str(x0) << " " << grad_str(x1) << "\n";

  // retain_grad = true keeps every gradient (what step 7-17's backward did).
  x0.cleargrad();
  x1.cleargrad();
  t = add(x0, x1);
  y = add(x0, t);
  y.backward(/*retain_grad=*/true);
  std::cout << "retain_grad: " << grad_str(y) << " " << grad_str(t) << "\n";

  {
    auto guard = dezero::using_config("enable_backprop", false);
    Variable x(dezero::array(2.0));
    Variable y2 = square(x);
    std::cout << "enable_backprop=false: y " << y2.data() << ", creator " << (y2.creator() ? "recorded" : "None")
              << "\n";
  }
  {
    auto guard = dezero::no_grad();
    Variable x(dezero::array(2.0));
    Variable y2 = square(x);
    std::cout << "no_grad: y " << y2.data() << ", creator " << (y2.creator() ? "recorded" : "None") << "\n";
  }
  Variable x(dezero::array(2.0));
  Variable y2 = square(x);  // outside the blocks the graph is recorded again
  std::cout << "after: y " << y2.data() << ", creator " << (y2.creator() ? "recorded" : "None") << "\n";
} catch (const std::exception& e) {
  return example::report_error("step18", e);
}
