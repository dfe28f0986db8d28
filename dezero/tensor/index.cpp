// dezero/tensor/index.cpp - NumPy indexing: integers, slices, Ellipsis, newaxis and
// integer arrays, and scatter_add (np.add.at) for the gradient of get_item.
//
// Basic indexing becomes a strided view (offset, shape, strides): a zero-copy
// tensor when that view is contiguous, one strided copy otherwise. Integer-array
// indexing computes each result element's offset in the source with tensor ops
// on the source's device, then gathers (or scatter-adds) through the offsets.
//
// Integer arrays follow NumPy on both devices: a negative index counts from the end,
// and one still out of range is an IndexError naming the first bad index, its axis
// and size (find_bad_index: on a GPU that costs one min / max reduction and one sync
// per index array).
//
// One difference from NumPy, kept for simplicity: integer scalars are applied as
// basic indices before the arrays, so x[0, :, [1, 2]] has shape (n, 2) where
// NumPy (which treats 0 as an array index there) gives (2, n).
#include <algorithm>
#include <optional>

#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

using detail::backend_of;
using detail::Strided;

// --- bounds of integer index arrays (tensor/checks.hpp) -----------------------------------
std::optional<detail::BadIndex> detail::find_bad_index(const Tensor& idx, std::int64_t lo, std::int64_t hi,
                                                       bool* negative) {
  if (negative) *negative = false;
  if (!idx.size()) return std::nullopt;
  Tensor host = idx.dtype() == int64 ? idx : idx.astype(int64);
  if (!idx.device().is_cpu()) {
    // x: any shape -> (2,) [min, max] on the device, read back in one copy.
    Tensor mm = concatenate({host.min().reshape(Shape{1}), host.max().reshape(Shape{1})}).to(Device::cpu());
    const std::int64_t* q = mm.data<std::int64_t>();
    if (negative) *negative = q[0] < 0;
    if (q[0] >= lo && q[1] < hi) return std::nullopt;
    host = host.to(Device::cpu());  // out of range: find the first offender as the CPU does
  }
  const std::int64_t* q = host.data<std::int64_t>();
  bool neg = false;
  for (std::int64_t k = 0; k < host.size(); ++k) {
    if (q[k] < lo || q[k] >= hi) return BadIndex{k, q[k]};
    neg |= q[k] < 0;
  }
  if (negative) *negative = neg;
  return std::nullopt;
}

Index::Index(const Tensor& array) : kind_(Kind::Array), array_(std::make_unique<Tensor>(array)) {}
Index::Index(const Index& o) : kind_(o.kind_), integer_(o.integer_), slice_(o.slice_) {
  if (o.array_) array_ = std::make_unique<Tensor>(*o.array_);
}
Index& Index::operator=(const Index& o) {
  if (this != &o) {
    kind_ = o.kind_;
    integer_ = o.integer_;
    slice_ = o.slice_;
    array_ = o.array_ ? std::make_unique<Tensor>(*o.array_) : nullptr;
  }
  return *this;
}
Index::~Index() = default;

std::string Index::str() const {
  switch (kind_) {
    case Kind::Integer: return std::to_string(integer_);
    case Kind::EllipsisMark: return "...";
    case Kind::NewAxis: return "None";
    case Kind::Array: return "array" + array_->shape().str();
    case Kind::Slice: {
      std::string s = slice_.start ? std::to_string(*slice_.start) : "";
      s += ":";
      if (slice_.stop) s += std::to_string(*slice_.stop);
      if (slice_.step != 1) s += ":" + std::to_string(slice_.step);
      return s;
    }
  }
  return "?";
}

