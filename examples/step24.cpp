// examples/step24.cpp - Step 24: differentiating complex functions. With operator
// overloading, optimisation test functions (sphere, matyas, Goldstein-Price)
// are written as formulas and differentiated by backward().
//
// The DeZero Python it mirrors (steps/step24.py; the book runs one f at a time):
//   def sphere(x, y):  z = x ** 2 + y ** 2
//   def matyas(x, y):  z = 0.26 * (x ** 2 + y ** 2) - 0.48 * x * y
//   def goldstein(x, y):
//       z = (1 + (x + y + 1)**2 * (19 - 14*x + 3*x**2 - 14*y + 6*x*y + 3*y**2)) *
//           (30 + (2*x - 3*y)**2 * (18 - 32*x + 12*x**2 + 48*y - 36*x*y + 27*y**2))
//       (the Python line ends in a backslash continuation)
//   x = Variable(np.array(1.0)); y = Variable(np.array(1.0))
//   z = f(x, y); z.backward()
//   print(x.grad, y.grad)   # goldstein: variable(-5376.0) variable(8064.0)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

Variable sphere(const Variable& x, const Variable& y) {
  Variable z = x.pow(2) + y.pow(2);
  return z;
}

Variable matyas(const Variable& x, const Variable& y) {
  Variable z = 0.26 * (x.pow(2) + y.pow(2)) - 0.48 * x * y;
  return z;
}

Variable goldstein(const Variable& x, const Variable& y) {
  Variable z = (1 + (x + y + 1).pow(2) * (19 - 14 * x + 3 * x.pow(2) - 14 * y + 6 * x * y + 3 * y.pow(2))) *
               (30 + (2 * x - 3 * y).pow(2) * (18 - 32 * x + 12 * x.pow(2) + 48 * y - 36 * x * y + 27 * y.pow(2)));
  return z;
}

int main() try {
  struct Named {
    const char* name;
    Variable (*f)(const Variable&, const Variable&);
  };
  for (Named fn : {Named{"sphere", sphere}, Named{"matyas", matyas}, Named{"goldstein", goldstein}}) {
    Variable x(dezero::array(1.0));
    Variable y(dezero::array(1.0));
    Variable z = fn.f(x, y);
    z.backward();
    std::cout << fn.name << ": " << x.grad() << " " << y.grad() << "\n";
  }
} catch (const std::exception& e) {
  return example::report_error("step24", e);
}
