// dezero/onnx/export_ops.cpp - the exporter's emitters: each Function, by its name(), becomes
// one ONNX node or a few. The emitters read the Function's hyperparameters from
// Function::attributes(); export.cpp walks the graph and calls them.
//
// Where DeZero and ONNX differ the emitters write DeZero's semantics: pooling pads with zeros
// (a Pad node before MaxPool and AveragePool), the losses divide by the batch size (a ReduceMean
// over axis 0, so that a dynamic batch works).
//
// Names: inside dezero::onnx, ONNX's own classes are spelt ::onnx::ModelProto.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "dezero/onnx/export.hpp"

namespace dezero::onnx::detail::exporter {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();

std::int64_t norm_axis(std::int64_t a, int ndim) { return a < 0 ? a + ndim : a; }

// --- emitters: element-wise ---------------------------------------------------------------------
void unary(Writer& w, const Call& c, const char* op) { w.node(op, {c.x(w, 0)}, {c.out[0]}); }
void binary(Writer& w, const Call& c, const char* op) { w.node(op, {c.x(w, 0), c.x(w, 1)}, {c.out[0]}); }
// x (op) c, or c (op) x for the reversed forms (RSubConst, RDivConst): one input and "c".
void with_const(Writer& w, const Call& c, const char* op, bool reversed) {
  std::string k = w.scalar(c.f("c"), c.out_dtype(), c.base + "/c");
  std::string x = c.x(w, 0);
  w.node(op, reversed ? std::vector<std::string>{k, x} : std::vector<std::string>{x, k}, {c.out[0]});
}
void emit_add(Writer& w, const Call& c) { c.n_in() == 1 ? with_const(w, c, "Add", false) : binary(w, c, "Add"); }
void emit_sub(Writer& w, const Call& c) { c.n_in() == 1 ? with_const(w, c, "Sub", true) : binary(w, c, "Sub"); }
void emit_mul(Writer& w, const Call& c) { c.n_in() == 1 ? with_const(w, c, "Mul", false) : binary(w, c, "Mul"); }
void emit_div(Writer& w, const Call& c) { c.n_in() == 1 ? with_const(w, c, "Div", true) : binary(w, c, "Div"); }
void emit_pow(Writer& w, const Call& c) {
  w.node("Pow", {c.x(w, 0), w.scalar(c.f("c"), c.out_dtype(), c.base + "/c")}, {c.out[0]});
}
void emit_clip(Writer& w, const Call& c) {
  DType dt = c.out_dtype();
  w.node("Clip", {c.x(w, 0), w.scalar(c.f("lo"), dt, c.base + "/min"), w.scalar(c.f("hi"), dt, c.base + "/max")},
         {c.out[0]});
}
void emit_leaky_relu(Writer& w, const Call& c) { Writer::attr(w.node("LeakyRelu", {c.x(w, 0)}, {c.out[0]}), "alpha", c.f("slope")); }
void emit_softmax(Writer& w, const Call& c, const char* op) {
  Writer::attr(w.node(op, {c.x(w, 0)}, {c.out[0]}), "axis", c.i("axis"));
}

// GELU as PyTorch 1.13 writes it at opsets 13-17 (ONNX's Gelu op came in opset 20):
//   none:  y = x * (erf(x / sqrt 2) + 1) * 0.5
//   tanh:  y = x * (tanh(sqrt(2/pi) (x + 0.044715 x^3)) + 1) * 0.5
void emit_gelu(Writer& w, const Call& c) {
  DType dt = c.out_dtype();
  std::string x = c.x(w, 0), inner;
  auto k = [&](double v, const char* what) { return w.scalar(v, dt, c.base + "/" + what); };
  auto op2 = [&](const char* op, const std::string& a, const std::string& b, const char* what) {
    std::string o = c.tmp(w, what);
    w.node(op, {a, b}, {o});
    return o;
  };
  if (c.get<std::string>("approximate") == "tanh") {
    std::string x3 = op2("Mul", op2("Mul", x, x, "x2"), x, "x3");
    std::string u = op2("Mul", op2("Add", x, op2("Mul", x3, k(0.044715, "c"), "cx3"), "poly"),
                        k(0.79788456080286535588, "sqrt_2_over_pi"), "u");
    inner = c.tmp(w, "tanh");
    w.node("Tanh", {u}, {inner});
  } else {
    std::string scaled = op2("Div", x, k(1.4142135623730950488, "sqrt2"), "scaled");
    inner = c.tmp(w, "erf");
    w.node("Erf", {scaled}, {inner});
  }
  std::string half = op2("Mul", x, op2("Add", inner, k(1.0, "one"), "cdf2"), "x_cdf2");
  w.node("Mul", {half, k(0.5, "half")}, {c.out[0]});
}
void emit_hard_sigmoid(Writer& w, const Call& c) {
  auto& n = w.node("HardSigmoid", {c.x(w, 0)}, {c.out[0]});
  Writer::attr(n, "alpha", c.f("alpha"));
  Writer::attr(n, "beta", c.f("beta"));
}
// HardSwish from opset 14; at 13 as x * HardSigmoid(x; 1/6, 1/2).
void emit_hard_swish(Writer& w, const Call& c) {
  std::string x = c.x(w, 0);
  if (w.opset() >= 14) {
    w.node("HardSwish", {x}, {c.out[0]});
    return;
  }
  std::string g = c.tmp(w, "gate");
  auto& n = w.node("HardSigmoid", {x}, {g});
  Writer::attr(n, "alpha", 1.0 / 6.0);
  Writer::attr(n, "beta", 0.5);
  w.node("Mul", {x, g}, {c.out[0]});
}
// LayerNormalization from opset 17; before, its definition in ReduceMean (axes attribute until
// 17), Sub, Mul, Add, Sqrt, Div nodes.
void emit_layer_norm(Writer& w, const Call& c) {
  const std::int64_t axis = c.i("axis");  // -k: the last k axes
  const double eps = c.f("eps");
  std::string x = c.x(w, 0), gamma = c.x(w, 1);
  std::string beta = c.n_in() > 2 ? c.x(w, 2) : std::string();
  if (w.opset() >= 17) {
    std::vector<std::string> in{x, gamma};
    if (!beta.empty()) in.push_back(beta);
    auto& n = w.node("LayerNormalization", in, {c.out[0]});
    Writer::attr(n, "axis", axis);
    Writer::attr(n, "epsilon", eps);
    return;
  }
  Ints axes;
  for (std::int64_t a = axis; a < 0; ++a) axes.push_back(a);
  auto mean = [&](const std::string& v, const char* what) {
    std::string o = c.tmp(w, what);
    auto& n = w.node("ReduceMean", {v}, {o});
    Writer::attr(n, "axes", axes);
    Writer::attr(n, "keepdims", std::int64_t{1});
    return o;
  };
  auto op2 = [&](const char* op, const std::string& a, const std::string& b, const char* what) {
    std::string o = c.tmp(w, what);
    w.node(op, {a, b}, {o});
    return o;
  };
  std::string xc = op2("Sub", x, mean(x, "mean"), "centered");
  std::string var = mean(op2("Mul", xc, xc, "squared"), "var");
  std::string sd = c.tmp(w, "std");
  w.node("Sqrt", {op2("Add", var, w.scalar(eps, c.out_dtype(), c.base + "/eps"), "var_eps")}, {sd});
  std::string normalized = op2("Div", xc, sd, "normalized");
  if (beta.empty()) {
    w.node("Mul", {normalized, gamma}, {c.out[0]});
  } else {
    w.node("Add", {op2("Mul", normalized, gamma, "scaled"), beta}, {c.out[0]});
  }
}

// --- emitters: shapes -----------------------------------------------------------------------------
// A literal shape for a value whose axis 0 is the input's axis 0: with dynamic_batch it is
// written as 0 ("copy the input's extent"), so the graph runs at any batch size.
Ints batch_shape(const Writer& w, const Shape& out, const Shape& in, bool axis0_kept) {
  Ints s(out.begin(), out.end());
  if (w.dynamic_batch() && axis0_kept && !s.empty() && in.ndim() > 0 && s[0] == in[0]) s[0] = 0;
  return s;
}
void reshape_to(Writer& w, const Call& c, const std::string& x, const Shape& in, bool axis0_kept) {
  w.node("Reshape", {x, w.ints(batch_shape(w, c.out_shape(), in, axis0_kept), c.base + "/shape")}, {c.out[0]});
}
void emit_reshape(Writer& w, const Call& c) { reshape_to(w, c, c.in[0], c.in_shape(0), true); }
void emit_transpose(Writer& w, const Call& c) {
  const int n = c.in_shape(0).ndim();
  Ints perm = c.ints("axes");
  if (perm.empty())
    for (int i = n - 1; i >= 0; --i) perm.push_back(i);
  for (auto& a : perm) a = norm_axis(a, n);
  Writer::attr(w.node("Transpose", {c.in[0]}, {c.out[0]}), "perm", perm);
}
// The axes of a reduction: "axes" normalised, or all of them when absent.
Ints reduce_axes(const Call& c) {
  const int n = c.in_shape(0).ndim();
  Ints axes;
  if (c.has("axes")) {
    for (std::int64_t a : c.ints("axes")) axes.push_back(norm_axis(a, n));
  } else {
    for (int i = 0; i < n; ++i) axes.push_back(i);
  }
  return axes;
}
// ReduceSum (opset 13: the axes are an input) of x over `axes` into `out`.
void reduce_sum(Writer& w, const Call& c, const std::string& x, const Ints& axes, bool keepdims, const std::string& out) {
  Writer::attr(w.node("ReduceSum", {x, w.ints(axes, c.base + "/axes")}, {out}), "keepdims", std::int64_t{keepdims});
}
void emit_sum(Writer& w, const Call& c) {
  Ints axes = reduce_axes(c);
  if (axes.empty()) return void(w.node("Identity", {c.x(w, 0)}, {c.out[0]}));
  reduce_sum(w, c, c.x(w, 0), axes, c.i("keepdims") != 0, c.out[0]);
}
// mean: ReduceMean, whose count comes from the shape it is run on (the batch it gets).
void emit_mean(Writer& w, const Call& c) {
  Ints axes = reduce_axes(c);
  if (axes.empty()) return void(w.node("Identity", {c.x(w, 0)}, {c.out[0]}));
  auto& n = w.node("ReduceMean", {c.x(w, 0)}, {c.out[0]});
  Writer::attr(n, "axes", axes);  // an attribute up to opset 17
  Writer::attr(n, "keepdims", c.i("keepdims"));
}
void emit_max_min(Writer& w, const Call& c) {
  Ints axes = reduce_axes(c);
  if (axes.empty()) return void(w.node("Identity", {c.in[0]}, {c.out[0]}));
  auto& n = w.node(c.name == "Max" ? "ReduceMax" : "ReduceMin", {c.x(w, 0)}, {c.out[0]});
  Writer::attr(n, "axes", axes);  // an attribute up to opset 17
  Writer::attr(n, "keepdims", c.i("keepdims"));
}
// sum_to: ReduceSum over the leading axes and the axes that were 1, keepdims, then the shape.
void emit_sum_to(Writer& w, const Call& c) {
  const Shape& in = c.in_shape(0);
  const Ints shape = c.ints("shape");
  const int lead = in.ndim() - static_cast<int>(shape.size());
  Ints axes;
  for (int i = 0; i < in.ndim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && in[i] != 1)) axes.push_back(i);
  std::string x = c.x(w, 0);
  if (axes.empty()) return reshape_to(w, c, x, in, false);  // ReduceSum of no axes would sum all
  if (lead == 0) return reduce_sum(w, c, x, axes, true, c.out[0]);
  std::string s = c.tmp(w, "sum");
  reduce_sum(w, c, x, axes, true, s);
  reshape_to(w, c, s, in, false);
}
void emit_broadcast_to(Writer& w, const Call& c) {
  const Shape& in = c.in_shape(0);
  Ints shape = c.ints("shape");
  // Expand broadcasts: an axis 0 that stays (the batch) can be 1, so that any batch size runs.
  if (w.dynamic_batch() && in.ndim() == static_cast<int>(shape.size()) && in.ndim() > 0 && in[0] == shape[0]) shape[0] = 1;
  w.node("Expand", {c.x(w, 0), w.ints(shape, c.base + "/shape")}, {c.out[0]});
}

