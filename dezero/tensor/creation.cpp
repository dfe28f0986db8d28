// dezero/tensor/creation.cpp - tensor.hpp's creation section: array, from_blob,
// zeros / ones / full (and *_like), arange, linspace, eye.
//
// Every tensor made from values is built on the host in the source dtype, cast
// there if another dtype was asked for, then moved to its device with one copy
// (Tensor::to). Filled tensors are allocated on their device and filled there
// (Tensor::fill_). The dtype defaults follow NumPy: floating values give float64,
// integers int64, arange int64 unless an argument is fractional. No backend call
// here: it all goes through the Tensor members of tensor.cpp.
#include "dezero/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "dezero/tensor/checks.hpp"

namespace dezero {

// --- array / from_blob: values from host memory ----------------------------------------
template <class T>
Tensor array(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype, Device device) {
  std::int64_t n = shape.checked_numel("array");
  if (static_cast<std::int64_t>(values.size()) != n)
    detail::fail<ShapeError>("array", std::to_string(values.size()), " values do not fill shape ", shape.str(), " (",
                             std::to_string(n), " elements)");
  return from_blob(values.data(), shape, dtype_of<T>(), dtype, device);
}
template Tensor array<float>(const std::vector<float>&, const Shape&, std::optional<DType>, Device);
template Tensor array<double>(const std::vector<double>&, const Shape&, std::optional<DType>, Device);
template Tensor array<std::int32_t>(const std::vector<std::int32_t>&, const Shape&, std::optional<DType>, Device);
template Tensor array<std::int64_t>(const std::vector<std::int64_t>&, const Shape&, std::optional<DType>, Device);
template Tensor array<bfloat16_t>(const std::vector<bfloat16_t>&, const Shape&, std::optional<DType>, Device);
template Tensor array<float16_t>(const std::vector<float16_t>&, const Shape&, std::optional<DType>, Device);

Tensor from_blob(const void* data, const Shape& shape, DType src_dtype, std::optional<DType> dtype, Device device) {
  Tensor h = Tensor::empty(shape, src_dtype, Device::cpu(), "from_blob");
  if (h.nbytes()) std::memcpy(h.raw_data(), data, h.nbytes());
  if (dtype && *dtype != src_dtype) h = h.astype(*dtype);
  return h.to(device);
}

Tensor array(double value, std::optional<DType> dtype, Device device) {
  return array(std::vector<double>{value}, Shape{}, dtype, device);
}
Tensor array(std::int64_t value, std::optional<DType> dtype, Device device) {
  return array(std::vector<std::int64_t>{value}, Shape{}, dtype, device);
}
Tensor array(int value, std::optional<DType> dtype, Device device) {
  return array(static_cast<std::int64_t>(value), dtype, device);
}
namespace {
template <class T, class Row>
Tensor array2d(std::initializer_list<Row> rows, std::optional<DType> dtype, Device device) {
  std::vector<T> v;
  std::int64_t cols = rows.size() ? static_cast<std::int64_t>(rows.begin()->size()) : 0;
  for (auto& r : rows) {
    if (static_cast<std::int64_t>(r.size()) != cols)
      detail::fail<ShapeError>("array", "rows of a nested list must have the same length (", std::to_string(cols),
                               " vs ", std::to_string(r.size()), ")");
    v.insert(v.end(), r.begin(), r.end());
  }
  return array(v, Shape{static_cast<std::int64_t>(rows.size()), cols}, dtype, device);
}
}  // namespace
Tensor array(std::initializer_list<std::initializer_list<double>> values, std::optional<DType> dtype, Device device) {
  return array2d<double>(values, dtype, device);
}
Tensor array(std::initializer_list<std::initializer_list<int>> values, std::optional<DType> dtype, Device device) {
  return array2d<std::int64_t>(values, dtype, device);
}
Tensor array(std::initializer_list<std::initializer_list<std::initializer_list<double>>> values,
             std::optional<DType> dtype, Device device) {
  std::vector<double> v;
  std::int64_t d1 = values.size() ? static_cast<std::int64_t>(values.begin()->size()) : 0;
  std::int64_t d2 = (d1 > 0) ? static_cast<std::int64_t>(values.begin()->begin()->size()) : 0;
  for (auto& a : values) {
    if (static_cast<std::int64_t>(a.size()) != d1) detail::fail<ShapeError>("array", "ragged nested list");
    for (auto& b : a) {
      if (static_cast<std::int64_t>(b.size()) != d2) detail::fail<ShapeError>("array", "ragged nested list");
      v.insert(v.end(), b.begin(), b.end());
    }
  }
  return array(v, Shape{static_cast<std::int64_t>(values.size()), d1, d2}, dtype, device);
}

// --- filled: full, zeros, ones and the *_like ------------------------------------------
namespace {
Tensor filled(const char* op, const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, device, op);
  t.fill_(value);
  return t;
}
}  // namespace
Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  return filled("full", shape, value, dtype, device);
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return filled("zeros", shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return filled("ones", shape, 1.0, dtype, device); }
Tensor zeros_like(const Tensor& t) { detail::check_defined("zeros_like", t); return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { detail::check_defined("ones_like", t); return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double v) { detail::check_defined("full_like", t); return full(t.shape(), v, t.dtype(), t.device()); }
Tensor empty_like(const Tensor& t) { detail::check_defined("empty_like", t); return Tensor::empty(t.shape(), t.dtype(), t.device()); }

// --- ranges: arange, linspace, eye -----------------------------------------------------
Tensor arange(double stop, std::optional<DType> dtype, Device device) { return arange(0.0, stop, 1.0, dtype, device); }
Tensor arange(double start, double stop, double step, std::optional<DType> dtype, Device device) {
  if (step == 0) detail::fail<ValueError>("arange", "step must not be zero");
  auto integral = [](double v) { return std::floor(v) == v; };
  DType dt = dtype ? *dtype : ((integral(start) && integral(stop) && integral(step)) ? int64 : float64);
  std::int64_t n = static_cast<std::int64_t>(std::ceil((stop - start) / step));
  if (n < 0) n = 0;
  std::vector<double> v(n);
  for (std::int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
  return array(v, Shape{n}, dt, device);
}
Tensor linspace(double start, double stop, std::int64_t num, DType dtype, Device device) {
  if (num < 0) detail::fail<ValueError>("linspace", "number of samples, ", std::to_string(num),
                                        ", must be non-negative");
  std::vector<double> v(num);
  double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
  for (std::int64_t i = 0; i < num; ++i) v[i] = start + static_cast<double>(i) * step;
  if (num > 1) v[num - 1] = stop;
  return array(v, Shape{num}, dtype, device);
}
Tensor eye(std::int64_t n, std::optional<std::int64_t> m, DType dtype, Device device) {
  std::int64_t cols = m ? *m : n;
  std::vector<double> v(static_cast<std::size_t>(n * cols), 0.0);
  for (std::int64_t i = 0; i < std::min(n, cols); ++i) v[i * cols + i] = 1.0;
  return array(v, Shape{n, cols}, dtype, device);
}

}  // namespace dezero
