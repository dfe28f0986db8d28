// dezero/onnx/import_ops_shape.cpp - internal: the importer's shape ops (Reshape, Transpose,
// Flatten, Expand, Squeeze, Unsqueeze, Concat, Slice, Split, Pad; Gather, GatherElements and
// ScatterND are in import_ops_index.cpp) and the shape arithmetic exporters write for dynamic
// batch sizes (Identity, Shape, Size, Range, Cast, ConstantOfShape) (register_shape_ops, ops.hpp);
// and the cap on the sizes a file may ask for (import_util.hpp).
//
// Float values go through DeZero Functions, so the gradient flows through reshapes, slices,
// gathers and pads; integer values (shapes, indices) are computed on Tensors and carry no
// gradient. Sizes that come from the file or from input values (ConstantOfShape, Expand, Range,
// Pad) are checked against the cap before anything is allocated, and Reshape's extents against
// int64 overflow. Where an op changed between opsets 7 and 20 (axes that became inputs in 13,
// Slice's bounds in 10, Split's in 13 and its num_outputs in 18, Pad's in 11 and its axes in 18,
// Reshape's allowzero in 14, Shape's start/end in 15, Cast's saturate in 19) the table has one
// OpDef per form; the opset-19/20 versions that only add float8 or string types (Reshape, Shape, Size, Identity, ConstantOfShape) keep their OpDef,
// since dezero reads neither.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dezero/functions.hpp"
#include "dezero/onnx/import_util.hpp"
#include "dezero/onnx/ops.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::onnx::detail {

// --- sizes from the file ------------------------------------------------------------------------
namespace {
std::atomic<std::int64_t> g_max_output_elements{std::int64_t{1} << 31};
}  // namespace

std::int64_t max_output_elements() { return g_max_output_elements.load(std::memory_order_relaxed); }
void set_max_output_elements(std::int64_t n) { g_max_output_elements.store(n, std::memory_order_relaxed); }

std::int64_t check_output_size(const OpContext& ctx, const std::vector<std::int64_t>& shape, const std::string& what) {
  std::int64_t n = 1;
  bool overflow = false, empty = false;
  for (std::int64_t e : shape) {
    if (e < 0) ctx.malformed(what + " " + Shape(shape).str() + " has a negative extent");
    empty = empty || e == 0;
    if (e != 0) overflow = overflow || __builtin_mul_overflow(n, e, &n);  // the zeros left out: see the header
  }
  const std::int64_t cap = max_output_elements();
  if (empty && !overflow && n <= cap) return 0;
  if (overflow || n > cap)
    throw ValueError("onnx import: " + describe_node(ctx.node(), ctx.opset()) + ": the " + what + " " +
                     Shape(shape).str() + " would have " +
                     (overflow ? std::string("more elements than int64 can count")
                      : empty  ? "extents whose product without its zeros is " + std::to_string(n)
                               : std::to_string(n) + " elements") +
                     ", more than the importer's cap of " + std::to_string(cap) +
                     " for a size the file asks for (a malformed model or shape input?)");
  return n;
}