// get_item: integers and slices become one Slice (then a Reshape drops the integer axes and
// adds the new ones); one index array, with slices around it, becomes a Gather.
void emit_get_item(Writer& w, const Call& c) {
  const Shape& in = c.in_shape(0);
  const std::string& kinds = c.get<std::string>("index");
  const Ints &integers = c.ints("integers"), &starts = c.ints("starts"), &stops = c.ints("stops"), &steps = c.ints("steps");
  const auto consumed = std::count_if(kinds.begin(), kinds.end(), [](char k) { return k == 'i' || k == 's' || k == 'a'; });
  const auto arrays = std::count(kinds.begin(), kinds.end(), 'a');
  if (arrays > 1 || (arrays == 1 && kinds.find_first_of("in") != std::string::npos))
    c.unsupported(w, "an index with several arrays, or an array with integers or newaxis, has no single ONNX op");
  auto full = [&](std::size_t j) { return starts[j] == kInt64Min && stops[j] == kInt64Min && steps[j] == 1; };
  Ints s_starts, s_ends, s_axes, s_steps;
  std::int64_t gather_axis = -1;
  bool axis0_kept = true;  // whether the result's axis 0 is the input's, whole (the batch)
  bool axis0_seen = false;
  std::size_t ii = 0, si = 0, ax = 0;
  for (const char k : kinds) {
    if (!axis0_seen && !(k == 'e' && in.ndim() == consumed)) {
      axis0_seen = true;
      axis0_kept = k == 'e' || (k == 's' && full(si));
    }
    if (k == 'e') {
      ax += in.ndim() - consumed;
    } else if (k == 'i') {
      std::int64_t i = integers[ii++];
      s_starts.push_back(i);
      s_ends.push_back(i == -1 ? kInt64Max : i + 1);
      s_axes.push_back(static_cast<std::int64_t>(ax++));
      s_steps.push_back(1);
    } else if (k == 's') {
      const std::int64_t b = starts[si], e = stops[si], st = steps[si];
      if (full(si++)) {
        ++ax;
        continue;
      }
      s_starts.push_back(b != kInt64Min ? b : st > 0 ? 0 : kInt64Max);
      s_ends.push_back(e != kInt64Min ? e : st > 0 ? kInt64Max : kInt64Min);
      s_axes.push_back(static_cast<std::int64_t>(ax++));
      s_steps.push_back(st);
    } else if (k == 'a') {
      gather_axis = static_cast<std::int64_t>(ax++);
    }
  }
  const bool reshape = kinds.find_first_of("in") != std::string::npos;
  std::string x = c.in[0];
  if (!s_axes.empty()) {
    std::string y = (reshape || gather_axis >= 0) ? c.tmp(w, "slice") : c.out[0];
    w.node("Slice", {x, w.ints(s_starts, c.base + "/starts"), w.ints(s_ends, c.base + "/ends"),
                     w.ints(s_axes, c.base + "/axes"), w.ints(s_steps, c.base + "/steps")},
           {y});
    x = y;
  }
  if (gather_axis >= 0) {
    std::string idx = w.tensor(c.get<Tensor>("array_0"), c.base + "/indices");
    Writer::attr(w.node("Gather", {x, idx}, {c.out[0]}), "axis", gather_axis);
  } else if (reshape) {
    reshape_to(w, c, x, in, axis0_kept);
  } else if (s_axes.empty()) {
    w.node("Identity", {x}, {c.out[0]});
  }
}

