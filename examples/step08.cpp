// examples/step08.cpp - Step 8: backward as a loop instead of a recursion. A list
// of Functions still to process replaces the call stack, so a graph of any depth
// can be walked. The loop is written out here on the public graph API (creator(),
// input(), output(), backward()); Variable::backward is the library's loop (which
// from step 16 on also orders Functions by generation). Both print 3.297442541400256.
//
// The DeZero Python it mirrors (steps/step08.py):
//   class Variable:
//       def backward(self):
//           funcs = [self.creator]
//           while funcs:
//               f = funcs.pop()
//               x, y = f.input, f.output
//               x.grad = f.backward(y.grad)
//               if x.creator is not None:
//                   funcs.append(x.creator)
//   A = Square(); B = Exp(); C = Square()
//   x = Variable(np.array(0.5))
//   a = A(x); b = B(a); y = C(b)
//   y.grad = np.array(1.0)
//   y.backward()
//   print(x.grad)     # 3.297442541400256
#include <dezero/dezero.hpp>

#include <iostream>
#include <memory>
#include <vector>

#include "common/report.hpp"

using dezero::Function;
using dezero::Variable;
namespace F = dezero::F;

class Square : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
};

class Exp : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {dezero::exp(xs[0])}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {F::exp(input(0)) * gys[0]}; }
};

// Step 8's Variable.backward for a chain of one-input, one-output Functions.
void backward_loop(const Variable& y) {
  std::vector<std::shared_ptr<Function>> funcs = {y.creator()};
  while (!funcs.empty()) {
    std::shared_ptr<Function> f = funcs.back();
    funcs.pop_back();
    Variable x = f->input(0);
    Variable out = f->output(0);
    x.set_grad(f->backward({out.grad()})[0]);
    if (x.creator()) funcs.push_back(x.creator());
  }
}

int main() try {
  auto A = std::make_shared<Square>();
  auto B = std::make_shared<Exp>();
  auto C = std::make_shared<Square>();

  Variable x(dezero::array(0.5));
  Variable a = (*A)(x);
  Variable b = (*B)(a);
  Variable y = (*C)(b);

  y.set_grad(Variable(dezero::array(1.0)));
  backward_loop(y);
  std::cout << x.grad().data() << "\n";

  for (Variable* v : {&x, &a, &b, &y}) v->cleargrad();  // else the new gradients add to these (step 14)
  y.backward();
  std::cout << x.grad().data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step08", e);
}
