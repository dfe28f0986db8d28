// dezero/functions/pooling.cpp - pooling (max), pooling_simple, average_pooling
// (DeZero's functions_conv.py; step 57) and their Functions.
//
//   MaxPooling            y = max of each window, idx = where (tensor/fused.hpp max_pool),
//                         or y alone through the backend's library (cuDNN, unpadded windows)
//   Pooling2DGrad         gx = gy scattered to idx (or routed by the library from x, y)
//                                                                    backward: Pooling2DWithIndexes
//   Pooling2DWithIndexes  y = x gathered at idx                       backward: Pooling2DGrad
// The last two are each other's adjoint, so max pooling has gradients of every order,
// on every device (DeZero's Pooling2DWithIndexes indexed CuPy arrays with NumPy and
// had no backward of its own). Where the library computed the forward there are no
// indexes: Pooling2DGrad computes them from x only when its own backward is asked for
// (the first max, as everywhere else; on exact ties cuDNN's backward may have picked
// another of the equal elements). Padding is zero padding, as in DeZero (a window that
// touches it has a max of at least 0). NaN as in NumPy on every path: a window holding one
// has a NaN max and its index is the first NaN, so its gradient goes there and the double
// backward gathers the NaN back (pooling_simple, F::max over im2col, has the same values
// but sends a NaN window's gradient nowhere).
//
//   AveragePooling        y = mean of each window, the padded zeros counted (DeZero's
//                         mean of im2col)                             backward: AveragePoolingGrad
//   AveragePoolingGrad    gx = gy / (kh kw) spread over each window   backward: AveragePooling
// Both are linear and each other's adjoint: gradients of every order, without the
// (N, C, KH, KW, OH, OW) col that DeZero's im2col + mean keeps for the backward.
#include "dezero/functions/pooling.hpp"

#include <memory>
#include <utility>

#include "dezero/functions.hpp"
#include "dezero/functions/conv.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

struct Window {
  Pair k, s, p;
};
// The window as attributes: "kernel_size", "stride", "pad", each {h, w}.
FunctionAttrs window_attrs(const Window& w) {
  return {{"kernel_size", std::vector<std::int64_t>{w.k.h, w.k.w}},
          {"stride", std::vector<std::int64_t>{w.s.h, w.s.w}},
          {"pad", std::vector<std::int64_t>{w.p.h, w.p.w}}};
}

class Pooling2DWithIndexes;

// What the max pooling's Functions share: the window, and either the forward's indexes or
// (the library path) its x and y, from which the indexes are made when first needed.
struct MaxState {
  explicit MaxState(Window win) : w(win) {}
  Window w;
  Tensor idx;   // (N, C, OH, OW) int64: each window's first max; empty after the library path
  Tensor x, y;  // the library path's input and output (empty after the indexed path)
  const Tensor& indexes() {
    if (!idx.defined()) idx = detail::max_pool("pooling", x, w.k, w.s, w.p).second;
    return idx;
  }
};

// gx (x_shape) from gy (N, C, OH, OW) and the forward's indexes (or x and y).
class Pooling2DGrad : public Function {
 public:
  std::string name() const override { return "Pooling2DGrad"; }
  Pooling2DGrad(std::shared_ptr<MaxState> st, Shape x_shape) : st_(std::move(st)), x_shape_(std::move(x_shape)) {}
  TensorList forward(const TensorList& xs) override {
    const Window& w = st_->w;
    if (!st_->idx.defined()) {
      Tensor gx = detail::library_max_pool_backward(xs[0], st_->x, st_->y, w.k, w.s, w.p);
      if (gx.defined()) return {gx};
    }
    return {detail::max_pool_backward(xs[0], st_->indexes(), x_shape_, w.k, w.s, w.p)};
  }
  VariableList backward(const VariableList& ggs) override;

 private:
  std::shared_ptr<MaxState> st_;
  Shape x_shape_;
};

// y (N, C, OH, OW) = x at the forward's indexes.
class Pooling2DWithIndexes : public Function {
 public:
  std::string name() const override { return "Pooling2DWithIndexes"; }
  explicit Pooling2DWithIndexes(std::shared_ptr<MaxState> st) : st_(std::move(st)) {}
  TensorList forward(const TensorList& xs) override {
    const Window& w = st_->w;
    return {detail::max_pool_gather(xs[0], st_->indexes(), w.k, w.s, w.p)};
  }
  VariableList backward(const VariableList& gys) override {
    return {call<Pooling2DGrad>(detail::in(gys[0]), st_, input(0).shape())};
  }