// --- emitters: products, losses -------------------------------------------------------------------
void emit_matmul(Writer& w, const Call& c) {
  const bool ta = c.has("transpose_a") && c.i("transpose_a"), tb = c.has("transpose_b") && c.i("transpose_b");
  if (!ta && !tb) return binary(w, c, "MatMul");
  if (c.in_shape(0).ndim() == 2 && c.in_shape(1).ndim() == 2) {
    auto& n = w.node("Gemm", {c.x(w, 0), c.x(w, 1)}, {c.out[0]});
    Writer::attr(n, "transA", std::int64_t{ta});
    Writer::attr(n, "transB", std::int64_t{tb});
    return;
  }
  c.unsupported(w, "a transposed operand of more than 2 axes");
}
// linear: x (N, in) W (in, out) [+ b] is MatMul + Add. (Gemm(x, W, b) with transB = 0 says the
// same in one node, but OpenCV 4.6's importer reads Gemm's B as (out, in) whatever transB says.)
void emit_linear(Writer& w, const Call& c) {
  if (c.n_in() == 2) return binary(w, c, "MatMul");
  std::string y = c.tmp(w, "matmul");
  w.node("MatMul", {c.x(w, 0), c.x(w, 1)}, {y});
  w.node("Add", {y, c.x(w, 2)}, {c.out[0]});
}
// sum(v) / v.shape[0] of v (N, ...) as a sum over the other axes and a mean over axis 0, so
// that the value does not depend on a batch size fixed in the file.
void batch_mean_of_sum(Writer& w, const Call& c, const std::string& v, int ndim) {
  std::string per_item = v;
  if (ndim > 1) {
    Ints rest;
    for (int i = 1; i < ndim; ++i) rest.push_back(i);
    per_item = c.tmp(w, "sum");
    reduce_sum(w, c, v, rest, false, per_item);
  }
  auto& n = w.node("ReduceMean", {per_item}, {c.out[0]});
  Writer::attr(n, "axes", Ints{0});
  Writer::attr(n, "keepdims", std::int64_t{0});
}
int broadcast_ndim(const Call& c) { return std::max(c.in_shape(0).ndim(), c.in_shape(1).ndim()); }
// mean_squared_error = sum((x0 - x1)^2) / N
void emit_mse(Writer& w, const Call& c) {
  std::string d = c.tmp(w, "diff"), sq = c.tmp(w, "square");
  w.node("Sub", {c.x(w, 0), c.x(w, 1)}, {d});
  w.node("Mul", {d, d}, {sq});
  batch_mean_of_sum(w, c, sq, broadcast_ndim(c));
}
// softmax_cross_entropy: x (N, C), t (N,) int -> the mean over N of -log softmax(x)[t]
void emit_sce(Writer& w, const Call& c) {
  Writer::attr(w.node("SoftmaxCrossEntropyLoss", {c.in[0], c.in[1]}, {c.out[0]}), "reduction", std::string("mean"));
}
// sigmoid_cross_entropy = sum(relu(x) - x t + log(1 + exp(-|x|))) / N
void emit_sigmoid_ce(Writer& w, const Call& c) {
  std::string x = c.x(w, 0), t = c.x(w, 1);
  std::string r = c.tmp(w, "relu"), xt = c.tmp(w, "xt"), a = c.tmp(w, "abs"), na = c.tmp(w, "neg"), e = c.tmp(w, "exp"),
              e1 = c.tmp(w, "exp1"), lg = c.tmp(w, "log"), d = c.tmp(w, "sub"), l = c.tmp(w, "loss");
  w.node("Relu", {x}, {r});
  w.node("Mul", {x, t}, {xt});
  w.node("Abs", {x}, {a});
  w.node("Neg", {a}, {na});
  w.node("Exp", {na}, {e});
  w.node("Add", {e, w.scalar(1.0, c.out_dtype(), c.base + "/one")}, {e1});
  w.node("Log", {e1}, {lg});
  w.node("Sub", {r, xt}, {d});
  w.node("Add", {d, lg}, {l});
  batch_mean_of_sum(w, c, l, broadcast_ndim(c));
}