namespace {

// --- shapes -------------------------------------------------------------------------------------
// x in `shape`: the float path through F::reshape (differentiable), the integer one on Tensors.
Variable reshape_to(const Variable& x, const Shape& shape) {
  if (is_int(x)) return fixed(x.data().reshape(shape));
  return F::reshape(x, shape);
}

// Reshape's target: 0 copies the input's extent (unless allowzero), one -1 is inferred.
Shape reshape_target(const OpContext& ctx, const Shape& in, const std::vector<std::int64_t>& spec, bool allowzero) {
  Shape out(spec.size());
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    std::int64_t s = spec[i];
    if (s == 0 && !allowzero) {
      if (i >= in.size())
        ctx.malformed("shape " + shape_str(spec) + " copies extent " + std::to_string(i) + " of an input of shape " +
                      in.str() + ", which has no such axis");
      s = in[i];
    }
    if (s == -1) {
      if (infer >= 0) ctx.malformed("shape " + shape_str(spec) + " has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (s < 0) ctx.malformed("shape " + shape_str(spec) + " has the negative extent " + std::to_string(s));
    out[i] = s;
    if (__builtin_mul_overflow(known, s, &known))
      dezero::detail::fail<ShapeError>("onnx import", describe_node(ctx.node(), ctx.opset()), ": cannot reshape ", in,
                                       " to ", shape_str(spec), " (more elements than int64 can count)");
  }
  const std::int64_t n = in.numel();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      dezero::detail::fail<ShapeError>("onnx import", describe_node(ctx.node(), ctx.opset()), ": cannot reshape ", in,
                                       " to ", shape_str(spec));
    out[static_cast<std::size_t>(infer)] = n / known;
  } else if (known != n) {
    dezero::detail::fail<ShapeError>("onnx import", describe_node(ctx.node(), ctx.opset()), ": cannot reshape ", in,
                                     " (", n, " elements) to ", shape_str(spec));
  }
  return out;
}

OpDef reshape_def(bool v14) {
  OpDef d;
  d.op_type = "Reshape";
  d.min_opset = v14 ? 14 : 7;
  d.max_opset = v14 ? 20 : 13;
  if (v14) d.attributes = {"allowzero"};
  d.run = [v14](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    const bool allowzero = v14 && ctx.attrs().i("allowzero", 0) != 0;
    return {reshape_to(x, reshape_target(ctx, x.shape(), ctx.int_list(1), allowzero))};
  };
  return d;
}

// Squeeze: the listed axes (all extents of 1 when none are given) removed.
Variable squeeze_axes(const OpContext& ctx, const Variable& x, const std::vector<std::int64_t>& axes) {
  const int r = x.ndim();
  std::vector<bool> drop(static_cast<std::size_t>(r), false);
  if (axes.empty()) {
    for (int i = 0; i < r; ++i) drop[static_cast<std::size_t>(i)] = x.shape()[static_cast<std::size_t>(i)] == 1;
  }
  for (std::int64_t a : axes) {
    const int i = axis_in(ctx, a, r);
    if (x.shape()[static_cast<std::size_t>(i)] != 1)
      dezero::detail::fail<ShapeError>("onnx import", describe_node(ctx.node(), ctx.opset()), ": cannot squeeze axis ",
                                       a, " of shape ", x.shape(), " (its extent is not 1)");
    drop[static_cast<std::size_t>(i)] = true;
  }
  Shape out;
  for (int i = 0; i < r; ++i)
    if (!drop[static_cast<std::size_t>(i)]) out.push_back(x.shape()[static_cast<std::size_t>(i)]);
  return reshape_to(x, out);
}

// Unsqueeze: extents of 1 inserted at the listed axes of the result.
Variable unsqueeze_axes(const OpContext& ctx, const Variable& x, const std::vector<std::int64_t>& axes) {
  const int r = x.ndim() + static_cast<int>(axes.size());
  std::vector<bool> ins(static_cast<std::size_t>(r), false);
  for (std::int64_t a : axes) {
    const int i = axis_in(ctx, a, r);
    if (ins[static_cast<std::size_t>(i)]) ctx.malformed("axis " + std::to_string(a) + " is listed twice");
    ins[static_cast<std::size_t>(i)] = true;
  }
  Shape out;
  std::size_t k = 0;
  for (int i = 0; i < r; ++i) out.push_back(ins[static_cast<std::size_t>(i)] ? 1 : x.shape()[k++]);
  return reshape_to(x, out);
}

OpDef squeeze_def(bool unsqueeze, bool v13) {
  OpDef d;
  d.op_type = unsqueeze ? "Unsqueeze" : "Squeeze";
  d.min_opset = v13 ? 13 : 7;
  d.max_opset = v13 ? 20 : 12;
  if (!v13) {
    d.attributes = {"axes"};
    if (unsqueeze)
      d.check = [](const Attrs& a) {
        if (!a.has("axes")) malformed(a.node, a.opset, "attribute 'axes' is required");
      };
  }
  d.run = [unsqueeze, v13](OpContext& ctx) -> VariableList {
    std::vector<std::int64_t> axes;
    if (v13) {
      if (ctx.has_input(1)) axes = ctx.int_list(1);
      else if (unsqueeze) ctx.malformed("input 1 (axes) is required");
    } else {
      axes = ctx.attrs().ints("axes");
    }
    const Variable& x = ctx.input(0);
    return {unsqueeze ? unsqueeze_axes(ctx, x, axes) : squeeze_axes(ctx, x, axes)};
  };
  return d;
}

// Slice: one dezero::Slice per axis, bounds clamped as ONNX does (negative ones count from the
// end; with a negative step an end below 0 means "past the first element").
Variable slice_axes(const OpContext& ctx, const Variable& x, const std::vector<std::int64_t>& starts,
                    const std::vector<std::int64_t>& ends, std::vector<std::int64_t> axes,
                    std::vector<std::int64_t> steps) {
  const int r = x.ndim();
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.malformed("starts, ends, axes and steps differ in length (" + std::to_string(starts.size()) + ", " +
                  std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + ", " +
                  std::to_string(steps.size()) + ")");
  Indices ix(static_cast<std::size_t>(r), Index(Slice()));
  std::vector<bool> seen(static_cast<std::size_t>(r), false);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const int a = axis_in(ctx, axes[k], r);
    if (seen[static_cast<std::size_t>(a)]) ctx.malformed("axis " + std::to_string(axes[k]) + " is sliced twice");
    seen[static_cast<std::size_t>(a)] = true;
    const std::int64_t dim = x.shape()[static_cast<std::size_t>(a)];
    // A step longer than the axis takes one element, as a step of the axis' length does (and
    // its byte stride cannot overflow).
    const std::int64_t longest = std::max<std::int64_t>(dim, 1);
    if (steps[k] == 0) ctx.malformed("a step of 0");
    const std::int64_t step = std::clamp<std::int64_t>(steps[k], -longest, longest);
    std::int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (dim == 0) {
      ix[static_cast<std::size_t>(a)] = Slice(0, 0);
    } else if (step > 0) {
      s = std::clamp<std::int64_t>(s, 0, dim);
      e = std::clamp<std::int64_t>(e, 0, dim);
      ix[static_cast<std::size_t>(a)] = Slice(s, e, step);
    } else {
      s = std::clamp<std::int64_t>(s, 0, dim - 1);
      e = std::clamp<std::int64_t>(e, -1, dim - 1);
      ix[static_cast<std::size_t>(a)] = e < 0 ? Slice(s, std::nullopt, step) : Slice(s, e, step);
    }
  }
  if (is_int(x)) return fixed(dezero::get_item(x.data(), ix));
  return F::get_item(x, ix);
}

