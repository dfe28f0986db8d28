// tensor.cpp - Tensor basics, creation, element-wise math with broadcasting,
// shape operations and matmul. Validation happens here; the arithmetic runs in
// the backend of the operands' device (backend.hpp).
#include "dezero/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>

#include "dezero/tensor/fused.hpp"
#include "dezero/tensor/strided.hpp"

namespace dezero {

using detail::backend_for;
using detail::backend_of;
using detail::BinaryOp;
using detail::describe;
using detail::Strided;
using detail::UnaryOp;

// --- helpers -------------------------------------------------------------------
namespace detail {

Strided make_contiguous(const Shape& shape) {
  if (shape.ndim() > kMaxDims)
    throw ShapeError("tensors have at most " + std::to_string(kMaxDims) + " axes, got shape " + shape.str());
  Strided v;
  v.ndim = shape.ndim();
  std::int64_t acc = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    v.shape[i] = shape[i];
    v.strides[i] = acc;
    acc *= shape[i];
  }
  return v;
}

Strided make_broadcast(const Shape& in, const Shape& out) {
  Strided v = make_contiguous(out);
  int lead = out.ndim() - in.ndim();
  std::int64_t stride = 1;  // in's contiguous stride of axis j, walking from the last axis
  for (int i = out.ndim() - 1; i >= 0; --i) {
    int j = i - lead;
    v.strides[i] = (j < 0 || in[j] == 1) ? 0 : stride;
    if (j >= 0) stride *= in[j];
  }
  return v;
}

void coalesce(Strided* views[], int nviews) {
  Strided& first = *views[0];
  int nd = first.ndim;
  if (nd <= 1) return;
  // Drop axes of extent 1, then merge axis i into i+1 where contiguous in all views.
  int w = 0;
  for (int i = 0; i < nd; ++i) {
    if (first.shape[i] == 1 && nd > 1) continue;
    for (int v = 0; v < nviews; ++v) {
      views[v]->shape[w] = views[v]->shape[i];
      views[v]->strides[w] = views[v]->strides[i];
    }
    ++w;
  }
  if (w == 0) {  // all extents 1
    for (int v = 0; v < nviews; ++v) {
      views[v]->ndim = 1;
      views[v]->shape[0] = 1;
      views[v]->strides[0] = 1;
    }
    return;
  }
  int out = 0;
  for (int i = 1; i < w; ++i) {
    bool merge = true;
    for (int v = 0; v < nviews; ++v)
      if (views[v]->strides[out] != views[v]->strides[i] * views[v]->shape[i]) merge = false;
    if (merge) {
      for (int v = 0; v < nviews; ++v) {
        views[v]->shape[out] *= views[v]->shape[i];
        views[v]->strides[out] = views[v]->strides[i];
      }
    } else {
      ++out;
      for (int v = 0; v < nviews; ++v) {
        views[v]->shape[out] = views[v]->shape[i];
        views[v]->strides[out] = views[v]->strides[i];
      }
    }
  }
  for (int v = 0; v < nviews; ++v) views[v]->ndim = out + 1;
}

void check_defined(const char* op, const Tensor& t) {
  if (!t.defined())
    throw ValueError(std::string(op) + ": the tensor holds no data (an empty Tensor/Variable was passed)");
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  if (a.device() != b.device())
    throw DeviceError(std::string(op) + ": operands are on different devices: " + describe(a) + " on " +
                      a.device().str() + " and " + describe(b) + " on " + b.device().str() +
                      "; hint: move one with to(device) / to_gpu() / to_cpu()");
}

int normalize_axis(const char* op, int axis, int ndim) {
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= std::max(ndim, 0) || (ndim == 0))
    throw IndexError(std::string(op) + ": axis " + std::to_string(axis) + " is out of bounds for an array of dimension " +
                     std::to_string(ndim));
  return a;
}

