// functions/activation.cpp - sigmoid, relu, leaky_relu, softmax, log_softmax
// (DeZero functions.py §3.5; steps 43, 47). Forwards are single fused kernels;
// backwards are written with Variables so that they can be differentiated again.
#include "dezero/functions.hpp"
#include "dezero/functions_nn.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

class Sigmoid : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::sigmoid(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::sigmoid(input(0));
    if (!Config::enable_backprop) {  // no graph to record: the same arithmetic, in the same order, on Tensors
      return {Variable(detail::sigmoid_grad(gys[0].data(), y.data()))};
    }
    return {gys[0] * y * F::rsub(y, 1.0)};
  }
};

class ReLU : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::relu(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    if (!Config::enable_backprop) return {Variable(detail::relu_grad(gys[0].data(), input(0).data()))};  // no graph
    return {gys[0] * Variable(greater(input(0).data(), 0.0))};
  }
};

class LeakyReLU : public Function {
 public:
  explicit LeakyReLU(double slope) : slope_(slope) {}
  TensorList forward(const TensorList& xs) override { return {detail::leaky_relu(xs[0], slope_)}; }
  VariableList backward(const VariableList& gys) override {
    return {gys[0] * Variable(detail::leaky_relu_mask(input(0).data(), slope_))};
  }

 private:
  double slope_;
};

// y = softmax(x); gx = y * gy - y * sum(y * gy, axis)
class Softmax : public Function {
 public:
  explicit Softmax(int axis) : axis_(axis) {}
  TensorList forward(const TensorList& xs) override { return {detail::softmax(xs[0], axis_)}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::softmax(input(0), axis_);
    Variable gx = y * gys[0];
    return {gx - y * F::sum(gx, Axes{axis_}, true)};
  }

 private:
  int axis_;
};

// y = log_softmax(x); gx = gy - exp(y) * sum(gy, axis)
class LogSoftmax : public Function {
 public:
  explicit LogSoftmax(int axis) : axis_(axis) {}
  TensorList forward(const TensorList& xs) override { return {detail::softmax(xs[0], axis_, true)}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::log_softmax(input(0), axis_);
    return {gys[0] - F::exp(y) * F::sum(gys[0], Axes{axis_}, true)};
  }

 private:
  int axis_;
};

}  // namespace

namespace F {
Variable sigmoid(const Variable& x) { return (*std::make_shared<Sigmoid>())(x); }
Variable relu(const Variable& x) { return (*std::make_shared<ReLU>())(x); }
Variable leaky_relu(const Variable& x, double slope) { return (*std::make_shared<LeakyReLU>(slope))(x); }
Variable softmax(const Variable& x, int axis) { return (*std::make_shared<Softmax>(axis))(x); }
Variable log_softmax(const Variable& x, int axis) { return (*std::make_shared<LogSoftmax>(axis))(x); }
}  // namespace F
}  // namespace dezero
