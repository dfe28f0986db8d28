// dezero/functions/pooling.cpp - pooling (max), pooling_simple, average_pooling
// (DeZero's functions_conv.py; step 57) and the Functions of max pooling.
//
//   MaxPooling            y = max of each window, idx = where (tensor/fused.hpp max_pool)
//   Pooling2DGrad         gx = gy scattered to idx                    backward: Pooling2DWithIndexes
//   Pooling2DWithIndexes  y = x gathered at idx                       backward: Pooling2DGrad
// The last two are each other's adjoint, so max pooling has gradients of every order,
// on every device (DeZero's Pooling2DWithIndexes indexed CuPy arrays with NumPy and
// had no backward of its own). Padding is zero padding, as in DeZero (a window that
// touches it has a max of at least 0); average pooling counts the padded zeros.
#include "dezero/functions/pooling.hpp"

#include <utility>

#include "dezero/functions.hpp"
#include "dezero/functions/conv.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

struct Window {
  Pair k, s, p;
};

class Pooling2DWithIndexes;

// gx (x_shape) from gy (N, C, OH, OW) and the forward's indexes.
class Pooling2DGrad : public Function {
 public:
  Pooling2DGrad(Tensor idx, Shape x_shape, Window w) : idx_(std::move(idx)), x_shape_(std::move(x_shape)), w_(w) {}
  TensorList forward(const TensorList& xs) override {
    return {detail::max_pool_backward(xs[0], idx_, x_shape_, w_.k, w_.s, w_.p)};
  }
  VariableList backward(const VariableList& ggs) override;

 private:
  Tensor idx_;
  Shape x_shape_;
  Window w_;
};

// y (N, C, OH, OW) = x at the forward's indexes.
class Pooling2DWithIndexes : public Function {
 public:
  Pooling2DWithIndexes(Tensor idx, Window w) : idx_(std::move(idx)), w_(w) {}
  TensorList forward(const TensorList& xs) override {
    return {detail::max_pool_gather(xs[0], idx_, w_.k, w_.s, w_.p)};
  }
  VariableList backward(const VariableList& gys) override {
    return {call<Pooling2DGrad>({gys[0]}, idx_, input(0).shape(), w_)};
  }

 private:
  Tensor idx_;
  Window w_;
};

VariableList Pooling2DGrad::backward(const VariableList& ggs) {
  return {call<Pooling2DWithIndexes>({ggs[0]}, idx_, w_)};
}

class MaxPooling : public Function {
 public:
  explicit MaxPooling(Window w) : w_(w) {}
  TensorList forward(const TensorList& xs) override {
    auto [y, idx] = detail::max_pool("pooling", xs[0], w_.k, w_.s, w_.p);
    idx_ = std::move(idx);
    return {y};
  }
  VariableList backward(const VariableList& gys) override {
    return {call<Pooling2DGrad>({gys[0]}, idx_, input(0).shape(), w_)};
  }
  std::string name() const override { return "Pooling"; }

 private:
  Window w_;
  Tensor idx_;  // (N, C, OH, OW) int64: each window's argmax
};

}  // namespace

namespace F {

Variable pooling(const Variable& x, Pair kernel_size, Pair stride, Pair pad) {
  x.defined_data("pooling");
  return call<MaxPooling>({x}, Window{kernel_size, stride, pad});
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
  detail::check_window("average_pooling", x.defined_data("average_pooling"), kernel_size, stride, pad);
  Variable col = im2col(x, kernel_size, stride, pad, false);  // (N, C, KH, KW, OH, OW)
  return mean(col, Axes{2, 3});
}

}  // namespace F
}  // namespace dezero