 private:
  std::shared_ptr<MaxState> st_;
};

VariableList Pooling2DGrad::backward(const VariableList& ggs) {
  st_->indexes();  // the gather needs them; from here on the indexed kernels run
  return {call<Pooling2DWithIndexes>(detail::in(ggs[0]), st_)};
}

class MaxPooling : public Function {
 public:
  explicit MaxPooling(Window w) : st_(std::make_shared<MaxState>(w)) {}
  TensorList forward(const TensorList& xs) override {
    const Window& w = st_->w;
    auto [y, idx] = detail::max_pool_library_first("pooling", xs[0], w.k, w.s, w.p);
    if (idx.defined()) {
      st_->idx = std::move(idx);
    } else {  // the library's forward: its backward wants x and y
      st_->x = xs[0];
      st_->y = y;
    }
    return {y};
  }
  VariableList backward(const VariableList& gys) override {
    return {call<Pooling2DGrad>(detail::in(gys[0]), st_, input(0).shape())};
  }
  std::string name() const override { return "Pooling"; }
  // The padding is zero padding (see above), not ONNX MaxPool's -inf.
  FunctionAttrs attributes() const override { return window_attrs(st_->w); }

 private:
  std::shared_ptr<MaxState> st_;
};

// --- average pooling ---------------------------------------------------------------------------
class AveragePooling;

// gx (x's shape) = gy / (kh kw) spread over each window; x and y are the forward's.
class AveragePoolingGrad : public Function {
 public:
  std::string name() const override { return "AveragePoolingGrad"; }
  AveragePoolingGrad(Window w, Tensor x, Tensor y) : w_(w), x_(std::move(x)), y_(std::move(y)) {}
  TensorList forward(const TensorList& xs) override {
    return {detail::avg_pool_backward(xs[0], x_, y_, w_.k, w_.s, w_.p)};
  }
  VariableList backward(const VariableList& ggs) override;

 private:
  Window w_;
  Tensor x_, y_;
};

class AveragePooling : public Function {
 public:
  std::string name() const override { return "AveragePooling"; }
  explicit AveragePooling(Window w) : w_(w) {}
  TensorList forward(const TensorList& xs) override {
    Tensor y = detail::avg_pool("average_pooling", xs[0], w_.k, w_.s, w_.p);
    y_ = y;
    return {y};
  }
  VariableList backward(const VariableList& gys) override {
    return {call<AveragePoolingGrad>(detail::in(gys[0]), w_, input(0).data(), y_)};
  }
  // The padded zeros are counted (ONNX's count_include_pad = 1).
  FunctionAttrs attributes() const override { return window_attrs(w_); }

 private:
  Window w_;
  Tensor y_;
};

VariableList AveragePoolingGrad::backward(const VariableList& ggs) {
  return {call<AveragePooling>(detail::in(ggs[0]), w_)};
}

}  // namespace

namespace F {

Variable pooling(const Variable& x, Pair kernel_size, Pair stride, Pair pad) {
  x.defined_data("pooling");
  return call<MaxPooling>(detail::in(x), Window{kernel_size, stride, pad});
}

Variable pooling_simple(const Variable& x, Pair kernel_size, Pair stride, Pair pad) {
  detail::check_window("pooling_simple", x.defined_data("pooling_simple"), kernel_size, stride, pad);
  Variable col = im2col(x, kernel_size, stride, pad, true);  // (N*OH*OW, C*KH*KW)
  const Shape& xs = x.shape();
  std::int64_t n = xs[0], c = xs[1];
  std::int64_t oh = (xs[2] + 2 * pad.h - kernel_size.h) / stride.h + 1;
  std::int64_t ow = (xs[3] + 2 * pad.w - kernel_size.w) / stride.w + 1;
  Variable y = max(reshape(col, Shape{-1, std::int64_t(kernel_size.h) * kernel_size.w}), 1);
  return transpose(reshape(y, Shape{n, oh, ow, c}), {0, 3, 1, 2});
}

Variable average_pooling(const Variable& x, Pair kernel_size, Pair stride, Pair pad) {
  x.defined_data("average_pooling");
  return call<AveragePooling>(detail::in(x), Window{kernel_size, stride, pad});
}

}  // namespace F
}  // namespace dezero