OpDef slice_def(bool v10) {
  OpDef d;
  d.op_type = "Slice";
  d.min_opset = v10 ? 10 : 7;
  d.max_opset = v10 ? 20 : 9;
  if (!v10) {
    d.attributes = {"starts", "ends", "axes"};
    d.check = [](const Attrs& a) {
      if (!a.has("starts") || !a.has("ends")) malformed(a.node, a.opset, "attributes 'starts' and 'ends' are required");
    };
  }
  d.run = [v10](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    if (!v10)
      return {slice_axes(ctx, x, ctx.attrs().ints("starts"), ctx.attrs().ints("ends"), ctx.attrs().ints("axes"), {})};
    std::vector<std::int64_t> axes, steps;
    if (ctx.has_input(3)) axes = ctx.int_list(3);
    if (ctx.has_input(4)) steps = ctx.int_list(4);
    return {slice_axes(ctx, x, ctx.int_list(1), ctx.int_list(2), axes, steps)};
  };
  return d;
}

// Split along `axis` into one part per output: the lengths from the `split` attribute (before
// 13) or input (from 13); else equal parts, which before 18 must divide the axis, and from 18 are
// `num_outputs` parts of ceil(extent / num_outputs), the last one smaller (ONNX's reference: the
// last takes what is left, which may be 0). Each part is F::get_item of a slice, so the gradient
// of every output reaches the input.
OpDef split_def(int min_opset, int max_opset) {
  OpDef d;
  d.op_type = "Split";
  d.min_opset = min_opset;
  d.max_opset = max_opset;
  d.attributes = {"axis"};
  if (min_opset < 13) d.attributes.push_back("split");
  if (min_opset >= 18) {
    d.attributes.push_back("num_outputs");
    d.check = [](const Attrs& a) {
      const bool split_input = a.node.input_size() > 1 && !a.node.input(1).empty();
      if (a.has("num_outputs") == split_input)
        malformed(a.node, a.opset, "give either the split input or the attribute num_outputs, not both or neither");
      if (a.has("num_outputs") && a.i("num_outputs", 0) != a.node.output_size())
        malformed(a.node, a.opset, "num_outputs " + std::to_string(a.i("num_outputs", 0)) + " but the node has " +
                                       std::to_string(a.node.output_size()) + " outputs");
    };
  }
  d.run = [min_opset](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    if (x.ndim() == 0) ctx.malformed("cannot split a 0-d tensor");
    const int axis = axis_in(ctx, ctx.attrs().i("axis", 0), x.ndim());
    const std::int64_t dim = x.shape()[static_cast<std::size_t>(axis)];
    const auto n = static_cast<std::int64_t>(ctx.num_outputs());
    if (n == 0) ctx.malformed("needs at least one output");
    std::vector<std::int64_t> split;
    if (min_opset < 13) split = ctx.attrs().ints("split");
    else if (ctx.has_input(1)) split = ctx.int_list(1);
    if (split.empty() && min_opset >= 18) {
      const std::int64_t chunk = (dim + n - 1) / n;
      split.assign(static_cast<std::size_t>(n), chunk);
      split.back() = dim - chunk * (n - 1);
      if (split.back() < 0)
        shape_error(ctx, "num_outputs " + std::to_string(n) + " cannot split axis " + std::to_string(axis) +
                             " of extent " + std::to_string(dim) + " (parts of " + std::to_string(chunk) +
                             " leave the last one negative)");
    } else if (split.empty()) {
      if (dim % n != 0)
        shape_error(ctx, "axis " + std::to_string(axis) + " of extent " + std::to_string(dim) +
                             " does not split into " + std::to_string(n) + " equal parts");
      split.assign(static_cast<std::size_t>(n), dim / n);
    }
    if (static_cast<std::int64_t>(split.size()) != n)
      ctx.malformed("split " + shape_str(split) + " has " + std::to_string(split.size()) + " lengths for " +
                    std::to_string(n) + " outputs");
    std::int64_t total = 0;
    for (std::int64_t e : split) {
      if (e < 0) ctx.malformed("split " + shape_str(split) + " has a negative length");
      if (__builtin_add_overflow(total, e, &total)) total = std::numeric_limits<std::int64_t>::max();
    }
    if (total != dim)
      shape_error(ctx, "split " + shape_str(split) + " adds up to " + std::to_string(total) + ", not the extent " +
                           std::to_string(dim) + " of axis " + std::to_string(axis) + " of " + x.shape().str());
    VariableList outs;
    std::int64_t at = 0;
    for (std::int64_t e : split) {
      Indices ix(static_cast<std::size_t>(axis), Index(Slice()));
      ix.emplace_back(Slice(at, at + e));
      at += e;
      outs.push_back(is_int(x) ? fixed(dezero::get_item(x.data(), ix)) : F::get_item(x, ix));
    }
    return outs;
  };
  return d;
}