namespace {

std::string indices_str(const Indices& ix) {
  std::string s = "[";
  for (std::size_t i = 0; i < ix.size(); ++i) s += (i ? ", " : "") + ix[i].str();
  return s + "]";
}

struct Axis {  // one axis of the result
  std::int64_t extent;
  std::int64_t stride;  // in source elements
};

struct IndexPlan {
  std::int64_t offset = 0;        // source element offset of the basic view
  std::vector<Axis> axes;         // basic result axes in order (slices / newaxis / kept)
  std::vector<int> array_slots;   // positions (in `axes` order) where array indices sit
  std::vector<Tensor> arrays;     // int64 index arrays (normalised), one per array slot
  std::vector<std::int64_t> array_strides;
  bool adjacent = true;
};

// op names the user's function in errors: get_item, or scatter_add (get_item's gradient).
IndexPlan plan(const char* op, const Tensor& x, const Indices& ix) {
  detail::check_defined(op, x);
  int consumed = 0, ellipses = 0;
  for (auto& i : ix) {
    if (i.kind() == Index::Kind::EllipsisMark) ++ellipses;
    else if (i.kind() != Index::Kind::NewAxis) ++consumed;
  }
  if (ellipses > 1) detail::fail<IndexError>(op, "an index can only have a single ellipsis ('...')");
  if (consumed > x.ndim())
    detail::fail<IndexError>(op, "too many indices for array: array is ", std::to_string(x.ndim()),
                             "-dimensional, but ", std::to_string(consumed), " were indexed (", indices_str(ix), ")");
  Indices full;
  for (auto& i : ix) {
    if (i.kind() == Index::Kind::EllipsisMark) {
      for (int k = 0; k < x.ndim() - consumed; ++k) full.push_back(Slice());
    } else {
      full.push_back(i);
    }
  }
  if (!ellipses)
    for (int k = consumed; k < x.ndim(); ++k) full.push_back(Slice());

  auto st = detail::contiguous_strides(x.shape());
  IndexPlan p;
  int dim = 0;
  int last_array_pos = -1;
  for (auto& i : full) {
    switch (i.kind()) {
      case Index::Kind::NewAxis: p.axes.push_back({1, 0}); break;
      case Index::Kind::Integer: {
        std::int64_t n = x.shape()[dim], v = i.integer();
        if (v < -n || v >= n)
          detail::fail<IndexError>(op, "index ", std::to_string(v), " is out of bounds for axis ",
                                   std::to_string(dim), " with size ", std::to_string(n), " (shape ", x.shape(),
                                   "); hint: indices along this axis must be in [", std::to_string(-n), ", ",
                                   std::to_string(n), ")");
        if (v < 0) v += n;
        p.offset += v * st[dim];
        ++dim;
        break;
      }
      case Index::Kind::Slice: {
        const Slice& s = i.slice();
        std::int64_t n = x.shape()[dim], step = s.step;
        if (step == 0) detail::fail<ValueError>(op, "slice step cannot be zero");
        // A step past the axis length picks the same one element as a step of the length itself; the
        // clamp keeps step * stride and the length arithmetic below from overflowing (x[::2**62]).
        step = std::min(std::max(step, -std::max<std::int64_t>(n, 1)), std::max<std::int64_t>(n, 1));
        std::int64_t start, stop;
        auto clampi = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::min(std::max(v, lo), hi); };
        if (step > 0) {
          start = s.start ? (*s.start < 0 ? *s.start + n : *s.start) : 0;
          stop = s.stop ? (*s.stop < 0 ? *s.stop + n : *s.stop) : n;
          start = clampi(start, 0, n);
          stop = clampi(stop, 0, n);
        } else {
          start = s.start ? (*s.start < 0 ? *s.start + n : *s.start) : n - 1;
          stop = s.stop ? (*s.stop < 0 ? *s.stop + n : *s.stop) : -1;
          start = clampi(start, -1, n - 1);
          stop = clampi(stop, -1, n - 1);
        }
        std::int64_t len = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                    : (start > stop ? (start - stop + (-step) - 1) / (-step) : 0);
        if (len > 0) p.offset += start * st[dim];
        p.axes.push_back({len, step * st[dim]});
        ++dim;
        break;
      }
      case Index::Kind::Array: {
        Tensor a = i.array();
        detail::check_same_device(op, x, a);
        if (is_floating(a.dtype()))
          detail::fail<IndexError>(op, "arrays used as indices must be of integer type, got ",
                                   std::string(dtype_name(a.dtype())));
        if (a.dtype() != int64) a = a.astype(int64);
        std::int64_t n = x.shape()[dim];
        bool neg = false;
        if (auto bad = detail::find_bad_index(a, -n, n, &neg))
          detail::fail<IndexError>(op, "index ", std::to_string(bad->value), " is out of bounds for axis ",
                                   std::to_string(dim), " with size ", std::to_string(n), " (shape ", x.shape(),
                                   "); hint: indices along this axis must be in [", std::to_string(-n), ", ",
                                   std::to_string(n), ")");
        if (neg) a = a + less(a, 0.0) * static_cast<double>(n);  // negative indices count from the end
        int pos = static_cast<int>(p.axes.size());
        if (last_array_pos >= 0 && last_array_pos != pos) p.adjacent = false;
        last_array_pos = pos;
        p.array_slots.push_back(pos);
        p.arrays.push_back(a);
        p.array_strides.push_back(st[dim]);
        ++dim;
        break;
      }
      case Index::Kind::EllipsisMark: break;
    }
  }
  return p;
}

// The result shape and, for array indexing, the int64 offset of each element.
struct Resolved {
  Shape shape;
  Tensor offsets;  // defined only with array indices
  Strided view;    // basic indexing: the source view (result shape)
};

