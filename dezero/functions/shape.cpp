// dezero/functions/shape.cpp - reshape, transpose, expand_dims, flatten, get_item
// (DeZero functions.py; steps 38, 47).
#include <numeric>

#include "dezero/functions/shape.hpp"

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {
namespace {

class Reshape : public Function {
 public:
  explicit Reshape(Shape shape) : shape_(std::move(shape)) {}
  TensorList forward(const TensorList& xs) override { return {xs[0].reshape(shape_)}; }
  VariableList backward(const VariableList& gys) override { return {F::reshape(gys[0], input(0).shape())}; }

 private:
  Shape shape_;
};

class Transpose : public Function {
 public:
  explicit Transpose(std::vector<int> axes) : axes_(std::move(axes)) {}
  TensorList forward(const TensorList& xs) override { return {dezero::transpose(xs[0], axes_)}; }
  VariableList backward(const VariableList& gys) override {
    if (axes_.empty()) return {F::transpose(gys[0])};
    int n = static_cast<int>(axes_.size());
    std::vector<int> inv(n);
    for (int i = 0; i < n; ++i) inv[((axes_[i] % n) + n) % n] = i;  // argsort of the normalised axes
    return {F::transpose(gys[0], inv)};
  }

 private:
  std::vector<int> axes_;
};

class GetItemGrad;

class GetItem : public Function {
 public:
  explicit GetItem(Indices ix) : ix_(std::move(ix)) {}
  TensorList forward(const TensorList& xs) override { return {dezero::get_item(xs[0], ix_)}; }
  VariableList backward(const VariableList& gys) override;

 private:
  Indices ix_;
};

// The gradient of get_item: scatter-add into zeros of the input shape (np.add.at).
class GetItemGrad : public Function {
 public:
  GetItemGrad(Indices ix, Shape in_shape) : ix_(std::move(ix)), in_shape_(std::move(in_shape)) {}
  TensorList forward(const TensorList& xs) override { return {dezero::scatter_add(xs[0], in_shape_, ix_)}; }
  VariableList backward(const VariableList& ggxs) override { return {F::get_item(ggxs[0], ix_)}; }

 private:
  Indices ix_;
  Shape in_shape_;
};

VariableList GetItem::backward(const VariableList& gys) {
  return {call<GetItemGrad>(detail::in(gys[0]), ix_, input(0).shape())};
}

}  // namespace

namespace F {

Variable reshape(const Variable& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return call<Reshape>(detail::in(x), shape);
}

Variable transpose(const Variable& x, const std::vector<int>& axes) {
  return call<Transpose>(detail::in(x), axes);
}

Variable expand_dims(const Variable& x, int axis) {
  Shape s = x.shape();
  int a = detail::normalize_axis("expand_dims", axis, x.ndim() + 1);
  s.insert(s.begin() + a, 1);
  return reshape(x, s);
}

Variable flatten(const Variable& x) {
  if (x.ndim() == 0) throw ShapeError("flatten: expected an input with a batch axis, got shape ()");
  return reshape(x, Shape{x.shape()[0], x.shape()[0] ? x.size() / x.shape()[0] : 0});
}

Variable get_item(const Variable& x, const Indices& indices) {
  return call<GetItem>(detail::in(x), indices);
}

}  // namespace F
}  // namespace dezero
