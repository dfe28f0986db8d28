/// \file
/// Pooling (DeZero's functions_conv.py; step 57):
/// pooling (max), pooling_simple, average_pooling.
///
/// x (N, C, H, W) -> (N, C, OH, OW), OH = (H + 2 pad - KH) / stride + 1. Padding is
/// DeZero's zero padding: a max-pooling window that touches the padding has a max of
/// at least 0 (Chainer and PyTorch pad with -inf instead), and average pooling counts
/// the padded zeros in its mean (divides by KH * KW). Differentiable to any order, on
/// every device (DeZero's max pooling double backward used NumPy on CuPy arrays).
///
/// x must be 4-d float32 / float64 (dezero::ShapeError / dezero::DtypeError otherwise); a
/// window larger than the padded input is a dezero::ShapeError, a kernel size or stride
/// below 1 or a negative pad a dezero::ValueError.
#pragma once

#include "dezero/core.hpp"
#include "dezero/pair.hpp"

namespace dezero::F {

/// Max pooling of x (N, C, H, W) -> (N, C, OH, OW) over `kernel_size` windows (DeZero's pooling).
/// Max pooling as one Function: the first max of each window; its gradient goes to that
/// element (none when it is in the padding). A window holding a NaN gives NaN (NumPy's max)
/// and its gradient goes to the window's first NaN (np.argmax's index, DeZero's Pooling),
/// on every device and path (cuDNN's included).
Variable pooling(const Variable& x, Pair kernel_size, Pair stride = 1, Pair pad = 0);
/// Max pooling through composite functions (DeZero's pooling_simple): the values of pooling().
/// The same through composite functions: im2col(to_matrix) -> max over each window ->
/// reshape, transpose to NCHW (ties share the gradient, as F::max's do; a NaN window's
/// value is NaN too, and its gradient goes nowhere, since NaN equals nothing).
Variable pooling_simple(const Variable& x, Pair kernel_size, Pair stride = 1, Pair pad = 0);
/// Average pooling of x (N, C, H, W) -> (N, C, OH, OW) (DeZero's average_pooling).
/// The mean of each window, padding included.
Variable average_pooling(const Variable& x, Pair kernel_size, Pair stride = 1, Pair pad = 0);

}  // namespace dezero::F