std::vector<int> normalize_axes(const char* op, const Axes& axes, int ndim) {
  std::vector<int> out;
  if (axes.is_all()) {
    out.resize(ndim);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int a : axes.list()) {
    int n = normalize_axis(op, a, ndim);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw ValueError(std::string(op) + ": duplicate value in axis " + axes.str());
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace detail

// --- Storage -------------------------------------------------------------------
namespace {
std::atomic<std::uint64_t> g_storage_allocations{0};
}
Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = backend_for(device).allocate(nbytes);
  g_storage_allocations.fetch_add(1, std::memory_order_relaxed);
}
std::uint64_t Storage::allocation_count() { return g_storage_allocations.load(std::memory_order_relaxed); }
Storage::~Storage() {
  if (data_) {
    try {
      backend_for(device_).deallocate(data_, nbytes_);
    } catch (...) {  // never throw from a destructor
    }
  }
}

// --- Tensor basics ---------------------------------------------------------------
Tensor::Tensor(std::shared_ptr<Storage> storage, std::int64_t offset, Shape shape, DType dtype)
    : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)), dtype_(dtype) {
  for (auto d : shape_)
    if (d < 0) throw ShapeError("Tensor: negative dimension in shape " + shape_.str());
  size_ = shape_.numel();
  if (shape_.ndim() > detail::kMaxDims)
    throw ShapeError("Tensor: at most " + std::to_string(detail::kMaxDims) + " axes are supported, got " + shape_.str());
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(shape.numel(), 0)) * dtype_size(dtype);
  return Tensor(std::make_shared<Storage>(n, device), 0, shape, dtype);
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

std::int64_t Tensor::len() const {
  detail::check_defined("len", *this);
  if (ndim() == 0) throw ShapeError("len: len() of a 0-d tensor (shape ()); hint: use item<T>()");
  return shape_[0];
}

void* Tensor::raw_data() const {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}

template <class T>
T* Tensor::data() const {
  detail::check_defined("data", *this);
  if (dtype_of<T>() != dtype_)
    throw DtypeError(std::string("data<") + dtype_name(dtype_of<T>()) + ">: the tensor is " + dtype_name(dtype_) +
                     "; hint: use astype() first");
  if (!device().is_cpu())
    throw DeviceError("data<T>: the tensor lives on " + device().str() + "; hint: call to_cpu() to read it on the host");
  return static_cast<T*>(raw_data());
}

template <class T>
T Tensor::item() const {
  detail::check_defined("item", *this);
  if (size_ != 1)
    throw ValueError("item: can only convert a tensor of size 1 to a scalar, got shape " + shape_.str());
  return to_vector<T>()[0];
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  detail::check_defined("to_vector", *this);
  Tensor h = to_cpu();
  if (h.dtype() != dtype_of<T>()) h = h.astype(dtype_of<T>());
  const T* p = static_cast<const T*>(h.raw_data());
  return std::vector<T>(p, p + size_);
}

#define DEZERO_INSTANTIATE_ACCESS(T)          \
  template T* Tensor::data<T>() const;        \
  template T Tensor::item<T>() const;         \
  template std::vector<T> Tensor::to_vector<T>() const;
DEZERO_INSTANTIATE_ACCESS(float)
DEZERO_INSTANTIATE_ACCESS(double)
DEZERO_INSTANTIATE_ACCESS(std::int32_t)
DEZERO_INSTANTIATE_ACCESS(std::int64_t)
#undef DEZERO_INSTANTIATE_ACCESS

Tensor Tensor::astype(DType dtype) const {
  detail::check_defined("astype", *this);
  Tensor y = Tensor::empty(shape_, dtype, device());
  if (size_ > 0) backend_of(*this).cast(dtype_, raw_data(), dtype, y.raw_data(), size_);
  return y;
}

Tensor Tensor::to(Device dev) const {
  detail::check_defined("to", *this);
  if (dev == device()) return *this;
  Tensor y = Tensor::empty(shape_, dtype_, dev);
  if (size_ == 0) return y;
  if (device().is_cpu()) {
    backend_for(dev).copy_from_host(y.raw_data(), raw_data(), nbytes());
  } else if (dev.is_cpu()) {
    backend_of(*this).copy_to_host(y.raw_data(), raw_data(), nbytes());
  } else {  // GPU -> another GPU through the host (peer copies: cuda::copy)
    std::vector<char> tmp(nbytes());
    backend_of(*this).copy_to_host(tmp.data(), raw_data(), nbytes());
    backend_for(dev).copy_from_host(y.raw_data(), tmp.data(), nbytes());
  }
  return y;
}

Tensor Tensor::reshape(const Shape& shape) const {
  detail::check_defined("reshape", *this);
  Shape s = shape;
  int infer = -1;
  std::int64_t known = 1;
  for (int i = 0; i < s.ndim(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw ShapeError("reshape: can only specify one unknown dimension, got " + shape.str());
      infer = i;
    } else if (s[i] < 0) {
      throw ShapeError("reshape: negative dimension in " + shape.str());
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || size_ % known != 0)
      throw ShapeError("reshape: cannot reshape array of size " + std::to_string(size_) + " (shape " + shape_.str() +
                       ") into shape " + shape.str());
    s[infer] = size_ / known;
  }
  if (s.numel() != size_)
    throw ShapeError("reshape: cannot reshape array of size " + std::to_string(size_) + " (shape " + shape_.str() +
                     ") into shape " + shape.str() + "; hint: the number of elements must stay the same");
  return Tensor(storage_, offset_, s, dtype_);
}

