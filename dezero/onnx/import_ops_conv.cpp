// dezero/onnx/import_ops_conv.cpp - internal: the importer's convolutions and pools, opsets 7-20:
// Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (register_conv_ops,
// ops.hpp).
//
// Every float result is built out of DeZero Functions (dezero::F: F::pad, F::concat and
// the rest), so backward(), create_graph and the optimizers work on it. Where ONNX's
// semantics differ from DeZero's function, the op composes ONNX's out of DeZero's:
//   - asymmetric pads, auto_pad and ceil_mode pad the input explicitly first (with -inf for
//     MaxPool, the dtype's lowest value for an integer MaxPool, zeros elsewhere) and run the
//     DeZero function without padding;
//   - AveragePool's count_include_pad = 0 divides the window means of the padded input by the
//     window means of a padded mask of ones (a constant);
//   - 1-d convolutions and pools run as 2-d ones over (N, C, L, 1); 3-d convolutions as a sum of
//     2-d ones over the kernel's depth, 3-d pools as a pool along each axis in turn, a 3-d
//     ConvTranspose as the convolution of the stride-spread input with the flipped kernel;
//     dilations spread the kernel with zeros (Conv, ConvTranspose) or take the max or the mean
//     over strided slices (1-d and 2-d MaxPool, AveragePool from opset 19); group > 1 is
//     F::conv2d / F::deconv2d's groups for 1-d and 2-d convolutions (one Function: oneDNN's and
//     cuDNN's grouped and depthwise kernels), and splits the channels and concatenates the
//     groups' results for 3-d ones.
// Integer results (MaxPool's Indices, uint8 MaxPool) are host tensors without a gradient. The
// sizes the attributes ask for (the padded input, the windows, the dilated kernel, ConvTranspose's
// full result and output) are capped before anything is allocated (import_util.hpp), and the
// attributes' values are at most 2^31 - 1. Refused with a NotImplementedError naming the node:
// more than 3 spatial axes, dilations in a 3-d MaxPool or AveragePool.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dezero/error.hpp"
#include "dezero/functions.hpp"
#include "dezero/onnx/import_util.hpp"
#include "dezero/onnx/ops.hpp"

