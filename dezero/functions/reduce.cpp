// dezero/functions/reduce.cpp - sum, sum_to, broadcast_to, average/mean, max, min, clip
// (DeZero functions.py; steps 39-40).
#include <algorithm>
#include <string>

#include "dezero/functions/reduce.hpp"

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {
namespace {

// x's shape with the reduced axes set to 1 (DeZero's reshape_sum_backward /
// max_backward_shape, with negative axes normalised).
Shape keepdims_shape(const Shape& in, const Axes& axes) {
  Shape s = in;
  for (int a : detail::normalize_axes("sum", axes, in.ndim())) s[a] = 1;
  return s;
}

// A reduction's attributes: "axes" only when not all axes, "keepdims".
FunctionAttrs axes_attrs(const Axes& axes, bool keepdims) {
  FunctionAttrs a;
  if (!axes.is_all()) a.emplace_back("axes", std::vector<std::int64_t>(axes.list().begin(), axes.list().end()));
  a.emplace_back("keepdims", std::int64_t{keepdims});
  return a;
}

class Sum : public Function {
 public:
  std::string name() const override { return "Sum"; }
  Sum(Axes axes, bool keepdims) : axes_(std::move(axes)), keepdims_(keepdims) {}
  TensorList forward(const TensorList& xs) override { return {dezero::sum(xs[0], axes_, keepdims_)}; }
  VariableList backward(const VariableList& gys) override {
    const Shape& xs = input(0).shape();
    Variable gy = F::reshape(gys[0], keepdims_shape(xs, axes_));
    return {F::broadcast_to(gy, xs)};
  }
  // "axes" (absent: all axes), "keepdims" 0 / 1.
  FunctionAttrs attributes() const override { return axes_attrs(axes_, keepdims_); }

 private:
  Axes axes_;
  bool keepdims_;
};

// y = sum(x, axes) * (y.size / x.size): the count read from the shapes each time it runs (an
// exported graph gets ReduceMean, right at any batch size); gy scaled, then spread as sum's.
class Mean : public Function {
 public:
  Mean(Axes axes, bool keepdims) : axes_(std::move(axes)), keepdims_(keepdims) {}
  TensorList forward(const TensorList& xs) override {
    Tensor y = dezero::sum(xs[0], axes_, keepdims_);
    return {y * (static_cast<double>(y.size()) / static_cast<double>(xs[0].size()))};
  }
  VariableList backward(const VariableList& gys) override {
    const Shape& xs = input(0).shape();
    Variable gy = gys[0] * (static_cast<double>(gys[0].size()) / static_cast<double>(input(0).size()));
    return {F::broadcast_to(F::reshape(gy, keepdims_shape(xs, axes_)), xs)};
  }
  std::string name() const override { return "Mean"; }
  // "axes" (absent: all axes), "keepdims" 0 / 1.
  FunctionAttrs attributes() const override { return axes_attrs(axes_, keepdims_); }

 private:
  Axes axes_;
  bool keepdims_;
};

class SumTo : public Function {
 public:
  std::string name() const override { return "SumTo"; }
  explicit SumTo(Shape shape) : shape_(std::move(shape)) {}
  TensorList forward(const TensorList& xs) override { return {dezero::sum_to(xs[0], shape_)}; }
  VariableList backward(const VariableList& gys) override { return {F::broadcast_to(gys[0], input(0).shape())}; }
  FunctionAttrs attributes() const override { return {{"shape", std::vector<std::int64_t>(shape_)}}; }

 private:
  Shape shape_;
};

class BroadcastTo : public Function {
 public:
  std::string name() const override { return "BroadcastTo"; }
  explicit BroadcastTo(Shape shape) : shape_(std::move(shape)) {}
  TensorList forward(const TensorList& xs) override { return {dezero::broadcast_to(xs[0], shape_)}; }
  VariableList backward(const VariableList& gys) override { return {F::sum_to(gys[0], input(0).shape())}; }
  FunctionAttrs attributes() const override { return {{"shape", std::vector<std::int64_t>(shape_)}}; }

 private:
  Shape shape_;
};

// Max and Min: every element equal to the result gets the full gradient (DeZero).
class MaxMin : public Function {
 public:
  MaxMin(Axes axes, bool keepdims, bool is_max) : axes_(std::move(axes)), keepdims_(keepdims), max_(is_max) {}
  TensorList forward(const TensorList& xs) override {
    y_ = max_ ? dezero::max(xs[0], axes_, keepdims_) : dezero::min(xs[0], axes_, keepdims_);
    return {y_};
  }
  VariableList backward(const VariableList& gys) override {
    const Tensor& x = input(0).data();
    Shape ks = keepdims_shape(x.shape(), axes_);
    Tensor cond = equal(x, y_.reshape(ks));
    Variable gy = F::reshape(gys[0], ks);
    return {F::broadcast_to(gy, x.shape()) * Variable(cond)};
  }
  std::string name() const override { return max_ ? "Max" : "Min"; }
  // "axes" (absent: all axes), "keepdims" 0 / 1, "which" "max" / "min".
  FunctionAttrs attributes() const override {
    FunctionAttrs a = axes_attrs(axes_, keepdims_);
    a.emplace_back("which", std::string(max_ ? "max" : "min"));
    return a;
  }

 private:
  Axes axes_;
  bool keepdims_, max_;
  Tensor y_;
};

class Clip : public Function {
 public:
  std::string name() const override { return "Clip"; }
  Clip(double lo, double hi) : lo_(lo), hi_(hi) {}
  TensorList forward(const TensorList& xs) override { return {dezero::clip(xs[0], lo_, hi_)}; }
  VariableList backward(const VariableList& gys) override {
    const Tensor& x = input(0).data();
    Tensor mask = greater_equal(x, lo_) * less_equal(x, hi_);
    return {gys[0] * Variable(mask)};
  }
  FunctionAttrs attributes() const override { return {{"lo", lo_}, {"hi", hi_}}; }

 private:
  double lo_, hi_;
};

}  // namespace

namespace F {

Variable sum(const Variable& x, const Axes& axes, bool keepdims) {
  detail::normalize_axes("sum", axes, x.ndim());  // validate before recording
  return call<Sum>(detail::in(x), axes, keepdims);
}
Variable sum_to(const Variable& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return call<SumTo>(detail::in(x), shape);
}
Variable broadcast_to(const Variable& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return call<BroadcastTo>(detail::in(x), shape);
}
Variable average(const Variable& x, const Axes& axes, bool keepdims) {
  detail::normalize_axes("average", axes, x.ndim());  // validate before recording
  return call<Mean>(detail::in(is_integer(x.dtype()) ? cast(x, float64) : x), axes, keepdims);
}
Variable mean(const Variable& x, const Axes& axes, bool keepdims) { return average(x, axes, keepdims); }
Variable max(const Variable& x, const Axes& axes, bool keepdims) {
  return call<MaxMin>(detail::in(x), axes, keepdims, true);
}
Variable min(const Variable& x, const Axes& axes, bool keepdims) {
  return call<MaxMin>(detail::in(x), axes, keepdims, false);
}
Variable clip(const Variable& x, double x_min, double x_max) {
  if (x_min > x_max)
    detail::fail<ValueError>("clip", "x_min (", std::to_string(x_min), ") must not exceed x_max (",
                             std::to_string(x_max), ")");
  return call<Clip>(detail::in(x), x_min, x_max);
}

}  // namespace F
}  // namespace dezero
