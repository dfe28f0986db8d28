// dezero/layers/conv.cpp - L::Conv2d and L::Deconv2d: F::conv2d / F::deconv2d with
// DeZero's lazily drawn weights.
#include "dezero/layers/conv.hpp"

#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::L {

namespace {

// The constructor checks both layers share; `layer` is "Conv2d" or "Deconv2d".
void check_args(const char* layer, std::int64_t out_channels, Pair kernel_size, Pair stride, Pair pad, DType dtype,
                std::int64_t in_channels, std::int64_t groups) {
  using detail::fail;
  if (out_channels <= 0) fail<ValueError>(layer, "out_channels must be positive, got ", out_channels);
  if (in_channels < 0) fail<ValueError>(layer, "in_channels must be positive (or 0 for lazy), got ", in_channels);
  if (kernel_size.h <= 0 || kernel_size.w <= 0)
    fail<ValueError>(layer, "kernel_size must be positive, got ", kernel_size.str());
  if (stride.h <= 0 || stride.w <= 0) fail<ValueError>(layer, "stride must be positive, got ", stride.str());
  if (pad.h < 0 || pad.w < 0) fail<ValueError>(layer, "pad must be >= 0, got ", pad.str());
  if (!is_floating(dtype)) fail<DtypeError>(layer, "dtype must be float32 or float64, got ", dtype);
  if (groups < 1)
    fail<ValueError>(layer, "groups must be >= 1, got ", groups,
                     "; hint: 1 for an ordinary convolution, in_channels for a depthwise one");
  if (out_channels % groups != 0 || in_channels % groups != 0)
    fail<ValueError>(layer, "groups ", groups, " must divide out_channels ", out_channels,
                     in_channels > 0 ? " and in_channels " + std::to_string(in_channels) : std::string(),
                     "; hint: choose groups among their common divisors");
}

// The lazy first call's C (x.shape[1]) must split into the layer's groups.
void check_groups_of_input(const char* layer, const Variable& x, std::int64_t groups) {
  if (x.shape()[1] % groups != 0)
    detail::fail<ShapeError>(layer, "input ", x.shape(), " has ", x.shape()[1], " channels, which groups ", groups,
                             " does not divide; hint: the channels must be a multiple of groups");
}

// Lazy initialisation reads C from x: (N, C, H, W).
std::int64_t channels_of(const char* layer, const Variable& x, std::int64_t groups) {
  if (x.ndim() != 4)
    detail::fail<ShapeError>(layer, "input of shape ", x.shape(), " is not 4-d, so in_channels cannot be inferred "
                             "from x.shape[1]; hint: pass (N, C, H, W) batches");
  check_groups_of_input(layer, x, groups);
  return x.shape()[1];
}

// DeZero: randn(shape).astype(dtype) * sqrt(1 / (C * KH * KW)), drawn on the host; C is the
// fan-in's channels (C / groups for a grouped layer).
Tensor draw_weights(random::Generator& gen, const Shape& shape, std::int64_t C, Pair k, DType dtype) {
  double scale = std::sqrt(1.0 / static_cast<double>(C * k.h * k.w));
  return gen.randn(shape, float64).astype(dtype) * scale;
}

}  // namespace

// --- Conv2d ------------------------------------------------------------------------------------
Conv2d::Conv2d(std::int64_t out_channels_, Pair kernel_size_, Pair stride_, Pair pad_, bool nobias, DType dtype_,
               std::int64_t in_channels_, random::Generator gen_, std::int64_t groups_)
    : in_channels(in_channels_), out_channels(out_channels_), kernel_size(kernel_size_), stride(stride_), pad(pad_),
      dtype(dtype_), gen(std::move(gen_)), groups(groups_) {
  check_args("Conv2d", out_channels, kernel_size, stride, pad, dtype, in_channels, groups);
  W = register_parameter("W", Parameter(Tensor(), "W"));
  if (in_channels > 0) init_W(Device::cpu());
  if (!nobias) b = register_parameter("b", Parameter(zeros({out_channels}, dtype), "b"));
}

Conv2d::Conv2d(std::int64_t out_channels_, Pair kernel_size_, const ConvOptions& o)
    : Conv2d(out_channels_, kernel_size_, o.stride, o.pad, o.nobias, o.dtype, o.in_channels, o.gen, o.groups) {}

void Conv2d::init_W(Device device) {
  Shape s{out_channels, in_channels / groups, kernel_size.h, kernel_size.w};  // (OC, C/groups, KH, KW)
  W.set_data(draw_weights(gen, s, in_channels / groups, kernel_size, dtype).to(device));
}

// x: (N, C, H, W) -> (N, OC, OH, OW)
Variable Conv2d::forward(const Variable& x) {
  lazy_init([&] { return W.data().defined(); },
            [&] {
              in_channels = channels_of("Conv2d", x, groups);
              init_W(x.device());
            });
  return F::conv2d(x, W, b, stride, pad, groups);
}

// --- Deconv2d ----------------------------------------------------------------------------------
Deconv2d::Deconv2d(std::int64_t out_channels_, Pair kernel_size_, Pair stride_, Pair pad_, bool nobias, DType dtype_,
                   std::int64_t in_channels_, random::Generator gen_, std::int64_t groups_)
    : in_channels(in_channels_), out_channels(out_channels_), kernel_size(kernel_size_), stride(stride_), pad(pad_),
      dtype(dtype_), gen(std::move(gen_)), groups(groups_) {
  check_args("Deconv2d", out_channels, kernel_size, stride, pad, dtype, in_channels, groups);
  W = register_parameter("W", Parameter(Tensor(), "W"));
  if (in_channels > 0) init_W(Device::cpu());
  if (!nobias) b = register_parameter("b", Parameter(zeros({out_channels}, dtype), "b"));
}

Deconv2d::Deconv2d(std::int64_t out_channels_, Pair kernel_size_, const ConvOptions& o)
    : Deconv2d(out_channels_, kernel_size_, o.stride, o.pad, o.nobias, o.dtype, o.in_channels, o.gen, o.groups) {}

void Deconv2d::init_W(Device device) {
  Shape s{in_channels, out_channels / groups, kernel_size.h, kernel_size.w};  // (C, OC/groups, KH, KW)
  W.set_data(draw_weights(gen, s, in_channels / groups, kernel_size, dtype).to(device));
}

// x: (N, C, H, W) -> (N, OC, OH, OW)
Variable Deconv2d::forward(const Variable& x) {
  lazy_init([&] { return W.data().defined(); },
            [&] {
              in_channels = channels_of("Deconv2d", x, groups);
              init_W(x.device());
            });
  return F::deconv2d(x, W, b, stride, pad, std::nullopt, groups);
}

}  // namespace dezero::L
