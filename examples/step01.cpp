// examples/step01.cpp - Step 1: a Variable is a box that holds data (a Tensor,
// DeZero's ndarray). Reading and replacing what is in the box.
//
// The DeZero Python it mirrors (steps/step01.py):
//   data = np.array(1.0)
//   x = Variable(data)
//   print(x.data)         # 1.0
//   x.data = np.array(2.0)
//   print(x.data)         # 2.0
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Tensor;
using dezero::Variable;

int main() try {
  Tensor data = dezero::array(1.0);  // a 0-d float64 tensor, like np.array(1.0)
  Variable x(data);
  std::cout << x.data() << "\n";

  x.set_data(dezero::array(2.0));    // x.data = np.array(2.0)
  std::cout << x.data() << "\n";
} catch (const std::exception& e) {
  return example::report_error("step01", e);
}
