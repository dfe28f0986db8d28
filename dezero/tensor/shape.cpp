// dezero/tensor/shape.cpp - tensor.hpp's shape operations: reshape, transpose,
// expand_dims, squeeze, broadcast_to, broadcast_shapes, copyto, concatenate, stack
// and take.
//
// reshape, expand_dims and squeeze are zero-copy (a new shape over the same
// storage); transpose forwards to Tensor::transpose (tensor.cpp). broadcast_to,
// concatenate and stack write one strided copy per operand (Backend::copy_strided),
// take one row gather (Backend::gather_rows), and copyto one Backend::copy once src
// is on dst's device, in its dtype and of its shape. The reductions of the same
// header section are in reduce.cpp, get_item / scatter_add in index.cpp, matmul /
// dot in linalg.cpp.
#include "dezero/tensor.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "dezero/tensor/fused.hpp"
#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

using detail::backend_of;
using detail::Strided;

// --- broadcast_shapes: NumPy's rule for two shapes -------------------------------------
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int n = std::max(a.ndim(), b.ndim());
  Shape out(n);
  for (int i = 0; i < n; ++i) {
    int ia = i - (n - a.ndim()), ib = i - (n - b.ndim());
    std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      detail::fail<ShapeError>(op, "operands could not be broadcast together with shapes ", a.str(), " ", b.str(),
                               "; hint: axes are matched from the right and must be equal or 1");
    out[i] = da == 1 ? db : da;
  }
  out.checked_numel(op);
  return out;
}

// --- views and broadcasts: reshape, transpose, expand_dims, squeeze, broadcast_to ------
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
      detail::fail<ValueError>("squeeze",
                               "cannot select an axis to squeeze out which has size not equal to one (axis ",
                               std::to_string(*axis), " of ", x.shape(), ")");
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
    detail::fail<ShapeError>("broadcast_to", "cannot broadcast an array of shape ", x.shape(), " to shape ",
                             shape.str(), "; hint: axes are matched from the right and must be equal or 1");
  Tensor y = Tensor::empty(shape, x.dtype(), x.device(), "broadcast_to");
  if (!y.size()) return y;
  Strided dst = detail::make_contiguous(shape);
  Strided src = detail::make_broadcast(x.shape(), shape);
  Strided* views[] = {&dst, &src};
  detail::coalesce(views, 2);
  backend_of(x).copy_strided(x.dtype(), x.raw_data(), src, y.raw_data(), dst, false);
  return y;
}

// --- copyto ----------------------------------------------------------------------------
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

// --- joining and gathering: concatenate, stack, take -----------------------------------
Tensor concatenate(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) detail::fail<ValueError>("concatenate", "need at least one array to concatenate");
  const Tensor& f = xs[0];
  detail::check_defined("concatenate", f);
  int a = detail::normalize_axis("concatenate", axis, f.ndim());
  DType dt = f.dtype();
  Shape out = f.shape();
  out[a] = 0;
  for (auto& x : xs) {
    detail::check_same_device("concatenate", f, x);
    if (x.ndim() != f.ndim()) detail::fail<ShapeError>("concatenate",
                                                       "all inputs must have the same number of dimensions");
    for (int i = 0; i < f.ndim(); ++i)
      if (i != a && x.shape()[i] != f.shape()[i])
        detail::fail<ShapeError>("concatenate", "shapes ", f.shape(), " and ", x.shape(),
                                 " differ outside the concatenation axis ", std::to_string(axis));
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
  if (xs.empty()) detail::fail<ValueError>("stack", "need at least one array to stack");
  int a = detail::normalize_axis("stack", axis, xs[0].ndim() + 1);
  std::vector<Tensor> e;
  e.reserve(xs.size());
  for (auto& x : xs) {
    if (x.shape() != xs[0].shape())
      detail::fail<ShapeError>("stack", "all input arrays must have the same shape, got ", xs[0].shape(), " and ",
                               x.shape());
    e.push_back(expand_dims(x, a));
  }
  return concatenate(e, a);
}

// take, and embed_id's forward under its own name: x: (n, ...), indices: any shape of
// ids in [0, n) -> (indices.shape..., ...).
Tensor detail::take_rows(const char* op, const Tensor& x, const Tensor& indices, const char* hint) {
  detail::check_same_device(op, x, indices);
  if (x.ndim() == 0) detail::fail<ShapeError>(op, "cannot take rows of a 0-d tensor");
  if (is_floating(indices.dtype()))
    detail::fail<DtypeError>(op, "indices must be int32 or int64, got ", dtype_name(indices.dtype()));
  Tensor idx = indices.dtype() == int64 ? indices : indices.astype(int64);
  std::int64_t rows = x.shape()[0];
  if (auto bad = detail::find_bad_index(idx, 0, rows))
    detail::fail<IndexError>(op, "index ", std::to_string(bad->value), " at position ", std::to_string(bad->position),
                             " is out of bounds for axis 0 with size ", std::to_string(rows), " (", x, "); hint: ",
                             hint, " must be in [0, ", std::to_string(rows), "), negative ones are not wrapped");
  Shape out = idx.shape();
  out.insert(out.end(), x.shape().begin() + 1, x.shape().end());
  Tensor y = Tensor::empty(out, x.dtype(), x.device());
  if (y.size())
    backend_of(x).gather_rows(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(idx.raw_data()), y.raw_data(),
                              idx.size(), rows ? x.size() / rows : 0);
  return y;
}

Tensor take(const Tensor& x, const Tensor& indices) { return detail::take_rows("take", x, indices, "take's indices"); }

}  // namespace dezero
