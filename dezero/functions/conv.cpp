// dezero/functions/conv.cpp - conv2d, conv2d_simple, deconv2d, im2col, col2im
// (DeZero's functions_conv.py; steps 55-57) and the Functions behind them.
//
// Forward on Tensors through tensor/fused.hpp (im2col + GEMM, or the backend's
// library path), backward in Variables made of these same functions, so that every
// gradient can be differentiated again:
//   Conv2d      y = conv(x, W) + b    gx = deconv2d(gy, W), gW = Conv2DGradW(x, gy), gb = sum(gy)
//   Deconv2d    y = deconv(x, W) + b  gx = conv2d(gy, W),   gW = Conv2DGradW(gy, x), gb = sum(gy)
//   Conv2DGradW gW = sum gy @ col(x)^T, linear in both inputs:
//               gx = deconv2d(gy, ggW), ggy = conv2d(x, ggW)
// (DeZero's Conv2DGradW.backward took a weakref for a Variable and crashed.)
// All three carry `groups` (PyTorch's grouped convolution; W (OC, C/groups, KH, KW) for
// conv, (C, OC/groups, KH, KW) for deconv: the same tensor seen from either side) and
// pass it on, so a grouped or depthwise convolution stays one Function at every order.
//
// Mixed precision (issue 31): each of the three keeps the autocast type it was called
// under (Config::autocast, float32 when none) and passes it on to the Functions of its
// backward, so that the forward and both gradient products run in it wherever backward
// runs (tensor/conv.cpp rounds float32 operands to it; other dtypes ignore it).
#include "dezero/functions/conv.hpp"

#include <string>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

// A Pair as an attribute: {h, w}.
FunctionAttr hw(Pair p) { return std::vector<std::int64_t>{p.h, p.w}; }

bool has_bias(const Variable& b) { return b.defined() && b.data().defined(); }
Pair kernel_of(const Shape& ws) { return Pair(static_cast<int>(ws[2]), static_cast<int>(ws[3])); }
Pair image_of(const Shape& xs) { return Pair(static_cast<int>(xs[2]), static_cast<int>(xs[3])); }
// gb (OC,) = gy (N, OC, OH, OW) summed over N, OH, OW: as two reductions of contiguous
// axes (OH OW, then N), which need no transposed copy of gy, unlike one over (0, 2, 3).
Variable bias_grad(const Variable& gy) {
  const Shape& s = gy.shape();
  return F::sum(F::sum(F::reshape(gy, Shape{s[0], s[1], s[2] * s[3]}), 2), 0);
}
// utils::get_conv_outsize / get_deconv_outsize (utils.hpp sits above this layer).
std::int64_t conv_outsize(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p) {
  return (in + 2 * p - k) / s + 1;
}
std::int64_t deconv_outsize(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p) {
  return s * (in - 1) + k - 2 * p;
}

// --- im2col / col2im ------------------------------------------------------------------------
class Im2col : public Function {
 public:
  std::string name() const override { return "Im2col"; }
  Im2col(Pair k, Pair s, Pair p) : k_(k), s_(s), p_(p) {}
  TensorList forward(const TensorList& xs) override { return {detail::im2col("im2col", xs[0], k_, s_, p_)}; }
  VariableList backward(const VariableList& gys) override;
  FunctionAttrs attributes() const override { return {{"kernel_size", hw(k_)}, {"stride", hw(s_)}, {"pad", hw(p_)}}; }

 private:
  Pair k_, s_, p_;
};

class Col2im : public Function {
 public:
  std::string name() const override { return "Col2im"; }
  Col2im(Shape x_shape, Pair s, Pair p) : x_shape_(std::move(x_shape)), s_(s), p_(p) {}
  TensorList forward(const TensorList& xs) override { return {detail::col2im("col2im", xs[0], x_shape_, s_, p_)}; }
  VariableList backward(const VariableList& gys) override {
    const Shape& cs = input(0).shape();
    return {call<Im2col>(detail::in(gys[0]), Pair(static_cast<int>(cs[2]), static_cast<int>(cs[3])), s_, p_)};
  }
  FunctionAttrs attributes() const override {
    return {{"input_shape", std::vector<std::int64_t>(x_shape_)}, {"stride", hw(s_)}, {"pad", hw(p_)}};
  }

 private:
  Shape x_shape_;
  Pair s_, p_;
};

VariableList Im2col::backward(const VariableList& gys) { return {call<Col2im>(detail::in(gys[0]), input(0).shape(), s_, p_)}; }

// --- the convolution Functions --------------------------------------------------------------
// gW (OC, C/groups, KH, KW) of y = conv(x, W) from x (N, C, H, W) and gy (N, OC, OH, OW).
class Conv2DGradW : public Function {
 public:
  std::string name() const override { return "Conv2DGradW"; }
  Conv2DGradW(Pair k, Pair s, Pair p, DType compute, std::int64_t groups)
      : k_(k), s_(s), p_(p), compute_(compute), groups_(groups) {}
  TensorList forward(const TensorList& xs) override {
    return {detail::conv2d_backward_filter("conv2d", xs[0], xs[1], k_, s_, p_, compute_, groups_)};
  }
  VariableList backward(const VariableList& ggs) override;

