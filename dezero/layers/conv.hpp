// dezero/layers/conv.hpp - L::Conv2d and L::Deconv2d, the convolution layers (DeZero
// layers.py; book step 58's CNN building blocks, functions from steps 55-57).
#pragma once

#include <cstdint>

#include "dezero/layers/layer.hpp"
#include "dezero/pair.hpp"

namespace dezero::L {

// --- ConvOptions: DeZero's keywords of L.Conv2d / L.Deconv2d -----------------------------------
//   L::Conv2d(16, 3, {.stride = 2, .pad = 1})                           // C++20
//   L::ConvOptions o; o.pad = 1; o.nobias = true; L::Conv2d(16, 3, o);  // C++17
// dtype comes first, unlike DeZero's order, so that the positional Conv2d(16, 3, {2, 1})
// (stride {2, 1}) stays unambiguous: a scoped enum cannot be initialised from 2. C++20
// designated initializers follow this order: {.dtype = float64, .pad = 1}.
struct ConvOptions {
  DType dtype = float32;
  Pair stride = 1;
  Pair pad = 0;
  bool nobias = false;
  std::int64_t in_channels = 0;  // 0: taken from the first input's x.shape[1]
  random::Generator gen = random::Generator::global();  // the stream W is drawn from
};

// --- Conv2d ---------------------------------------------------------------------------------
// y = F::conv2d(x, W, b, stride, pad). x: (N, C, H, W), W: (OC, C, KH, KW), b: (OC,),
// y: (N, OC, OH, OW). W = randn(OC, C, KH, KW) * sqrt(1 / (C * KH * KW)) drawn on the host
// from `gen` (by default dezero::random's global stream: a seed gives DeZero's numbers on
// every device), created on the
// first call from x.shape[1] when in_channels is 0, on x's device; b = zeros(OC).
class Conv2d : public Layer {
 public:
  Conv2d(std::int64_t out_channels, Pair kernel_size, Pair stride = 1, Pair pad = 0, bool nobias = false,
         DType dtype = float32, std::int64_t in_channels = 0, random::Generator gen = random::Generator::global());
  Conv2d(std::int64_t out_channels, Pair kernel_size, const ConvOptions& options);
  Variable forward(const Variable& x) override;

  std::int64_t in_channels, out_channels;
  Pair kernel_size, stride, pad;
  DType dtype;
  Parameter W;
  Parameter b;  // no node (defined() == false) with nobias
  random::Generator gen;  // the stream W is drawn from (kept for the lazy first call)

 private:
  void init_W(Device device);
};

// --- Deconv2d -------------------------------------------------------------------------------
// The transposed convolution: y = F::deconv2d(x, W, b, stride, pad). x: (N, C, H, W),
// W: (C, OC, KH, KW), b: (OC,), y: (N, OC, OH, OW) with OH = stride * (H - 1) + KH - 2 pad
// (DeZero's layer exposes no outsize). Same initialisation as Conv2d:
// W = randn(C, OC, KH, KW) * sqrt(1 / (C * KH * KW)), lazy from x.shape[1]; b = zeros(OC).
class Deconv2d : public Layer {
 public:
  Deconv2d(std::int64_t out_channels, Pair kernel_size, Pair stride = 1, Pair pad = 0, bool nobias = false,
           DType dtype = float32, std::int64_t in_channels = 0, random::Generator gen = random::Generator::global());
  Deconv2d(std::int64_t out_channels, Pair kernel_size, const ConvOptions& options);
  Variable forward(const Variable& x) override;

  std::int64_t in_channels, out_channels;
  Pair kernel_size, stride, pad;
  DType dtype;
  Parameter W;
  Parameter b;
  random::Generator gen;

 private:
  void init_W(Device device);
};

}  // namespace dezero::L
