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
/// Which operands of a transposed product are transposed (F::matmul(x, W, Transposed)).
enum class Transposed { none, x, W, both };
/// The product op(x) op(W) of 2-d operands, op the transpose where `t` names the operand:
/// `F::matmul(x, W, F::Transposed::W)` is `x @ W^T` (ONNX Gemm's transB, PyTorch's Linear weight).
/// One GEMM with transpose flags: no transposed copy of either operand is made, and the backward
/// is made of the same products (gradients of any order). Under autocast it computes in the
/// autocast type as matmul does. Operands that are not 2-d, or inner sizes that differ after the
/// transposes, are a dezero::ShapeError.
Variable matmul(const Variable& x, const Variable& W, Transposed t);
/// The affine map `x @ W + b` in one node: x (N, in), W (in, out), b (out,) or
/// anything that broadcasts to (N, out) -> (N, out); no bias is Variable().
/// W is (in, out) as in DeZero (not Chainer's (out, in)). Operands that are not 2-d, or
/// `in` sizes that differ, are a dezero::ShapeError.
Variable linear(const Variable& x, const Variable& W, const Variable& b = Variable());  // x @ W + b; W is (in, out)

}  // namespace dezero::F
