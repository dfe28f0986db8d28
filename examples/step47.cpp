// examples/step47.cpp - Step 47: softmax and cross entropy. A 1-D softmax built from
// exp and sum, the book's softmax_simple and softmax_cross_entropy_simple
// (written with F::clip, F::log and get_item), and the library's F::softmax /
// F::softmax_cross_entropy, on the outputs of an MLP((10, 3)).
//
// The DeZero Python it mirrors (steps/step47.py, with the book's
// softmax_simple / softmax_cross_entropy_simple from functions.py):
//   np.random.seed(0)
//   def softmax1d(x):
//       x = as_variable(x)
//       y = F.exp(x)
//       sum_y = F.sum(y)
//       return y / sum_y
//
//   model = MLP((10, 3))
//
//   x = Variable(np.array([[0.2, -0.4]]))
//   y = model(x)
//   p = softmax1d(y)
//   print(y)
//   print(p)
//
//   x = np.array([[0.2, -0.4], [0.3, 0.5], [1.3, -3.2], [2.1, 0.3]])
//   t = np.array([2, 0, 1, 0])
//
//   y = model(x)
//   p = F.softmax_simple(y)
//   print(y)
//   print(p)
//
//   loss = F.softmax_cross_entropy_simple(y, t)
//   loss.backward()
//   print(loss)          # variable(1.496744252405306)
//
//   # functions.py:
//   def softmax_simple(x, axis=1):
//       x = as_variable(x)
//       y = exp(x)
//       sum_y = sum(y, axis=axis, keepdims=True)
//       return y / sum_y
//
//   def softmax_cross_entropy_simple(x, t):
//       x, t = as_variable(x), as_variable(t)
//       N = x.shape[0]
//       p = softmax(x)
//       p = clip(p, 1e-15, 1.0)  # To avoid log(0)
//       log_p = log(p)
//       tlog_p = log_p[np.arange(N), t.data]
//       y = -1 * sum(tlog_p) / N
//       return y
//
// After the book's lines, the fused F::softmax and F::softmax_cross_entropy are
// printed for comparison (same values).
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Tensor;
using dezero::Variable;

Variable softmax1d(const Variable& x) {
  Variable y = F::exp(x);
  Variable sum_y = F::sum(y);
  return y / sum_y;
}

Variable softmax_simple(const Variable& x, int axis = 1) {
  Variable y = F::exp(x);
  Variable sum_y = F::sum(y, {axis}, /*keepdims=*/true);
  return y / sum_y;
}

Variable softmax_cross_entropy_simple(const Variable& x, const Tensor& t) {
  std::int64_t N = x.shape()[0];
  Variable p = F::softmax(x);
  p = F::clip(p, 1e-15, 1.0);  // to avoid log(0)
  Variable log_p = F::log(p);
  Variable tlog_p = log_p[{dezero::arange(static_cast<double>(N)), t}];
  return -1.0 * F::sum(tlog_p) / static_cast<double>(N);
}

int main() try {
  dezero::random::seed(0);
  dezero::models::MLP model({10, 3});

  Variable x(dezero::array({{0.2, -0.4}}));
  Variable y = model(x);
  Variable p = softmax1d(y);
  std::cout << y << "\n";
  std::cout << p << "\n";

  Tensor xs = dezero::array({{0.2, -0.4}, {0.3, 0.5}, {1.3, -3.2}, {2.1, 0.3}});
  Tensor t = dezero::array({2, 0, 1, 0});

  y = model(xs);
  p = softmax_simple(y);
  std::cout << y << "\n";
  std::cout << p << "\n";

  Variable loss = softmax_cross_entropy_simple(y, t);
  loss.backward();
  std::cout << loss << "\n";

  std::cout << "F::softmax:\n" << F::softmax(y) << "\n";
  std::cout << "F::softmax_cross_entropy: " << F::softmax_cross_entropy(y, t) << "\n";
} catch (const std::exception& e) {
  return example::report_error("step47", e);
}