// --- emitters: convolution, pooling, normalisation, embedding ----------------------------------------
void window(::onnx::NodeProto& n, const Ints& kernel, const Ints& stride, const Ints& pad) {
  Writer::attr(n, "kernel_shape", kernel);
  Writer::attr(n, "strides", stride);
  Writer::attr(n, "pads", Ints{pad[0], pad[1], pad[0], pad[1]});
}
void conv_inputs(Writer& w, const Call& c, std::vector<std::string>& in) {
  for (std::size_t i = 0; i < c.n_in(); ++i) in.push_back(c.x(w, i));
}
// The `group` attribute of a grouped conv2d / deconv2d (none for groups 1, ONNX's default).
void group_attr(::onnx::NodeProto& n, const Call& c) {
  if (c.has("groups") && c.i("groups") > 1) Writer::attr(n, "group", c.i("groups"));
}
// conv2d: W (OC, C / groups, KH, KW) is ONNX's layout.
void emit_conv(Writer& w, const Call& c) {
  std::vector<std::string> in;
  conv_inputs(w, c, in);
  const Shape& ws = c.in_shape(1);
  auto& n = w.node("Conv", in, {c.out[0]});
  window(n, Ints{ws[2], ws[3]}, c.ints("stride"), c.ints("pad"));
  group_attr(n, c);
}
// deconv2d: W (C, OC / groups, KH, KW) is ONNX's layout; an outsize past the usual one is output_padding.
void emit_deconv(Writer& w, const Call& c) {
  std::vector<std::string> in;
  conv_inputs(w, c, in);
  const Shape &xs = c.in_shape(0), &ws = c.in_shape(1);
  const Ints &s = c.ints("stride"), &p = c.ints("pad"), &out = c.ints("outsize");
  Ints extra(2);
  for (int i = 0; i < 2; ++i) {
    extra[i] = out[i] - (s[i] * (xs[2 + i] - 1) + ws[2 + i] - 2 * p[i]);
    if (extra[i] < 0 || extra[i] >= std::max<std::int64_t>(s[i], 1))
      c.unsupported(w, "an outsize (" + std::to_string(out[0]) + ", " + std::to_string(out[1]) +
                           ") that ConvTranspose's output_padding cannot give (it must be below the stride)");
  }
  auto& n = w.node("ConvTranspose", in, {c.out[0]});
  window(n, Ints{ws[2], ws[3]}, s, p);
  if (extra[0] || extra[1]) Writer::attr(n, "output_padding", extra);
  group_attr(n, c);
}
// DeZero's pooling pads with zeros: max pooling sees them (ONNX's MaxPool pads with -inf) and
// average pooling counts them (count_include_pad = 1, which OpenCV 4.6 ignores), so both are a
// Pad node and an unpadded pool: the same numbers in every reader.
std::string zero_padded(Writer& w, const Call& c, double zero = 0.0) {
  const Ints& p = c.ints("pad");
  if (!p[0] && !p[1]) return c.in[0];
  std::string padded = c.tmp(w, "pad");
  w.node("Pad", {c.in[0], w.ints(Ints{0, 0, p[0], p[1], 0, 0, p[0], p[1]}, c.base + "/pads"),
                 w.scalar(zero, c.in_dtype(0), c.base + "/zero")},
         {padded});
  return padded;
}
// max pooling with padding: Pad with -0.0, then MaxPool. -0.0 is DeZero's zero for a maximum
// (-0.0 == 0.0), and a Pad of +0.0 is what ONNX Runtime folds into MaxPool's own padding, which
// is -inf (microsoft/onnxruntime#24737: a window of negative values then gives a negative);
// its fusion checks the pad value's bytes, and -0.0's are not zero.
void emit_max_pool(Writer& w, const Call& c) {
  window(w.node("MaxPool", {zero_padded(w, c, -0.0)}, {c.out[0]}), c.ints("kernel_size"), c.ints("stride"), Ints{0, 0});
}
void emit_avg_pool(Writer& w, const Call& c) {
  window(w.node("AveragePool", {zero_padded(w, c)}, {c.out[0]}), c.ints("kernel_size"), c.ints("stride"), Ints{0, 0});
}
// batch_norm in test mode: the running statistics are initializers (the layer's avg_mean and
// avg_var keys when they are a model's parameters).
void emit_batch_norm(Writer& w, const Call& c) {
  if (c.i("train"))
    c.unsupported(w, "batch_norm in train mode (batch statistics); hint: export in test mode, as export_model does");
  DType dt = c.out_dtype();
  auto stat = [&](const char* key, const char* what) {
    const Tensor& t = c.get<Tensor>(key);
    return t.dtype() == dt ? w.tensor(t, c.base + "/" + what) : w.fixed(t.astype(dt), c.tmp(w, what));
  };
  std::string mean = stat("running_mean", "mean"), var = stat("running_var", "var");
  auto& n = w.node("BatchNormalization", {c.x(w, 0), c.x(w, 1), c.x(w, 2), mean, var}, {c.out[0]});
  Writer::attr(n, "epsilon", c.f("eps"));
  Writer::attr(n, "momentum", c.f("decay"));
}
// embed_id: the ids are the function's constant (a graph input when they are an input's data).
void emit_embed_id(Writer& w, const Call& c) {
  Writer::attr(w.node("Gather", {c.in[0], w.tensor(c.get<Tensor>("ids"), c.base + "/ids")}, {c.out[0]}), "axis",
               std::int64_t{0});
}

