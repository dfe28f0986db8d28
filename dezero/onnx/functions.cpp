// dezero/onnx/functions.cpp - the differentiable functions ONNX ops need and dezero::F lacks
// (functions.hpp): forward on Tensors, backward on Variables made of these same functions and
// dezero::F, so that the gradients differentiate again.
#include "dezero/onnx/functions.hpp"

#include <string>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::onnx::detail {

namespace {

using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;

// gy summed down to `shape` when the operand was broadcast.
Variable unbroadcast(const Variable& gy, const Shape& shape) {
  return gy.shape() == shape ? gy : F::sum_to(gy, shape);
}

// A 0/1 mask in `dtype` as a constant of the graph.
Variable constant_mask(const Tensor& mask, DType dtype) {
  return Variable(mask.dtype() == dtype ? mask : mask.astype(dtype));
}

// --- Concat -------------------------------------------------------------------------------------
class Concat : public Function {
 public:
  explicit Concat(int axis) : axis_(axis) {}
  TensorList forward(const TensorList& xs) override {
    std::vector<Tensor> v(xs.begin(), xs.end());
    return {dezero::concatenate(v, axis_)};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const int ax = dezero::detail::normalize_axis("Concat", axis_, gy.ndim());
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

// --- Pad ----------------------------------------------------------------------------------------
// x padded (or cropped, for negative counts) with a constant; the positive pads are written by
// scattering x into the result, so the same code serves every device and dtype.
Tensor pad_tensor(const Tensor& x, const Pads& pads, double value) {
  if (static_cast<int>(pads.size()) != x.ndim())
    throw ShapeError("Pad: " + std::to_string(pads.size()) + " (before, after) pairs for an input of shape " +
                     x.shape().str() + "; hint: give one pair per axis");
  Indices crop, place;
  bool any_crop = false;
  Shape out = x.shape();
  for (std::size_t i = 0; i < pads.size(); ++i) {
    const std::int64_t n = x.shape()[i];
    const auto [b, e] = pads[i];
    const std::int64_t start = b < 0 ? -b : 0;
    const std::int64_t stop = e < 0 ? n + e : n;
    if (start > stop)
      throw ShapeError("Pad: the pads (" + std::to_string(b) + ", " + std::to_string(e) + ") of axis " +
                       std::to_string(i) + " crop more than its " + std::to_string(n) + " elements (input " +
                       x.shape().str() + ")");
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

class Pad : public Function {
 public:
  Pad(Pads pads, double value) : pads_(std::move(pads)), value_(value) {}
  TensorList forward(const TensorList& xs) override { return {pad_tensor(xs[0], pads_, value_)}; }
  VariableList backward(const VariableList& gys) override { return {pad(gys[0], negated(pads_), 0.0)}; }
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

// --- Maximum / Minimum ---------------------------------------------------------------------------
// The gradient goes where the chosen operand came from: a where a >= b (max) or a <= b (min).
template <bool kMax>
class Extremum : public Function {
 public:
  TensorList forward(const TensorList& xs) override {
    return {kMax ? dezero::maximum(xs[0], xs[1]) : dezero::minimum(xs[0], xs[1])};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const Tensor& a = input(0).data();
    const Tensor& b = input(1).data();
    const Tensor first = kMax ? dezero::greater_equal(a, b) : dezero::less_equal(a, b);
    Variable ga, gb;
    if (needs_input_grad(0) && is_floating(a.dtype()))
      ga = unbroadcast(gy * constant_mask(first, gy.dtype()), a.shape());
    if (needs_input_grad(1) && is_floating(b.dtype()))
      gb = unbroadcast(gy * constant_mask(1.0 - first, gy.dtype()), b.shape());
    return {ga, gb};
  }
  std::string name() const override { return kMax ? "Maximum" : "Minimum"; }
};

// --- Pow ----------------------------------------------------------------------------------------
class PowTensor : public Function {
 public:
  TensorList forward(const TensorList& xs) override {
    Tensor y = dezero::pow(xs[0], xs[1]);
    return {y.dtype() == xs[0].dtype() ? y : y.astype(xs[0].dtype())};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const Variable& x = input(0);
    const Variable& y = input(1);
    Variable gx, gyy;
    if (!is_floating(x.dtype())) return {gx, gyy};
    if (needs_input_grad(0)) {
      Variable yx = cast(y, x.dtype());
      gx = unbroadcast(gy * yx * pow(x, yx - 1.0), x.shape());
    }
    if (needs_input_grad(1) && is_floating(y.dtype()))
      gyy = unbroadcast(cast(gy * pow(x, y) * F::log(x), y.dtype()), y.shape());
    return {gx, gyy};
  }
  std::string name() const override { return "PowTensor"; }
};

// --- Where --------------------------------------------------------------------------------------
class Where : public Function {
 public:
  explicit Where(Tensor cond) : cond_(std::move(cond)) {}
  TensorList forward(const TensorList& xs) override {
    if (cond_.device() != xs[0].device()) cond_ = cond_.to(xs[0].device());
    return {dezero::where(cond_, xs[0], xs[1])};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    const Tensor c = dezero::not_equal(cond_, zeros_like(cond_)).astype(gy.dtype());
    Variable ga, gb;
    if (needs_input_grad(0) && is_floating(input(0).dtype()))
      ga = unbroadcast(cast(gy * Variable(c), input(0).dtype()), input(0).shape());
    if (needs_input_grad(1) && is_floating(input(1).dtype()))
      gb = unbroadcast(cast(gy * Variable(1.0 - c), input(1).dtype()), input(1).shape());
    return {ga, gb};
  }
  std::string name() const override { return "Where"; }
  FunctionAttrs attributes() const override { return {{"condition", cond_}}; }

 private:
  Tensor cond_;
};

// --- Sqrt, Abs ----------------------------------------------------------------------------
class Sqrt : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::sqrt(xs[0])}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] / (2.0 * sqrt(input(0)))}; }
  std::string name() const override { return "Sqrt"; }
};

class Abs : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::abs(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    return {gys[0] * constant_mask(dezero::sign(input(0).data()), gys[0].dtype())};
  }
  std::string name() const override { return "Abs"; }
};

}  // namespace

// --- the functions ------------------------------------------------------------------------------
Variable concat(const VariableList& xs, int axis) {
  if (xs.empty()) throw ValueError("Concat: no inputs to join; hint: give at least one tensor");
  return call<Concat>(xs, axis);
}

Variable pad(const Variable& x, const Pads& pads_per_axis, double value) {
  return call<Pad>(dezero::detail::in(x), pads_per_axis, value);
}

Variable maximum(const Variable& a, const Variable& b) { return call<Extremum<true>>(dezero::detail::in(a, b)); }
Variable minimum(const Variable& a, const Variable& b) { return call<Extremum<false>>(dezero::detail::in(a, b)); }

Variable pow(const Variable& x, const Variable& y) { return call<PowTensor>(dezero::detail::in(x, y)); }

Variable where(const Tensor& cond, const Variable& a, const Variable& b) {
  return call<Where>(dezero::detail::in(a, b), cond);
}

Variable sqrt(const Variable& x) { return call<Sqrt>(dezero::detail::in(x)); }
Variable abs(const Variable& x) { return call<Abs>(dezero::detail::in(x)); }

Variable cast(const Variable& x, DType dtype) { return F::cast(x, dtype); }

}  // namespace dezero::onnx::detail
