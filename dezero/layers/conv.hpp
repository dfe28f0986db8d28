/// \file
/// L::Conv2d and L::Deconv2d, the convolution layers (DeZero
/// layers.py; book step 58's CNN building blocks, functions from steps 55-57).
#pragma once

#include <cstdint>

#include "dezero/layers/layer.hpp"
#include "dezero/pair.hpp"

namespace dezero::L {

// --- ConvOptions: DeZero's keywords of L.Conv2d / L.Deconv2d -----------------------------------
/// DeZero's keywords of L.Conv2d / L.Deconv2d, an aggregate for `Conv2d(out_channels, kernel_size, options)`.
///
/// ```cpp
/// L::Conv2d(16, 3, {.stride = 2, .pad = 1})                           // C++20
/// L::ConvOptions o; o.pad = 1; o.nobias = true; L::Conv2d(16, 3, o);  // C++17
/// ```
/// dtype comes first, unlike DeZero's order, so that the positional `Conv2d(16, 3, {2, 1})`
/// (stride {2, 1}) stays unambiguous: a scoped enum cannot be initialised from 2. C++20
/// designated initializers follow this order: `{.dtype = float64, .pad = 1}`. `groups`
/// came later and so comes last: `L::Conv2d(32, 3, {.pad = 1, .groups = 32})` (depthwise).
struct ConvOptions {
  DType dtype = float32;  ///< of W and b: float32 or float64
  Pair stride = 1;        ///< the stride: one int for both axes or {h, w}, each > 0
  Pair pad = 0;           ///< the zero padding: one int or {h, w}, each >= 0
  bool nobias = false;    ///< no bias b (the layer's b stays an empty Parameter)
  std::int64_t in_channels = 0;  ///< 0: taken from the first input's x.shape[1]
  random::Generator gen = random::Generator::global();  ///< the stream W is drawn from
  std::int64_t groups = 1;  ///< grouped convolution (F::conv2d's groups): divides C and OC; C for depthwise
};

// --- Conv2d ---------------------------------------------------------------------------------
/// The 2-d convolution layer: `y = F::conv2d(x, W, b, stride, pad, groups)`.
///
/// x: (N, C, H, W), W: (OC, C, KH, KW), b: (OC,),
/// y: (N, OC, OH, OW) with OH = (H + 2 pad - KH) / stride + 1 (OW likewise).
/// W = randn(OC, C, KH, KW) * sqrt(1 / (C * KH * KW)) drawn on the host
/// from `gen` (by default dezero::random's global stream: a seed gives DeZero's numbers on
/// every device), created on the
/// first call from x.shape[1] when in_channels is 0, on x's device; b = zeros(OC).
/// With groups G > 1, W is (OC, C/G, KH, KW) and its fan-in C/G * KH * KW:
/// W = randn(OC, C/G, KH, KW) * sqrt(1 / (C/G * KH * KW)).
class Conv2d : public Layer {
 public:
  /// Makes a layer of `out_channels` output channels and a KH x KW kernel (DeZero's L.Conv2d).
  ///
  /// kernel_size, stride and pad are one int for both axes or {h, w}. With
  /// in_channels > 0, W is drawn now (on the host; move the layer with to_gpu()); with 0
  /// it is drawn on the first call. Throws ValueError when out_channels, kernel_size or
  /// stride is not positive, pad is negative, in_channels < 0, groups < 1 or groups does
  /// not divide out_channels and a given in_channels; DtypeError when dtype is not float32
  /// or float64.
  Conv2d(std::int64_t out_channels, Pair kernel_size, Pair stride = 1, Pair pad = 0, bool nobias = false,
         DType dtype = float32, std::int64_t in_channels = 0, random::Generator gen = random::Generator::global(),
         std::int64_t groups = 1);
  /// The same with DeZero's keywords gathered in a ConvOptions: `L::Conv2d(16, 3, {.stride = 2, .pad = 1})`.
  Conv2d(std::int64_t out_channels, Pair kernel_size, const ConvOptions& options);
  /// x: (N, C, H, W) -> (N, OC, OH, OW), F::conv2d(x, W, b, stride, pad, groups).
  ///
  /// The first call of a lazy layer draws W with C = x.shape[1] on x's device; an x that
  /// is not 4-d, or whose C groups does not divide, is then a ShapeError. Other bad shapes
  /// are errors of F::conv2d.
  Variable forward(const Variable& x) override;