// Pad: `pads` is [x1_begin, x2_begin, ..., x1_end, x2_end, ...]. Constant mode through pad()
// (negative pads crop); edge, reflect and wrap (opset 19) modes crop first, then gather each
// padded axis with an index array (F::get_item, so the gradient scatters back).
Variable pad_op(const OpContext& ctx, const Variable& x, const std::vector<std::int64_t>& pads, double value) {
  const int r = x.ndim();
  if (pads.size() != static_cast<std::size_t>(2 * r))
    ctx.malformed("pads has " + std::to_string(pads.size()) + " values for an input of rank " + std::to_string(r) +
                  " (2 * rank expected)");
  const std::string mode = ctx.attrs().s("mode", "constant");
  std::vector<std::pair<std::int64_t, std::int64_t>> pp, crop;
  std::vector<std::int64_t> out;  // the result's shape
  for (int i = 0; i < r; ++i) {
    const std::int64_t b = pads[static_cast<std::size_t>(i)], e = pads[static_cast<std::size_t>(i + r)];
    pp.emplace_back(b, e);
    crop.emplace_back(std::min<std::int64_t>(b, 0), std::min<std::int64_t>(e, 0));
    std::int64_t o = 0;
    if (__builtin_add_overflow(x.shape()[static_cast<std::size_t>(i)], b, &o) || __builtin_add_overflow(o, e, &o))
      o = std::numeric_limits<std::int64_t>::max();
    out.push_back(std::max<std::int64_t>(o, 0));
  }
  check_output_size(ctx, out, "padded output");
  auto no_graph_for_ints = [&] { return using_config("enable_backprop", Config::enable_backprop && !is_int(x)); };
  if (mode == "constant") {
    auto g = no_graph_for_ints();
    Variable y = F::pad(x, pp, value);
    return is_int(x) ? fixed(y.data()) : y;
  }
  auto g = no_graph_for_ints();
  Variable y = F::pad(x, crop, 0.0);
  for (int i = 0; i < r; ++i) {
    const std::int64_t b = std::max<std::int64_t>(pp[static_cast<std::size_t>(i)].first, 0);
    const std::int64_t e = std::max<std::int64_t>(pp[static_cast<std::size_t>(i)].second, 0);
    if (b == 0 && e == 0) continue;
    const std::int64_t n = y.shape()[static_cast<std::size_t>(i)];
    if (n == 0) ctx.malformed("cannot " + mode + "-pad axis " + std::to_string(i) + ", which is empty");
    std::vector<std::int64_t> idx;
    for (std::int64_t p = -b; p < n + e; ++p) {
      std::int64_t q = p;
      if (mode == "edge") {
        q = std::clamp<std::int64_t>(p, 0, n - 1);
      } else if (mode == "wrap") {  // period n: the other end's elements
        q = ((p % n) + n) % n;
      } else if (n == 1) {
        q = 0;
      } else {  // reflect about the first and last elements, period 2 (n - 1)
        const std::int64_t period = 2 * (n - 1);
        q = ((p % period) + period) % period;
        if (q >= n) q = period - q;
      }
      idx.push_back(q);
    }
    Indices ix(static_cast<std::size_t>(i), Index(Slice()));
    ix.emplace_back(array(idx, Shape{static_cast<std::int64_t>(idx.size())}, int64, y.device()));
    y = F::get_item(y, ix);
  }
  return is_int(x) ? fixed(y.data()) : y;
}