Tensor Tensor::copy() const {
  detail::check_defined("copy", *this);
  Tensor y = Tensor::empty(shape_, dtype_, device());
  if (size_ > 0) backend_of(*this).copy(y.raw_data(), raw_data(), nbytes());
  return y;
}

Tensor Tensor::flatten() const { return reshape(Shape{size_}); }

Tensor Tensor::transpose() const {
  std::vector<int> axes(ndim());
  for (int i = 0; i < ndim(); ++i) axes[i] = ndim() - 1 - i;
  return transpose(axes);
}

Tensor Tensor::transpose(const std::vector<int>& axes) const {
  detail::check_defined("transpose", *this);
  if (axes.empty()) return transpose();
  if (static_cast<int>(axes.size()) != ndim())
    throw ValueError("transpose: axes don't match array: " + std::to_string(axes.size()) + " axes for shape " +
                     shape_.str());
  std::vector<int> perm(axes.size());
  std::vector<bool> seen(axes.size(), false);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    int a = detail::normalize_axis("transpose", axes[i], ndim());
    if (seen[a]) throw ValueError("transpose: repeated axis in transpose axes");
    seen[a] = true;
    perm[i] = a;
  }
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity &= (perm[i] == static_cast<int>(i));
  Shape out(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) out[i] = shape_[perm[i]];
  if (identity) return copy();
  Tensor y = Tensor::empty(out, dtype_, device());
  if (size_ == 0) return y;
  Strided src = detail::make_contiguous(out);
  auto st = detail::contiguous_strides(shape_);
  for (std::size_t i = 0; i < perm.size(); ++i) src.strides[i] = st[perm[i]];
  Strided dst = detail::make_contiguous(out);
  Strided* views[] = {&dst, &src};
  detail::coalesce(views, 2);
  backend_of(*this).copy_strided(dtype_, raw_data(), src, y.raw_data(), dst, false);
  return y;
}

Tensor Tensor::sum(const Axes& axes, bool keepdims) const { return dezero::sum(*this, axes, keepdims); }
Tensor Tensor::mean(const Axes& axes, bool keepdims) const { return dezero::mean(*this, axes, keepdims); }
Tensor Tensor::max(const Axes& axes, bool keepdims) const { return dezero::max(*this, axes, keepdims); }
Tensor Tensor::min(const Axes& axes, bool keepdims) const { return dezero::min(*this, axes, keepdims); }
Tensor Tensor::operator[](const Index& index) const { return get_item(*this, Indices{index}); }
Tensor Tensor::operator[](const Indices& indices) const { return get_item(*this, indices); }

void Tensor::fill_(double value) {
  detail::check_defined("fill_", *this);
  if (size_ > 0) backend_of(*this).fill(dtype_, raw_data(), size_, value);
}

// In-place ops write the broadcast result back into this tensor's storage.
namespace {
void inplace(Tensor& self, const Tensor& result, const char* op) {
  if (result.shape() != self.shape())
    throw ShapeError(std::string(op) + ": non-broadcastable output operand with shape " + self.shape().str() +
                     " doesn't match the broadcast shape " + result.shape().str());
  copyto(self, result);
}
}  // namespace
Tensor& Tensor::operator+=(const Tensor& o) { inplace(*this, *this + o, "operator+="); return *this; }
Tensor& Tensor::operator-=(const Tensor& o) { inplace(*this, *this - o, "operator-="); return *this; }
Tensor& Tensor::operator*=(const Tensor& o) { inplace(*this, *this * o, "operator*="); return *this; }
Tensor& Tensor::operator/=(const Tensor& o) { inplace(*this, *this / o, "operator/="); return *this; }
Tensor& Tensor::operator+=(double s) {
  detail::check_defined("operator+=", *this);
  backend_of(*this).unary(UnaryOp::AddScalar, dtype_, raw_data(), raw_data(), size_, s);
  return *this;
}
Tensor& Tensor::operator-=(double s) { return *this += -s; }
Tensor& Tensor::operator*=(double s) {
  detail::check_defined("operator*=", *this);
  backend_of(*this).unary(UnaryOp::MulScalar, dtype_, raw_data(), raw_data(), size_, s);
  return *this;
}
Tensor& Tensor::operator/=(double s) {
  if (is_integer(dtype_)) { inplace(*this, *this / s, "operator/="); return *this; }
  return *this *= (1.0 / s);
}