// --- emitters: F::concat, F::pad, F::where, ... (so that an imported model exports again) -------------
void emit_concat(Writer& w, const Call& c) {
  std::vector<std::string> in;
  for (std::size_t i = 0; i < c.n_in(); ++i) in.push_back(c.x(w, i));
  Writer::attr(w.node("Concat", in, {c.out[0]}), "axis", c.i("axis"));
}
void emit_pad(Writer& w, const Call& c) {
  w.node("Pad", {c.x(w, 0), w.ints(c.ints("pads"), c.base + "/pads"), w.scalar(c.f("value"), c.out_dtype(), c.base + "/value")},
         {c.out[0]});
}
void emit_where(Writer& w, const Call& c) {
  const Tensor& cond = c.get<Tensor>("condition");
  std::string flag = c.tmp(w, "condition");
  Writer::attr(w.node("Cast", {w.tensor(cond, c.base + "/condition_values")}, {flag}), "to",
               std::int64_t{::onnx::TensorProto::BOOL});
  w.node("Where", {flag, c.x(w, 0), c.x(w, 1)}, {c.out[0]});
}
void emit_cast(Writer& w, const Call& c) {
  Writer::attr(w.node("Cast", {c.in[0]}, {c.out[0]}), "to", std::int64_t{elem_type(c.out_dtype())});
}

}  // namespace