namespace dezero::onnx::detail {

namespace {

using PadList = std::vector<std::pair<std::int64_t, std::int64_t>>;

// Python's floor division (ConvTranspose's total padding may be negative).
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// --- attribute checks shared by the ops -------------------------------------------------------
void check_auto_pad(const Attrs& a) {
  const std::string p = a.s("auto_pad", "NOTSET");
  if (p != "NOTSET" && p != "SAME_UPPER" && p != "SAME_LOWER" && p != "VALID")
    malformed(a.node, a.opset, "auto_pad '" + p + "' is none of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

// Sizes in attributes are at most 2^31 - 1, so that the window arithmetic below cannot overflow
// int64 (what they make is capped by check_output_size when the node runs).
void check_extents(const Attrs& a, std::initializer_list<const char*> names) {
  for (const char* name : names)
    for (std::int64_t v : a.ints(name))
      if (v > std::numeric_limits<std::int32_t>::max())
        malformed(a.node, a.opset, std::string(name) + " " + ints_str(a.ints(name)) + " holds a value above 2^31 - 1");
}

// The spatial attributes of a conv or pool node: at most 3 spatial axes, positive strides,
// kernel and dilations, non-negative pads.
void check_spatial(const Attrs& a, bool kernel_required) {
  check_auto_pad(a);
  if (kernel_required && !a.has("kernel_shape")) malformed(a.node, a.opset, "kernel_shape is required");
  for (const char* name : {"kernel_shape", "strides", "dilations"}) {
    const I64s v = a.ints(name);
    if (v.size() > 3)
      unsupported(a.node, a.opset, std::string(name) + " " + ints_str(v) + " of " + std::to_string(v.size()) +
                                       " axes: only 1-d, 2-d and 3-d convolutions and pools are supported");
    for (std::int64_t e : v)
      if (e < 1) malformed(a.node, a.opset, std::string(name) + " " + ints_str(v) + " must be positive");
  }
  for (std::int64_t v : a.ints("pads"))
    if (v < 0) unsupported(a.node, a.opset, "negative pads " + ints_str(a.ints("pads")));
  check_extents(a, {"kernel_shape", "strides", "dilations", "pads"});
}

// --- the window of a convolution or pooling ---------------------------------------------------
// A 1-d op runs over (N, C, L, 1) with a trivial second axis, so axes() is 2 or 3.
struct Window {
  int n = 2;                         // the node's spatial axes (1, 2 or 3)
  std::int64_t k[3] = {1, 1, 1};     // kernel
  std::int64_t s[3] = {1, 1, 1};     // strides
  std::int64_t d[3] = {1, 1, 1};     // dilations
  std::int64_t pb[3] = {0, 0, 0};    // pads before
  std::int64_t pe[3] = {0, 0, 0};    // pads after (explicit or auto_pad)
  std::int64_t ce[3] = {0, 0, 0};    // extra end padding of ceil_mode
  int axes() const { return n == 1 ? 2 : n; }
  std::int64_t extent(int i) const { return (k[i] - 1) * d[i] + 1; }
  bool padded() const {
    for (int i = 0; i < 3; ++i)
      if (pb[i] || pe[i] || ce[i]) return true;
    return false;
  }
  bool symmetric() const {
    for (int i = 0; i < 3; ++i)
      if (pb[i] != pe[i] || ce[i]) return false;
    return true;
  }
  bool dilated() const { return d[0] != 1 || d[1] != 1 || d[2] != 1; }
  Pair kernel() const { return Pair(static_cast<int>(k[0]), static_cast<int>(k[1])); }
  Pair stride() const { return Pair(static_cast<int>(s[0]), static_cast<int>(s[1])); }
  Pair pad() const { return Pair(static_cast<int>(pb[0]), static_cast<int>(pb[1])); }
};

// The spatial rank of an input (N, C, ...): 1, 2 or 3, else NotImplementedError.
int spatial_rank(const OpContext& ctx, const Variable& x, const char* what) {
  const int n = x.ndim() - 2;
  if (n >= 1 && n <= 3) return n;
  if (n > 3)
    ctx.unsupported(std::string("a ") + std::to_string(n) + "-d " + what + " of an input " + x.shape().str() +
                    ": only 1-d, 2-d and 3-d ones are supported");
  shape_error(ctx, std::string(what) + " needs an input (N, C, d1, ...), got " + x.shape().str());
}

// The window of a node over the spatial sizes `in`, with the kernel `kernel` (the attribute or
// the weight's shape): strides, dilations, pads / auto_pad and (pools) ceil_mode.
Window make_window(const OpContext& ctx, const I64s& in, const I64s& kernel, bool ceil_mode) {
  const Attrs& a = ctx.attrs();
  const std::size_t n = in.size();
  Window w;
  w.n = static_cast<int>(n);
  const I64s strides = a.ints("strides", I64s(n, 1));
  const I64s dilations = a.ints("dilations", I64s(n, 1));
  const I64s pads = a.ints("pads", I64s(2 * n, 0));
  if (kernel.size() != n || strides.size() != n || dilations.size() != n || pads.size() != 2 * n)
    shape_error(ctx, "kernel_shape " + ints_str(kernel) + ", strides " + ints_str(strides) + ", dilations " +
                         ints_str(dilations) + " and pads " + ints_str(pads) + " do not fit " +
                         std::to_string(n) + " spatial axes");
  const std::string auto_pad = a.s("auto_pad", "NOTSET");
  for (std::size_t i = 0; i < n; ++i) {
    w.k[i] = kernel[i];
    w.s[i] = strides[i];
    w.d[i] = dilations[i];
    const std::int64_t ext = w.extent(static_cast<int>(i));
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const std::int64_t out = (in[i] + w.s[i] - 1) / w.s[i];
      const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * w.s[i] + ext - in[i]);
      const std::int64_t small = total / 2;
      w.pb[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pe[i] = total - w.pb[i];
      continue;
    }
    if (auto_pad == "NOTSET") {
      w.pb[i] = pads[i];
      w.pe[i] = pads[i + n];
    }
    const std::int64_t span = in[i] + w.pb[i] + w.pe[i] - ext;
    if (span < 0)
      shape_error(ctx, "the window " + ints_str(kernel) + " (dilations " + ints_str(dilations) +
                           ") is larger than the padded input's spatial size " + ints_str(in));
    if (ceil_mode) {
      const std::int64_t out = (span + w.s[i] - 1) / w.s[i] + 1;
      w.ce[i] = (out - 1) * w.s[i] + ext - (in[i] + w.pb[i] + w.pe[i]);
    }
  }
  return w;
}

// The padded input (N, C, padded spatial...) and, for a pool (whose kernel is an attribute, not a
// weight), the windows it unfolds (N, C, kernel..., output...): sizes the node's attributes ask
// for, capped.
void check_window(const OpContext& ctx, const Shape& xs, const Window& w, bool pool_windows) {
  I64s padded{xs[0], xs[1]}, windows{xs[0], xs[1]};
  for (int i = 0; i < w.n; ++i) {
    const std::int64_t p = xs[static_cast<std::size_t>(2 + i)] + w.pb[i] + w.pe[i] + w.ce[i];
    padded.push_back(p);
    windows.push_back(w.k[i]);
    windows.push_back(std::max<std::int64_t>(0, (p - w.extent(i)) / w.s[i] + 1));
  }
  check_output_size(ctx, padded, "padded input");
  if (pool_windows) check_output_size(ctx, windows, "pooling windows");
}

// x (N, C, spatial...) padded per the window (explicit pads with `value`, ceil_mode's extra end
// with `ceil_value`).
Variable pad_input(const Variable& x, const Window& w, double value, double ceil_value) {
  PadList explicit_pads{{0, 0}, {0, 0}}, ceil_pads{{0, 0}, {0, 0}};
  bool any_explicit = false, any_ceil = false;
  for (int i = 0; i < w.axes(); ++i) {
    explicit_pads.emplace_back(w.pb[i], w.pe[i]);
    ceil_pads.emplace_back(0, w.ce[i]);
    any_explicit = any_explicit || w.pb[i] || w.pe[i];
    any_ceil = any_ceil || w.ce[i];
  }
  Variable y = x;
  if (any_explicit) y = F::pad(y, explicit_pads, value);
  if (any_ceil) y = F::pad(y, ceil_pads, ceil_value);
  return y;
}

// x with d - 1 zeros between its elements along `axis`: L -> (L - 1) d + 1. Differentiable.
Variable dilate_axis(const Variable& x, int axis, std::int64_t d) {
  if (d == 1) return x;
  const Shape& s = x.shape();
  const std::int64_t L = s[static_cast<std::size_t>(axis)];
  Shape split(s.begin(), s.begin() + axis + 1), merged(s.begin(), s.begin() + axis);
  split.push_back(1);
  merged.push_back(L * d);
  for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < s.size(); ++i) {
    split.push_back(s[i]);
    merged.push_back(s[i]);
  }
  PadList pads(split.size(), {0, 0});
  pads[static_cast<std::size_t>(axis) + 1] = {0, d - 1};
  Variable y = F::reshape(F::pad(F::reshape(x, split), pads), merged);
  Indices idx(static_cast<std::size_t>(axis), Slice());
  idx.push_back(Slice(0, (L - 1) * d + 1));
  return F::get_item(y, idx);
}

// (N, C, L) -> (N, C, L, 1) and back.
Variable to_2d(const Variable& x) {
  Shape s = x.shape();
  s.push_back(1);
  return F::reshape(x, s);
}
Variable from_2d(const Variable& y) {
  const Shape& s = y.shape();
  return F::reshape(y, Shape{s[0], s[1], s[2]});
}

// Channels [g * n, (g + 1) * n) of axis `axis` (0 or 1).
Variable channels(const Variable& x, int axis, std::int64_t g, std::int64_t n) {
  if (axis == 0) return F::get_item(x, Indices{Slice(g * n, (g + 1) * n)});
  return F::get_item(x, Indices{Slice(), Slice(g * n, (g + 1) * n)});
}
// --- Conv, ConvTranspose ----------------------------------------------------------------------
void check_conv(const Attrs& a) {
  check_spatial(a, false);
  check_extents(a, {"output_padding", "output_shape"});
  if (a.i("group", 1) < 1) malformed(a.node, a.opset, "group must be positive");
}

// The kernel's spatial sizes from W, checked against kernel_shape when the node has one.
I64s conv_kernel(const OpContext& ctx, const Variable& W, int n) {
  I64s k(W.shape().begin() + 2, W.shape().end());
  if (ctx.attrs().has("kernel_shape") && ctx.attrs().ints("kernel_shape") != k)
    shape_error(ctx, "kernel_shape " + ints_str(ctx.attrs().ints("kernel_shape")) + " differs from W's " +
                         W.shape().str());
  if (static_cast<int>(k.size()) != n) shape_error(ctx, "W " + W.shape().str() + " does not fit the input");
  return k;
}

// b (OC,) as (1, OC, 1, ...) for a result of `ndim` axes.
Variable channel_bias(const Variable& b, int ndim) {
  Shape s(static_cast<std::size_t>(ndim), 1);
  s[1] = b.shape()[0];
  return F::reshape(b, s);
}

// Y (N, OC, OH, OW) = X (N, C, H, W) * W (OC, C / group, KH, KW) + B (OC,); 1-d and 3-d alike.
VariableList run_conv(OpContext& ctx) {
  Variable x = float_input(ctx, 0, "X"), W = float_input(ctx, 1, "W");
  const Variable b = ctx.has_input(2) ? ctx.input(2) : Variable();
  const int n = spatial_rank(ctx, x, "convolution");
  if (W.ndim() != x.ndim())
    shape_error(ctx, "X " + x.shape().str() + " and W " + W.shape().str() + " differ in rank");
  const I64s in(x.shape().begin() + 2, x.shape().end());
  const Window w = make_window(ctx, in, conv_kernel(ctx, W, n), false);
  const std::int64_t group = ctx.attrs().i("group", 1);
  const std::int64_t C = x.shape()[1], OC = W.shape()[0];
  if (group > std::max<std::int64_t>(C, 1))  // also with no channels: a loop runs per group
    shape_error(ctx, "group " + std::to_string(group) + " is more than X " + x.shape().str() + "'s " +
                         std::to_string(C) + " channels");
  if (C % group != 0 || OC % group != 0 || W.shape()[1] * group != C)
    shape_error(ctx, "X " + x.shape().str() + " and W " + W.shape().str() + " do not fit group " +
                         std::to_string(group));
  if (n == 1) {
    x = to_2d(x);
    W = to_2d(W);
  }
  check_window(ctx, x.shape(), w, false);
  I64s dilated(W.shape().begin(), W.shape().begin() + 2);
  for (int i = 0; i < w.axes(); ++i) dilated.push_back(w.extent(i));
  check_output_size(ctx, dilated, "dilated kernel");
  for (int i = 0; i < w.axes(); ++i) W = dilate_axis(W, 2 + i, w.d[i]);
  Pair pad = 0;
  if (w.axes() == 2 && w.symmetric()) pad = w.pad();
  else x = pad_input(x, w, 0.0, 0.0);
  // 1-d (as 2-d) and 2-d: F::conv2d; 3-d: F::conv3d on the padded input; grouped or not
  const Variable y = w.axes() == 2 ? F::conv2d(x, W, b, w.stride(), pad, group)
                                   : F::conv3d(x, W, b, Triple(static_cast<int>(w.s[0]), static_cast<int>(w.s[1]),
                                                               static_cast<int>(w.s[2])),
                                               0, group);
  return {n == 1 ? from_2d(y) : y};
}

// Y (N, OC, OH, OW) = the transposed convolution of X (N, C, H, W) with W (C, OC / group, KH, KW)
// + B (OC,). The full result (no padding, size s (H - 1) + (KH - 1) d + 1) is cropped to
// [pad before, pad before + output size), extended with zeros where output_padding or
// output_shape reach past it. 3-d: the convolution of the input spread by the strides and
// padded by the kernel's extent - 1 with the flipped kernel.
VariableList run_conv_transpose(OpContext& ctx) {
  const Attrs& a = ctx.attrs();
  Variable x = float_input(ctx, 0, "X"), W = float_input(ctx, 1, "W");
  const Variable b = ctx.has_input(2) ? ctx.input(2) : Variable();
  const int n = spatial_rank(ctx, x, "transposed convolution");
  const std::size_t un = static_cast<std::size_t>(n);
  if (W.ndim() != x.ndim())
    shape_error(ctx, "X " + x.shape().str() + " and W " + W.shape().str() + " differ in rank");
  const I64s kernel = conv_kernel(ctx, W, n);
  const std::int64_t group = a.i("group", 1);
  const std::int64_t C = x.shape()[1];
  if (group > std::max<std::int64_t>(C, 1))  // also with no channels: a loop runs per group
    shape_error(ctx, "group " + std::to_string(group) + " is more than X " + x.shape().str() + "'s " +
                         std::to_string(C) + " channels");
  if (C != W.shape()[0] || C % group != 0)
    shape_error(ctx, "X " + x.shape().str() + " and W " + W.shape().str() + " do not fit group " +
                         std::to_string(group));
  const std::int64_t OC = W.shape()[1] * group;
  const I64s strides = a.ints("strides", I64s(un, 1)), dilations = a.ints("dilations", I64s(un, 1));
  const I64s pads = a.ints("pads", I64s(2 * un, 0)), out_pad = a.ints("output_padding", I64s(un, 0));
  I64s out_shape = a.ints("output_shape");
  if (out_shape.size() > un) out_shape.erase(out_shape.begin(), out_shape.end() - n);
  if (strides.size() != un || dilations.size() != un || pads.size() != 2 * un || out_pad.size() != un ||
      (!out_shape.empty() && out_shape.size() != un))
    shape_error(ctx, "strides, dilations, pads, output_padding or output_shape do not fit " + std::to_string(n) +
                         " spatial axes");
  const std::string auto_pad = a.s("auto_pad", "NOTSET");
  std::int64_t full[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, out[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  for (std::size_t i = 0; i < un; ++i) {
    const std::int64_t in = x.shape()[2 + i];
    s[i] = strides[i];
    d[i] = dilations[i];
    full[i] = s[i] * (in - 1) + (kernel[i] - 1) * d[i] + 1;
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = out_shape.empty() ? in * s[i] : out_shape[i];
      const std::int64_t total = full[i] + out_pad[i] - out[i];
      pb[i] = auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
    } else if (auto_pad == "VALID") {
      out[i] = full[i] + out_pad[i];
    } else {
      pb[i] = pads[i];
      out[i] = full[i] + out_pad[i] - pads[i] - pads[i + un];
    }
    if (out[i] < 1) shape_error(ctx, "the output's spatial size would be " + std::to_string(out[i]));
  }
  // What the node makes: the full result, the output, the dilated kernel, the columns of the
  // product before they are folded (N, OC, dilated kernel..., input...), the stride-spread input.
  I64s full_shape{x.shape()[0], OC}, out_shape_all{x.shape()[0], OC}, kernel_d{C, W.shape()[1]},
      cols{x.shape()[0], OC}, spread{x.shape()[0], C};
  for (std::size_t i = 0; i < un; ++i) {
    full_shape.push_back(full[i]);
    out_shape_all.push_back(out[i]);
    kernel_d.push_back((kernel[i] - 1) * d[i] + 1);
    cols.push_back((kernel[i] - 1) * d[i] + 1);
    spread.push_back(full[i] + (kernel[i] - 1) * d[i]);
  }
  for (std::size_t i = 0; i < un; ++i) cols.push_back(x.shape()[2 + i]);
  check_output_size(ctx, full_shape, "full output");
  check_output_size(ctx, out_shape_all, "output");
  check_output_size(ctx, kernel_d, "dilated kernel");
  check_output_size(ctx, cols, "columns");
  if (n == 3) check_output_size(ctx, spread, "stride-spread input");
  if (n == 1) {
    x = to_2d(x);
    W = to_2d(W);
  }
  const int axes = n == 1 ? 2 : n;
  bool plain = axes == 2;  // F::deconv2d's own symmetric padding does it
  for (int i = 0; i < axes; ++i) plain = plain && pb[i] >= 0 && 2 * pb[i] == full[i] - out[i] && d[i] == 1;
  for (int i = 0; i < axes; ++i) W = dilate_axis(W, 2 + i, d[i]);
  const Pair stride(static_cast<int>(s[0]), static_cast<int>(s[1]));
  auto deconv = [&](const Variable& xg, const Variable& Wg, const Variable& bg) {
    if (plain) return F::deconv2d(xg, Wg, bg, stride, Pair(static_cast<int>(pb[0]), static_cast<int>(pb[1])));
    if (axes == 2) return F::deconv2d(xg, Wg, Variable(), stride, 0);
    Variable xd = xg;
    PadList edge{{0, 0}, {0, 0}};
    for (int i = 0; i < 3; ++i) {
      xd = dilate_axis(xd, 2 + i, s[i]);
      edge.emplace_back(Wg.shape()[2 + i] - 1, Wg.shape()[2 + i] - 1);
    }
    const Slice flip(std::nullopt, std::nullopt, -1);
    const Variable Wf = F::get_item(F::transpose(Wg, {1, 0, 2, 3, 4}), Indices{Slice(), Slice(), flip, flip, flip});
    return F::conv3d(F::pad(xd, edge), Wf);
  };
  Variable y;
  if (group == 1) {
    y = deconv(x, W, b);
  } else if (axes == 2) {  // 1-d (as 2-d) and 2-d: a grouped deconv2d
    const Pair p = plain ? Pair(static_cast<int>(pb[0]), static_cast<int>(pb[1])) : Pair(0);
    y = F::deconv2d(x, W, plain ? b : Variable(), stride, p, std::nullopt, group);
  } else {
    const std::int64_t cg = C / group, ocg = OC / group;
    VariableList ys;
    for (std::int64_t g = 0; g < group; ++g)
      ys.push_back(deconv(channels(x, 1, g, cg), channels(W, 0, g, cg), b.defined() ? channels(b, 0, g, ocg) : b));
    y = F::concat(ys, 1);
  }
  if (!plain) {
    PadList crop{{0, 0}, {0, 0}};
    for (int i = 0; i < axes; ++i) crop.emplace_back(-pb[i], pb[i] + out[i] - full[i]);
    y = F::pad(y, crop);
    if (b.defined()) y = y + channel_bias(b, y.ndim());
  }
  return {n == 1 ? from_2d(y) : y};
}

// --- pools ------------------------------------------------------------------------------------
void check_pool(const Attrs& a) {
  check_spatial(a, true);
  if (a.i("ceil_mode", 0) != 0 && a.i("ceil_mode", 0) != 1) malformed(a.node, a.opset, "ceil_mode must be 0 or 1");
}

void check_max_pool(const Attrs& a) {
  check_pool(a);
  const std::int64_t order = a.i("storage_order", 0);
  if (order != 0 && order != 1) malformed(a.node, a.opset, "storage_order must be 0 or 1");
}

// MaxPool's Indices output (int64, no gradient): the flat index into x (N, C, H, W) of each
// window's first maximum, row-major ((n C + c) H + h) W + w, or with storage_order 1
// column-major (n C + c) H W + w H + h. Padding never wins. Computed on the host.
Tensor max_pool_indices(const Tensor& x, const Window& w, const Shape& out, bool column_major) {
  const Shape& s = x.shape();
  const std::int64_t NC = s[0] * s[1], H = s[2], W = s[3], OH = out[2], OW = out[3];
  const std::vector<double> v = x.to_cpu().to_vector<double>();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(NC * OH * OW), 0);
  for (std::int64_t p = 0; p < NC; ++p)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        std::int64_t best = -1;
        for (std::int64_t i = 0; i < w.k[0]; ++i)
          for (std::int64_t j = 0; j < w.k[1]; ++j) {
            const std::int64_t h = oh * w.s[0] - w.pb[0] + i * w.d[0], c = ow * w.s[1] - w.pb[1] + j * w.d[1];
            if (h < 0 || h >= H || c < 0 || c >= W) continue;
            const std::int64_t at = (p * H + h) * W + c;
            if (best < 0 || v[static_cast<std::size_t>(at)] > v[static_cast<std::size_t>(best)]) best = at;
          }
        if (best >= 0 && column_major) {
          const std::int64_t h = (best / W) % H, c = best % W;
          best = p * H * W + c * H + h;
        }
        idx[static_cast<std::size_t>((p * OH + oh) * OW + ow)] = best;
      }
  return array(idx, out, int64);
}

// The max or the mean over the k0 x k1 strided slices of x (N, C, H, W): a pool with dilations.
Variable dilated_pool(const Variable& x, const Window& w, bool max) {
  const std::int64_t oh = (x.shape()[2] - w.extent(0)) / w.s[0] + 1;
  const std::int64_t ow = (x.shape()[3] - w.extent(1)) / w.s[1] + 1;
  VariableList taps;
  for (std::int64_t i = 0; i < w.k[0]; ++i)
    for (std::int64_t j = 0; j < w.k[1]; ++j) {
      const std::int64_t h0 = i * w.d[0], w0 = j * w.d[1];
      const Indices tap{Slice(), Slice(), Slice(h0, h0 + (oh - 1) * w.s[0] + 1, w.s[0]),
                        Slice(w0, w0 + (ow - 1) * w.s[1] + 1, w.s[1])};
      taps.push_back(F::expand_dims(F::get_item(x, tap), 0));
    }
  return max ? F::max(F::concat(taps, 0), Axes{0}) : F::mean(F::concat(taps, 0), Axes{0});
}

// A pool of x (N, C, spatial...), padded already: one 2-d pool for 1-d (as (N, C, L, 1)) and 2-d
// inputs; for 3-d ones a pool per axis over (M, 1, L, R) with a (k, 1) kernel, since the max and
// the mean over a box are the max and the mean over its axes in turn.
Variable pool(const Variable& x, const Window& w, bool max) {
  auto pool2d = [max](const Variable& v, Pair k, Pair s) {
    return max ? F::pooling(v, k, s, 0) : F::average_pooling(v, k, s, 0);
  };
  if (w.axes() == 2) return w.dilated() ? dilated_pool(x, w, max) : pool2d(x, w.kernel(), w.stride());
  Variable y = x;
  for (int a = 0; a < 3; ++a) {
    Shape s = y.shape();
    std::int64_t M = 1, R = 1;
    for (int i = 0; i < 2 + a; ++i) M *= s[static_cast<std::size_t>(i)];
    for (std::size_t i = static_cast<std::size_t>(3 + a); i < s.size(); ++i) R *= s[i];
    const Variable v = pool2d(F::reshape(y, Shape{M, 1, s[static_cast<std::size_t>(2 + a)], R}),
                              Pair(static_cast<int>(w.k[a]), 1), Pair(static_cast<int>(w.s[a]), 1));
    s[static_cast<std::size_t>(2 + a)] = v.shape()[2];
    y = F::reshape(v, s);
  }
  return y;
}

// MaxPool over (N, C, d1, ...), 1-d to 3-d: padding counts as -inf. Integer inputs (uint8 read
// as int64) are pooled in float64 and converted back (no gradient); their padding is the dtype's
// lowest value.
VariableList run_max_pool(OpContext& ctx) {
  const Attrs& a = ctx.attrs();
  Variable x = ctx.input(0);
  const int n = spatial_rank(ctx, x, "max pooling");
  const DType dtype = x.dtype();
  if (!is_floating(dtype)) x = Variable(x.data().astype(float64));
  const I64s in(x.shape().begin() + 2, x.shape().end());
  const Window w = make_window(ctx, in, a.ints("kernel_shape"), a.i("ceil_mode", 0) != 0);
  if (n == 3 && w.dilated()) ctx.unsupported("dilations in a 3-d MaxPool");
  if (n == 3 && ctx.wants_output(1)) ctx.unsupported("the Indices output of a 3-d MaxPool");
  check_window(ctx, x.shape(), w, true);
  if (n == 1) x = to_2d(x);
  // Padding never wins: -inf, or for integers the dtype's lowest value (what a window of padding
  // alone gives, converted back exactly).
  const double low = dtype == int32   ? std::numeric_limits<std::int32_t>::lowest()
                     : dtype == int64 ? static_cast<double>(std::numeric_limits<std::int64_t>::lowest())
                                      : -std::numeric_limits<double>::infinity();
  VariableList outs{pool(pad_input(x, w, low, low), w, true)};
  if (ctx.wants_output(1)) {
    const Tensor idx = max_pool_indices(x.data(), w, outs[0].shape(), a.i("storage_order", 0) == 1);
    outs.push_back(Variable(n == 1 ? idx.reshape(Shape{idx.shape()[0], idx.shape()[1], idx.shape()[2]}) : idx));
  }
  if (n == 1) outs[0] = from_2d(outs[0]);
  if (!is_floating(dtype)) outs[0] = Variable(outs[0].data().astype(dtype));
  return outs;
}

// AveragePool over (N, C, d1, ...), 1-d to 3-d: the mean over each window's elements; pads
// count only with count_include_pad = 1 (ceil_mode's extra end never counts).
VariableList run_average_pool(OpContext& ctx) {
  const Attrs& a = ctx.attrs();
  Variable x = float_input(ctx, 0, "X");
  const int n = spatial_rank(ctx, x, "average pooling");
  const I64s in(x.shape().begin() + 2, x.shape().end());
  const Window w = make_window(ctx, in, a.ints("kernel_shape"), a.i("ceil_mode", 0) != 0);
  const bool count_pad = a.i("count_include_pad", 0) != 0;
  if (n == 3 && w.dilated()) ctx.unsupported("dilations in a 3-d AveragePool");
  check_window(ctx, x.shape(), w, true);
  if (n == 1) x = to_2d(x);
  Variable y;
  if (!w.padded()) {
    y = pool(x, w, false);
  } else if (count_pad && w.symmetric() && w.axes() == 2 && !w.dilated()) {
    y = F::average_pooling(x, w.kernel(), w.stride(), w.pad());
  } else {
    // The window means of the padded x over the window means of a mask that is 1 where an
    // element counts: a constant (1, 1, OH, OW) divisor.
    y = pool(pad_input(x, w, 0.0, 0.0), w, false);
    Tensor denom;
    {
      auto guard = no_grad();
      Shape ms = x.shape();
      ms[0] = ms[1] = 1;
      const Variable ones(dezero::ones(ms, x.dtype(), x.device()));
      denom = pool(pad_input(ones, w, count_pad ? 1.0 : 0.0, 0.0), w, false).data();
    }
    y = y / Variable(denom);
  }
  return {n == 1 ? from_2d(y) : y};
}

// The spatial axes of x (N, C, ...): 2 .. ndim - 1.
Axes spatial_axes(const OpContext& ctx, const Variable& x) {
  if (x.ndim() < 3) shape_error(ctx, "the input must be (N, C, d1, ...), got " + x.shape().str());
  std::vector<int> axes;
  for (int i = 2; i < x.ndim(); ++i) axes.push_back(i);
  return Axes(axes);
}

VariableList run_global_average_pool(OpContext& ctx) {
  const Variable& x = float_input(ctx, 0, "X");
  return {F::mean(x, spatial_axes(ctx, x), true)};
}

VariableList run_global_max_pool(OpContext& ctx) {
  const Variable& x = float_input(ctx, 0, "X");
  return {F::max(x, spatial_axes(ctx, x), true)};
}

}  // namespace