  /// The input and output channels, C and OC (in_channels is 0 until the first call of a lazy layer).
  ///@{
  std::int64_t in_channels, out_channels;
  ///@}
  /// The kernel size (KH, KW), stride and padding.
  ///@{
  Pair kernel_size, stride, pad;
  ///@}
  DType dtype;  ///< The dtype of W and b.
  Parameter W;  ///< The weight, (OC, C/groups, KH, KW); no data until the first call of a lazy layer.
  Parameter b;  ///< The bias, (OC,); no node (defined() == false) with nobias.
  random::Generator gen;  ///< The stream W is drawn from (kept for the lazy first call).
  std::int64_t groups;    ///< The channel groups (1: an ordinary convolution; C: depthwise).

 private:
  void init_W(Device device);
};

// --- Deconv2d -------------------------------------------------------------------------------
/// The transposed convolution: `y = F::deconv2d(x, W, b, stride, pad, std::nullopt, groups)`.
///
/// x: (N, C, H, W),
/// W: (C, OC, KH, KW), b: (OC,), y: (N, OC, OH, OW) with OH = stride * (H - 1) + KH - 2 pad
/// (DeZero's layer exposes no outsize). Same initialisation as Conv2d:
/// W = randn(C, OC, KH, KW) * sqrt(1 / (C * KH * KW)), lazy from x.shape[1]; b = zeros(OC).
/// With groups G > 1, W is (C, OC/G, KH, KW), drawn with the scale sqrt(1 / (C/G * KH * KW)).
class Deconv2d : public Layer {
 public:
  /// Makes a layer of `out_channels` output channels and a KH x KW kernel (DeZero's L.Deconv2d).
  ///
  /// The arguments, their checks and what they throw are Conv2d's: ValueError when
  /// out_channels, kernel_size or stride is not positive, pad is negative,
  /// in_channels < 0, groups < 1 or groups does not divide out_channels and a given
  /// in_channels; DtypeError when dtype is not float32 or float64. With
  /// in_channels > 0, W is drawn now (on the host); with 0 on the first call.
  Deconv2d(std::int64_t out_channels, Pair kernel_size, Pair stride = 1, Pair pad = 0, bool nobias = false,
           DType dtype = float32, std::int64_t in_channels = 0, random::Generator gen = random::Generator::global(),
           std::int64_t groups = 1);
  /// The same with DeZero's keywords gathered in a ConvOptions: `L::Deconv2d(3, 4, {.stride = 2, .pad = 1})`.
  Deconv2d(std::int64_t out_channels, Pair kernel_size, const ConvOptions& options);
  /// x: (N, C, H, W) -> (N, OC, OH, OW), F::deconv2d(x, W, b, stride, pad, std::nullopt, groups).
  ///
  /// OH = stride * (H - 1) + KH - 2 pad (OW likewise). The first call of a lazy layer
  /// draws W with C = x.shape[1] on x's device; an x that is not 4-d, or whose C groups
  /// does not divide, is then a ShapeError. Other bad shapes are errors of F::deconv2d.
  Variable forward(const Variable& x) override;

  /// The input and output channels, C and OC (in_channels is 0 until the first call of a lazy layer).
  ///@{
  std::int64_t in_channels, out_channels;
  ///@}
  /// The kernel size (KH, KW), stride and padding.
  ///@{
  Pair kernel_size, stride, pad;
  ///@}
  DType dtype;  ///< The dtype of W and b.
  Parameter W;  ///< The weight, (C, OC/groups, KH, KW); no data until the first call of a lazy layer.
  Parameter b;  ///< The bias, (OC,); no node (defined() == false) with nobias.
  random::Generator gen;  ///< The stream W is drawn from (kept for the lazy first call).
  std::int64_t groups;    ///< The channel groups (1: an ordinary transposed convolution).

 private:
  void init_W(Device device);
};

}  // namespace dezero::L
