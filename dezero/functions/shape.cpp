// dezero/functions/shape.cpp - reshape, transpose, expand_dims, flatten, get_item
// (DeZero functions.py; steps 38, 47).
#include <limits>
#include <numeric>
#include <string>

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
  // "shape": as given (one extent may be -1).
  FunctionAttrs attributes() const override { return {{"shape", std::vector<std::int64_t>(shape_)}}; }

 private:
  Shape shape_;
};

// y = x as another dtype; gy cast back for floating types (an integer has no gradient).
class Cast : public Function {
 public:
  explicit Cast(DType dtype) : dtype_(dtype) {}
  TensorList forward(const TensorList& xs) override { return {xs[0].astype(dtype_)}; }
  VariableList backward(const VariableList& gys) override {
    const DType from = input(0).dtype();
    if (!is_floating(from) || !is_floating(dtype_)) return {Variable()};
    return {F::cast(gys[0], from)};
  }
  std::string name() const override { return "Cast"; }
  // "to": the dtype's name.
  FunctionAttrs attributes() const override { return {{"to", std::string(dtype_name(dtype_))}}; }

 private:
  DType dtype_;
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
  // "axes": the permutation; empty for the axes reversed.
  FunctionAttrs attributes() const override {
    return {{"axes", std::vector<std::int64_t>(axes_.begin(), axes_.end())}};
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
  // "index": one letter per entry (i integer, s slice, e ellipsis, n newaxis, a array);
  // "integers" the integers; "starts", "stops", "steps" the slices, an omitted bound as
  // INT64_MIN; "array_<k>" the k-th index array.
  FunctionAttrs attributes() const override {
    constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
    std::string kinds;
    std::vector<std::int64_t> integers, starts, stops, steps;
    FunctionAttrs arrays;
    for (const Index& e : ix_) {
      switch (e.kind()) {
        case Index::Kind::Integer: kinds += 'i'; integers.push_back(e.integer()); break;
        case Index::Kind::Slice:
          kinds += 's';
          starts.push_back(e.slice().start.value_or(kNone));
          stops.push_back(e.slice().stop.value_or(kNone));
          steps.push_back(e.slice().step);
          break;
        case Index::Kind::EllipsisMark: kinds += 'e'; break;
        case Index::Kind::NewAxis: kinds += 'n'; break;
        case Index::Kind::Array:
          kinds += 'a';
          arrays.emplace_back("array_" + std::to_string(arrays.size()), e.array());
          break;
      }
    }
    FunctionAttrs a{{"index", kinds}, {"integers", integers}, {"starts", starts}, {"stops", stops}, {"steps", steps}};
    a.insert(a.end(), arrays.begin(), arrays.end());
    return a;
  }

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

Variable cast(const Variable& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  return call<Cast>(detail::in(x), dtype);
}

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
