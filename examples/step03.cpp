// examples/step03.cpp - Step 3: functions compose. Square -> Exp -> Square computes
// y = (e^(x^2))^2; at x = 0.5 that is 1.648721270700128.
//
// The DeZero Python it mirrors (steps/step03.py):
//   class Exp(Function):
//       def forward(self, x):
//           return np.exp(x)
//   A = Square(); B = Exp(); C = Square()
//   x = Variable(np.array(0.5))
//   a = A(x); b = B(a); y = C(b)
//   print(y.data)    # 1.648721270700128
#include <dezero/dezero.hpp>

#include <iostream>
#include <memory>

#include "common/report.hpp"

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

int main() try {
  auto A = std::make_shared<Square>();
  auto B = std::make_shared<Exp>();
  auto C = std::make_shared<Square>();

  Variable x(dezero::array(0.5));
  Variable a = (*A)(x);
  Variable b = (*B)(a);
  Variable y = (*C)(b);
  std::cout << y.data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step03", e);
}
