/// \file
/// Convolutions (DeZero's functions_conv.py; steps 55-57):
/// conv2d, conv2d_simple, deconv2d, im2col, col2im; and conv3d (ONNX's 3-d Conv), built from conv2d.
///
/// NCHW everywhere; conv weights W (OC, C, KH, KW), deconv weights (C, OC, KH, KW); a
/// kernel size, stride or padding is an int or {h, w} (dezero::Pair); no bias is
/// Variable(). Zero padding; output size utils::get_conv_outsize (h + 2p - k) / s + 1,
/// deconv's utils::get_deconv_outsize s (h - 1) + k - 2p unless `outsize` is given.
/// Every function is differentiable to any order (its backward is made of these same
/// functions), including the gradient of a conv weight gradient, which DeZero's
/// Conv2DGradW could not take. Bad shapes throw a dezero::Error naming the function.
///
/// Grouped and depthwise convolutions (PyTorch's `groups`, ONNX's `group`): conv2d and
/// deconv2d take `groups` G, which splits the channels into G independent convolutions.
/// conv2d's W is then (OC, C/G, KH, KW) and deconv2d's (C, OC/G, KH, KW), PyTorch's
/// conv2d / conv_transpose2d layouts; G = C (with OC = C, or a multiple of it) is a
/// depthwise convolution (MobileNet's). A G other than 1 runs as one convolution through
/// the backend's library (oneDNN's grouped and depthwise kernels on the host, cuDNN's
/// group count on a GPU), else as one GEMM per group.
///
/// In detail: x and W must be 4-d float32 / float64 of one dtype (dezero::DtypeError
/// otherwise) on one device (dezero::DeviceError); a rank other than 4, channels that do
/// not match, a bias that is not (OC,), a G that does not divide the channels or a kernel
/// larger than the padded input is a dezero::ShapeError; a kernel size or stride below 1,
/// a negative pad or a G below 1 a dezero::ValueError.
#pragma once

#include <cstdint>
#include <optional>

#include "dezero/core.hpp"
#include "dezero/pair.hpp"

namespace dezero::F {

/// The 2-d convolution of x (N, C, H, W) with the filters W (OC, C, KH, KW), plus b (OC,) -> (N, OC, OH, OW).
/// y (N, OC, OH, OW) = x (N, C, H, W) * W (OC, C, KH, KW) + b (OC,): cross-correlation as
/// one Function; im2col + one GEMM per image (or the backend's library path, cuDNN).
///
/// `groups` G (default 1): W is (OC, C/G, KH, KW) and output channels [j OC/G, (j+1) OC/G)
/// see only input channels [j C/G, (j+1) C/G), as PyTorch's conv2d(groups=G); G = C is a
/// depthwise convolution. G must be >= 1 (ValueError) and divide C and OC (ShapeError).
/// Its gradients are grouped convolutions too, differentiable to any order.
Variable conv2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1, Pair pad = 0,
                std::int64_t groups = 1);
/// The 3-d convolution of x (N, C, D, H, W) with the filters W (OC, C/G, KD, KH, KW), plus
/// b (OC,) -> (N, OC, OD, OH, OW), zero padding `pad`, `groups` G as conv2d's (ONNX's 3-d Conv).
/// Built from conv2d: one 2-d convolution per kernel depth over the depth slices it sees
/// (moved into the batch axis), summed; per group, concatenated. So it is differentiable to any
/// order and runs on whatever runs conv2d; it exports as those pieces, not as one Conv.
/// x and W must be 5-d of one float dtype; channels that do not fit W and G, a bias that is not
/// (OC,), or a kernel larger than the padded input are a dezero::ShapeError; a stride below 1, a
/// negative pad or a G below 1 a dezero::ValueError.
Variable conv3d(const Variable& x, const Variable& W, const Variable& b = Variable(), Triple stride = 1,
                Triple pad = 0, std::int64_t groups = 1);
/// conv2d built from composite functions (DeZero's conv2d_simple): the same shapes and values.
/// The same through composite functions (step 57): im2col(to_matrix) -> linear -> reshape,
/// transpose to NCHW.
Variable conv2d_simple(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1,
                       Pair pad = 0);
/// Transposed convolution: x (N, C, H, W), W (C, OC, KH, KW), b (OC,) -> (N, OC, OH, OW)
/// with (OH, OW) = outsize, or get_deconv_outsize. An outsize that a convolution of the
/// same kernel, stride and pad would not map back to (H, W) is a ShapeError.
/// It is the adjoint of conv2d (the gradient of conv2d with respect to its input).
///
/// `groups` G (default 1): W is (C, OC/G, KH, KW) and OC = G W.shape[1], as PyTorch's
/// conv_transpose2d(groups=G); the adjoint of conv2d(..., groups = G) with the same W.
/// G must be >= 1 (ValueError) and divide C (ShapeError).
Variable deconv2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1, Pair pad = 0,
                  std::optional<Pair> outsize = std::nullopt, std::int64_t groups = 1);

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