// --- creation ----------------------------------------------------------------------
template <class T>
Tensor array(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype, Device device) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel())
    throw ShapeError("array: " + std::to_string(values.size()) + " values do not fill shape " + shape.str() + " (" +
                     std::to_string(shape.numel()) + " elements)");
  return from_blob(values.data(), shape, dtype_of<T>(), dtype, device);
}
template Tensor array<float>(const std::vector<float>&, const Shape&, std::optional<DType>, Device);
template Tensor array<double>(const std::vector<double>&, const Shape&, std::optional<DType>, Device);
template Tensor array<std::int32_t>(const std::vector<std::int32_t>&, const Shape&, std::optional<DType>, Device);
template Tensor array<std::int64_t>(const std::vector<std::int64_t>&, const Shape&, std::optional<DType>, Device);

Tensor from_blob(const void* data, const Shape& shape, DType src_dtype, std::optional<DType> dtype, Device device) {
  Tensor h = Tensor::empty(shape, src_dtype, Device::cpu());
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
      throw ShapeError("array: rows of a nested list must have the same length (" + std::to_string(cols) + " vs " +
                       std::to_string(r.size()) + ")");
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
    if (static_cast<std::int64_t>(a.size()) != d1) throw ShapeError("array: ragged nested list");
    for (auto& b : a) {
      if (static_cast<std::int64_t>(b.size()) != d2) throw ShapeError("array: ragged nested list");
      v.insert(v.end(), b.begin(), b.end());
    }
  }
  return array(v, Shape{static_cast<std::int64_t>(values.size()), d1, d2}, dtype, device);
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, device);
  t.fill_(value);
  return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor zeros_like(const Tensor& t) { detail::check_defined("zeros_like", t); return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { detail::check_defined("ones_like", t); return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double v) { detail::check_defined("full_like", t); return full(t.shape(), v, t.dtype(), t.device()); }
Tensor empty_like(const Tensor& t) { detail::check_defined("empty_like", t); return Tensor::empty(t.shape(), t.dtype(), t.device()); }

Tensor arange(double stop, std::optional<DType> dtype, Device device) { return arange(0.0, stop, 1.0, dtype, device); }
Tensor arange(double start, double stop, double step, std::optional<DType> dtype, Device device) {
  if (step == 0) throw ValueError("arange: step must not be zero");
  auto integral = [](double v) { return std::floor(v) == v; };
  DType dt = dtype ? *dtype : ((integral(start) && integral(stop) && integral(step)) ? int64 : float64);
  std::int64_t n = static_cast<std::int64_t>(std::ceil((stop - start) / step));
  if (n < 0) n = 0;
  std::vector<double> v(n);
  for (std::int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
  return array(v, Shape{n}, dt, device);
}
Tensor linspace(double start, double stop, std::int64_t num, DType dtype, Device device) {
  if (num < 0) throw ValueError("linspace: number of samples, " + std::to_string(num) + ", must be non-negative");
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

// --- element-wise ---------------------------------------------------------------------
DType result_type(const Tensor& a, const Tensor& b) {
  DType da = a.dtype(), db = b.dtype();
  if (da == db) return da;
  bool a0 = a.ndim() == 0, b0 = b.ndim() == 0;
  if (a0 != b0) {  // NumPy 1.x value-based casting: a 0-d operand of the same kind does not widen
    DType arr = a0 ? db : da, sc = a0 ? da : db;
    if (is_floating(arr) || is_integer(sc)) return arr;
    return float64;  // float scalar with an int array
  }
  return promote_types(da, db);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int n = std::max(a.ndim(), b.ndim());
  Shape out(n);
  for (int i = 0; i < n; ++i) {
    int ia = i - (n - a.ndim()), ib = i - (n - b.ndim());
    std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(op) + ": operands could not be broadcast together with shapes " + a.str() + " " +
                       b.str() + "; hint: axes are matched from the right and must be equal or 1");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Maximum: return "maximum";
    case BinaryOp::Minimum: return "minimum";
    case BinaryOp::Eq: return "equal";
    case BinaryOp::Ne: return "not_equal";
    case BinaryOp::Gt: return "greater";
    case BinaryOp::Ge: return "greater_equal";
    case BinaryOp::Lt: return "less";
    case BinaryOp::Le: return "less_equal";
    case BinaryOp::SigmoidGrad: return "sigmoid_grad";
    case BinaryOp::ReluGrad: return "relu_grad";
  }
  return "binary";
}

// The broadcast shape of two operands; the error names both shapes and dtypes.
Shape broadcast_operands(const char* op, const Tensor& a, const Tensor& b) {
  try {
    return broadcast_shapes(a.shape(), b.shape(), op);
  } catch (const ShapeError&) {
    throw ShapeError(std::string(op) + ": operands could not be broadcast together: " + describe(a) + " and " +
                     describe(b) + "; hint: axes are matched from the right and must be equal or 1");
  }
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  detail::check_same_device(name, a, b);
  Shape out = broadcast_operands(name, a, b);
  DType dt = result_type(a, b);
  if ((op == BinaryOp::Div) && is_integer(dt)) dt = float64;  // true division, as NumPy
  Tensor ac = a.dtype() == dt ? a : a.astype(dt);
  Tensor bc = b.dtype() == dt ? b : b.astype(dt);
  Tensor y = Tensor::empty(out, dt, a.device());
  if (y.size() == 0) return y;
  Strided so = detail::make_contiguous(out);
  Strided sa = detail::make_broadcast(a.shape(), out);
  Strided sb = detail::make_broadcast(b.shape(), out);
  Strided* views[] = {&so, &sa, &sb};
  detail::coalesce(views, 3);
  backend_of(a).binary(op, dt, ac.raw_data(), sa, bc.raw_data(), sb, y.raw_data(), so);
  return y;
}

bool is_integral_value(double v) { return std::floor(v) == v && std::abs(v) < 9.2e18; }

// x (op) scalar without materialising the scalar; an int tensor with a fractional
// scalar is promoted to float64 (NumPy would too).
Tensor scalar_op(UnaryOp op, const Tensor& x, double s, const char* name) {
  detail::check_defined(name, x);
  Tensor xc = x;
  if (is_integer(x.dtype()) && !is_integral_value(s)) xc = x.astype(float64);
  Tensor y = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
  if (y.size()) backend_of(xc).unary(op, xc.dtype(), xc.raw_data(), y.raw_data(), y.size(), s);
  return y;
}

Tensor unary_op(UnaryOp op, const Tensor& x, const char* name, bool float_only = true) {
  detail::check_defined(name, x);
  Tensor xc = x;
  if (float_only && is_integer(x.dtype())) xc = x.astype(float64);  // np.exp(int array) -> float64
  Tensor y = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
  if (y.size()) backend_of(xc).unary(op, xc.dtype(), xc.raw_data(), y.raw_data(), y.size(), 0.0);
  return y;
}

}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Add, a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Sub, a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Mul, a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Div, a, b); }
Tensor operator+(const Tensor& a, double b) { return scalar_op(UnaryOp::AddScalar, a, b, "add"); }
Tensor operator-(const Tensor& a, double b) { return scalar_op(UnaryOp::AddScalar, a, -b, "sub"); }
Tensor operator*(const Tensor& a, double b) { return scalar_op(UnaryOp::MulScalar, a, b, "mul"); }
Tensor operator/(const Tensor& a, double b) {
  detail::check_defined("div", a);
  if (is_integer(a.dtype())) return a.astype(float64) * (1.0 / b);
  return scalar_op(UnaryOp::DivScalar, a, b, "div");
}
Tensor operator+(double a, const Tensor& b) { return b + a; }
Tensor operator-(double a, const Tensor& b) { return scalar_op(UnaryOp::RSubScalar, b, a, "sub"); }
Tensor operator*(double a, const Tensor& b) { return b * a; }
Tensor operator/(double a, const Tensor& b) {
  detail::check_defined("div", b);
  if (is_integer(b.dtype())) return a / b.astype(float64);
  return scalar_op(UnaryOp::RDivScalar, b, a, "div");
}
Tensor operator-(const Tensor& a) { return unary_op(UnaryOp::Neg, a, "neg", false); }

