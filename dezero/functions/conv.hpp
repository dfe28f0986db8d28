/// \file
/// Convolutions (DeZero's functions_conv.py; steps 55-57):
/// conv2d, conv2d_simple, deconv2d, im2col, col2im.
///
/// NCHW everywhere; conv weights W (OC, C, KH, KW), deconv weights (C, OC, KH, KW); a
/// kernel size, stride or padding is an int or {h, w} (dezero::Pair); no bias is
/// Variable(). Zero padding; output size utils::get_conv_outsize (h + 2p - k) / s + 1,
/// deconv's utils::get_deconv_outsize s (h - 1) + k - 2p unless `outsize` is given.
/// Every function is differentiable to any order (its backward is made of these same
/// functions), including the gradient of a conv weight gradient, which DeZero's
/// Conv2DGradW could not take. Bad shapes throw a dezero::Error naming the function.
///
/// In detail: x and W must be 4-d float32 / float64 of one dtype (dezero::DtypeError
/// otherwise) on one device (dezero::DeviceError); a rank other than 4, channels that do
/// not match, a bias that is not (OC,) or a kernel larger than the padded input is a
/// dezero::ShapeError; a kernel size or stride below 1 or a negative pad a dezero::ValueError.
#pragma once

#include <optional>

#include "dezero/core.hpp"
#include "dezero/pair.hpp"

namespace dezero::F {

/// The 2-d convolution of x (N, C, H, W) with the filters W (OC, C, KH, KW), plus b (OC,) -> (N, OC, OH, OW).
/// y (N, OC, OH, OW) = x (N, C, H, W) * W (OC, C, KH, KW) + b (OC,): cross-correlation as
/// one Function; im2col + one GEMM per image (or the backend's library path, cuDNN).
Variable conv2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1, Pair pad = 0);
/// conv2d built from composite functions (DeZero's conv2d_simple): the same shapes and values.
/// The same through composite functions (step 57): im2col(to_matrix) -> linear -> reshape,
/// transpose to NCHW.
Variable conv2d_simple(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1,
                       Pair pad = 0);
/// Transposed convolution: x (N, C, H, W), W (C, OC, KH, KW), b (OC,) -> (N, OC, OH, OW)
/// with (OH, OW) = outsize, or get_deconv_outsize. An outsize that a convolution of the
/// same kernel, stride and pad would not map back to (H, W) is a ShapeError.
/// It is the adjoint of conv2d (the gradient of conv2d with respect to its input).
Variable deconv2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1, Pair pad = 0,
                  std::optional<Pair> outsize = std::nullopt);

/// The windows of x as columns (DeZero's im2col); its gradient is col2im.
/// x (N, C, H, W) -> (N, C, KH, KW, OH, OW), or with to_matrix `(N*OH*OW, C*KH*KW)`.
Variable im2col(const Variable& x, Pair kernel_size, Pair stride = 1, Pair pad = 0, bool to_matrix = true);
/// The adjoint of im2col: columns summed back into an image (DeZero's col2im); its gradient is im2col.
/// The adjoint: x (N, C, KH, KW, OH, OW), or `(N*OH*OW, C*KH*KW)` with to_matrix, summed back
/// into an image of input_shape (N, C, H, W). A col whose shape does not fit
/// input_shape, kernel_size, stride and pad is a dezero::ShapeError.
Variable col2im(const Variable& x, const Shape& input_shape, Pair kernel_size, Pair stride = 1, Pair pad = 0,
                bool to_matrix = true);

}  // namespace dezero::F
