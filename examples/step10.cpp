// examples/step10.cpp - Step 10: testing. Three unit tests of square(): the forward
// value, the backward value, and a gradient check that compares backprop with
// numerical differentiation on random input. The book uses Python's unittest; the
// library's own suites use doctest (tests/); this program prints unittest's report.
//
// The DeZero Python it mirrors (steps/step10.py):
//   def numerical_diff(f, x, eps=1e-4): ...
//   class SquareTest(unittest.TestCase):
//       def test_forward(self):
//           x = Variable(np.array(2.0))
//           y = square(x)
//           expected = np.array(4.0)
//           self.assertEqual(y.data, expected)
//       def test_backward(self):
//           x = Variable(np.array(3.0))
//           y = square(x)
//           y.backward()
//           expected = np.array(6.0)
//           self.assertEqual(x.grad, expected)
//       def test_gradient_check(self):
//           x = Variable(np.random.rand(1))
//           y = square(x)
//           y.backward()
//           num_grad = numerical_diff(square, x)
//           flg = np.allclose(x.grad, num_grad)
//           self.assertTrue(flg)
//   # python -m unittest steps/step10.py  ->  ...  Ran 3 tests  OK
#include <dezero/dezero.hpp>

#include <functional>
#include <iostream>
#include <string>

#include "common/report.hpp"

using dezero::Tensor;
using dezero::Variable;

class Square : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
};

Variable square(const Variable& x) { return dezero::call<Square>({x}); }

bool test_forward() {
  Variable x(dezero::array(2.0));
  Variable y = square(x);
  Tensor expected = dezero::array(4.0);
  return dezero::utils::array_equal(y.data(), expected);
}

bool test_backward() {
  Variable x(dezero::array(3.0));
  Variable y = square(x);
  y.backward();
  Tensor expected = dezero::array(6.0);
  return dezero::utils::array_equal(x.grad().data(), expected);
}

bool test_gradient_check() {
  Variable x(dezero::random::rand({1}));
  Variable y = square(x);
  y.backward();
  Tensor num_grad = dezero::utils::numerical_grad(square, x.data());  // the book's numerical_diff
  bool flg = dezero::utils::array_allclose(x.grad().data(), num_grad);
  return flg;
}

int main() try {
  struct Test {
    const char* name;
    bool (*run)();
  };
  int failed = 0, ran = 0;
  for (Test t : {Test{"test_backward", test_backward}, Test{"test_forward", test_forward},
                 Test{"test_gradient_check", test_gradient_check}}) {
    bool ok = t.run();
    ++ran;
    failed += ok ? 0 : 1;
    std::cout << t.name << " (SquareTest) ... " << (ok ? "ok" : "FAIL") << "\n";
  }
  std::cout << "Ran " << ran << " tests\n\n" << (failed ? "FAILED (failures=" + std::to_string(failed) + ")" : "OK")
            << "\n";
  return failed ? 1 : 0;
} catch (const std::exception& e) {
  return example::report_error("step10", e);
}