Tensor exp(const Tensor& x) { return unary_op(UnaryOp::Exp, x, "exp"); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::Log, x, "log"); }
Tensor sin(const Tensor& x) { return unary_op(UnaryOp::Sin, x, "sin"); }
Tensor cos(const Tensor& x) { return unary_op(UnaryOp::Cos, x, "cos"); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::Tanh, x, "tanh"); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::Sqrt, x, "sqrt"); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::Abs, x, "abs", false); }
Tensor sign(const Tensor& x) { return unary_op(UnaryOp::Sign, x, "sign", false); }
Tensor square(const Tensor& x) { return unary_op(UnaryOp::Square, x, "square", false); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::Sigmoid, x, "sigmoid"); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::Relu, x, "relu", false); }
Tensor pow(const Tensor& x, double c) {
  detail::check_defined("pow", x);
  if (c == 2.0) return square(x);
  if (c == 1.0) return x.copy();
  return scalar_op(UnaryOp::PowScalar, is_integer(x.dtype()) && c < 0 ? x.astype(float64) : x, c, "pow");
}
Tensor pow(const Tensor& x, const Tensor& c) { return binary_op(BinaryOp::Pow, x, c); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Minimum, a, b); }
Tensor maximum(const Tensor& a, double b) { return scalar_op(UnaryOp::MaxScalar, a, b, "maximum"); }
Tensor minimum(const Tensor& a, double b) { return scalar_op(UnaryOp::MinScalar, a, b, "minimum"); }
Tensor clip(const Tensor& x, double lo, double hi) {
  if (lo > hi) throw ValueError("clip: x_min (" + std::to_string(lo) + ") is greater than x_max (" + std::to_string(hi) + ")");
  return minimum(maximum(x, lo), hi);
}
Tensor equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Eq, a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Ne, a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Gt, a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Ge, a, b); }
Tensor less(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Lt, a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Le, a, b); }
Tensor greater(const Tensor& a, double b) { return scalar_op(UnaryOp::GtScalar, a, b, "greater"); }
Tensor greater_equal(const Tensor& a, double b) { return scalar_op(UnaryOp::GeScalar, a, b, "greater_equal"); }
Tensor less(const Tensor& a, double b) { return scalar_op(UnaryOp::LtScalar, a, b, "less"); }
Tensor less_equal(const Tensor& a, double b) { return scalar_op(UnaryOp::LeScalar, a, b, "less_equal"); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  detail::check_same_device("where", cond, a);
  detail::check_same_device("where", a, b);
  DType dt = result_type(a, b);
  Shape out = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor cc = cond.dtype() == dt ? cond : cond.astype(dt);
  Tensor ac = a.dtype() == dt ? a : a.astype(dt);
  Tensor bc = b.dtype() == dt ? b : b.astype(dt);
  Tensor y = Tensor::empty(out, dt, a.device());
  if (!y.size()) return y;
  Strided so = detail::make_contiguous(out), sc = detail::make_broadcast(cond.shape(), out),
          sa = detail::make_broadcast(a.shape(), out), sb = detail::make_broadcast(b.shape(), out);
  Strided* views[] = {&so, &sc, &sa, &sb};
  detail::coalesce(views, 4);
  backend_of(a).where(dt, cc.raw_data(), sc, ac.raw_data(), sa, bc.raw_data(), sb, y.raw_data(), so);
  return y;
}