// --- the table ------------------------------------------------------------------------------------
const std::map<std::string, Emitter>& emitters() {
  static const std::map<std::string, Emitter> table = {
      {"Add", emit_add},
      {"Sub", emit_sub},
      {"Mul", emit_mul},
      {"Div", emit_div},
      {"Neg", [](Writer& w, const Call& c) { unary(w, c, "Neg"); }},
      {"Pow", emit_pow},
      {"Sin", [](Writer& w, const Call& c) { unary(w, c, "Sin"); }},
      {"Cos", [](Writer& w, const Call& c) { unary(w, c, "Cos"); }},
      {"Tanh", [](Writer& w, const Call& c) { unary(w, c, "Tanh"); }},
      {"Exp", [](Writer& w, const Call& c) { unary(w, c, "Exp"); }},
      {"Log", [](Writer& w, const Call& c) { unary(w, c, "Log"); }},
      {"Sigmoid", [](Writer& w, const Call& c) { unary(w, c, "Sigmoid"); }},
      {"ReLU", [](Writer& w, const Call& c) { unary(w, c, "Relu"); }},
      {"LeakyReLU", emit_leaky_relu},
      {"Erf", [](Writer& w, const Call& c) { unary(w, c, "Erf"); }},
      {"Gelu", emit_gelu},
      {"HardSigmoid", emit_hard_sigmoid},
      {"HardSwish", emit_hard_swish},
      {"LayerNorm", emit_layer_norm},
      {"Softmax", [](Writer& w, const Call& c) { emit_softmax(w, c, "Softmax"); }},
      {"LogSoftmax", [](Writer& w, const Call& c) { emit_softmax(w, c, "LogSoftmax"); }},
      {"Clip", emit_clip},
      {"Reshape", emit_reshape},
      {"Transpose", emit_transpose},
      {"GetItem", emit_get_item},
      {"Sum", emit_sum},
      {"Mean", emit_mean},
      {"Cast", emit_cast},
      {"SumTo", emit_sum_to},
      {"BroadcastTo", emit_broadcast_to},
      {"Max", emit_max_min},
      {"Min", emit_max_min},
      {"MatMul", emit_matmul},
      {"Linear", emit_linear},
      {"MeanSquaredError", emit_mse},
      {"SoftmaxCrossEntropy", emit_sce},
      {"SigmoidCrossEntropy", emit_sigmoid_ce},
      {"Conv2d", emit_conv},
      {"Deconv2d", emit_deconv},
      {"Pooling", emit_max_pool},
      {"AveragePooling", emit_avg_pool},
      {"BatchNorm", emit_batch_norm},
      {"EmbedID", emit_embed_id},
      // F::concat, F::pad, F::maximum, F::minimum, F::pow (a tensor exponent), F::where, F::sqrt, F::abs
      {"Concat", emit_concat},
      {"Pad", emit_pad},
      {"Maximum", [](Writer& w, const Call& c) { binary(w, c, "Max"); }},
      {"Minimum", [](Writer& w, const Call& c) { binary(w, c, "Min"); }},
      {"PowTensor", [](Writer& w, const Call& c) { w.node("Pow", {c.x(w, 0), c.in[1]}, {c.out[0]}); }},
      {"Where", emit_where},
      {"Sqrt", [](Writer& w, const Call& c) { unary(w, c, "Sqrt"); }},
      {"Abs", [](Writer& w, const Call& c) { unary(w, c, "Abs"); }},
  };
  return table;
}