void check_pad_mode(const Attrs& a) {
  const std::string mode = a.s("mode", "constant");
  if (mode == "wrap" && a.opset < 19)
    unsupported(a.node, a.opset, "mode 'wrap', which came in opset 19 (constant, edge and reflect are)");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    unsupported(a.node, a.opset, "mode '" + mode + "' (dezero pads in the modes constant, edge, reflect and wrap)");
}

// Pad from 18: the optional input 3 names the axes that `pads` (2 * len(axes) values) pads; the
// others get 0. Returns pads for every axis, as pad_op wants them.
std::vector<std::int64_t> pads_on_axes(const OpContext& ctx, int rank, const std::vector<std::int64_t>& pads) {
  if (!ctx.has_input(3)) return pads;
  const std::vector<std::int64_t> axes = ctx.int_list(3);
  if (pads.size() != 2 * axes.size())
    ctx.malformed("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) +
                  " axes " + shape_str(axes) + " (2 * the number of axes expected)");
  std::vector<std::int64_t> full(static_cast<std::size_t>(2 * rank), 0);
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t j = 0; j < axes.size(); ++j) {
    const int a = axis_in(ctx, axes[j], rank, "pad axis");
    if (seen[static_cast<std::size_t>(a)])
      ctx.malformed("axis " + std::to_string(a) + " is named twice in axes " + shape_str(axes));
    seen[static_cast<std::size_t>(a)] = true;
    full[static_cast<std::size_t>(a)] = pads[j];
    full[static_cast<std::size_t>(a + rank)] = pads[j + axes.size()];
  }
  return full;
}

// Cast's target type; bool is int64 0/1.
bool cast_target(int to, DType* dtype, bool* to_bool) {
  *to_bool = false;
  switch (to) {
    case ::onnx::TensorProto::FLOAT: *dtype = float32; return true;
    case ::onnx::TensorProto::DOUBLE: *dtype = float64; return true;
    case ::onnx::TensorProto::INT32: *dtype = int32; return true;
    case ::onnx::TensorProto::INT64: *dtype = int64; return true;
    case ::onnx::TensorProto::FLOAT16: *dtype = float16; return true;
    case ::onnx::TensorProto::BFLOAT16: *dtype = bfloat16; return true;
    case ::onnx::TensorProto::BOOL: *dtype = int64; *to_bool = true; return true;
    default: return false;
  }
}

}  // namespace