// --- shape ops ----------------------------------------------------------------------------
Tensor reshape(const Tensor& x, const Shape& shape) { return x.reshape(shape); }
Tensor transpose(const Tensor& x, const std::vector<int>& axes) { return axes.empty() ? x.transpose() : x.transpose(axes); }

Tensor expand_dims(const Tensor& x, int axis) {
  detail::check_defined("expand_dims", x);
  int a = detail::normalize_axis("expand_dims", axis, x.ndim() + 1);
  Shape s = x.shape();
  s.insert(s.begin() + a, 1);
  return x.reshape(s);
}

Tensor squeeze(const Tensor& x, std::optional<int> axis) {
  detail::check_defined("squeeze", x);
  Shape s;
  if (axis) {
    int a = detail::normalize_axis("squeeze", *axis, x.ndim());
    if (x.shape()[a] != 1)
      throw ValueError("squeeze: cannot select an axis to squeeze out which has size not equal to one (axis " +
                       std::to_string(*axis) + " of " + x.shape().str() + ")");
    s = x.shape();
    s.erase(s.begin() + a);
  } else {
    for (auto d : x.shape())
      if (d != 1) s.push_back(d);
  }
  return x.reshape(s);
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  detail::check_defined("broadcast_to", x);
  if (x.shape() == shape) return x;
  bool ok = shape.ndim() >= x.ndim();
  for (int i = 0; ok && i < x.ndim(); ++i) {
    auto d = x.shape()[i], t = shape[shape.ndim() - x.ndim() + i];
    ok = (d == t || d == 1);
  }
  if (!ok)
    throw ShapeError("broadcast_to: cannot broadcast an array of shape " + x.shape().str() + " to shape " +
                     shape.str() + "; hint: axes are matched from the right and must be equal or 1");
  Tensor y = Tensor::empty(shape, x.dtype(), x.device());
  if (!y.size()) return y;
  Strided dst = detail::make_contiguous(shape);
  Strided src = detail::make_broadcast(x.shape(), shape);
  Strided* views[] = {&dst, &src};
  detail::coalesce(views, 2);
  backend_of(x).copy_strided(x.dtype(), x.raw_data(), src, y.raw_data(), dst, false);
  return y;
}

