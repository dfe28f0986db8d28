// dezero/functions/shape.cpp - reshape, transpose, expand_dims, flatten, get_item
// (DeZero functions.py; steps 38, 47), cast, concat and pad (NumPy's concatenate and pad,
// which the ONNX importer and exporter translate to and from Concat and Pad).
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "dezero/functions/shape.hpp"

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {
namespace {

class Reshape : public Function {
 public:
  std::string name() const override { return "Reshape"; }
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
  std::string name() const override { return "Transpose"; }
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
  std::string name() const override { return "GetItem"; }
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
  std::string name() const override { return "GetItemGrad"; }
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

// The inputs joined along `axis`; the gradient of each is its slice of gy.
class Concat : public Function {
 public:
  explicit Concat(int axis) : axis_(axis) {}
  TensorList forward(const TensorList& xs) override {
    std::vector<Tensor> v(xs.begin(), xs.end());
    return {dezero::concatenate(v, axis_)};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const int ax = detail::normalize_axis("concat", axis_, gy.ndim());
    VariableList gxs;
    std::int64_t off = 0;
    for (const Variable& x : inputs()) {
      const std::int64_t n = x.shape()[static_cast<std::size_t>(ax)];
      if (needs_input_grad(gxs.size())) {
        Indices ix(static_cast<std::size_t>(ax), Index(Slice()));
        ix.emplace_back(Slice(off, off + n));
        gxs.push_back(F::get_item(gy, ix));
      } else {
        gxs.push_back(Variable());
      }
      off += n;
    }
    return gxs;
  }
  std::string name() const override { return "Concat"; }
  FunctionAttrs attributes() const override { return {{"axis", std::int64_t{axis_}}}; }

 private:
  int axis_;
};

using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;

// x padded (or cropped, for negative counts) with a constant; the positive pads are written by
// scattering x into the result, so the same code serves every device and dtype. F::pad has
// checked the pairs.
Tensor pad_tensor(const Tensor& x, const Pads& pads, double value) {
  Indices crop, place;
  bool any_crop = false;
  Shape out = x.shape();
  for (std::size_t i = 0; i < pads.size(); ++i) {
    const std::int64_t n = x.shape()[i];
    const auto [b, e] = pads[i];
    const std::int64_t start = b < 0 ? -b : 0;
    const std::int64_t stop = e < 0 ? n + e : n;
    any_crop = any_crop || b < 0 || e < 0;
    crop.emplace_back(Slice(start, stop));
    const std::int64_t before = b > 0 ? b : 0;
    const std::int64_t inner = stop - start;
    place.emplace_back(Slice(before, before + inner));
    out[i] = before + inner + (e > 0 ? e : 0);
  }
  const Tensor xc = any_crop ? dezero::get_item(x, crop) : x;
  if (out == xc.shape()) return any_crop ? xc : x.copy();
  Tensor y = dezero::scatter_add(xc, out, place);
  if (value != 0.0) {
    const Tensor inside = dezero::scatter_add(ones_like(xc), out, place);
    y = dezero::where(inside, y, full(out, value, y.dtype(), y.device()));
  }
  return y;
}

Pads negated(const Pads& pads) {
  Pads n(pads.size());
  for (std::size_t i = 0; i < pads.size(); ++i) n[i] = {-pads[i].first, -pads[i].second};
  return n;
}

// x padded with a constant; the gradient is gy cropped back: pad(gy, -pads, 0).
class Pad : public Function {
 public:
  Pad(Pads pads, double value) : pads_(std::move(pads)), value_(value) {}
  TensorList forward(const TensorList& xs) override { return {pad_tensor(xs[0], pads_, value_)}; }
  VariableList backward(const VariableList& gys) override { return {F::pad(gys[0], negated(pads_), 0.0)}; }
  std::string name() const override { return "Pad"; }
  FunctionAttrs attributes() const override {
    std::vector<std::int64_t> p;  // ONNX's order: every axis's before, then every axis's after
    for (const auto& be : pads_) p.push_back(be.first);
    for (const auto& be : pads_) p.push_back(be.second);
    return {{"pads", p}, {"value", value_}};
  }

 private:
  Pads pads_;
  double value_;
};

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
  if (x.ndim() == 0) detail::fail<ShapeError>("flatten", "expected an input with a batch axis, got shape ()");
  return reshape(x, Shape{x.shape()[0], x.shape()[0] ? x.size() / x.shape()[0] : 0});
}

Variable get_item(const Variable& x, const Indices& indices) {
  return call<GetItem>(detail::in(x), indices);
}

Variable concat(const VariableList& xs, int axis) {
  if (xs.empty()) detail::fail<ValueError>("concat", "no inputs to join; hint: give at least one Variable");
  const Shape& s0 = xs[0].shape();
  const int ax = detail::normalize_axis("concat", axis, xs[0].ndim());
  for (std::size_t k = 1; k < xs.size(); ++k) {
    const Shape& sk = xs[k].shape();
    bool same = sk.size() == s0.size();
    for (std::size_t i = 0; same && i < s0.size(); ++i) same = static_cast<int>(i) == ax || sk[i] == s0[i];
    if (!same)
      detail::fail<ShapeError>("concat", "input ", std::to_string(k), " ", xs[k].data(), " does not match input 0 ",
                               xs[0].data(), " outside axis ", std::to_string(ax),
                               "; hint: the inputs need one rank and equal extents except along axis");
  }
  return call<Concat>(xs, axis);
}

Variable pad(const Variable& x, const Pads& pads, double value) {
  if (static_cast<int>(pads.size()) != x.ndim())
    detail::fail<ShapeError>("pad", std::to_string(pads.size()), " (before, after) pairs for x ", x.data(),
                             "; hint: give one pair per axis");
  for (std::size_t i = 0; i < pads.size(); ++i) {
    const std::int64_t n = x.shape()[i];
    const auto [b, e] = pads[i];
    if ((b < 0 ? -b : 0) > (e < 0 ? n + e : n))
      detail::fail<ShapeError>("pad", "the pads (", std::to_string(b), ", ", std::to_string(e), ") of axis ",
                               std::to_string(i), " crop more than its ", std::to_string(n), " elements (x ",
                               x.data(), "); hint: a negative count crops, at most the axis in all");
  }
  return call<Pad>(detail::in(x), pads, value);
}

}  // namespace F
}  // namespace dezero