 private:
  Pair k_, s_, p_;
  DType compute_;
  std::int64_t groups_;
};

// y (N, OC, OH, OW) = x (N, C, H, W) * W (OC, C/groups, KH, KW) [+ b (OC,)]
class Conv2d : public Function {
 public:
  std::string name() const override { return "Conv2d"; }
  Conv2d(Pair s, Pair p, DType compute, std::int64_t groups) : s_(s), p_(p), compute_(compute), groups_(groups) {}
  TensorList forward(const TensorList& xs) override {
    return {detail::conv2d_forward("conv2d", xs[0], xs[1], xs.size() > 2 ? xs[2] : Tensor(), s_, p_, compute_,
                                   groups_)};
  }
  VariableList backward(const VariableList& gys) override;
  FunctionAttrs attributes() const override { return {{"stride", hw(s_)}, {"pad", hw(p_)}, {"groups", groups_}}; }

 private:
  Pair s_, p_;
  DType compute_;
  std::int64_t groups_;
};

// y (N, OC, OH, OW) = deconv(x (N, C, H, W), W (C, OC/groups, KH, KW)) [+ b (OC,)], (OH, OW) = out
class Deconv2d : public Function {
 public:
  std::string name() const override { return "Deconv2d"; }
  Deconv2d(Pair s, Pair p, Pair out, DType compute, std::int64_t groups)
      : s_(s), p_(p), out_(out), compute_(compute), groups_(groups) {}
  TensorList forward(const TensorList& xs) override {
    return {detail::conv2d_backward_data("deconv2d", xs[0], xs[1], xs.size() > 2 ? xs[2] : Tensor(), s_, p_, out_,
                                         compute_, groups_)};
  }
  VariableList backward(const VariableList& gys) override;
  // "outsize": (OH, OW) of the result.
  FunctionAttrs attributes() const override {
    return {{"stride", hw(s_)}, {"pad", hw(p_)}, {"outsize", hw(out_)}, {"groups", groups_}};
  }

 private:
  Pair s_, p_, out_;
  DType compute_;
  std::int64_t groups_;
};

// The backward products, each in the type of the Function that asks for them.
VariableList Conv2DGradW::backward(const VariableList& ggs) {
  const Variable &x = input(0), &gy = input(1), &ggW = ggs[0];
  Variable gx, ggy;
  if (needs_input_grad(0))
    gx = call<Deconv2d>(detail::in(gy, ggW), s_, p_, image_of(x.shape()), compute_, groups_);
  if (needs_input_grad(1)) ggy = call<Conv2d>(detail::in(x, ggW), s_, p_, compute_, groups_);
  return {gx, ggy};
}

VariableList Conv2d::backward(const VariableList& gys) {
  const Variable &x = input(0), &W = input(1), &gy = gys[0];
  VariableList g(inputs().size());
  if (needs_input_grad(0))
    g[0] = call<Deconv2d>(detail::in(gy, W), s_, p_, image_of(x.shape()), compute_, groups_);
  if (needs_input_grad(1))
    g[1] = call<Conv2DGradW>(detail::in(x, gy), kernel_of(W.shape()), s_, p_, compute_, groups_);
  if (g.size() > 2 && needs_input_grad(2)) g[2] = bias_grad(gy);
  return g;
}

VariableList Deconv2d::backward(const VariableList& gys) {
  const Variable &x = input(0), &W = input(1), &gy = gys[0];
  VariableList g(inputs().size());
  if (needs_input_grad(0)) g[0] = call<Conv2d>(detail::in(gy, W), s_, p_, compute_, groups_);
  if (needs_input_grad(1))
    g[1] = call<Conv2DGradW>(detail::in(gy, x), kernel_of(W.shape()), s_, p_, compute_, groups_);
  if (g.size() > 2 && needs_input_grad(2)) g[2] = bias_grad(gy);
  return g;
}

void check_4d(const char* op, const char* what, const Variable& v, const char* layout) {
  const Tensor& t = v.defined_data(op);
  if (t.ndim() != 4)
    detail::fail<ShapeError>(op, what, " must be 4-d ", layout, ", got ", t,
                             "; hint: a single image is x.reshape({1, C, H, W})");
}

}  // namespace

