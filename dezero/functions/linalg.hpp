/// \file
/// Linear algebra: matmul and linear (steps 41, 43).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// The matrix product `x @ W`: (M, K) x (K, N) -> (M, N).
/// np.dot's rules for 1-d operands and np.matmul's for N-d ones (batches of matrices,
/// broadcast batch axes); gradients `gy @ W^T` and `x^T @ gy`, summed over broadcast batches.
/// A 0-d operand or inner sizes that differ are a dezero::ShapeError; operands on
/// different devices a dezero::DeviceError.
Variable matmul(const Variable& x, const Variable& W);
/// The affine map `x @ W + b` in one node: x (N, in), W (in, out), b (out,) or
/// anything that broadcasts to (N, out) -> (N, out); no bias is Variable().
/// W is (in, out) as in DeZero (not Chainer's (out, in)). Operands that are not 2-d, or
/// `in` sizes that differ, are a dezero::ShapeError.
Variable linear(const Variable& x, const Variable& W, const Variable& b = Variable());  // x @ W + b; W is (in, out)

}  // namespace dezero::F
