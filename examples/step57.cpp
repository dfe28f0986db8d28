// examples/step57.cpp - Step 57: im2col and conv2d_simple. im2col unrolls every
// kernel-sized window of the input into a row, so that a convolution becomes one
// matrix product (step 56 explains why; it has no code of its own).
//
// The DeZero Python it mirrors (steps/step57.py):
//   x1 = np.random.rand(1, 3, 7, 7)
//   col1 = F.im2col(x1, kernel_size=5, stride=1, pad=0, to_matrix=True)
//   print(col1.shape)  # (9, 75)
//
//   x2 = np.random.rand(10, 3, 7, 7)  # 10 data
//   kernel_size = (5, 5)
//   stride = (1, 1)
//   pad = (0, 0)
//   col2 = F.im2col(x2, kernel_size, stride, pad, to_matrix=True)
//   print(col2.shape)  # (90, 75)
//
//   N, C, H, W = 1, 5, 15, 15
//   OC, (KH, KW) = 8, (3, 3)
//   x = Variable(np.random.randn(N, C, H, W))
//   W = np.random.randn(OC, C, KH, KW)
//   y = F.conv2d_simple(x, W, b=None, stride=1, pad=1)
//   y.backward()
//   print(y.shape)  # (1, 8, 15, 15)
//   print(x.grad.shape)  # (1, 5, 15, 15)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

namespace F = dezero::F;
using dezero::Tensor;
using dezero::Variable;

int main() try {
  dezero::random::seed(0);
  Tensor x1 = dezero::random::rand({1, 3, 7, 7}, dezero::float64);
  Variable col1 = F::im2col(x1, /*kernel_size=*/5, /*stride=*/1, /*pad=*/0, /*to_matrix=*/true);
  std::cout << col1.shape().str() << "\n";  // (9, 75)

  Tensor x2 = dezero::random::rand({10, 3, 7, 7}, dezero::float64);  // 10 data
  dezero::Pair kernel_size = {5, 5};
  dezero::Pair stride = {1, 1};
  dezero::Pair pad = {0, 0};
  Variable col2 = F::im2col(x2, kernel_size, stride, pad, true);
  std::cout << col2.shape().str() << "\n";  // (90, 75)

  long N = 1, C = 5, H = 15, W_ = 15;
  long OC = 8, KH = 3, KW = 3;
  Variable x(dezero::random::randn({N, C, H, W_}, dezero::float64));
  Tensor W = dezero::random::randn({OC, C, KH, KW}, dezero::float64);
  Variable y = F::conv2d_simple(x, W, Variable(), /*stride=*/1, /*pad=*/1);
  y.backward();
  std::cout << y.shape().str() << "\n";         // (1, 8, 15, 15)
  std::cout << x.grad().shape().str() << "\n";  // (1, 5, 15, 15)
} catch (const std::exception& e) {
  return example::report_error("step57", e);
}
