// dezero/tensor/checks.cpp - the argument checks of tensor/checks.hpp.
//
// check_defined and check_same_device throw the ValueError / DeviceError that every
// operation of the tensor level and above reports for an empty tensor or operands on
// two devices; normalize_axis / normalize_axes turn NumPy's negative axes into
// 0..ndim-1 (IndexError when out of range). No backend here: the layers above the
// tensor (core/, functions/, utils/) use these too.
#include "dezero/tensor/checks.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace dezero::detail {

void append_part(std::string& s, const Tensor& v) { s += describe(v); }

// --- operands --------------------------------------------------------------------------
Tensor undefined_tensor(EmptyCause cause) {
  Tensor t;
  t.word_ = std::uint64_t(static_cast<unsigned>(cause)) << Tensor::kCauseShift;
  return t;
}
EmptyCause empty_cause(const Tensor& t) {
  return t.defined() ? EmptyCause::none : static_cast<EmptyCause>((t.word_ >> Tensor::kCauseShift) & 0xf);
}

std::string empty_cause_text(EmptyCause cause) {
  switch (cause) {
    case EmptyCause::none:
      return "";
    case EmptyCause::grad_not_kept:
      return ": it came from grad() of a variable that is not a leaf, and backward() keeps only the leaves' "
             "gradients; hint: backward({.retain_grad = true}) (positionally backward(true)) keeps them all";
    case EmptyCause::grad_not_reached:
      return ": it came from grad() of a leaf that no backward() has reached since its last cleargrad(); hint: "
             "call backward() on a result computed from it first (loss.backward()); if you did, that result does "
             "not depend on this variable, or cleargrad() ran since. (Differentiating a gradient again, step 33, "
             "needs the first backward with create_graph: backward({.create_graph = true}), positionally "
             "backward(false, true).)";
    case EmptyCause::grad_no_backprop:
      return ": it came from grad() read while backprop is off (no_grad(), using_config(\"enable_backprop\", "
             "false)), where no graph is recorded for backward() to follow; hint: run the function and its "
             "backward() with backprop on";
  }
  return "";
}

void check_defined(const char* op, const Tensor& t) {
  if (t.defined()) return;
  const EmptyCause cause = empty_cause(t);
  if (cause == EmptyCause::none)
    detail::fail<ValueError>(op, "the tensor holds no data (an empty Tensor/Variable was passed)");
  detail::fail<ValueError>(op, "the tensor holds no data", empty_cause_text(cause));
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  if (a.device() != b.device())
    detail::fail<DeviceError>(op, "operands are on different devices: ", describe(a), " on ", a.device().str(),
                              " and ", describe(b), " on ", b.device().str(),
                              "; hint: move one with to(device) / to_gpu() / to_cpu()");
}

// --- axes ------------------------------------------------------------------------------
namespace {
std::string axis_hint(int ndim) {
  if (ndim <= 0) return "; hint: a 0-d array has no axes (reshape it to at least 1-d first)";
  return "; hint: axis must be in [-ndim, ndim), here [" + std::to_string(-ndim) + ", " + std::to_string(ndim) + ")";
}
}  // namespace

int normalize_axis(const char* op, int axis, int ndim) {
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= std::max(ndim, 0) || (ndim == 0))
    detail::fail<IndexError>(op, "axis ", std::to_string(axis), " is out of bounds for an array of dimension ",
                             std::to_string(ndim), axis_hint(ndim));
  return a;
}

AxisList normalize_axes(const char* op, const Axes& axes, int ndim) {
  AxisList out;
  if (axes.is_all()) {
    for (int i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int a : axes.list()) {
    int n = a < 0 ? a + ndim : a;
    if (n < 0 || n >= ndim)
      detail::fail<IndexError>(op, "axis ", std::to_string(a),
                               (axes.list().size() > 1 ? " in axes " + axes.str() : std::string()),
                               " is out of bounds for an array of dimension ", std::to_string(ndim), axis_hint(ndim));
    if (std::find(out.begin(), out.end(), n) != out.end())
      detail::fail<ValueError>(op, "duplicate value in axes ", axes.str(), " for an array of dimension ",
                               std::to_string(ndim),
                               "; hint: name each axis once (a negative axis counts from the end)");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dezero::detail
