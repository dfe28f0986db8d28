// dezero/functions/activation.cpp - sigmoid, relu, leaky_relu, softmax, log_softmax
// (DeZero functions.py; steps 43, 47). Forwards are single fused kernels;
// backwards are written with Variables so that they can be differentiated again.
#include "dezero/functions/activation.hpp"

#include "dezero/functions.hpp"
#include "dezero/functions/dual.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

// y = sigmoid(x); gx = gy * y * (1 - y), from the output (recomputed if it was dropped).
class Sigmoid : public detail::DualFunction<Sigmoid> {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::sigmoid(xs[0])}; }
  template <class V>
  detail::GradList<V> grads(const V& gy) const {
    Variable y = output(0);
    if (!y.defined()) y = F::sigmoid(input(0));
    return {detail::sigmoid_grad(gy, detail::as<V>(y))};
  }
};

// y = max(x, 0); gx = gy * (x > 0), so the gradient at 0 is 0.
class ReLU : public detail::DualFunction<ReLU> {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::relu(xs[0])}; }
  template <class V>
  detail::GradList<V> grads(const V& gy) const {
    return {detail::relu_grad(gy, detail::as<V>(input(0)))};
  }
};

class LeakyReLU : public Function {
 public:
  explicit LeakyReLU(double slope) : slope_(slope) {}
  TensorList forward(const TensorList& xs) override { return {detail::leaky_relu(xs[0], slope_)}; }
  VariableList backward(const VariableList& gys) override {
    return {gys[0] * Variable(detail::leaky_relu_mask(input(0).data(), slope_))};
  }
  FunctionAttrs attributes() const override { return {{"slope", slope_}}; }

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
  FunctionAttrs attributes() const override { return {{"axis", std::int64_t{axis_}}}; }

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
  FunctionAttrs attributes() const override { return {{"axis", std::int64_t{axis_}}}; }

 private:
  int axis_;
};

}  // namespace

namespace F {
Variable sigmoid(const Variable& x) { return call<Sigmoid>(detail::in(x)); }
Variable relu(const Variable& x) { return call<ReLU>(detail::in(x)); }
Variable leaky_relu(const Variable& x, double slope) { return call<LeakyReLU>(detail::in(x), slope); }
Variable softmax(const Variable& x, int axis) { return call<Softmax>(detail::in(x), axis); }
Variable log_softmax(const Variable& x, int axis) { return call<LogSoftmax>(detail::in(x), axis); }
}  // namespace F
}  // namespace dezero