// --- matmul ---------------------------------------------------------------------------------
Tensor matmul(const Tensor& a0, const Tensor& b0) {
  detail::check_same_device("matmul", a0, b0);
  if (a0.ndim() == 0 || b0.ndim() == 0)
    throw ShapeError("matmul: operands must be at least 1-d, got shapes " + a0.shape().str() + " and " +
                     b0.shape().str() + "; hint: use * for scalars");
  DType dt = promote_types(a0.dtype(), b0.dtype());
  Tensor a = a0.dtype() == dt ? a0 : a0.astype(dt);
  Tensor b = b0.dtype() == dt ? b0 : b0.astype(dt);
  bool a1 = a.ndim() == 1, b1 = b.ndim() == 1;
  if (a1) a = a.reshape(Shape{1, a.shape()[0]});
  if (b1) b = b.reshape(Shape{b.shape()[0], 1});
  std::int64_t m = a.shape()[a.ndim() - 2], k = a.shape()[a.ndim() - 1];
  std::int64_t k2 = b.shape()[b.ndim() - 2], n = b.shape()[b.ndim() - 1];
  if (k != k2)
    throw ShapeError("matmul: shapes " + a0.shape().str() + " and " + b0.shape().str() + " are not aligned: " +
                     std::to_string(k) + " (dim " + std::to_string(a0.ndim() - 1) + ") != " + std::to_string(k2) +
                     " (dim " + std::to_string(b1 ? 0 : b0.ndim() - 2) + ")");
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  std::int64_t nb = batch.numel();
  // Materialise broadcast batches unless an operand is a single matrix (stride 0).
  std::int64_t sa = m * k, sb = k * n;
  if (ba != batch) {
    if (ba.numel() == 1) sa = 0;
    else { Shape t = batch; t.push_back(m); t.push_back(k); a = broadcast_to(a, t); }
  }
  if (bb != batch) {
    if (bb.numel() == 1) sb = 0;
    else { Shape t = batch; t.push_back(k); t.push_back(n); b = broadcast_to(b, t); }
  }
  Shape out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(n);
  Tensor y = Tensor::empty(out, dt, a.device());
  if (y.size() == 0) return y;
  if (k == 0) { y.fill_(0); return y; }
  backend_of(a).gemm(dt, false, false, m, n, k, 1.0, a.raw_data(), k, sa, b.raw_data(), n, sb, 0.0, y.raw_data(), n,
                     m * n, nb);
  return y;
}
Tensor dot(const Tensor& a, const Tensor& b) { return matmul(a, b); }

// --- copyto ---------------------------------------------------------------------------------------
void copyto(Tensor& dst, const Tensor& src) {
  detail::check_defined("copyto", dst);
  detail::check_defined("copyto", src);
  Tensor s = src;
  if (s.device() != dst.device()) s = s.to(dst.device());
  if (s.dtype() != dst.dtype()) s = s.astype(dst.dtype());
  if (s.shape() != dst.shape()) s = broadcast_to(s, dst.shape());
  if (s.is_same(dst) || dst.size() == 0) return;
  backend_of(dst).copy(dst.raw_data(), s.raw_data(), dst.nbytes());
}

// --- concatenate / stack / take ---------------------------------------------------------------
Tensor concatenate(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw ValueError("concatenate: need at least one array to concatenate");
  const Tensor& f = xs[0];
  detail::check_defined("concatenate", f);
  int a = detail::normalize_axis("concatenate", axis, f.ndim());
  DType dt = f.dtype();
  Shape out = f.shape();
  out[a] = 0;
  for (auto& x : xs) {
    detail::check_same_device("concatenate", f, x);
    if (x.ndim() != f.ndim()) throw ShapeError("concatenate: all inputs must have the same number of dimensions");
    for (int i = 0; i < f.ndim(); ++i)
      if (i != a && x.shape()[i] != f.shape()[i])
        throw ShapeError("concatenate: shapes " + f.shape().str() + " and " + x.shape().str() +
                         " differ outside the concatenation axis " + std::to_string(axis));
    dt = promote_types(dt, x.dtype());
    out[a] += x.shape()[a];
  }
  Tensor y = Tensor::empty(out, dt, f.device());
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= out[i];
  for (int i = a + 1; i < out.ndim(); ++i) inner *= out[i];
  std::int64_t pos = 0;
  for (auto& x0 : xs) {
    Tensor x = x0.dtype() == dt ? x0 : x0.astype(dt);
    std::int64_t len = x.shape()[a];
    if (len * outer * inner == 0) { pos += len; continue; }
    Strided s = detail::make_contiguous(Shape{outer, len * inner});
    Strided d = s;
    d.strides[0] = out[a] * inner;
    char* base = static_cast<char*>(y.raw_data()) + pos * inner * static_cast<std::int64_t>(dtype_size(dt));
    backend_of(x).copy_strided(dt, x.raw_data(), s, base, d, false);
    pos += len;
  }
  return y;
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw ValueError("stack: need at least one array to stack");
  int a = detail::normalize_axis("stack", axis, xs[0].ndim() + 1);
  std::vector<Tensor> e;
  e.reserve(xs.size());
  for (auto& x : xs) {
    if (x.shape() != xs[0].shape())
      throw ShapeError("stack: all input arrays must have the same shape, got " + xs[0].shape().str() + " and " +
                       x.shape().str());
    e.push_back(expand_dims(x, a));
  }
  return concatenate(e, a);
}