// --- the table ----------------------------------------------------------------------------------
void register_shape_ops(OpTable& table) {
  // shapes
  table.push_back(reshape_def(false));
  table.push_back(reshape_def(true));
  table.push_back(simple("Transpose", 7, 20, {"perm"}, [](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    std::vector<int> perm;
    for (std::int64_t p : ctx.attrs().ints("perm")) perm.push_back(axis_in(ctx, p, x.ndim(), "perm entry"));
    if (!perm.empty() && perm.size() != static_cast<std::size_t>(x.ndim()))
      ctx.malformed("perm has " + std::to_string(perm.size()) + " entries for an input of rank " +
                    std::to_string(x.ndim()));
    if (is_int(x)) return {fixed(dezero::transpose(x.data(), perm))};
    return {F::transpose(x, perm)};
  }));
  table.push_back(simple("Flatten", 7, 20, {"axis"}, [](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    const int r = x.ndim();
    std::int64_t axis = ctx.attrs().i("axis", 1);
    if (axis < -r || axis > r)
      ctx.malformed("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
    if (axis < 0) axis += r;
    std::int64_t n = 1, m = 1;
    for (int i = 0; i < r; ++i) (i < axis ? n : m) *= x.shape()[static_cast<std::size_t>(i)];
    return {reshape_to(x, Shape{n, m})};
  }));
  table.push_back(simple("Expand", 8, 20, {}, [](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    const std::vector<std::int64_t> shape = ctx.int_list(1);
    for (std::int64_t s : shape)
      if (s < 0) ctx.malformed("negative extent in shape " + shape_str(shape));
    const Shape out = broadcast_shapes(x.shape(), Shape(shape), "Expand");
    check_output_size(ctx, std::vector<std::int64_t>(out.begin(), out.end()), "output");
    if (is_int(x)) return {fixed(dezero::broadcast_to(x.data(), out))};
    return {F::broadcast_to(x, out)};
  }));
  table.push_back(squeeze_def(false, false));
  table.push_back(squeeze_def(false, true));
  table.push_back(squeeze_def(true, false));
  table.push_back(squeeze_def(true, true));
  table.push_back(simple(
      "Concat", 7, 20, {"axis"},
      [](OpContext& ctx) -> VariableList {
        const std::int64_t axis = ctx.attrs().i("axis", 0);
        VariableList xs;
        for (std::size_t i = 0; i < ctx.num_inputs(); ++i)
          if (ctx.has_input(i)) xs.push_back(ctx.input(i));
        if (xs.empty()) ctx.malformed("needs at least one input");
        const int ax = axis_in(ctx, axis, xs[0].ndim());
        if (int_inputs(ctx)) {
          std::vector<Tensor> ts;
          for (const Variable& v : xs) ts.push_back(on(v.data(), xs[0].device()));
          return {fixed(dezero::concatenate(ts, ax))};
        }
        return {F::concat(xs, ax)};
      },
      [](const Attrs& a) {
        if (!a.has("axis")) malformed(a.node, a.opset, "attribute 'axis' is required");
      }));
  table.push_back(slice_def(false));
  table.push_back(slice_def(true));
  table.push_back(split_def(7, 12));   // split an attribute (a negative axis from 11)
  table.push_back(split_def(13, 17));  // split an input
  table.push_back(split_def(18, 20));  // num_outputs
  table.push_back(simple(
      "Pad", 7, 10, {"mode", "pads", "value"},
      [](OpContext& ctx) -> VariableList {
        return {pad_op(ctx, ctx.input(0), ctx.attrs().ints("pads"), ctx.attrs().f("value", 0.0f))};
      },
      [](const Attrs& a) {
        check_pad_mode(a);
        if (!a.has("pads")) malformed(a.node, a.opset, "attribute 'pads' is required");
      }));
  table.push_back(simple(
      "Pad", 11, 17, {"mode"},
      [](OpContext& ctx) -> VariableList {
        const double value = ctx.has_input(2) ? scalar_input(ctx, 2) : 0.0;
        return {pad_op(ctx, ctx.input(0), ctx.int_list(1), value)};
      },
      check_pad_mode));
  // 18: the optional axes input; 19: mode wrap (check_pad_mode reads the opset)
  for (const auto& [lo, hi] : {std::pair<int, int>{18, 18}, std::pair<int, int>{19, 20}})
    table.push_back(simple(
        "Pad", lo, hi, {"mode"},
        [](OpContext& ctx) -> VariableList {
          const Variable& x = ctx.input(0);
          const double value = ctx.has_input(2) ? scalar_input(ctx, 2) : 0.0;
          return {pad_op(ctx, x, pads_on_axes(ctx, x.ndim(), ctx.int_list(1)), value)};
        },
        check_pad_mode));

  // pass-through and shape arithmetic
  table.push_back(simple("Identity", 7, 20, {}, [](OpContext& ctx) -> VariableList { return {ctx.input(0)}; }));
  table.push_back(simple("Shape", 7, 14, {}, [](OpContext& ctx) -> VariableList {
    const Shape& s = ctx.input(0).shape();
    return {fixed(array(std::vector<std::int64_t>(s.begin(), s.end())))};
  }));
  table.push_back(simple("Shape", 15, 20, {"start", "end"}, [](OpContext& ctx) -> VariableList {
    const Shape& s = ctx.input(0).shape();
    const auto r = static_cast<std::int64_t>(s.size());
    std::int64_t start = ctx.attrs().i("start", 0), end = ctx.attrs().i("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<std::int64_t>(start, 0, r);
    end = std::clamp<std::int64_t>(end, start, r);
    return {fixed(array(std::vector<std::int64_t>(s.begin() + start, s.begin() + end)))};
  }));
  table.push_back(simple("Size", 7, 20, {}, [](OpContext& ctx) -> VariableList {
    return {fixed(array(std::int64_t{ctx.input(0).size()}))};
  }));
  table.push_back(simple("Range", 11, 20, {}, [](OpContext& ctx) -> VariableList {
    const DType dt = ctx.input(0).dtype();
    const double start = scalar_input(ctx, 0), limit = scalar_input(ctx, 1), delta = scalar_input(ctx, 2);
    if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta) || delta == 0)
      throw ValueError("onnx import: " + describe_node(ctx.node(), ctx.opset()) + ": start " + std::to_string(start) +
                       ", limit " + std::to_string(limit) + " and delta " + std::to_string(delta) +
                       " must be finite, and delta not 0");
    const double count = std::max(std::ceil((limit - start) / delta), 0.0);
    check_output_size(ctx, {count < 9.0e18 ? static_cast<std::int64_t>(count) : std::numeric_limits<std::int64_t>::max()},
                      "output");
    Tensor r = arange(start, limit, delta, dt);
    return {fixed(is_integer(dt) ? r : r.to(ctx.device()))};
  }));
  // Cast 19 adds saturate, which only changes casts to float8 types (refused: cast_target)
  const auto run_cast = [](OpContext& ctx) -> VariableList {
    DType dtype = float32;
    bool to_bool = false;
    cast_target(static_cast<int>(ctx.attrs().i("to", 0)), &dtype, &to_bool);
    const Variable& x = ctx.input(0);
    if (to_bool) return {fixed(flag(x.data()).astype(int64))};
    if (is_integer(dtype)) return {fixed(x.data().astype(dtype))};
    return {F::cast(x, dtype)};
  };
  const auto check_cast = [](const Attrs& a) {
    DType dtype = float32;
    bool to_bool = false;
    if (!a.has("to")) malformed(a.node, a.opset, "attribute 'to' is required");
    const std::int64_t to = a.i("to", 0);
    if (!cast_target(static_cast<int>(to), &dtype, &to_bool)) {
      const char* n = ::onnx::TensorProto::DataType_IsValid(static_cast<int>(to))
                          ? ::onnx::TensorProto::DataType_Name(static_cast<::onnx::TensorProto::DataType>(to)).c_str()
                          : nullptr;
      unsupported(a.node, a.opset,
                  "a cast to " + (n ? std::string(n) : "element type " + std::to_string(to)) +
                      " (dezero casts to FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT32, INT64 and BOOL)");
    }
  };
  table.push_back(simple("Cast", 7, 18, {"to"}, run_cast, check_cast));
  table.push_back(simple("Cast", 19, 20, {"saturate", "to"}, run_cast, check_cast));
  table.push_back(simple(
      "ConstantOfShape", 9, 20, {"value"},
      [](OpContext& ctx) -> VariableList {
        Tensor value = ctx.attrs().has("value") ? ctx.attrs().tensor("value") : zeros(Shape{1}, float32);
        std::vector<std::int64_t> dims = ctx.int_list(0);
        for (std::int64_t s : dims)
          if (s < 0) ctx.malformed("negative extent in shape " + shape_str(dims));
        check_output_size(ctx, dims, "output");
        const DType dt = value.dtype();
        const double v = value.astype(float64).flatten().item<double>();
        return {fixed(full(Shape(dims), v, dt, is_integer(dt) ? Device::cpu() : ctx.device()))};
      },
      [](const Attrs& a) {
        if (a.has("value") && a.tensor("value").size() != 1)
          malformed(a.node, a.opset, "attribute 'value' must hold exactly one element");
      }));
}


}  // namespace dezero::onnx::detail
