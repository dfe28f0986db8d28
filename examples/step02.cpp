// examples/step02.cpp - Step 2: a Function takes a Variable and returns a Variable.
// The user subclasses dezero::Function: forward() computes on Tensors (the data),
// backward() - used from step 6 on - on Variables. Calling the Function wraps the
// result in a new Variable that remembers its creator.
//
// The DeZero Python it mirrors (steps/step02.py):
//   class Function:
//       def __call__(self, input):
//           x = input.data
//           y = self.forward(x)
//           output = Variable(y)
//           return output
//   class Square(Function):
//       def forward(self, x):
//           return x ** 2
//   x = Variable(np.array(10))
//   f = Square()
//   y = f(x)
//   print(type(y))    # <class '__main__.Variable'>
//   print(y.data)     # 100
#include <dezero/dezero.hpp>

#include <iostream>
#include <memory>
#include <type_traits>

#include "common/report.hpp"

using dezero::Variable;

class Square : public dezero::Function {
 public:
  // xs[0]: the input's data; one output.
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  // Step 6 adds the gradient: d(x^2)/dx = 2x, on Variables so it can be differentiated again.
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
  std::string name() const override { return "Square"; }
};

int main() try {
  Variable x(dezero::array(10));  // np.array(10) is an int64 0-d array
  auto f = std::make_shared<Square>();
  Variable y = (*f)(x);           // dezero::call<Square>({x}) does the same in one line

  // type(y): the result is a Variable (checked by the compiler, printed for the reader).
  static_assert(std::is_same_v<decltype(y), Variable>);
  std::cout << "type(y): dezero::Variable, " << y << "\n";
  std::cout << y.data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step02", e);
}