Tensor take(const Tensor& x, const Tensor& indices) {
  detail::check_same_device("take", x, indices);
  if (x.ndim() == 0) throw ShapeError("take: cannot take rows of a 0-d tensor");
  if (is_floating(indices.dtype()))
    throw DtypeError("take: indices must be int32 or int64, got " + std::string(dtype_name(indices.dtype())));
  Tensor idx = indices.dtype() == int64 ? indices : indices.astype(int64);
  std::int64_t rows = x.shape()[0];
  if (idx.device().is_cpu()) {
    const std::int64_t* p = idx.data<std::int64_t>();
    for (std::int64_t i = 0; i < idx.size(); ++i)
      if (p[i] < 0 || p[i] >= rows)
        throw IndexError("take: index " + std::to_string(p[i]) + " is out of bounds for axis 0 with size " +
                         std::to_string(rows));
  }
  Shape out = idx.shape();
  out.insert(out.end(), x.shape().begin() + 1, x.shape().end());
  Tensor y = Tensor::empty(out, x.dtype(), x.device());
  if (y.size())
    backend_of(x).gather_rows(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(idx.raw_data()), y.raw_data(),
                              idx.size(), rows ? x.size() / rows : 0);
  return y;
}

}  // namespace dezero

namespace dezero::detail {
Tensor matmul_t(const Tensor& a0, const Tensor& b0, bool ta, bool tb, const Tensor& bias) {
  check_same_device("matmul", a0, b0);
  if (a0.ndim() != 2 || b0.ndim() != 2)
    throw ShapeError("matmul: expected 2-d operands, got " + a0.shape().str() + " and " + b0.shape().str());
  DType dt = promote_types(a0.dtype(), b0.dtype());
  Tensor a = a0.dtype() == dt ? a0 : a0.astype(dt);
  Tensor b = b0.dtype() == dt ? b0 : b0.astype(dt);
  std::int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  std::int64_t k2 = tb ? b.shape()[1] : b.shape()[0], n = tb ? b.shape()[0] : b.shape()[1];
  if (k != k2)
    throw ShapeError("matmul: shapes " + a0.shape().str() + (ta ? "^T" : "") + " and " + b0.shape().str() +
                     (tb ? "^T" : "") + " are not aligned: " + std::to_string(k) + " != " + std::to_string(k2));
  Tensor y;
  double beta = 0.0;
  if (bias.defined()) {
    check_same_device("linear", a0, bias);
    Tensor bb = bias.dtype() == dt ? bias : bias.astype(dt);
    if (bb.ndim() == 1 && bb.size() == n && k > 0 && m > 0) {  // a row per output feature: fused if possible
      y = Tensor::empty(Shape{m, n}, dt, a.device());
      if (backend_of(a).gemm_bias(dt, ta, tb, m, n, k, a.raw_data(), a.shape()[1], b.raw_data(), b.shape()[1],
                                  bb.raw_data(), y.raw_data(), n))
        return y;
    }
    y = broadcast_to(bb, Shape{m, n});
    if (y.is_same(bb)) y = y.copy();
    beta = 1.0;
  } else {
    y = Tensor::empty(Shape{m, n}, dt, a.device());
  }
  if (y.size() == 0) return y;
  if (k == 0) {
    if (!bias.defined()) y.fill_(0);
    return y;
  }
  backend_of(a).gemm(dt, ta, tb, m, n, k, 1.0, a.raw_data(), a.shape()[1], 0, b.raw_data(), b.shape()[1], 0, beta,
                     y.raw_data(), n, 0, 1);
  return y;
}
}  // namespace dezero::detail
