// examples/step04.cpp - Step 4: numerical differentiation. The central difference
// (f(x + eps) - f(x - eps)) / 2 eps with eps = 1e-4 approximates the derivative:
// 4.000000000004 for x^2 at 2, 3.2974426293330694 for (e^(x^2))^2 at 0.5.
// dezero::utils::numerical_grad does the same for every element of a tensor (it is
// what gradient_check compares backprop with, step 10); both are printed.
//
// The DeZero Python it mirrors (steps/step04.py):
//   def numerical_diff(f, x, eps=1e-4):
//       x0 = Variable(x.data - eps)
//       x1 = Variable(x.data + eps)
//       y0 = f(x0)
//       y1 = f(x1)
//       return (y1.data - y0.data) / (2 * eps)
//   f = Square()
//   x = Variable(np.array(2.0))
//   dy = numerical_diff(f, x)
//   print(dy)         # 4.000000000004
//   def f(x):
//       A = Square(); B = Exp(); C = Square()
//       return C(B(A(x)))
//   x = Variable(np.array(0.5))
//   dy = numerical_diff(f, x)
//   print(dy)         # 3.2974426293330694
#include <dezero/dezero.hpp>

#include <functional>
#include <iostream>

#include "common/report.hpp"

using dezero::Tensor;
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

using Fn = std::function<Variable(const Variable&)>;

Tensor numerical_diff(const Fn& f, const Variable& x, double eps = 1e-4) {
  Variable x0(x.data() - eps);
  Variable x1(x.data() + eps);
  Variable y0 = f(x0);
  Variable y1 = f(x1);
  return (y1.data() - y0.data()) / (2 * eps);
}

int main() try {
  // A Function object is called once (it becomes its output's creator), so `f` makes a
  // new Square per call, as the book's second f makes new A, B, C.
  Fn f = [](const Variable& x) { return dezero::call<Square>({x}); };
  Variable x(dezero::array(2.0));
  Tensor dy = numerical_diff(f, x);
  std::cout << dy << "\n";

  Fn g = [](const Variable& x) {
    auto A = std::make_shared<Square>();
    auto B = std::make_shared<Exp>();
    auto C = std::make_shared<Square>();
    return (*C)((*B)((*A)(x)));
  };
  x = Variable(dezero::array(0.5));
  dy = numerical_diff(g, x);
  std::cout << dy << "\n";

  // The library's version (the same central difference, element by element).
  std::cout << "utils::numerical_grad: " << dezero::utils::numerical_grad(f, dezero::array(2.0)) << " "
            << dezero::utils::numerical_grad(g, dezero::array(0.5)) << "\n";
} catch (const std::exception& e) {
  return example::report_error("step04", e);
}
