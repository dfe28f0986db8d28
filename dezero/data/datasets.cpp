// dezero/data/datasets.cpp - Dataset (get / get_batch / load-time transforms) and the toy datasets
// Spiral and SinCurve (DeZero's datasets.py). MNIST and the IDX reader are in mnist.cpp.
#include "dezero/datasets.hpp"
#include "dezero/tensor/checks.hpp"

#include <cmath>
#include <string>

namespace dezero::datasets {

// --- Dataset -----------------------------------------------------------------------------
Dataset::Dataset(bool train, Transform transform, Transform target_transform)
    : train_(train), transform_(std::move(transform)), target_transform_(std::move(target_transform)) {}

Dataset::Dataset(Tensor data, Tensor label, Transform transform, Transform target_transform)
    : train_(true), data_(std::move(data)), label_(std::move(label)), transform_(std::move(transform)),
      target_transform_(std::move(target_transform)) {
  if (!data_.defined()) detail::fail<ValueError>("Dataset", "data is undefined");
  if (data_.ndim() == 0) detail::fail<ShapeError>("Dataset", "data must have a leading sample axis, got shape ()");
  if (label_.defined() && (label_.ndim() == 0 || label_.len() != data_.len()))
    detail::fail<ShapeError>("Dataset", "data ", data_.shape(), " and label ", label_.shape(),
                             " must have the same length");
  if (label_.defined() && label_.device() != data_.device())
    detail::fail<DeviceError>("Dataset", "data is on ", data_.device(), " but label is on ", label_.device());
  apply_batchable_transforms();
}

void Dataset::apply_batchable_transforms() {
  if (data_.defined() && !data_transformed_ && transform_.batchable()) {
    data_ = transform_.apply_batch(data_);
    data_transformed_ = true;
  }
  if (label_.defined() && !label_transformed_ && target_transform_.batchable()) {
    label_ = target_transform_.apply_batch(label_);
    label_transformed_ = true;
  }
}

std::int64_t Dataset::size() const { return data_.defined() ? data_.len() : 0; }

std::int64_t Dataset::checked_index(std::int64_t i) const {
  std::int64_t n = size();
  std::int64_t j = i < 0 ? i + n : i;
  if (j < 0 || j >= n)
    detail::fail<IndexError>("Dataset", "index ", i, " is out of range for a dataset of ", n, " samples");
  return j;
}

Batch Dataset::get(std::int64_t index) const {
  std::int64_t i = checked_index(index);
  Tensor x = data_[i];
  if (!data_transformed_) x = transform_(x);
  Tensor t;
  if (label_.defined()) {
    t = label_[i];
    if (!label_transformed_) t = target_transform_(t);
  }
  return {x, t};
}

namespace {
Tensor index_tensor(const std::vector<std::int64_t>& indices, Device device) {
  return array(indices, Shape{static_cast<std::int64_t>(indices.size())}, int64, device);
}
}  // namespace

Tensor Dataset::data_batch(const std::vector<std::int64_t>& indices) const {
  if (data_transformed_ || transform_.batchable()) {
    Tensor xs = take(data_, index_tensor(indices, data_.device()));
    return data_transformed_ ? xs : transform_.apply_batch(xs);
  }
  std::vector<Tensor> xs;
  xs.reserve(indices.size());
  for (auto i : indices) xs.push_back(transform_(data_[i]));
  return stack(xs, 0);
}

Tensor Dataset::label_batch(const std::vector<std::int64_t>& indices) const {
  if (!label_.defined()) return Tensor();
  if (label_transformed_ || target_transform_.batchable()) {
    Tensor ts = take(label_, index_tensor(indices, label_.device()));
    return label_transformed_ ? ts : target_transform_.apply_batch(ts);
  }
  std::vector<Tensor> ts;
  ts.reserve(indices.size());
  for (auto i : indices) ts.push_back(target_transform_(label_[i]));
  return stack(ts, 0);
}

Dataset Dataset::subset(const std::vector<std::int64_t>& indices) const {
  if (indices.empty())
    detail::fail<ValueError>("Dataset::subset", "no indices given; hint: a subset holds at least one sample");
  std::vector<std::int64_t> idx(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) idx[k] = checked_index(indices[k]);
  if (!data_.defined()) {  // samples computed in get(): computed once, transforms applied
    Batch b = get_batch(idx);
    Dataset out(b.first, b.second);
    out.train_ = train_;
    return out;
  }
  Dataset out(train_, transform_, target_transform_);
  out.data_ = take(data_, index_tensor(idx, data_.device()));
  if (label_.defined()) out.label_ = take(label_, index_tensor(idx, label_.device()));
  out.data_transformed_ = data_transformed_;
  out.label_transformed_ = label_transformed_;
  return out;
}

Batch Dataset::get_batch(const std::vector<std::int64_t>& indices) const {
  if (indices.empty()) detail::fail<ValueError>("Dataset::get_batch", "no indices given");
  std::vector<std::int64_t> idx(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) idx[k] = checked_index(indices[k]);
  if (data_.defined()) return {data_batch(idx), label_batch(idx)};
  // A subclass that computes samples in get(): stack them.
  std::vector<Tensor> xs, ts;
  for (auto i : idx) {
    Batch b = get(i);
    xs.push_back(b.first);
    if (b.second.defined()) ts.push_back(b.second);
  }
  if (!ts.empty() && ts.size() != xs.size())
    detail::fail<ValueError>("Dataset::get_batch", "some samples have a label and some do not");
  return {stack(xs, 0), ts.empty() ? Tensor() : stack(ts, 0)};
}

Device Dataset::device() const { return data_.defined() ? data_.device() : Device::cpu(); }

void Dataset::to(Device device) {
  if (data_.defined()) data_ = data_.to(device);
  if (label_.defined()) label_ = label_.to(device);
}

// --- Spiral (steps 48-50) ----------------------------------------------------------------
std::pair<Tensor, Tensor> get_spiral(bool train) {
  random::seed(train ? 1984 : 2020);
  const int num_data = 100, num_class = 3, input_dim = 2;
  const int data_size = num_class * num_data;
  std::vector<float> x(static_cast<std::size_t>(data_size * input_dim));
  std::vector<std::int64_t> t(static_cast<std::size_t>(data_size));
  for (int j = 0; j < num_class; ++j) {
    for (int i = 0; i < num_data; ++i) {
      double rate = static_cast<double>(i) / num_data;
      double radius = 1.0 * rate;
      double theta = j * 4.0 + 4.0 * rate + random::gauss() * 0.2;
      std::size_t ix = static_cast<std::size_t>(num_data * j + i);
      x[ix * 2] = static_cast<float>(radius * std::sin(theta));
      x[ix * 2 + 1] = static_cast<float>(radius * std::cos(theta));
      t[ix] = j;
    }
  }
  Tensor indices = random::permutation(data_size);
  return {take(array(x, Shape{data_size, input_dim}, float32), indices), take(array(t, Shape{data_size}, int64), indices)};
}

Spiral::Spiral(bool train, Transform transform, Transform target_transform)
    : Dataset(train, std::move(transform), std::move(target_transform)) {
  auto [x, t] = get_spiral(train);
  data_ = x;
  label_ = t;
  apply_batchable_transforms();
}

// --- SinCurve (step 60) ------------------------------------------------------------------
SinCurve::SinCurve(bool train, Transform transform, Transform target_transform)
    : Dataset(train, std::move(transform), std::move(target_transform)) {
  const std::int64_t num_data = 1000;
  const double pi = std::acos(-1.0);  // np.pi (M_PI is POSIX, not standard C++)
  Tensor x = linspace(0, 2 * pi, num_data, float64);
  Tensor noise = random::uniform(-0.05, 0.05, Shape{num_data}, float64);
  Tensor y = train ? sin(x) + noise : cos(x);
  data_ = y[Slice(std::nullopt, -1)].reshape(Shape{num_data - 1, 1});
  label_ = y[Slice(1, std::nullopt)].reshape(Shape{num_data - 1, 1});
  apply_batchable_transforms();
}

}  // namespace dezero::datasets
