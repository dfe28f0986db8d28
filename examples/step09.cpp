// examples/step09.cpp - Step 9: making functions easier to use. square() and exp()
// wrap the Function classes, backward() seeds dy/dy with ones (no y.grad = 1.0 by
// hand), and only arrays go into a Variable.
//
// The DeZero Python it mirrors (steps/step09.py):
//   def square(x):
//       return Square()(x)
//   def exp(x):
//       return Exp()(x)
//   x = Variable(np.array(0.5))
//   y = square(exp(square(x)))
//   y.backward()
//   print(x.grad)           # 3.297442541400256
//   x = Variable(np.array(1.0))  # OK
//   x = Variable(None)           # OK
//   x = Variable(1.0)            # NG: TypeError: <class 'float'> is not supported
// The last check is the compiler's in C++: a double is not a Tensor, so
// Variable(1.0) does not compile (the static_assert below says so). The book's
// as_array (NumPy turns x ** 2 of a 0-d array into a scalar) has no C++
// counterpart: a Tensor op always returns a Tensor.
#include <dezero/dezero.hpp>

#include <iostream>
#include <type_traits>

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

// dezero::call<Fn> makes the Function (shared while a graph is recorded) and returns its output.
Variable square(const Variable& x) { return dezero::call<Square>({x}); }
Variable exp(const Variable& x) { return dezero::call<Exp>({x}); }

int main() try {
  Variable x(dezero::array(0.5));
  Variable y = square(exp(square(x)));
  y.backward();
  std::cout << x.grad().data() << "\n";

  x = Variable(dezero::array(1.0));  // OK
  x = Variable();                     // OK: holds no data (Python's Variable(None))
  static_assert(!std::is_constructible_v<Variable, double>, "Variable(1.0) must not compile");
  std::cout << "Variable(1.0): rejected at compile time (a double is not a Tensor)\n";
} catch (const std::exception& e) {
  return example::report_error("step09", e);
}