namespace F {

// --- conv2d / conv2d_simple (step 57) ---------------------------------------------------------
Variable conv2d(const Variable& x, const Variable& W, const Variable& b, Pair stride, Pair pad,
               std::int64_t groups) {
  x.defined_data("conv2d");
  W.defined_data("conv2d");
  const DType compute = detail::autocast_compute(Config::autocast, x.device());
  if (has_bias(b)) return call<Conv2d>(detail::in(x, W, b), stride, pad, compute, groups);
  return call<Conv2d>(detail::in(x, W), stride, pad, compute, groups);
}

Variable conv2d_simple(const Variable& x, const Variable& W, const Variable& b, Pair stride, Pair pad) {
  const char* op = "conv2d_simple";
  check_4d(op, "x", x, "(N, C, H, W)");
  check_4d(op, "W", W, "(out_channels, in_channels, KH, KW)");
  const Shape &xs = x.shape(), &ws = W.shape();
  if (xs[1] != ws[1])
    detail::fail<ShapeError>(op, "x ", x.data(), " has ", std::to_string(xs[1]), " channels but W ", W.data(),
                             " expects ", std::to_string(ws[1]), "; hint: W is (out_channels, in_channels, KH, KW)");
  detail::check_window(op, x.data(), kernel_of(ws), stride, pad);
  Variable col = im2col(x, kernel_of(ws), stride, pad, true);  // (N*OH*OW, C*KH*KW)
  std::int64_t oh = conv_outsize(xs[2], ws[2], stride.h, pad.h);
  std::int64_t ow = conv_outsize(xs[3], ws[3], stride.w, pad.w);
  Variable Wm = transpose(reshape(W, Shape{ws[0], ws[1] * ws[2] * ws[3]}));  // (C*KH*KW, OC)
  Variable t = linear(col, Wm, has_bias(b) ? b : Variable());                 // (N*OH*OW, OC)
  return transpose(reshape(t, Shape{xs[0], oh, ow, ws[0]}), {0, 3, 1, 2});
}

// --- deconv2d -----------------------------------------------------------------------------------
Variable deconv2d(const Variable& x, const Variable& W, const Variable& b, Pair stride, Pair pad,
                  std::optional<Pair> outsize, std::int64_t groups) {
  const Tensor& xd = x.defined_data("deconv2d");
  const Tensor& wd = W.defined_data("deconv2d");
  Pair out = outsize ? *outsize : Pair(1);
  if (!outsize && xd.ndim() == 4 && wd.ndim() == 4)  // else the forward reports the bad rank
    out = Pair(static_cast<int>(deconv_outsize(xd.shape()[2], wd.shape()[2], stride.h, pad.h)),
               static_cast<int>(deconv_outsize(xd.shape()[3], wd.shape()[3], stride.w, pad.w)));
  const DType compute = detail::autocast_compute(Config::autocast, x.device());
  if (has_bias(b)) return call<Deconv2d>(detail::in(x, W, b), stride, pad, out, compute, groups);
  return call<Deconv2d>(detail::in(x, W), stride, pad, out, compute, groups);
}

// --- im2col / col2im (step 57) -------------------------------------------------------------------
Variable im2col(const Variable& x, Pair kernel_size, Pair stride, Pair pad, bool to_matrix) {
  Variable col = call<Im2col>(detail::in(x), kernel_size, stride, pad);  // (N, C, KH, KW, OH, OW)
  if (!to_matrix) return col;
  const Shape& cs = col.shape();
  return reshape(transpose(col, {0, 4, 5, 1, 2, 3}), Shape{cs[0] * cs[4] * cs[5], cs[1] * cs[2] * cs[3]});
}

Variable col2im(const Variable& x, const Shape& input_shape, Pair kernel_size, Pair stride, Pair pad,
                bool to_matrix) {
  const char* op = "col2im";
  const Tensor& xd = x.defined_data(op);
  if (input_shape.size() != 4)
    detail::fail<ShapeError>(op, "input_shape must be 4-d (N, C, H, W), got ", input_shape.str());
  // The kernel is checked here (the Function reads it from the col's shape).
  if (kernel_size.h < 1 || kernel_size.w < 1 || stride.h < 1 || stride.w < 1)
    detail::fail<ValueError>(op, "kernel size and stride must be positive, got ", kernel_size.str(), " and ",
                             stride.str());
  std::int64_t n = input_shape[0], c = input_shape[1];
  std::int64_t oh = conv_outsize(input_shape[2], kernel_size.h, stride.h, pad.h);
  std::int64_t ow = conv_outsize(input_shape[3], kernel_size.w, stride.w, pad.w);
  Shape col_shape{n, c, kernel_size.h, kernel_size.w, oh, ow};
  Variable col = x;
  if (to_matrix) {
    Shape expect{n * oh * ow, c * kernel_size.h * kernel_size.w};
    if (xd.shape() != expect)
      detail::fail<ShapeError>(op, "x ", xd, " does not fit input shape ", input_shape.str(), ", kernel ",
                               kernel_size.str(), ", stride ", stride.str(), ", pad ", pad.str(), ": expected ",
                               expect.str(), "; hint: use the im2col arguments");
    col = transpose(reshape(x, Shape{n, oh, ow, c, kernel_size.h, kernel_size.w}), {0, 3, 4, 5, 1, 2});
  } else if (xd.ndim() == 6 && xd.shape() != col_shape) {
    detail::fail<ShapeError>(op, "x ", xd, " does not fit input shape ", input_shape.str(), ", kernel ",
                             kernel_size.str(), ", stride ", stride.str(), ", pad ", pad.str(), ": expected ",
                             col_shape.str(), "; hint: use the im2col arguments");
  }
  return call<Col2im>(detail::in(col), input_shape, stride, pad);
}

}  // namespace F
}  // namespace dezero
