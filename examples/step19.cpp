// examples/step19.cpp - Step 19: a Variable that is easy to use. A name, and the
// array's shape, ndim, size, dtype and len, plus printing as variable(...).
//
// The DeZero Python it mirrors (steps/step19.py):
//   class Variable:
//       def __init__(self, data, name=None): ...
//       @property
//       def shape(self): return self.data.shape
//       ... ndim, size, dtype, __len__, __repr__
//   x = Variable(np.array([[1, 2, 3], [4, 5, 6]]))
//   x.name = 'x'
//   print(x.name)    # x
//   print(x.shape)   # (2, 3)
//   print(x.ndim)    # 2
//   print(x.size)    # 6
//   print(x.dtype)   # int64
//   print(len(x))    # 2
//   print(x)         # variable([[1 2 3]
//                    #           [4 5 6]])
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Variable;

int main() try {
  Variable x(dezero::array({{1, 2, 3}, {4, 5, 6}}));
  x.set_name("x");
  std::cout << x.name() << "\n";
  std::cout << x.shape() << "\n";
  std::cout << x.ndim() << "\n";
  std::cout << x.size() << "\n";
  std::cout << x.dtype() << "\n";
  std::cout << x.len() << "\n";
  std::cout << x << "\n";
} catch (const std::exception& e) {
  return example::report_error("step19", e);
}
