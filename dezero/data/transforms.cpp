// dezero/data/transforms.cpp - the built-in transforms (DeZero's transforms.py), each usable on one
// sample and, in one tensor operation, on a stacked batch.
#include "dezero/transforms.hpp"

#include <algorithm>
#include <string>

namespace dezero::transforms {

// --- Transform -------------------------------------------------------------------------
Tensor Transform::Impl::apply_batch(const Tensor& xs) const {
  if (xs.ndim() == 0) throw ShapeError("Transform::apply_batch: a batch needs a leading axis, got a 0-d tensor");
  std::int64_t n = xs.len();
  if (n == 0) return xs;
  std::vector<Tensor> ys;
  ys.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ys.push_back(apply(xs[i]));
  return stack(ys, 0);
}

Tensor Transform::apply_batch(const Tensor& xs) const { return impl_ ? impl_->apply_batch(xs) : xs; }

// --- Compose -----------------------------------------------------------------------------
namespace {
struct ComposeImpl : Transform::Impl {
  std::vector<Transform> ts;
  Tensor apply(const Tensor& x) const override {
    Tensor y = x;
    for (auto& t : ts) y = t(y);
    return y;
  }
  bool batchable() const override {
    for (auto& t : ts)
      if (!t.batchable()) return false;
    return true;
  }
  Tensor apply_batch(const Tensor& xs) const override {
    if (!batchable()) return Impl::apply_batch(xs);
    Tensor y = xs;
    for (auto& t : ts) y = t.apply_batch(y);
    return y;
  }
};

std::shared_ptr<const Transform::Impl> make_compose(std::vector<Transform> transforms) {
  std::vector<Transform> kept;
  for (auto& t : transforms)
    if (!t.is_identity()) kept.push_back(std::move(t));
  if (kept.empty()) return nullptr;
  auto impl = std::make_shared<ComposeImpl>();
  impl->ts = std::move(kept);
  return impl;
}
}  // namespace

Compose::Compose(std::vector<Transform> transforms) : Transform(make_compose(std::move(transforms))) {}

// --- Normalize ---------------------------------------------------------------------------
namespace {
struct NormalizeImpl : Transform::Impl {
  bool scalar = true;
  double mean = 0, std = 1;
  std::vector<double> means, stds;

  // (C,) + (1,) * (ndim - 1) leading `lead` ones: DeZero's mean.reshape((len(mean),) + (1,) * (ndim - 1)).
  static Tensor channel_tensor(const std::vector<double>& v, int sample_ndim, int lead, DType dt, Device dev) {
    std::vector<std::int64_t> s(static_cast<std::size_t>(lead + std::max(sample_ndim, 1)), 1);
    s[static_cast<std::size_t>(lead)] = static_cast<std::int64_t>(v.size());
    return array(v, Shape(s), dt, dev);
  }
  static Tensor floating(const Tensor& x) { return is_floating(x.dtype()) ? x : x.astype(float64); }

  Tensor normalize(const Tensor& x0, int sample_ndim, int lead) const {
    Tensor x = floating(x0);
    if (scalar) return (x - mean) / std;
    Tensor m = channel_tensor(means, sample_ndim, lead, x.dtype(), x.device());
    Tensor s = channel_tensor(stds, sample_ndim, lead, x.dtype(), x.device());
    return (x - m) / s;
  }
  Tensor apply(const Tensor& x) const override { return normalize(x, x.ndim(), 0); }
  bool batchable() const override { return true; }
  Tensor apply_batch(const Tensor& xs) const override {
    if (xs.ndim() == 0) throw ShapeError("Normalize: a batch needs a leading axis, got a 0-d tensor");
    // A 0-d sample with a per-channel mean grows an axis: leave that rare case to the loop.
    if (!scalar && xs.ndim() == 1 && (means.size() > 1 || stds.size() > 1)) return Impl::apply_batch(xs);
    return normalize(xs, xs.ndim() - 1, 1);
  }
};
}  // namespace

Normalize::Normalize(double mean, double std) : Transform(nullptr) {
  auto impl = std::make_shared<NormalizeImpl>();
  impl->mean = mean;
  impl->std = std;
  impl_ = impl;
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std) : Transform(nullptr) {
  if (mean.empty() || std.empty()) throw ValueError("Normalize: mean and std must not be empty sequences");
  auto impl = std::make_shared<NormalizeImpl>();
  if (mean.size() == 1 && std.size() == 1) {
    impl->mean = mean[0];
    impl->std = std[0];
  } else {
    impl->scalar = false;
    impl->means = std::move(mean);
    impl->stds = std::move(std);
  }
  impl_ = impl;
}

// --- Flatten -----------------------------------------------------------------------------
namespace {
struct FlattenImpl : Transform::Impl {
  Tensor apply(const Tensor& x) const override { return x.flatten(); }
  bool batchable() const override { return true; }
  Tensor apply_batch(const Tensor& xs) const override {
    if (xs.ndim() == 0) throw ShapeError("Flatten: a batch needs a leading axis, got a 0-d tensor");
    std::int64_t n = xs.shape()[0];
    return xs.reshape(Shape{n, n ? xs.size() / n : Shape(xs.shape().begin() + 1, xs.shape().end()).numel()});
  }
};

struct AsTypeImpl : Transform::Impl {
  DType dtype = float32;
  Tensor apply(const Tensor& x) const override { return x.astype(dtype); }
  bool batchable() const override { return true; }
  Tensor apply_batch(const Tensor& xs) const override { return xs.astype(dtype); }
};
}  // namespace

Flatten::Flatten() : Transform(std::make_shared<FlattenImpl>()) {}

AsType::AsType(DType dtype) : Transform(nullptr) {
  auto impl = std::make_shared<AsTypeImpl>();
  impl->dtype = dtype;
  impl_ = impl;
}

}  // namespace dezero::transforms
