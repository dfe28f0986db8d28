// examples/step17.cpp - Step 17: memory management. A Function holds its inputs
// but only weak references to its outputs, so there is no reference cycle and a
// whole graph is freed the moment nothing refers to its output. The loop builds a
// new 10 000-element graph each time; the number of live tensors stays the same.
// DeZero uses weakref for this; dezero-cpp's Function keeps std::weak_ptr to its
// outputs. dezero::Storage::live_count() / live_bytes() count the tensor buffers
// alive now (on every device).
//
// The DeZero Python it mirrors (steps/step17.py):
//   class Function:
//       def __call__(self, *inputs):
//           ...
//           self.outputs = [weakref.ref(output) for output in outputs]
//   for i in range(10):
//       x = Variable(np.random.randn(10000))  # big data
//       y = square(square(square(x)))
// (The book prints nothing and asks the reader to watch the memory; here each
// iteration prints the live tensors: x, the two intermediate results the Functions
// keep as inputs, and y, 4 x 10 000 x 8 bytes.)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

using dezero::Storage;
using dezero::Variable;

class Square : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
};

Variable square(const Variable& x) { return dezero::call<Square>({x}); }

int main() try {
  const auto base_count = Storage::live_count();
  const auto base_bytes = Storage::live_bytes();
  Variable x, y;
  for (int i = 0; i < 10; ++i) {
    x = Variable(dezero::random::randn({10000}));  // big data
    y = square(square(square(x)));  // the previous y goes away here, and with it its whole graph
    std::cout << "iteration " << i << ": " << Storage::live_count() - base_count << " live tensors, "
              << Storage::live_bytes() - base_bytes << " bytes\n";
  }
  x = Variable();
  y = Variable();
  std::cout << "after the loop: " << Storage::live_count() - base_count << " live tensors, "
            << Storage::live_bytes() - base_bytes << " bytes\n";
} catch (const std::exception& e) {
  return example::report_error("step17", e);
}