const std::map<std::string, const char*>& not_exported() {
  static const std::map<std::string, const char*> table = {
      // recorded only by a backward with create_graph: a model's forward never holds them
      {"AveragePoolingGrad", "it is average pooling's gradient, recorded by a backward with create_graph"},
      {"Conv2DGradW", "it is a convolution's weight gradient, recorded by a backward with create_graph"},
      {"EmbedIDGrad", "it is EmbedID's gradient, recorded by a backward with create_graph"},
      {"GetItemGrad", "it is get_item's gradient (a scatter-add), recorded by a backward with create_graph"},
      {"LeakyReLUMask", "it is LeakyReLU's gradient mask, recorded by a backward with create_graph"},
      {"Pooling2DGrad", "it is max pooling's gradient, recorded by a backward with create_graph"},
      {"Pooling2DWithIndexes", "it is max pooling's double backward, recorded by a backward with create_graph"},
      {"ReLUMask", "it is ReLU's gradient mask, recorded by a backward with create_graph"},
      {"SoftmaxCrossEntropyGrad", "it is softmax cross entropy's gradient, recorded by a backward with create_graph"},
      // F::im2col / F::col2im: ONNX has no such op (a convolution exports whole, as Conv)
      {"Im2col", "ONNX has no im2col; F::conv2d exports as one Conv"},
      {"Col2im", "ONNX has no col2im; F::deconv2d exports as one ConvTranspose"},
  };
  return table;
}

std::string exportable_names() {
  std::string s;
  for (const auto& [k, e] : emitters()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace dezero::onnx::detail::exporter