Resolved resolve(const char* op, const Tensor& x, const Indices& ix) {
  IndexPlan p = plan(op, x, ix);
  Resolved r;
  if (p.arrays.empty()) {
    r.view.ndim = static_cast<int>(p.axes.size());
    for (std::size_t i = 0; i < p.axes.size(); ++i) {
      r.shape.push_back(p.axes[i].extent);
      r.view.shape[i] = p.axes[i].extent;
      r.view.strides[i] = p.axes[i].stride;
    }
    return r;
  }
  Shape bshape;
  for (auto& a : p.arrays) bshape = broadcast_shapes(bshape, a.shape(), op);
  // Result layout: basic axes with the broadcast index axes at the first array slot
  // (adjacent arrays) or in front (NumPy's rule for separated arrays).
  int insert_at = p.adjacent ? p.array_slots[0] : 0;
  std::vector<int> basic_pos(p.axes.size());
  for (int i = 0; i < static_cast<int>(p.axes.size()); ++i) {
    if (i == insert_at) r.shape.insert(r.shape.end(), bshape.begin(), bshape.end());
    basic_pos[i] = static_cast<int>(r.shape.size());
    r.shape.push_back(p.axes[i].extent);
  }
  if (insert_at == static_cast<int>(p.axes.size())) r.shape.insert(r.shape.end(), bshape.begin(), bshape.end());
  int nd = r.shape.ndim();
  Device dev = x.device();
  Tensor off = full(Shape{}, static_cast<double>(p.offset), int64, dev);
  for (std::size_t i = 0; i < p.axes.size(); ++i) {
    if (p.axes[i].extent == 1 && p.axes[i].stride == 0) continue;
    Shape s(nd, 1);
    s[basic_pos[i]] = p.axes[i].extent;
    off = off + (arange(0.0, static_cast<double>(p.axes[i].extent), 1.0, int64, dev) * static_cast<double>(p.axes[i].stride)).reshape(s);
  }
  for (std::size_t k = 0; k < p.arrays.size(); ++k) {
    Tensor a = broadcast_to(p.arrays[k], bshape);
    Shape s(nd, 1);
    for (int j = 0; j < bshape.ndim(); ++j) s[insert_at + j + 0] = bshape[j];
    // insert_at counts basic axes before it; in result coordinates the index axes start there too
    off = off + (a * static_cast<double>(p.array_strides[k])).reshape(s);
  }
  r.offsets = broadcast_to(off, r.shape);
  if (r.offsets.dtype() != int64) r.offsets = r.offsets.astype(int64);
  return r;
}

}  // namespace

Tensor get_item(const Tensor& x, const Indices& indices) {
  Resolved r = resolve("get_item", x, indices);
  Tensor y = Tensor::empty(r.shape, x.dtype(), x.device());
  if (!y.size()) return y;
  if (r.offsets.defined()) {
    Tensor base(x.storage(), x.offset(), Shape{x.size()}, x.dtype());
    backend_of(x).gather(x.dtype(), base.raw_data(), static_cast<const std::int64_t*>(r.offsets.raw_data()),
                         y.raw_data(), y.size());
    return y;
  }
  // Basic indexing: find the offset and check whether the view is contiguous.
  std::int64_t offset = 0;
  {
    IndexPlan p = plan("get_item", x, indices);
    offset = p.offset;
  }
  Strided dst = detail::make_contiguous(r.shape);
  Strided src = r.view;
  bool contiguous = true;
  for (int i = 0; i < r.shape.ndim(); ++i)
    if (r.shape[i] != 1 && src.strides[i] != dst.strides[i]) contiguous = false;
  if (contiguous) return Tensor(x.storage(), x.offset() + offset, r.shape, x.dtype());
  Strided* views[] = {&dst, &src};
  detail::coalesce(views, 2);
  char* base = static_cast<char*>(x.raw_data()) + offset * static_cast<std::int64_t>(dtype_size(x.dtype()));
  backend_of(x).copy_strided(x.dtype(), base, src, y.raw_data(), dst, false);
  return y;
}

Tensor scatter_add(const Tensor& gy, const Shape& shape, const Indices& indices) {
  detail::check_defined("scatter_add", gy);
  if (is_half(gy.dtype()))  // accumulated in float32, rounded once
    return detail::half_result(scatter_add(gy.astype(float32), shape, indices), gy.dtype());
  Tensor gx = zeros(shape, gy.dtype(), gy.device());
  Resolved r = resolve("scatter_add", gx, indices);
  if (r.shape != gy.shape())
    detail::fail<ShapeError>("scatter_add", "the gradient has shape ", gy.shape(), " but indexing ", shape.str(),
                             " with ", indices_str(indices), " gives ", r.shape.str());
  if (!gy.size()) return gx;
  if (r.offsets.defined()) {
    backend_of(gx).scatter_add(gx.dtype(), gy.raw_data(), static_cast<const std::int64_t*>(r.offsets.raw_data()),
                               gx.raw_data(), gy.size());
    return gx;
  }
  IndexPlan p = plan("scatter_add", gx, indices);
  Strided src = detail::make_contiguous(r.shape);
  Strided dst = r.view;
  Strided* views[] = {&src, &dst};
  detail::coalesce(views, 2);
  char* base = static_cast<char*>(gx.raw_data()) + p.offset * static_cast<std::int64_t>(dtype_size(gx.dtype()));
  backend_of(gx).copy_strided(gx.dtype(), gy.raw_data(), src, base, dst, true);
  return gx;
}

}  // namespace dezero
