// dezero/onnx/import_ops_math.cpp - internal: the importer's element-wise math, comparisons and
// logic, Where, Clip, Softmax / LogSoftmax, reductions and ArgMax / ArgMin (register_math_ops,
// ops.hpp).
//
// Floating-point values go through DeZero Functions (dezero::F; Max, Min, Pow, Where, Sqrt and Abs
// are F::maximum, F::minimum, F::pow, F::where, F::sqrt and F::abs), so an imported graph
// differentiates. Integer values (shapes, indices, flags) are computed directly
// on Tensors and carry no gradient; ONNX's bool is dezero's int64 0/1 (proto.cpp reads it so).
// Mod (integer remainders, Swin's windows) is here too. Besides the ops the table has
// the comparisons, logic, Where and ArgMax/ArgMin that exporters and ONNX's function expansions
// use. Where an op changed between opsets 7 and 20 (Softmax's 2-d coercion before 13, the Reduce*
// axes that became an input in 13 (ReduceSum) and 18 (the others), Clip's bounds in 11) the table
// has one OpDef per form. Gelu is opset 20's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dezero/functions.hpp"
#include "dezero/onnx/import_util.hpp"
#include "dezero/onnx/ops.hpp"

namespace dezero::onnx::detail {

namespace {

// --- element-wise -------------------------------------------------------------------------------
using VarBinary = Variable (*)(const Variable&, const Variable&);
using TenBinary = Tensor (*)(const Tensor&, const Tensor&);

Tensor int_div(const Tensor& a, const Tensor& b) {  // ONNX's integer Div truncates toward zero
  return (a.astype(float64) / b.astype(float64)).astype(promote_types(a.dtype(), b.dtype()));
}

OpDef binary(const std::string& name, int min_opset, VarBinary vf, TenBinary tf) {
  OpDef d;
  d.op_type = name;
  d.min_opset = min_opset;
  d.run = [vf, tf](OpContext& ctx) -> VariableList {
    const Variable& a = ctx.input(0);
    const Variable& b = ctx.input(1);
    if (is_int(a) && is_int(b)) return {fixed(tf(a.data(), on(b.data(), a.device())))};
    return {vf(a, b)};
  };
  return d;
}

using VarUnary = Variable (*)(const Variable&);
using TenUnary = Tensor (*)(const Tensor&);

// A float op; an integer input is computed on Tensors by `tf` (or refused when there is none).
OpDef unary(const std::string& name, int min_opset, VarUnary vf, TenUnary tf = nullptr) {
  OpDef d;
  d.op_type = name;
  d.min_opset = min_opset;
  d.run = [vf, tf, name](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    if (is_int(x)) {
      if (!tf) ctx.unsupported(name + " of an integer tensor (" + dtype_name(x.dtype()) + ")");
      return {fixed(tf(x.data()))};
    }
    return {vf(x)};
  };
  return d;
}

Variable neg_v(const Variable& x) { return F::neg(x); }
Tensor neg_t(const Tensor& x) { return -x; }
Variable exp_v(const Variable& x) { return F::exp(x); }
Variable log_v(const Variable& x) { return F::log(x); }
Variable sin_v(const Variable& x) { return F::sin(x); }
Variable cos_v(const Variable& x) { return F::cos(x); }
Variable tanh_v(const Variable& x) { return F::tanh(x); }
Variable sigmoid_v(const Variable& x) { return F::sigmoid(x); }
Variable relu_v(const Variable& x) { return F::relu(x); }
Variable erf_v(const Variable& x) { return F::erf(x); }
Tensor erf_t(const Tensor& x) { return dezero::erf(x); }
Variable hard_swish_v(const Variable& x) { return F::hard_swish(x); }
Tensor relu_t(const Tensor& x) { return dezero::relu(x); }
Variable sqrt_v(const Variable& x) { return F::sqrt(x); }
Variable abs_v(const Variable& x) { return F::abs(x); }
Tensor abs_t(const Tensor& x) { return dezero::abs(x); }
Variable reciprocal_v(const Variable& x) { return F::rdiv(x, 1.0); }

Variable add_v(const Variable& a, const Variable& b) { return F::add(a, b); }
Variable sub_v(const Variable& a, const Variable& b) { return F::sub(a, b); }
Variable mul_v(const Variable& a, const Variable& b) { return F::mul(a, b); }
Variable div_v(const Variable& a, const Variable& b) { return F::div(a, b); }
Tensor add_t(const Tensor& a, const Tensor& b) { return a + b; }
Tensor sub_t(const Tensor& a, const Tensor& b) { return a - b; }
Tensor mul_t(const Tensor& a, const Tensor& b) { return a * b; }

// Max / Min / Sum / Mean of one or more inputs, folded left to right.
OpDef variadic(const std::string& name, int min_opset, VarBinary vf, TenBinary tf, bool mean = false) {
  OpDef d;
  d.op_type = name;
  d.min_opset = min_opset;
  d.run = [vf, tf, mean](OpContext& ctx) -> VariableList {
    if (ctx.num_inputs() == 0) ctx.malformed("needs at least one input");
    const bool ints = int_inputs(ctx);
    Variable acc = ctx.input(0);
    for (std::size_t i = 1; i < ctx.num_inputs(); ++i) {
      const Variable& x = ctx.input(i);
      acc = ints ? fixed(tf(acc.data(), on(x.data(), acc.device()))) : vf(acc, x);
    }
    if (mean && ctx.num_inputs() > 1) {
      if (ints) ctx.unsupported("Mean of integer tensors");
      acc = F::div(acc, static_cast<double>(ctx.num_inputs()));
    }
    return {acc};
  };
  return d;
}

Variable max_v(const Variable& a, const Variable& b) { return F::maximum(a, b); }
Variable min_v(const Variable& a, const Variable& b) { return F::minimum(a, b); }
Tensor max_t(const Tensor& a, const Tensor& b) { return dezero::maximum(a, b); }
Tensor min_t(const Tensor& a, const Tensor& b) { return dezero::minimum(a, b); }

// Comparisons and logic give ONNX's bool as int64 0/1.
OpDef compare(const std::string& name, int min_opset, TenBinary tf) {
  OpDef d;
  d.op_type = name;
  d.min_opset = min_opset;
  d.run = [tf](OpContext& ctx) -> VariableList {
    const Tensor& a = ctx.input(0).data();
    return {fixed(tf(a, on(ctx.input(1).data(), a.device())).astype(int64))};
  };
  return d;
}

Tensor eq_t(const Tensor& a, const Tensor& b) { return dezero::equal(a, b); }
Tensor gt_t(const Tensor& a, const Tensor& b) { return dezero::greater(a, b); }
Tensor ge_t(const Tensor& a, const Tensor& b) { return dezero::greater_equal(a, b); }
Tensor lt_t(const Tensor& a, const Tensor& b) { return dezero::less(a, b); }
Tensor le_t(const Tensor& a, const Tensor& b) { return dezero::less_equal(a, b); }
Tensor and_t(const Tensor& a, const Tensor& b) { return flag(a) * flag(b); }
Tensor or_t(const Tensor& a, const Tensor& b) { return flag(flag(a) + flag(b)); }
Tensor xor_t(const Tensor& a, const Tensor& b) { return dezero::not_equal(flag(a), flag(b)); }

// --- softmax ------------------------------------------------------------------------------------
// Before opset 13 the input is coerced to 2-d at `axis` (default 1) and normalised over the
// second axis; from 13 over the one axis (default -1).
OpDef softmax_def(const std::string& name, bool log, bool v13) {
  OpDef d;
  d.op_type = name;
  d.min_opset = v13 ? 13 : 7;
  d.max_opset = v13 ? 20 : 12;
  d.attributes = {"axis"};
  d.run = [log, v13](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    const int r = x.ndim();
    if (r == 0) ctx.malformed("needs an input of rank 1 or more, got a 0-d tensor");
    if (v13) {
      const int axis = axis_in(ctx, ctx.attrs().i("axis", -1), r);
      return {log ? F::log_softmax(x, axis) : F::softmax(x, axis)};
    }
    const std::int64_t a = ctx.attrs().i("axis", 1);
    if (a < -r || a > r) ctx.malformed("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
    const int axis = static_cast<int>(a < 0 ? a + r : a);
    std::int64_t n = 1, m = 1;
    for (int i = 0; i < r; ++i) (i < axis ? n : m) *= x.shape()[static_cast<std::size_t>(i)];
    Variable x2 = F::reshape(x, Shape{n, m});
    Variable y = log ? F::log_softmax(x2, 1) : F::softmax(x2, 1);
    return {F::reshape(y, x.shape())};
  };
  return d;
}

// --- reductions ---------------------------------------------------------------------------------
enum class Reduce { Sum, Max, Min, Mean };

// Axes from the attribute (every Reduce* before 13, all but ReduceSum up to 17) or from the
// optional input 1, with noop_with_empty_axes (ReduceSum from 13, ReduceMax, ReduceMin and
// ReduceMean from 18). ReduceMax / ReduceMin 20 add bool, which is read as int64 already.
OpDef reduce_def(const std::string& name, Reduce kind, int min_opset, int max_opset, bool axes_input) {
  OpDef d;
  d.op_type = name;
  d.min_opset = min_opset;
  d.max_opset = max_opset;
  d.attributes = axes_input ? std::vector<std::string>{"keepdims", "noop_with_empty_axes"}
                            : std::vector<std::string>{"axes", "keepdims"};
  d.run = [kind, axes_input](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    const bool keepdims = ctx.attrs().i("keepdims", 1) != 0;
    std::vector<std::int64_t> axes;
    if (axes_input) {
      if (ctx.has_input(1)) axes = ctx.int_list(1);
      if (axes.empty() && ctx.attrs().i("noop_with_empty_axes", 0) != 0) return {x};
    } else {
      axes = ctx.attrs().ints("axes");
    }
    Axes ax;  // all axes
    if (!axes.empty()) {
      std::vector<int> list;
      for (std::int64_t a : axes) list.push_back(axis_in(ctx, a, x.ndim(), "reduction axis"));
      ax = Axes(list);
    }
    if (is_int(x)) {
      const Tensor& t = x.data();
      switch (kind) {
        case Reduce::Sum: return {fixed(dezero::sum(t, ax, keepdims))};
        case Reduce::Max: return {fixed(dezero::max(t, ax, keepdims))};
        case Reduce::Min: return {fixed(dezero::min(t, ax, keepdims))};
        case Reduce::Mean: return {fixed(dezero::mean(t, ax, keepdims).astype(t.dtype()))};
      }
    }
    switch (kind) {
      case Reduce::Sum: return {F::sum(x, ax, keepdims)};
      case Reduce::Max: return {F::max(x, ax, keepdims)};
      case Reduce::Min: return {F::min(x, ax, keepdims)};
      case Reduce::Mean: break;
    }
    return {F::mean(x, ax, keepdims)};
  };
  return d;
}

// ArgMax / ArgMin along one axis, int64; select_last_index searches the flipped axis.
OpDef arg_def(bool is_max, bool v12) {
  OpDef d;
  d.op_type = is_max ? "ArgMax" : "ArgMin";
  d.min_opset = v12 ? 12 : 7;
  d.max_opset = v12 ? 20 : 11;
  d.attributes = {"axis", "keepdims"};
  if (v12) d.attributes.push_back("select_last_index");
  d.run = [is_max, v12](OpContext& ctx) -> VariableList {
    Tensor x = ctx.input(0).data();
    if (x.ndim() == 0) ctx.malformed("needs an input of rank 1 or more, got a 0-d tensor");
    const int axis = axis_in(ctx, ctx.attrs().i("axis", 0), x.ndim());
    const bool last = v12 && ctx.attrs().i("select_last_index", 0) != 0;
    if (last) {
      Indices flip(static_cast<std::size_t>(axis), Index(Slice()));
      flip.emplace_back(Slice(std::nullopt, std::nullopt, -1));
      x = dezero::get_item(x, flip);
    }
    Tensor i = is_max ? x.argmax(axis) : x.argmin(axis);
    if (last) i = (static_cast<double>(x.shape()[static_cast<std::size_t>(axis)] - 1) - i).astype(int64);
    if (ctx.attrs().i("keepdims", 1) != 0) i = expand_dims(i, axis);
    return {fixed(i)};
  };
  return d;
}

// --- Mod --------------------------------------------------------------------------------------------
// The remainder of A / B, broadcast. fmod = 0 (integers only) takes the divisor's sign, as Python's
// %; fmod = 1 the dividend's, as C's fmod. Integers are computed on the host (a zero divisor is a
// ValueError); a float remainder is A - q B with the quotient q = trunc(A / B) a constant, so its
// gradient is 1 for A and -q for B (Swin's shifted windows use it on integers).
VariableList run_mod(OpContext& ctx) {
  const Variable& a = ctx.input(0);
  const Variable& b = ctx.input(1);
  const bool c_fmod = ctx.attrs().i("fmod", 0) == 1;
  if (is_int(a) != is_int(b))
    ctx.malformed(std::string("A (") + dtype_name(a.dtype()) + ") and B (" + dtype_name(b.dtype()) + ") must have one type");
  const Shape s = broadcast_shapes(a.shape(), b.shape(), "Mod");
  check_output_size(ctx, std::vector<std::int64_t>(s.begin(), s.end()), "output");
  auto host = [&](const Variable& v, DType dt) { return dezero::broadcast_to(v.data().to_cpu().astype(dt), s); };
  if (is_int(a)) {
    const std::vector<std::int64_t> av = host(a, int64).to_vector<std::int64_t>(),
                                    bv = host(b, int64).to_vector<std::int64_t>();
    std::vector<std::int64_t> r(av.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (bv[i] == 0) throw ValueError(describe_node(ctx.node(), ctx.opset()) + ": integer division by zero");
      if (bv[i] == -1) { r[i] = 0; continue; }  // INT64_MIN % -1 overflows in C++
      r[i] = av[i] % bv[i];
      if (!c_fmod && r[i] != 0 && ((r[i] < 0) != (bv[i] < 0))) r[i] += bv[i];
    }
    return {fixed(array(r, s, int64).astype(a.dtype()).to(a.device()))};
  }
  if (!c_fmod) ctx.malformed("fmod must be 1 for floating-point inputs");
  const std::vector<double> av = host(a, float64).to_vector<double>(), bv = host(b, float64).to_vector<double>();
  std::vector<double> q(av.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = std::trunc(av[i] / bv[i]);
  Variable qv = fixed(array(q, s, float64).astype(promote_types(a.dtype(), b.dtype())).to(a.device()));
  return {F::sub(a, F::mul(qv, b))};
}

}  // namespace

// --- the table ----------------------------------------------------------------------------------
void register_math_ops(OpTable& table) {
  // element-wise arithmetic (numpy broadcasting from opset 7)
  table.push_back(binary("Add", 7, add_v, add_t));
  table.push_back(binary("Sub", 7, sub_v, sub_t));
  table.push_back(binary("Mul", 7, mul_v, mul_t));
  table.push_back(binary("Div", 7, div_v, int_div));
  table.push_back(unary("Neg", 7, neg_v, neg_t));
  table.push_back(unary("Exp", 7, exp_v));
  table.push_back(unary("Log", 7, log_v));
  table.push_back(unary("Sin", 7, sin_v));
  table.push_back(unary("Cos", 7, cos_v));
  table.push_back(unary("Tanh", 7, tanh_v));
  table.push_back(unary("Sigmoid", 7, sigmoid_v));
  table.push_back(unary("Relu", 7, relu_v, relu_t));
  table.push_back(unary("Sqrt", 7, sqrt_v));
  table.push_back(unary("Abs", 7, abs_v, abs_t));
  table.push_back(unary("Reciprocal", 7, reciprocal_v));
  table.push_back(simple("LeakyRelu", 7, 20, {"alpha"}, [](OpContext& ctx) -> VariableList {
    return {F::leaky_relu(ctx.input(0), ctx.attrs().f("alpha", 0.01f))};
  }));
  // the activations of PyTorch's model zoo: GELU as Erf (ViT, ConvNeXt), MobileNet V3's hard ones
  table.push_back(unary("Erf", 9, erf_v, erf_t));
  table.push_back(simple("HardSigmoid", 7, 20, {"alpha", "beta"}, [](OpContext& ctx) -> VariableList {
    return {F::hard_sigmoid(ctx.input(0), ctx.attrs().f("alpha", 0.2f), ctx.attrs().f("beta", 0.5f))};
  }));
  table.push_back(unary("HardSwish", 14, hard_swish_v));
  // Gelu (opset 20): F::gelu, whose two forms carry ONNX's names ("none", the erf form; "tanh")
  table.push_back(simple(
      "Gelu", 20, 20, {"approximate"},
      [](OpContext& ctx) -> VariableList {
        const Variable& x = float_input(ctx, 0, "X");
        return {F::gelu(x, ctx.attrs().s("approximate", "none"))};
      },
      [](const Attrs& a) {
        const std::string m = a.s("approximate", "none");
        if (m != "none" && m != "tanh") unsupported(a.node, a.opset, "approximate '" + m + "' (none and tanh are)");
      }));
  // Pow: the result has the base's type; an integer base is computed on Tensors. A fixed
  // one-element exponent (PyTorch's x ** 2: a Constant) is F::pow's constant exponent.
  table.push_back(simple("Pow", 7, 20, {}, [](OpContext& ctx) -> VariableList {
    const Variable& x = ctx.input(0);
    const Variable& y = ctx.input(1);
    if (is_int(x)) {
      Tensor r = dezero::pow(x.data().astype(float64), on(y.data(), x.device()).astype(float64));
      return {fixed(r.astype(x.dtype()))};
    }
    if (!y.requires_grad() && !y.creator() && y.size() == 1 && y.ndim() <= x.ndim())
      return {F::pow(x, y.data().to_cpu().astype(float64).item<double>())};
    return {F::pow(x, y)};
  }));
  table.push_back(variadic("Max", 7, max_v, max_t));
  table.push_back(variadic("Min", 7, min_v, min_t));
  table.push_back(variadic("Sum", 7, add_v, add_t));
  table.push_back(variadic("Mean", 7, add_v, add_t, true));

  // Clip: bounds as attributes before 11, as optional inputs from 11.
  table.push_back(simple(
      "Clip", 7, 10, {"min", "max"},
      [](OpContext& ctx) -> VariableList {
        const double lo = ctx.attrs().f("min", std::numeric_limits<float>::lowest());
        const double hi = ctx.attrs().f("max", std::numeric_limits<float>::max());
        const Variable& x = ctx.input(0);
        if (is_int(x)) return {fixed(dezero::clip(x.data(), std::min(lo, hi), hi).astype(x.dtype()))};
        return {lo > hi ? F::clip(x, hi, hi) : F::clip(x, lo, hi)};
      }));
  table.push_back(simple("Clip", 11, 20, {}, [](OpContext& ctx) -> VariableList {
    const double inf = std::numeric_limits<double>::infinity();
    const double lo = ctx.has_input(1) ? scalar_input(ctx, 1) : -inf;
    const double hi = ctx.has_input(2) ? scalar_input(ctx, 2) : inf;
    const Variable& x = ctx.input(0);
    if (is_int(x)) return {fixed(dezero::clip(x.data(), std::min(lo, hi), hi).astype(x.dtype()))};
    return {lo > hi ? F::clip(x, hi, hi) : F::clip(x, lo, hi)};
  }));

  table.push_back(simple("Mod", 10, 20, {"fmod"}, run_mod, [](const Attrs& a) {
    const std::int64_t f = a.i("fmod", 0);
    if (f != 0 && f != 1) malformed(a.node, a.opset, "fmod must be 0 or 1");
  }));

  // comparisons and logic (bool as int64 0/1)
  table.push_back(compare("Equal", 7, eq_t));
  table.push_back(compare("Greater", 7, gt_t));
  table.push_back(compare("Less", 7, lt_t));
  table.push_back(compare("GreaterOrEqual", 12, ge_t));
  table.push_back(compare("LessOrEqual", 12, le_t));
  table.push_back(compare("And", 7, and_t));
  table.push_back(compare("Or", 7, or_t));
  table.push_back(compare("Xor", 7, xor_t));
  table.push_back(simple("Not", 7, 20, {}, [](OpContext& ctx) -> VariableList {
    const Tensor& x = ctx.input(0).data();
    return {fixed(dezero::equal(x, zeros_like(x)).astype(int64))};
  }));
  table.push_back(simple("Where", 9, 20, {}, [](OpContext& ctx) -> VariableList {
    const Variable& a = ctx.input(1);
    const Variable& b = ctx.input(2);
    Tensor cond = on(ctx.input(0).data(), a.device());
    if (is_int(a) && is_int(b)) return {fixed(dezero::where(cond, a.data(), on(b.data(), a.device())))};
    return {F::where(cond, a, b)};
  }));

  // softmax
  table.push_back(softmax_def("Softmax", false, false));
  table.push_back(softmax_def("Softmax", false, true));
  table.push_back(softmax_def("LogSoftmax", true, false));
  table.push_back(softmax_def("LogSoftmax", true, true));

  // reductions
  table.push_back(reduce_def("ReduceSum", Reduce::Sum, 7, 12, false));
  table.push_back(reduce_def("ReduceSum", Reduce::Sum, 13, 20, true));
  table.push_back(reduce_def("ReduceMax", Reduce::Max, 7, 17, false));
  table.push_back(reduce_def("ReduceMax", Reduce::Max, 18, 20, true));
  table.push_back(reduce_def("ReduceMin", Reduce::Min, 7, 17, false));
  table.push_back(reduce_def("ReduceMin", Reduce::Min, 18, 20, true));
  table.push_back(reduce_def("ReduceMean", Reduce::Mean, 7, 17, false));
  table.push_back(reduce_def("ReduceMean", Reduce::Mean, 18, 20, true));

  // the index of the largest / smallest element
  table.push_back(arg_def(true, false));
  table.push_back(arg_def(true, true));
  table.push_back(arg_def(false, false));
  table.push_back(arg_def(false, true));
}

}  // namespace dezero::onnx::detail
