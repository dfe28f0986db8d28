// examples/step06.cpp - Step 6: backpropagation by hand. Each Function's backward()
// turns the gradient of its output into the gradient of its input; calling them in
// reverse order (C, B, A) gives dy/dx of y = (e^(x^2))^2 at 0.5: 3.297442541400256.
//
// The DeZero Python it mirrors (steps/step06.py):
//   class Square(Function):
//       def backward(self, gy):
//           x = self.input.data
//           gx = 2 * x * gy
//           return gx
//   class Exp(Function):
//       def backward(self, gy):
//           x = self.input.data
//           gx = np.exp(x) * gy
//           return gx
//   A = Square(); B = Exp(); C = Square()
//   x = Variable(np.array(0.5))
//   a = A(x); b = B(a); y = C(b)
//   y.grad = np.array(1.0)
//   b.grad = C.backward(y.grad)
//   a.grad = B.backward(b.grad)
//   x.grad = A.backward(a.grad)
//   print(x.grad)     # 3.297442541400256
//
// In dezero-cpp a gradient is a Variable (the book gets there in step 32), so
// backward() takes and returns lists of Variables; the values are the book's.
#include <dezero/dezero.hpp>

#include <iostream>
#include <memory>

#include "common/report.hpp"

using dezero::Variable;
namespace F = dezero::F;

class Square : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override {
    const Variable& x = input(0);
    Variable gx = 2.0 * x * gys[0];
    return {gx};
  }
};

class Exp : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {dezero::exp(xs[0])}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override {
    const Variable& x = input(0);
    Variable gx = F::exp(x) * gys[0];
    return {gx};
  }
};

int main() try {
  auto A = std::make_shared<Square>();
  auto B = std::make_shared<Exp>();
  auto C = std::make_shared<Square>();

  Variable x(dezero::array(0.5));
  Variable a = (*A)(x);
  Variable b = (*B)(a);
  Variable y = (*C)(b);

  y.set_grad(Variable(dezero::array(1.0)));
  b.set_grad(C->backward({y.grad()})[0]);
  a.set_grad(B->backward({b.grad()})[0]);
  x.set_grad(A->backward({a.grad()})[0]);
  std::cout << x.grad().data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step06", e);
}