// --- the table --------------------------------------------------------------------------------
void register_conv_ops(OpTable& table) {
  const std::vector<std::string> conv_attrs{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};
  add(table, "Conv", 7, 20, conv_attrs, check_conv, run_conv);
  add(table, "ConvTranspose", 7, 20,
      {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"},
      check_conv, run_conv_transpose);

  add(table, "MaxPool", 7, 7, {"auto_pad", "kernel_shape", "pads", "strides"}, check_max_pool, run_max_pool);
  add(table, "MaxPool", 8, 9, {"auto_pad", "kernel_shape", "pads", "storage_order", "strides"}, check_max_pool,
      run_max_pool);
  add(table, "MaxPool", 10, 20,
      {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}, check_max_pool,
      run_max_pool);
  add(table, "AveragePool", 7, 9, {"auto_pad", "count_include_pad", "kernel_shape", "pads", "strides"}, check_pool,
      run_average_pool);
  add(table, "AveragePool", 10, 18, {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"},
      check_pool, run_average_pool);
  add(table, "AveragePool", 19, 20,
      {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"}, check_pool,
      run_average_pool);
  add(table, "GlobalAveragePool", 7, 20, {}, nullptr, run_global_average_pool);
  add(table, "GlobalMaxPool", 7, 20, {}, nullptr, run_global_max_pool);
}

}  // namespace dezero::onnx::detail
