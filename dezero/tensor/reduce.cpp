// dezero/tensor/reduce.cpp - sum / mean / max / min / argmax over any set of axes.
//
// A reduction over a contiguous block of axes views the input as (outer, r, inner)
// and reduces the middle; any other set of axes is first moved to the end with one
// transposing copy. keepdims re-inserts the reduced axes as 1.
#include <algorithm>

#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

using detail::backend_of;

namespace {

struct Plan {
  const Tensor* x = nullptr;  // the input, or `moved` when the reduced axes had to be made one block
  Tensor moved;
  std::int64_t outer = 1, r = 1, inner = 1;
  Shape out_keep;  // result with keepdims
  Shape out;       // result without
};

void plan_reduction(const char* op, const Tensor& x, const Axes& axes, Plan& p) {
  detail::check_defined(op, x);
  const detail::AxisList ax = detail::normalize_axes(op, axes, x.ndim());
  p.x = &x;
  const Shape& s = x.shape();
  std::uint32_t red = 0;  // bit i: axis i is reduced (ndim <= kMaxDims)
  for (int a : ax) red |= 1u << a;
  for (int i = 0; i < x.ndim(); ++i) {
    const bool r = (red >> i) & 1u;
    p.out_keep.push_back(r ? 1 : s[i]);
    if (!r) p.out.push_back(s[i]);
  }
  if (ax.empty()) {
    p.outer = x.size();
    return;
  }
  bool block = (ax.back() - ax.front() + 1) == static_cast<int>(ax.size());
  if (block) {
    for (int i = 0; i < ax.front(); ++i) p.outer *= s[i];
    for (int a : ax) p.r *= s[a];
    for (int i = ax.back() + 1; i < x.ndim(); ++i) p.inner *= s[i];
  } else {
    std::vector<int> perm;
    for (int i = 0; i < x.ndim(); ++i)
      if (!((red >> i) & 1u)) { perm.push_back(i); p.outer *= s[i]; }
    for (int a : ax) { perm.push_back(a); p.r *= s[a]; }
    p.moved = x.transpose(perm);
    p.x = &p.moved;
  }
}

Tensor reduce(detail::ReduceOp op, const char* name, const Tensor& x, const Axes& axes, bool keepdims) {
  if (is_half(x.dtype()))  // accumulated in float32, rounded once
    return detail::half_result(reduce(op, name, x.astype(float32), axes, keepdims), x.dtype());
  Plan p;
  plan_reduction(name, x, axes, p);
  if (op != detail::ReduceOp::Sum && p.r == 0)
    detail::fail<ValueError>(name, "zero-size array to reduction operation which has no identity (shape ", x.shape(),
                             ")");
  Tensor y = Tensor::empty(keepdims ? p.out_keep : p.out, x.dtype(), x.device());
  if (y.size()) backend_of(x).reduce(op, x.dtype(), p.x->raw_data(), y.raw_data(), p.outer, p.r, p.inner);
  return y;
}

Tensor arg_reduce(detail::ArgReduceOp op, const char* name, const Tensor& x, std::optional<int> axis) {
  detail::check_defined(name, x);
  if (is_half(x.dtype())) return arg_reduce(op, name, x.astype(float32), axis);  // widening is exact
  Tensor src = axis ? x : x.reshape(Shape{x.size()});
  int a = detail::normalize_axis(name, axis ? *axis : 0, src.ndim());
  if (src.shape()[a] == 0) detail::fail<ValueError>(name, "attempt to get ", name, " of an empty sequence");
  Plan p;
  plan_reduction(name, src, Axes(a), p);
  Tensor y = Tensor::empty(p.out, int64, x.device());
  if (y.size())
    backend_of(x).arg_reduce(op, x.dtype(), p.x->raw_data(), static_cast<std::int64_t*>(y.raw_data()), p.outer, p.r,
                             p.inner);
  return y;
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(detail::ReduceOp::Sum, "sum", x, axes, keepdims);
}
Tensor max(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(detail::ReduceOp::Max, "max", x, axes, keepdims);
}
Tensor min(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce(detail::ReduceOp::Min, "min", x, axes, keepdims);
}
Tensor mean(const Tensor& x, const Axes& axes, bool keepdims) {
  if (is_half(x.dtype())) return detail::half_result(mean(x.astype(float32), axes, keepdims), x.dtype());
  Tensor xf = is_integer(x.dtype()) ? x.astype(float64) : x;  // NumPy: mean of ints is float64
  Tensor s = sum(xf, axes, keepdims);
  std::int64_t n = s.size() ? x.size() / s.size() : 0;
  return s * (1.0 / static_cast<double>(n));
}
// DeZero's utils.sum_to: sum the leading extra axes, then the axes where shape has 1.
// Summed axes that form one block (a bias gradient: (N, C) -> (C,), or (N, 1) -> (1,))
// go straight to the backend as (outer, r, inner) with the result already in `shape`.
Tensor sum_to(const Tensor& x, const Shape& shape) {
  detail::check_defined("sum_to", x);
  if (x.shape() == shape) return x;
  const int ndim = shape.ndim(), lead = x.ndim() - ndim;
  if (lead < 0)
    detail::fail<ShapeError>("sum_to", "cannot sum an array of shape ", x.shape(), " to a shape with more axes ",
                             shape.str());
  SmallVector<int, 6> axes;
  for (int i = 0; i < lead; ++i) axes.push_back(i);
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] == 1 && x.shape()[i + lead] != 1) axes.push_back(i + lead);
    else if (shape[i] != x.shape()[i + lead])
      detail::fail<ShapeError>("sum_to", "cannot sum an array of shape ", x.shape(), " to shape ", shape.str(),
                               "; hint: the target must be a shape that broadcasts to the input");
  }
  if (axes.empty()) return x.reshape(shape);
  if (is_half(x.dtype())) return detail::half_result(sum_to(x.astype(float32), shape), x.dtype());
  if (axes.back() - axes.front() + 1 == static_cast<int>(axes.size())) {
    std::int64_t outer = 1, r = 1, inner = 1;
    for (int i = 0; i < axes.front(); ++i) outer *= x.shape()[i];
    for (int a : axes) r *= x.shape()[a];
    for (int i = axes.back() + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
    Tensor y = Tensor::empty(shape, x.dtype(), x.device());
    if (y.size()) backend_of(x).reduce(detail::ReduceOp::Sum, x.dtype(), x.raw_data(), y.raw_data(), outer, r, inner);
    return y;
  }
  Tensor y = sum(x, Axes(std::vector<int>(axes.begin(), axes.end())), true);
  return lead > 0 ? y.reshape(shape) : y;
}

Tensor Tensor::argmax(std::optional<int> axis) const { return arg_reduce(detail::ArgReduceOp::ArgMax, "argmax", *this, axis); }
Tensor Tensor::argmin(std::optional<int> axis) const { return arg_reduce(detail::ArgReduceOp::ArgMin, "argmin", *this, axis); }

}  // namespace dezero
