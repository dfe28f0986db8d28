// tests/test_op_table.cpp - every dezero::F function on every device, from one table
// (PyTorch's OpInfo, ggml's test-backend-ops; DESIGN.md section 3, examples 8 and 9).
//
// One row per F:: function (more where an overload or a geometry deserves its own): the
// argument shapes, the values each argument is drawn from (the function's domain, kept
// away from its kinks), which arguments are differentiable and how often. The table drives,
// on the CPU always and on CUDA when a device is present ("skipped: no CUDA device" otherwise),
//   (a) forward in float32 and float64 against the CPU float64 result, and the gradient of
//       sum(y * W) in both dtypes against the CPU float64 gradient;
//   (b) utils::gradient_check (float64) with respect to every differentiable argument;
//   (c) double backward: the gradient of sum_i sum(g_i * v_i), the first gradients g_i taken
//       with backward(create_graph), against central differences of those first gradients.
//   (a16) forward and gradient in bfloat16 and float16 against the CPU float64 result of the
//       inputs rounded to the dtype, to the dtype's step per term summed; the functions without
//       a 16-bit path (DtypeError) are listed, and the list is checked.
// Inputs are float32-representable, so one float64 reference serves both dtypes and the
// float32 tolerance only has to cover float32 arithmetic (scaled by the terms summed).
//
// Non-differentiable rows (accuracy) check (a)'s forward alone; the random one (dropout) draws
// its mask from a fixed Generator and is compared with that mask on its own device, with test
// mode and the mask statistics in a case of their own. Each row's inputs are seeded from its
// id; DEZERO_OP_TABLE_SEED=n tries other inputs.
//
// It is not the place for literals or error messages (test_functions_*.cpp, test_errors.cpp).
// A new F:: function without a row fails CTest's op_table_covers_headers: tools/check_op_table.py
// compares the functions declared in dezero/functions*.hpp with the names the rows print
// (DEZERO_OP_TABLE_LIST=1 and the case "op table: the rows"). To add one: row(id, F:: name,
// {arguments: real / positive / uniform / away / distinct / labels / ints, constant(...) for a
// floating one without a gradient}, the call), then .sums(k) for k terms summed per element,
// .g(Grad::ae) for a kink, .g(Grad::none) for no gradient, .says(why).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

using Args = std::vector<Variable>;
using Fn = std::function<Variable(const Args&)>;

// --- arguments: a shape and the values the function is defined on ------------------------
enum class Dom {
  real,      // randn * scale
  uniform,   // uniform [lo, hi): positive bases, probabilities
  away,      // randn, every value at least 0.1 from each kink (relu's 0, clip's bounds)
  distinct,  // shuffled evenly spaced values in (-1, 1), none within 1/size of 0: argmax/argmin-based ops
  labels,    // integer class ids in [0, classes); int64 with float64 data, int32 with float32
  ints,      // fixed integer values (index arrays, embedding ids); int64 / int32 as labels
};

struct Arg {
  std::string name;
  Shape shape;
  Dom dom = Dom::real;
  bool diff = true;  // a gradient is taken with respect to it
  double lo = 0, hi = 1;
  std::vector<double> kinks;
  std::vector<std::int64_t> values;
  bool integer() const { return dom == Dom::labels || dom == Dom::ints; }
};

Arg arg(std::string n, Shape s, Dom dom, bool diff = true) {
  Arg a;
  a.name = std::move(n);
  a.shape = std::move(s);
  a.dom = dom;
  a.diff = diff;
  return a;
}
Arg real(std::string n, Shape s, double scale = 1.0) {
  Arg a = arg(std::move(n), std::move(s), Dom::real);
  a.hi = scale;
  return a;
}
Arg uniform(std::string n, Shape s, double lo, double hi) {
  Arg a = arg(std::move(n), std::move(s), Dom::uniform);
  a.lo = lo;
  a.hi = hi;
  return a;
}
Arg positive(std::string n, Shape s) { return uniform(std::move(n), std::move(s), 0.5, 2.0); }
Arg away(std::string n, Shape s, std::vector<double> kinks) {
  Arg a = arg(std::move(n), std::move(s), Dom::away);
  a.kinks = std::move(kinks);
  return a;
}
Arg distinct(std::string n, Shape s) { return arg(std::move(n), std::move(s), Dom::distinct); }
Arg labels(std::string n, Shape s, std::int64_t classes) {
  Arg a = arg(std::move(n), std::move(s), Dom::labels, false);
  a.hi = static_cast<double>(classes);
  return a;
}
Arg ints(std::string n, Shape s, std::vector<std::int64_t> values) {
  Arg a = arg(std::move(n), std::move(s), Dom::ints, false);
  a.values = std::move(values);
  return a;
}
// A floating argument that gets no gradient (batch_norm's running statistics).
Arg constant(Arg a) {
  a.diff = false;
  return a;
}

// --- rows ------------------------------------------------------------------------------------
enum class Grad {
  none,    // not differentiable: forward only (accuracy)
  smooth,  // (b) and (c)
  ae,      // differentiable almost everywhere (relu, max, pooling, clip): inputs away from the
           // kinks, where (b) and (c) hold; the second derivative is 0 there
};

struct Row {
  std::string id;    // unique label
  std::string name;  // the F:: function it covers (the coverage check reads these)
  std::vector<Arg> args;
  Fn fn;
  Grad grad = Grad::smooth;
  int terms = 1;  // terms summed per element, forward or backward (.sums(k)): scales the tolerance of (a)
  std::optional<DType> out_dtype;  // a result dtype that does not follow the inputs (accuracy)
  Fn device_ref;  // random rows: the reference, on the same device and dtype (masks differ by device)
  std::string note;

  Row& sums(int k) { terms = k; return *this; }
  Row& g(Grad x) { grad = x; return *this; }
  Row& out(DType d) { out_dtype = d; return *this; }
  Row& ref(Fn f) { device_ref = std::move(f); return *this; }
  Row& says(std::string s) { note = std::move(s); return *this; }
};

Row row(std::string id, std::string name, std::vector<Arg> args, Fn fn) {
  Row r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.args = std::move(args);
  r.fn = std::move(fn);
  return r;
}
Row row(std::string name, std::vector<Arg> args, Fn fn) { return row(name, name, std::move(args), std::move(fn)); }

// The dropout rows draw their mask from a Generator of their own, seeded afresh on every
// call: the same mask on every call on one device (so gradients can be checked).
constexpr std::uint64_t kDropoutSeed = 11;
constexpr double kDropoutRatio = 0.3;
Variable dropout_ref(const Args& a) {
  const Tensor& x = a[0].data();
  Tensor keep = greater(random::Generator(kDropoutSeed).rand(x.shape(), x.dtype(), x.device()), kDropoutRatio);
  return Variable(x * (keep / (1.0 - kDropoutRatio)));
}

Tensor i64(std::vector<std::int64_t> v) { return array(v, int64); }

const std::vector<Row>& table() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> r;
    // --- arithmetic.hpp -------------------------------------------------------------------
    r.push_back(row("add", {real("a", {2, 3}), real("b", {1, 3})},
                    [](const Args& a) { return F::add(a[0], a[1]); }).sums(2).says("b broadcast over the rows"));
    r.push_back(row("add (x, c)", "add", {real("x", {2, 3})}, [](const Args& a) { return F::add(a[0], 1.5); })
                    .says("the double overload (Variable + double, double + Variable)"));
    r.push_back(row("sub", {real("a", {2, 3}), real("b", {3})},
                    [](const Args& a) { return F::sub(a[0], a[1]); }).sums(2).says("b (3,) broadcast"));
    r.push_back(row("sub (x, c)", "sub", {real("x", {2, 3})}, [](const Args& a) { return F::sub(a[0], 0.25); }));
    r.push_back(row("mul", {real("a", {2, 3}), real("b", {2, 1})},
                    [](const Args& a) { return F::mul(a[0], a[1]); }).sums(3).says("b (2, 1) broadcast"));
    r.push_back(row("mul (with a transposed operand)", "mul", {real("a", {2, 3}), real("b", {3, 2})},
                    [](const Args& a) { return F::mul(a[0], F::transpose(a[1])); }).says("a strided view operand"));
    r.push_back(row("mul (x, c)", "mul", {real("x", {2, 3})}, [](const Args& a) { return F::mul(a[0], -2.0); }));
    r.push_back(row("div", {real("a", {2, 3}), positive("b", {2, 3})},
                    [](const Args& a) { return F::div(a[0], a[1]); }).says("b in [0.5, 2): away from the pole"));
    r.push_back(row("div (x, c)", "div", {real("x", {2, 3})}, [](const Args& a) { return F::div(a[0], 3.0); }));
    r.push_back(row("neg", {real("x", {2, 3})}, [](const Args& a) { return F::neg(a[0]); }));
    r.push_back(row("pow (c = 3)", "pow", {positive("x", {2, 3})}, [](const Args& a) { return F::pow(a[0], 3.0); }));
    r.push_back(row("pow (c = 0.5, sqrt)", "pow", {positive("x", {2, 3})},
                    [](const Args& a) { return F::pow(a[0], 0.5); }).says("positive base: sqrt's domain"));
    r.push_back(row("pow (c = -1.5)", "pow", {positive("x", {2, 3})},
                    [](const Args& a) { return F::pow(a[0], -1.5); }));
    r.push_back(row("pow (tensor exponent, broadcast)", "pow", {positive("x", {2, 3}), real("y", {3})},
                    [](const Args& a) { return F::pow(a[0], a[1]); })
                    .sums(2).says("positive base (log x in y's gradient); y (3,) broadcast"));
    r.push_back(row("maximum", {distinct("x", {2, 2, 3})},
                    [](const Args& a) { return F::maximum(F::get_item(a[0], {0}), F::get_item(a[0], {1})); })
                    .g(Grad::ae).says("a = x[0], b = x[1]: distinct values, no ties"));
    r.push_back(row("maximum (broadcast b)", "maximum", {distinct("x", {3, 3})},
                    [](const Args& a) { return F::maximum(F::get_item(a[0], {Slice(0, 2)}), F::get_item(a[0], {2})); })
                    .g(Grad::ae).sums(2).says("a = x[:2], b = x[2] (3,) broadcast"));
    r.push_back(row("minimum", {distinct("x", {2, 2, 3})},
                    [](const Args& a) { return F::minimum(F::get_item(a[0], {0}), F::get_item(a[0], {1})); })
                    .g(Grad::ae).says("a = x[0], b = x[1]: distinct values, no ties"));
    r.push_back(row("minimum (broadcast a)", "minimum", {distinct("x", {3, 3})},
                    [](const Args& a) { return F::minimum(F::get_item(a[0], {2}), F::get_item(a[0], {Slice(0, 2)})); })
                    .g(Grad::ae).sums(2).says("a = x[2] (3,) broadcast, b = x[:2]"));
    r.push_back(row("where", {real("a", {2, 3}), real("b", {3}), ints("cond", {2, 3}, {1, 0, 0, 1, 1, 0})},
                    [](const Args& a) { return F::where(a[2].data(), a[0], a[1]); })
                    .sums(2).says("cond a fixed 0/1 tensor; b (3,) broadcast"));
    r.push_back(row("rsub", {real("x", {2, 3})}, [](const Args& a) { return F::rsub(a[0], 2.0); }).says("2 - x"));
    r.push_back(row("rdiv", {positive("x", {2, 3})}, [](const Args& a) { return F::rdiv(a[0], 3.0); }).says("3 / x"));
    // --- math.hpp ----------------------------------------------------------------------------
    r.push_back(row("sin", {real("x", {2, 3}, 2.0)}, [](const Args& a) { return F::sin(a[0]); }));
    r.push_back(row("cos", {real("x", {2, 3}, 2.0)}, [](const Args& a) { return F::cos(a[0]); }));
    r.push_back(row("tanh", {real("x", {2, 3}, 2.0)}, [](const Args& a) { return F::tanh(a[0]); }));
    r.push_back(row("exp", {real("x", {2, 3})}, [](const Args& a) { return F::exp(a[0]); }));
    r.push_back(row("log", {positive("x", {2, 3})}, [](const Args& a) { return F::log(a[0]); }).says("x in [0.5, 2)"));
    r.push_back(row("erf", {real("x", {2, 3}, 1.5)}, [](const Args& a) { return F::erf(a[0]); }));
    r.push_back(row("sqrt", {positive("x", {2, 3})}, [](const Args& a) { return F::sqrt(a[0]); }).says("x in [0.5, 2)"));
    r.push_back(row("abs", {away("x", {2, 3}, {0.0})}, [](const Args& a) { return F::abs(a[0]); })
                    .g(Grad::ae).says("x at least 0.1 from 0"));
    // --- shape.hpp ---------------------------------------------------------------------------
    r.push_back(row("reshape", {real("x", {2, 3, 2})}, [](const Args& a) { return F::reshape(a[0], {3, -1}); }));
    r.push_back(row("transpose (axes)", "transpose", {real("x", {2, 3, 4})},
                    [](const Args& a) { return F::transpose(a[0], {-1, 0, 1}); }));
    r.push_back(row("transpose (reversed)", "transpose", {real("x", {2, 3, 4})},
                    [](const Args& a) { return F::transpose(a[0]); }));
    r.push_back(row("transpose (2-d)", "transpose", {real("x", {3, 4})},
                    [](const Args& a) { return F::transpose(a[0]); }));
    r.push_back(row("reshape (of a transposed x)", "reshape", {real("x", {3, 4})},
                    [](const Args& a) { return F::reshape(F::transpose(a[0]), {2, 6}); })
                    .says("a strided view reshaped: a copy"));
    r.push_back(row("expand_dims", {real("x", {2, 3})}, [](const Args& a) { return F::expand_dims(a[0], 1); }));
    r.push_back(row("cast (to float64)", "cast", {real("x", {2, 3})}, [](const Args& a) { return F::cast(a[0], float64); })
                    .out(float64).says("gy cast back to x's dtype"));
    r.push_back(row("expand_dims (axis -1)", "expand_dims", {real("x", {2, 3})},
                    [](const Args& a) { return F::expand_dims(a[0], -1); }));
    r.push_back(row("flatten", {real("x", {2, 3, 2})}, [](const Args& a) { return F::flatten(a[0]); }));
    r.push_back(row("concat (axis 1)", "concat", {real("a", {2, 3}), real("b", {2, 1}), real("c", {2, 2})},
                    [](const Args& a) { return F::concat({a[0], a[1], a[2]}, 1); }));
    r.push_back(row("concat (axis -1 of 3-d, a transposed input)", "concat", {real("a", {2, 2, 3}), real("b", {2, 3, 2})},
                    [](const Args& a) { return F::concat({a[0], F::transpose(a[1], {0, 2, 1})}, -1); })
                    .says("a strided view joined"));
    r.push_back(row("pad (constant 0.5)", "pad", {real("x", {2, 3})},
                    [](const Args& a) { return F::pad(a[0], {{1, 0}, {0, 2}}, 0.5); }));
    r.push_back(row("pad (crop and pad)", "pad", {real("x", {3, 4})},
                    [](const Args& a) { return F::pad(a[0], {{-1, 1}, {2, -2}}); })
                    .says("negative counts crop: x[1:, :2] with a row after and two columns before"));
    r.push_back(row("get_item (index array with repeats, slice)", "get_item",
                    {real("x", {3, 4}), ints("idx", {3}, {0, -1, 0})},
                    [](const Args& a) { return F::get_item(a[0], {Index(a[1].data()), Slice(1, 3)}); })
                    .sums(2).says("x[[0, -1, 0], 1:3]: a negative index, repeats accumulate in the gradient"));
    r.push_back(row("get_item (int, reversed step, newaxis)", "get_item", {real("x", {3, 4})},
                    [](const Args& a) {
                      return F::get_item(a[0], {1, Slice(std::nullopt, std::nullopt, -2), newaxis});
                    })
                    .says("x[1, ::-2, None]"));
    r.push_back(row("get_item (Ellipsis, index array)", "get_item", {real("x", {2, 3, 4}), ints("idx", {2}, {3, 1})},
                    [](const Args& a) { return F::get_item(a[0], {Ellipsis, Index(a[1].data())}); })
                    .says("x[..., [3, 1]]"));
    r.push_back(row("get_item (two index arrays)", "get_item",
                    {real("x", {3, 4}), ints("i", {4}, {2, 0, 2, 1}), ints("j", {4}, {3, 3, 0, -4})},
                    [](const Args& a) { return F::get_item(a[0], {Index(a[1].data()), Index(a[2].data())}); })
                    .says("x[[2, 0, 2, 1], [3, 3, 0, -4]]: elements picked pairwise"));
    // --- reduce.hpp --------------------------------------------------------------------------
    r.push_back(row("sum (all)", "sum", {real("x", {2, 3, 4})}, [](const Args& a) { return F::sum(a[0]); }).sums(24));
    r.push_back(row("sum (axes 0, 2, keepdims)", "sum", {real("x", {2, 3, 4})},
                    [](const Args& a) { return F::sum(a[0], Axes{0, 2}, true); }).sums(8));
    r.push_back(row("sum (axis -1)", "sum", {real("x", {2, 3, 4})},
                    [](const Args& a) { return F::sum(a[0], -1); }).sums(4));
    r.push_back(row("sum (axis 0 of a transposed x)", "sum", {real("x", {3, 4})},
                    [](const Args& a) { return F::sum(F::transpose(a[0]), 0); })
                    .sums(4).says("a strided view reduced"));
    r.push_back(row("sum_to", {real("x", {2, 3, 4})}, [](const Args& a) { return F::sum_to(a[0], {3, 1}); }).sums(8));
    r.push_back(row("broadcast_to", {real("x", {3, 1})},
                    [](const Args& a) { return F::broadcast_to(a[0], {2, 3, 4}); }).sums(8));
    r.push_back(row("average (axis 1)", "average", {real("x", {2, 3})},
                    [](const Args& a) { return F::average(a[0], 1); }).sums(3));
    r.push_back(row("mean (all, keepdims)", "mean", {real("x", {2, 3})},
                    [](const Args& a) { return F::mean(a[0], Axes(), true); }).sums(6).says("average's alias"));
    r.push_back(row("max (all)", "max", {distinct("x", {2, 3, 4})}, [](const Args& a) { return F::max(a[0]); })
                    .g(Grad::ae).says("distinct values: no ties"));
    r.push_back(row("max (axis 1, keepdims)", "max", {distinct("x", {2, 3, 4})},
                    [](const Args& a) { return F::max(a[0], 1, true); }).g(Grad::ae));
    r.push_back(row("max (axes 0, 2)", "max", {distinct("x", {2, 3, 4})},
                    [](const Args& a) { return F::max(a[0], Axes{0, 2}); }).g(Grad::ae));
    r.push_back(row("min (all)", "min", {distinct("x", {2, 3, 4})}, [](const Args& a) { return F::min(a[0]); })
                    .g(Grad::ae));
    r.push_back(row("min (axis -1)", "min", {distinct("x", {3, 4})}, [](const Args& a) { return F::min(a[0], -1); })
                    .g(Grad::ae));
    r.push_back(row("clip", {away("x", {3, 4}, {-0.5, 0.5})}, [](const Args& a) { return F::clip(a[0], -0.5, 0.5); })
                    .g(Grad::ae).says("x at least 0.1 from the bounds"));
    // --- linalg.hpp --------------------------------------------------------------------------
    r.push_back(row("matmul", {real("x", {2, 3}), real("W", {3, 4})},
                    [](const Args& a) { return F::matmul(a[0], a[1]); }).sums(4));
    r.push_back(row("matmul (batched, broadcast W)", "matmul", {real("x", {2, 2, 3}), real("W", {3, 2})},
                    [](const Args& a) { return F::matmul(a[0], a[1]); }).sums(6));
    r.push_back(row("matmul (batched both, broadcast batch)", "matmul", {real("x", {2, 1, 2, 3}), real("W", {3, 3, 2})},
                    [](const Args& a) { return F::matmul(a[0], a[1]); })
                    .sums(6).says("(2, 1, 2, 3) @ (3, 3, 2) -> (2, 3, 2, 2)"));
    r.push_back(row("matmul (transposed x, sliced W)", "matmul", {real("x", {3, 2}), real("W", {3, 5})},
                    [](const Args& a) {
                      return F::matmul(F::transpose(a[0]), F::get_item(a[1], {Slice(), Slice(1, 4)}));
                    })
                    .sums(3).says("operands that are views: x^T (strided), W[:, 1:4] (offset, row stride 5)"));
    r.push_back(row("matmul (Transposed::W)", "matmul", {real("x", {2, 3}), real("W", {4, 3})},
                    [](const Args& a) { return F::matmul(a[0], a[1], F::Transposed::W); })
                    .sums(3).says("x @ W^T, one GEMM with a transpose flag"));
    r.push_back(row("matmul (Transposed::both)", "matmul", {real("x", {3, 2}), real("W", {4, 3})},
                    [](const Args& a) { return F::matmul(a[0], a[1], F::Transposed::both); })
                    .sums(3).says("x^T @ W^T"));
    r.push_back(row("matmul (1-d x)", "matmul", {real("x", {3}), real("W", {3, 2})},
                    [](const Args& a) { return F::matmul(a[0], a[1]); })
                    .sums(3).says("np.dot's rule for a 1-d operand"));
    r.push_back(row("linear", {real("x", {3, 4}), real("W", {4, 2}), real("b", {2})},
                    [](const Args& a) { return F::linear(a[0], a[1], a[2]); }).sums(4));
    r.push_back(row("linear (no bias)", "linear", {real("x", {3, 4}), real("W", {4, 2})},
                    [](const Args& a) { return F::linear(a[0], a[1]); }).sums(4));
    // --- activation.hpp ----------------------------------------------------------------------
    r.push_back(row("sigmoid", {real("x", {2, 3}, 2.0)}, [](const Args& a) { return F::sigmoid(a[0]); }));
    r.push_back(row("relu", {away("x", {2, 3}, {0.0})}, [](const Args& a) { return F::relu(a[0]); })
                    .g(Grad::ae).says("x at least 0.1 from 0"));
    r.push_back(row("leaky_relu", {away("x", {2, 3}, {0.0})}, [](const Args& a) { return F::leaky_relu(a[0], 0.2); })
                    .g(Grad::ae));
    r.push_back(row("gelu", {real("x", {2, 3}, 2.0)}, [](const Args& a) { return F::gelu(a[0]); }));
    r.push_back(row("gelu (tanh form)", "gelu", {real("x", {2, 3}, 2.0)},
                    [](const Args& a) { return F::gelu(a[0], "tanh"); }));
    r.push_back(row("hard_sigmoid", {away("x", {2, 3}, {-1.0, 1.0})},
                    [](const Args& a) { return F::hard_sigmoid(a[0], 0.5, 0.5); })
                    .g(Grad::ae).says("alpha 0.5: kinks at -1 and 1, x at least 0.1 from them"));
    r.push_back(row("hard_swish", {away("x", {2, 3}, {-0.75, 0.75})},
                    [](const Args& a) { return F::hard_swish(a[0] * 4.0); })
                    .g(Grad::ae).says("of 4x: kinks at x = -0.75 and 0.75"));
    r.push_back(row("softmax", {real("x", {3, 4})}, [](const Args& a) { return F::softmax(a[0]); }).sums(4));
    r.push_back(row("softmax (axis -1 of 3-d)", "softmax", {real("x", {2, 3, 4})},
                    [](const Args& a) { return F::softmax(a[0], -1); }).sums(4));
    r.push_back(row("log_softmax", {real("x", {3, 4})}, [](const Args& a) { return F::log_softmax(a[0]); }).sums(4));
    r.push_back(row("log_softmax (axis 0 of 3-d)", "log_softmax", {real("x", {3, 2, 2})},
                    [](const Args& a) { return F::log_softmax(a[0], 0); }).sums(3));
    // --- loss.hpp ----------------------------------------------------------------------------
    r.push_back(row("mean_squared_error", {real("x0", {3, 2}), real("x1", {3, 2})},
                    [](const Args& a) { return F::mean_squared_error(a[0], a[1]); }).sums(6));
    r.push_back(row("mean_squared_error (broadcast x1)", "mean_squared_error", {real("x0", {3, 2}), real("x1", {1, 2})},
                    [](const Args& a) { return F::mean_squared_error(a[0], a[1]); }).sums(6));
    r.push_back(row("softmax_cross_entropy", {real("x", {4, 3}), labels("t", {4}, 3)},
                    [](const Args& a) { return F::softmax_cross_entropy(a[0], a[1]); })
                    .sums(12).says("t: integer labels, no gradient"));
    r.push_back(row("softmax_cross_entropy (labels (N, 1))", "softmax_cross_entropy",
                    {real("x", {3, 4}), labels("t", {3, 1}, 4)},
                    [](const Args& a) { return F::softmax_cross_entropy(a[0], a[1]); }).sums(12));
    r.push_back(row("sigmoid_cross_entropy", {real("x", {4, 2}), uniform("t", {4, 2}, 0.1, 0.9)},
                    [](const Args& a) { return F::sigmoid_cross_entropy(a[0], a[1]); }).sums(8));
    r.push_back(row("sigmoid_cross_entropy (integer targets (N,))", "sigmoid_cross_entropy",
                    {real("x", {4, 1}), labels("t", {4}, 2)},
                    [](const Args& a) { return F::sigmoid_cross_entropy(a[0], a[1]); })
                    .sums(8).says("0/1 targets of another dtype and shape: converted, reshaped, no gradient"));
    r.push_back(row("binary_cross_entropy", {uniform("p", {4, 2}, 0.1, 0.9), uniform("t", {4, 2}, 0.0, 1.0)},
                    [](const Args& a) { return F::binary_cross_entropy(a[0], a[1]); })
                    .sums(8).says("p in [0.1, 0.9): inside the clip to [1e-15, 0.999], so smooth"));
    r.push_back(row("binary_cross_entropy (integer targets (N,))", "binary_cross_entropy",
                    {uniform("p", {4, 1}, 0.1, 0.9), labels("t", {4}, 2)},
                    [](const Args& a) { return F::binary_cross_entropy(a[0], a[1]); }).sums(8));
    // --- nn.hpp ------------------------------------------------------------------------------
    r.push_back(row("accuracy", {constant(distinct("y", {4, 3})), labels("t", {4}, 3)},
                    [](const Args& a) { return F::accuracy(a[0], a[1]); })
                    .g(Grad::none).out(float64).says("a float64 0-d metric outside the graph: forward only"));
    r.push_back(row("accuracy (y (N, C, H))", "accuracy", {constant(distinct("y", {2, 3, 2})), labels("t", {2, 2}, 3)},
                    [](const Args& a) { return F::accuracy(a[0], a[1]); }).g(Grad::none).out(float64));
    r.push_back(row("dropout (train, fixed generator)", "dropout", {real("x", {3, 4})},
                    [](const Args& a) { return F::dropout(a[0], kDropoutRatio, random::Generator(kDropoutSeed)); })
                    .ref(dropout_ref)
                    .says("random: forward against the same generator's mask on the same device; test mode and the "
                          "mask statistics in their own case"));
    r.push_back(row("embed_id", {ints("ids", {2, 3}, {0, 4, 2, 0, 1, 4}), real("W", {5, 3})},
                    [](const Args& a) { return F::embed_id(a[0], a[1]); })
                    .sums(2).says("ids: repeats accumulate in W's gradient"));
    // --- normalization.hpp -------------------------------------------------------------------
    auto bn_train = [](const Args& a) {
      Tensor mean, var;  // fresh running statistics on every call
      return F::batch_norm(a[0], a[1], a[2], mean, var);
    };
    r.push_back(row("batch_norm (train, 2-d)", "batch_norm", {real("x", {4, 3}), real("gamma", {3}), real("beta", {3})},
                    bn_train).sums(4));
    r.push_back(row("batch_norm (train, 4-d)", "batch_norm",
                    {real("x", {2, 3, 2, 2}), real("gamma", {3}), real("beta", {3})}, bn_train).sums(8));
    r.push_back(row("batch_norm (test mode)", "batch_norm",
                    {real("x", {4, 3}), real("gamma", {3}), real("beta", {3}), constant(real("mean", {3})),
                     constant(positive("var", {3}))},
                    [](const Args& a) {
                      auto guard = test_mode();
                      Tensor mean = a[3].data(), var = a[4].data();
                      return F::batch_norm(a[0], a[1], a[2], mean, var);
                    }).sums(4).says("running statistics: constants"));
    r.push_back(row("batch_nrom (train, 2-d)", "batch_nrom", {real("x", {4, 3}), real("gamma", {3}), real("beta", {3})},
                    [](const Args& a) {
                      Tensor mean, var;
                      return F::batch_nrom(a[0], a[1], a[2], mean, var);
                    }).sums(4).says("DeZero's misspelt alias of batch_norm"));
    r.push_back(row("layer_norm (last axis)", "layer_norm", {real("x", {3, 4}), real("gamma", {4}), real("beta", {4})},
                    [](const Args& a) { return F::layer_norm(a[0], a[1], a[2]); }).sums(4));
    r.push_back(row("layer_norm (last 2 axes, no beta)", "layer_norm", {real("x", {2, 2, 3}), real("gamma", {2, 3})},
                    [](const Args& a) { return F::layer_norm(a[0], a[1], Variable(), 1e-3); }).sums(6));
    // --- conv.hpp ----------------------------------------------------------------------------
    r.push_back(row("conv2d (stride 1, pad 1, bias)", "conv2d",
                    {real("x", {2, 2, 4, 4}), real("W", {3, 2, 3, 3}), real("b", {3})},
                    [](const Args& a) { return F::conv2d(a[0], a[1], a[2], 1, 1); }).sums(32));
    r.push_back(row("conv2d (kernel 2x3, stride (2, 1), pad (0, 1), no bias)", "conv2d",
                    {real("x", {1, 2, 5, 6}), real("W", {2, 2, 2, 3})},
                    [](const Args& a) { return F::conv2d(a[0], a[1], Variable(), {2, 1}, {0, 1}); }).sums(12));
    r.push_back(row("conv2d (groups 2, stride 1, pad 1, bias)", "conv2d",
                    {real("x", {2, 4, 4, 4}), real("W", {6, 2, 3, 3}), real("b", {6})},
                    [](const Args& a) { return F::conv2d(a[0], a[1], a[2], 1, 1, 2); }).sums(32));
    r.push_back(row("conv2d (depthwise, groups 3, stride 2, pad 1, no bias)", "conv2d",
                    {real("x", {2, 3, 5, 5}), real("W", {6, 1, 3, 3})},
                    [](const Args& a) { return F::conv2d(a[0], a[1], Variable(), 2, 1, 3); }).sums(18));
    r.push_back(row("conv3d (stride (2, 1, 1), pad 1, bias)", "conv3d",
                    {real("x", {1, 2, 4, 3, 3}), real("W", {2, 2, 2, 2, 2}), real("b", {2})},
                    [](const Args& a) { return F::conv3d(a[0], a[1], a[2], {2, 1, 1}, 1); }).sums(17));
    r.push_back(row("conv3d (groups 2, no bias)", "conv3d",
                    {real("x", {2, 4, 3, 3, 3}), real("W", {2, 2, 2, 2, 2})},
                    [](const Args& a) { return F::conv3d(a[0], a[1], Variable(), 1, 0, 2); }).sums(16));
    r.push_back(row("conv2d_simple (stride 2, pad 1, bias)", "conv2d_simple",
                    {real("x", {1, 2, 5, 5}), real("W", {2, 2, 3, 3}), real("b", {2})},
                    [](const Args& a) { return F::conv2d_simple(a[0], a[1], a[2], 2, 1); }).sums(18));
    r.push_back(row("deconv2d (stride 2, pad 1, bias)", "deconv2d",
                    {real("x", {1, 2, 3, 3}), real("W", {2, 3, 3, 3}), real("b", {3})},
                    [](const Args& a) { return F::deconv2d(a[0], a[1], a[2], 2, 1); }).sums(27));
    r.push_back(row("deconv2d (kernel 2x3, stride (1, 2), pad (1, 0))", "deconv2d",
                    {real("x", {2, 1, 3, 2}), real("W", {1, 2, 2, 3}), real("b", {2})},
                    [](const Args& a) { return F::deconv2d(a[0], a[1], a[2], {1, 2}, {1, 0}); }).sums(12));
    r.push_back(row("deconv2d (outsize 6x6, no bias)", "deconv2d", {real("x", {1, 2, 3, 3}), real("W", {2, 1, 3, 3})},
                    [](const Args& a) { return F::deconv2d(a[0], a[1], Variable(), 2, 1, Pair{6, 6}); }).sums(18));
    r.push_back(row("deconv2d (groups 2, stride 2, pad 1, bias)", "deconv2d",
                    {real("x", {1, 4, 3, 3}), real("W", {4, 3, 3, 3}), real("b", {6})},
                    [](const Args& a) { return F::deconv2d(a[0], a[1], a[2], 2, 1, std::nullopt, 2); }).sums(27));
    r.push_back(row("deconv2d (depthwise, groups 3, outsize 6x6, no bias)", "deconv2d",
                    {real("x", {2, 3, 3, 3}), real("W", {3, 1, 3, 3})},
                    [](const Args& a) { return F::deconv2d(a[0], a[1], Variable(), 2, 1, Pair{6, 6}, 3); }).sums(18));
    r.push_back(row("im2col (kernel 3, pad 1, matrix)", "im2col", {real("x", {1, 2, 4, 4})},
                    [](const Args& a) { return F::im2col(a[0], 3, 1, 1, true); }).sums(9));
    r.push_back(row("im2col (kernel 2, stride 2, 6-d)", "im2col", {real("x", {2, 1, 4, 4})},
                    [](const Args& a) { return F::im2col(a[0], 2, 2, 0, false); }).sums(4));
    r.push_back(row("im2col (kernel 2x3, stride (2, 1), pad (1, 0))", "im2col", {real("x", {1, 1, 4, 5})},
                    [](const Args& a) { return F::im2col(a[0], {2, 3}, {2, 1}, {1, 0}, true); }).sums(6));
    r.push_back(row("col2im (kernel 3, pad 1, matrix)", "col2im", {real("col", {16, 18})},
                    [](const Args& a) { return F::col2im(a[0], {1, 2, 4, 4}, 3, 1, 1, true); }).sums(9));
    r.push_back(row("col2im (kernel 2, stride 2, 6-d)", "col2im", {real("col", {2, 1, 2, 2, 2, 2})},
                    [](const Args& a) { return F::col2im(a[0], {2, 1, 4, 4}, 2, 2, 0, false); }).sums(4));
    // --- pooling.hpp -------------------------------------------------------------------------
    r.push_back(row("pooling (kernel 2, stride 2)", "pooling", {distinct("x", {1, 2, 4, 4})},
                    [](const Args& a) { return F::pooling(a[0], 2, 2); })
                    .g(Grad::ae).sums(4).says("distinct values: no ties"));
    r.push_back(row("pooling (kernel 3, stride 2, pad 1)", "pooling", {distinct("x", {2, 1, 5, 5})},
                    [](const Args& a) { return F::pooling(a[0], 3, 2, 1); })
                    .g(Grad::ae).sums(9).says("zero padding: none of x near 0"));
    r.push_back(row("pooling (kernel 2x3, stride (1, 2))", "pooling", {distinct("x", {1, 2, 4, 5})},
                    [](const Args& a) { return F::pooling(a[0], {2, 3}, {1, 2}); }).g(Grad::ae).sums(6));
    r.push_back(row("pooling_simple (kernel 2, stride 2)", "pooling_simple", {distinct("x", {1, 2, 4, 4})},
                    [](const Args& a) { return F::pooling_simple(a[0], 2, 2); }).g(Grad::ae).sums(4));
    r.push_back(row("pooling_simple (kernel 3, stride 2, pad 1)", "pooling_simple", {distinct("x", {2, 1, 5, 5})},
                    [](const Args& a) { return F::pooling_simple(a[0], 3, 2, 1); }).g(Grad::ae).sums(9));
    r.push_back(row("average_pooling (kernel 3, stride 1, pad 1)", "average_pooling", {real("x", {1, 2, 4, 4})},
                    [](const Args& a) { return F::average_pooling(a[0], 3, 1, 1); }).sums(9));
    r.push_back(row("average_pooling (kernel 2, stride 2)", "average_pooling", {real("x", {2, 1, 4, 4})},
                    [](const Args& a) { return F::average_pooling(a[0], 2, 2); }).sums(4));
    r.push_back(row("average_pooling (kernel 2x3, stride (1, 2), pad (0, 1))", "average_pooling",
                    {real("x", {1, 2, 4, 5})},
                    [](const Args& a) { return F::average_pooling(a[0], {2, 3}, {1, 2}, {0, 1}); }).sums(6));
    return r;
  }();
  return rows;
}

// --- inputs ------------------------------------------------------------------------------------
// The CPU inputs of a row (float64, float32-representable; int64 for integer arguments),
// the weights W of sum(y * W) and the vectors v_i of the double-backward check.
struct Inputs {
  std::vector<Tensor> args;
  Tensor W;
  std::vector<Tensor> v;  // one per argument (undefined for those without a gradient)
};

Tensor f32_exact(const Tensor& t) { return t.astype(float32).astype(float64); }

Tensor draw(const Arg& a, random::Generator& gen) {
  const std::int64_t n = a.shape.numel();
  switch (a.dom) {
    case Dom::real: return f32_exact(gen.randn(a.shape) * a.hi);
    case Dom::uniform: return f32_exact(gen.uniform(a.lo, a.hi, a.shape));
    case Dom::away: {
      std::vector<double> v = gen.randn(a.shape).to_vector<double>();
      for (double& x : v)
        for (int pass = 0; pass < 4; ++pass)
          for (double k : a.kinks)
            if (std::abs(x - k) < 0.1) x = k + (x >= k ? 0.1 + (x - k) : -0.1 + (x - k));
      return f32_exact(array(v, a.shape, float64));
    }
    case Dom::distinct: {
      std::vector<std::int64_t> perm = gen.permutation(n).to_vector<std::int64_t>();
      std::vector<double> v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i)
        v[i] = (2.0 * static_cast<double>(perm[i]) + 1.0) / static_cast<double>(n) - 1.0;
      return f32_exact(array(v, a.shape, float64));
    }
    case Dom::labels: return gen.randint(0, static_cast<std::int64_t>(a.hi), a.shape, int64);
    case Dom::ints: return i64(a.values).reshape(a.shape);
  }
  return Tensor();
}

// Seeded from the row's id (FNV-1a): a row keeps its inputs when others are added.
// DEZERO_OP_TABLE_SEED=n mixes n in, to try the table on other inputs.
std::uint64_t seed_of(const std::string& id) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : id) h = (h ^ c) * 16777619u;
  if (const char* extra = std::getenv("DEZERO_OP_TABLE_SEED"))
    h = (h ^ static_cast<std::uint32_t>(std::strtoul(extra, nullptr, 10))) * 16777619u;
  return h;
}

Inputs make_inputs(const Row& r) {
  random::Generator gen(seed_of(r.id));
  Inputs in;
  for (const Arg& a : r.args) in.args.push_back(draw(a, gen));
  Args cpu(in.args.begin(), in.args.end());
  Variable y = r.fn(cpu);
  in.W = f32_exact(gen.randn(y.shape()));
  for (std::size_t i = 0; i < r.args.size(); ++i)
    in.v.push_back(r.args[i].diff ? f32_exact(gen.randn(r.args[i].shape)) : Tensor());
  return in;
}

// The arguments in `dt` on `dev`: floating ones in dt, integer ones int64 (int32 with float32).
Args on(const Row& r, const Inputs& in, Device dev, DType dt) {
  Args out;
  for (std::size_t i = 0; i < r.args.size(); ++i)
    out.emplace_back(in.args[i].astype(r.args[i].integer() ? (dt == float32 ? int32 : int64) : dt).to(dev));
  return out;
}
Args fresh(const Args& a) {
  Args out;
  for (const Variable& v : a) out.emplace_back(v.data());
  return out;
}

// --- comparisons ---------------------------------------------------------------------------------
// float32: relative to the float64 reference, 1e-6 (8 ulp) per term summed, plus a floor of
// 4 terms; float64: 1e-13 per term (another device's summation order and library kernels,
// cuDNN's among them, still far below any float32 step hiding in a float64 path). The
// absolute part is the same relative error of `scale`: the largest of the reference's
// elements, the inputs and W, so that cancellation in a sum (a sum of randn that lands near
// 0) does not demand digits that no order of summation keeps.
double rtol_for(DType dt, int terms) { return (dt == float32 ? 1e-6 : 1e-13) * (4 + terms); }

// "" when got is close to want, else the first element that is not (or the sizes).
double max_abs(const Tensor& t) {
  double m = 0;
  for (double x : t.to_cpu().astype(float64).to_vector<double>()) m = std::max(m, std::abs(x));
  return m;
}

std::string mismatch(const Tensor& got, const Tensor& want, double rtol, double scale = 0) {
  auto w = want.to_cpu().astype(float64).to_vector<double>();
  scale = std::max(scale, max_abs(want));
  std::string where;
  return dzt::close_vectors(got.to_cpu().astype(float64).to_vector<double>(), w, rtol, rtol * scale, where) ? ""
                                                                                                        : where;
}

std::string label(const Row& r, Device dev, DType dt) {
  std::ostringstream s;
  s << "[" << r.id << "] on " << dev << ", " << dt;
  return s.str();
}

template <class... T>
std::string cat(const T&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

// What the checks of one row found. They report here instead of asserting directly, so that
// a row that throws fails alone, and so that "op table: the checks catch ..." can run them
// on rows that are wrong on purpose and see them fail.
struct Report {
  std::vector<std::string> failures;
  int checks = 0;
  void expect(bool ok, const std::string& msg) {
    ++checks;
    if (!ok) failures.push_back(msg);
  }
  // A comparison: `mismatch` is "" when it held.
  void expect_close(const std::string& mismatch, const std::string& what) {
    ++checks;
    if (!mismatch.empty()) failures.push_back(what + mismatch);
  }
  template <class Body>
  void guard(const std::string& what, Body&& body) {
    try {
      body();
    } catch (const std::exception& e) {
      failures.push_back(what + " threw: " + e.what());
    }
  }
  bool ok() const { return failures.empty(); }
  std::string str() const {
    std::string s;
    for (const std::string& f : failures) s += "\n  " + f;
    return s;
  }
};

// The gradients of sum(fn(a) * W) with respect to every argument that takes one.
std::vector<Variable> first_grads(const Row& r, const Args& a, const Tensor& W, bool create_graph) {
  Variable y = F::sum(r.fn(a) * W);
  y.backward(false, create_graph);
  std::vector<Variable> g;
  for (std::size_t i = 0; i < a.size(); ++i)
    g.push_back(r.args[i].diff && a[i].has_grad() ? a[i].grad() : Variable());
  return g;
}

// --- (a) forward and first gradient vs the CPU float64 result -----------------------------------
void check_forward(const Row& r, Device dev, Report& rep) {
  Inputs in = make_inputs(r);
  // The CPU float64 reference: result and gradients.
  Args ref_args = on(r, in, Device::cpu(), float64);
  Variable ref_y = r.fn(ref_args);
  std::vector<Variable> ref_g;
  if (r.grad != Grad::none) ref_g = first_grads(r, fresh(ref_args), in.W, false);
  double scale = max_abs(in.W);
  for (std::size_t i = 0; i < r.args.size(); ++i)
    if (!r.args[i].integer()) scale = std::max(scale, max_abs(in.args[i]));
  for (DType dt : {float32, float64}) {
    const std::string what = label(r, dev, dt);
    rep.guard(what, [&] {
      Args a = on(r, in, dev, dt);
      Variable y = r.fn(a);
      rep.expect(y.device() == dev, cat(what, ": result on ", y.device()));
      rep.expect(y.dtype() == r.out_dtype.value_or(dt), cat(what, ": result dtype ", y.dtype()));
      rep.expect(y.shape() == ref_y.shape(), cat(what, ": result shape ", y.shape(), ", want ", ref_y.shape()));
      Tensor want = r.device_ref ? r.device_ref(a).data() : ref_y.data();
      rep.expect_close(mismatch(y.data(), want, rtol_for(dt, r.terms), scale), what + ": forward ");
      if (r.grad == Grad::none) {
        rep.expect(y.creator() == nullptr, what + ": a non-differentiable result records no node");
        return;
      }
      if (r.device_ref) return;  // masks differ between devices: gradients in (b) and (c)
      Args av = fresh(a);
      std::vector<Variable> g = first_grads(r, av, in.W.astype(dt).to(dev), false);
      for (std::size_t i = 0; i < g.size(); ++i) {
        if (!r.args[i].diff) continue;
        const std::string gw = what + ": gradient of " + r.args[i].name;
        rep.expect(g[i].defined(), gw + ": none reached the argument");
        rep.expect(ref_g[i].defined(), gw + ": none reached it on the CPU in float64");
        if (!g[i].defined() || !ref_g[i].defined()) continue;
        rep.expect(g[i].dtype() == dt, cat(gw, ": dtype ", g[i].dtype()));
        rep.expect(g[i].device() == dev, cat(gw, ": on ", g[i].device()));
        rep.expect_close(mismatch(g[i].data(), ref_g[i].data(), rtol_for(dt, r.terms), scale), gw + ": ");
      }
    });
  }
}

// --- (a16) forward and first gradient in bfloat16 and float16 ----------------------------------------
// The 16-bit dtypes compute in float32 and round each op's result, so the reference is the CPU
// float64 result of the inputs (and W) first rounded to the dtype, and the tolerance is the
// dtype's step per term summed: 2^-8 relative for bfloat16 (8 significant bits), 2^-11 for
// float16 (11), times (4 + terms) as float32's 1e-6 is, with the same absolute floor of `scale`.
// Rows whose function has no 16-bit path yet throw DtypeError; the test case lists them.
double rtol16(DType dt, int terms) { return (dt == bfloat16 ? 0x1p-8 : 0x1p-11) * (4 + terms); }

// With `under_autocast`, the inputs stay float32 and the row runs under autocast(dt) (issue 31's
// policy: the products round their operands to dt and sum in float32): the same reference and
// tolerance, float32 results and gradients.
void check_forward_16(const Row& r, Device dev, Report& rep, DType dt, bool under_autocast = false) {
  Inputs in = make_inputs(r);
  Inputs rounded = in;  // the same values, rounded to dt: the reference's inputs
  for (std::size_t i = 0; i < r.args.size(); ++i)
    if (!r.args[i].integer()) rounded.args[i] = in.args[i].astype(dt).astype(float64);
  rounded.W = in.W.astype(dt).astype(float64);
  Args ref_args = on(r, rounded, Device::cpu(), float64);
  Variable ref_y = r.fn(ref_args);
  std::vector<Variable> ref_g;
  if (r.grad != Grad::none && !r.device_ref) ref_g = first_grads(r, fresh(ref_args), rounded.W, false);
  double scale = max_abs(in.W);
  for (std::size_t i = 0; i < r.args.size(); ++i)
    if (!r.args[i].integer()) scale = std::max(scale, max_abs(in.args[i]));
  const std::string what = under_autocast ? label(r, dev, float32) + " under autocast(" + dtype_name(dt) + ")"
                                           : label(r, dev, dt);
  const DType data_dt = under_autocast ? float32 : dt;  // the inputs', results' and gradients' dtype
  std::optional<AutocastGuard> policy;
  if (under_autocast) policy.emplace(dt);
  Args a = on(r, in, dev, data_dt);
  Variable y = r.fn(a);
  rep.expect(y.device() == dev, cat(what, ": result on ", y.device()));
  if (!r.out_dtype) rep.expect(y.dtype() == data_dt, cat(what, ": result dtype ", y.dtype()));
  rep.expect(y.shape() == ref_y.shape(), cat(what, ": result shape ", y.shape(), ", want ", ref_y.shape()));
  Tensor want = r.device_ref ? r.device_ref(a).data() : ref_y.data();
  rep.expect_close(mismatch(y.data(), want, rtol16(dt, r.terms), scale), what + ": forward ");
  if (r.grad == Grad::none || r.device_ref) return;
  std::vector<Variable> g = first_grads(r, fresh(a), in.W.astype(data_dt).to(dev), false);
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!r.args[i].diff) continue;
    const std::string gw = what + ": gradient of " + r.args[i].name;
    rep.expect(g[i].defined() && ref_g[i].defined(), gw + ": none reached the argument");
    if (!g[i].defined() || !ref_g[i].defined()) continue;
    rep.expect(g[i].dtype() == data_dt, cat(gw, ": dtype ", g[i].dtype()));
    rep.expect(g[i].device() == dev, cat(gw, ": on ", g[i].device()));
    rep.expect_close(mismatch(g[i].data(), ref_g[i].data(), rtol16(dt, r.terms), scale), gw + ": ");
  }
}

// --- (b) gradient_check of every differentiable argument, float64 -----------------------------------
void check_gradients(const Row& r, Device dev, Report& rep) {
  Inputs in = make_inputs(r);
  Args base = on(r, in, dev, float64);
  Tensor W = in.W.to(dev);
  for (std::size_t i = 0; i < r.args.size(); ++i) {
    if (!r.args[i].diff) continue;
    const std::string what = label(r, dev, float64) + ": gradient_check of " + r.args[i].name;
    rep.guard(what, [&] {
      auto f = [&](const Variable& v) {
        Args a = fresh(base);
        a[i] = v;
        return r.fn(a) * W;
      };
      rep.expect(utils::gradient_check(f, base[i].data()), what + " (the worst element is on stderr)");
    });
  }
}

// --- (c) double backward: d/dx_j sum_i sum(g_i * v_i) against differences of the g_i ------------
// The first gradients g_i of sum(y * W) are taken with create_graph; the gradient of
// sum_i sum(g_i * v_i) with respect to each x_j (a Hessian-vector product, cross terms
// included: conv's weight gradient depends on x) is compared with central differences of
// the same sum computed from plain first gradients.
void check_double_backward(const Row& r, Device dev, Report& rep) {
  Inputs in = make_inputs(r);
  Args base = on(r, in, dev, float64);
  Tensor W = in.W.to(dev);
  std::vector<Tensor> v;
  for (const Tensor& t : in.v) v.push_back(t.defined() ? t.to(dev) : t);
  const std::string what = label(r, dev, float64) + ": double backward";
  rep.guard(what, [&] {
    // The first gradients, with and without a graph: the same values.
    Args x = fresh(base);
    std::vector<Variable> g = first_grads(r, x, W, true);
    std::vector<Variable> plain = first_grads(r, fresh(base), W, false);
    Variable G;
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (!r.args[i].diff) continue;
      rep.expect(g[i].defined() && plain[i].defined(), what + ": no gradient of " + r.args[i].name);
      if (!g[i].defined() || !plain[i].defined()) return;
      rep.expect_close(mismatch(g[i].data(), plain[i].data(), 1e-12),
                       what + ": the create_graph gradient of " + r.args[i].name + " differs: ");
      Variable term = F::sum(g[i] * v[i]);
      G = G.defined() ? G + term : term;
    }
    for (Variable& xi : x) xi.cleargrad();
    G.backward();
    for (std::size_t j = 0; j < x.size(); ++j) {
      if (!r.args[j].diff) continue;
      Tensor hv = x[j].has_grad() ? x[j].grad().data() : zeros_like(base[j].data());
      auto Gj = [&](const Variable& xj) {
        Args a = fresh(base);
        a[j] = xj;
        std::vector<Variable> gj = first_grads(r, a, W, false);
        Tensor s = zeros({}, float64, dev);
        for (std::size_t i = 0; i < gj.size(); ++i)
          if (r.args[i].diff && gj[i].defined()) s = s + (gj[i].data() * v[i]).sum();
        return Variable(s);
      };
      Tensor num = utils::numerical_grad(Gj, base[j].data());
      std::string where;
      double scale = 1;
      for (double e : dzt::vals(num)) scale = std::max(scale, std::abs(e));
      bool ok = dzt::close_vectors(dzt::vals(hv), dzt::vals(num), 1e-4, 1e-5 * scale, where);
      rep.expect_close(ok ? "" : where, what + " with respect to " + r.args[j].name + ": ");
    }
  });
}

bool differentiable(const Row& r) { return r.grad != Grad::none; }

// The F:: functions that throw DtypeError for bfloat16 / float16 (test case (a16)): none now.
const std::vector<std::string> kNo16BitPath = {};

// The functions whose products autocast() computes in 16 bits (issue 31's policy; README "Mixed
// precision"): their rows run again with float32 inputs under autocast, test case (ac).
const std::set<std::string> kAutocastOps = {"matmul", "linear", "conv2d", "conv2d_simple", "deconv2d"};

using Check = void (*)(const Row&, Device, Report&);

// Runs `check` over every row (differentiable ones only, unless `all`) on `dev`: one
// assertion per row, naming what failed.
void run_table(Check check, Device dev, bool all) {
  const auto& rows = table();
  int checks = 0;
  for (const Row& r : rows) {
    if (!all && !differentiable(r)) continue;
    Report rep;
    rep.guard(r.id, [&] { check(r, dev, rep); });
    checks += rep.checks;
    CHECK_MESSAGE(rep.ok(), "[" << r.id << "]" << rep.str());
  }
  MESSAGE(dev << ": " << checks << " comparisons");
}

// --- rows that are wrong on purpose: the checks must see it --------------------------------------
// sin with a gradient 1% off.
class SinGradOff : public Function {
  TensorList forward(const TensorList& xs) override { return {dezero::sin(xs[0])}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] * F::cos(input(0)) * 1.01}; }
};
// sin whose backward leaves the graph (flashlight's mistake): right first gradients, no second.
class SinDetached : public Function {
  TensorList forward(const TensorList& xs) override { return {dezero::sin(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    return {gys[0] * Variable(dezero::cos(input(0).data()))};
  }
};

}  // namespace

// --- the table's own checks ------------------------------------------------------------------------
TEST_CASE("op table: the rows (DEZERO_OP_TABLE_LIST=1 prints their F:: names)") {
  const auto& rows = table();
  std::set<std::string> ids, names;
  for (const Row& r : rows) {
    CHECK_MESSAGE(ids.insert(r.id).second, "two rows are called " << r.id);
    names.insert(r.name);
    CHECK_MESSAGE(!r.args.empty(), r.id << ": no arguments");
    bool any_diff = false;
    for (const Arg& a : r.args) any_diff = any_diff || a.diff;
    CHECK_MESSAGE(any_diff == differentiable(r), r.id << ": differentiable arguments and the Grad kind disagree");
  }
  const char* list = std::getenv("DEZERO_OP_TABLE_LIST");
  if (list != nullptr && std::string(list) == "1")
    for (const Row& r : rows) {
      const char* kind = r.grad == Grad::none ? "forward only" : r.grad == Grad::ae ? "twice, a.e." : "twice";
      std::cout << "op-table-row: " << r.name << " | " << r.id << " | " << kind << (r.device_ref ? ", random" : "")
                << (r.note.empty() ? "" : " | ") << r.note << "\n";
    }
  MESSAGE(rows.size() << " rows cover " << names.size() << " F:: names");
}

TEST_CASE("op table: the checks catch a wrong forward, dtype, gradient and double backward") {
  auto sin_row = [](std::string id, Fn fn) { return row(std::move(id), "sin", {real("x", {2, 3})}, std::move(fn)); };
  auto run = [](Check check, const Row& r) {
    Report rep;
    rep.guard(r.id, [&] { check(r, Device::cpu(), rep); });
    return rep;
  };
  const Row good = sin_row("good sin", [](const Args& a) { return F::sin(a[0]); });
  CHECK(run(check_forward, good).ok());
  CHECK(run(check_gradients, good).ok());
  CHECK(run(check_double_backward, good).ok());

  // float32 results 1e-3 off: (a).
  Report r1 = run(check_forward, sin_row("float32 off", [](const Args& a) {
                    return a[0].dtype() == float32 ? F::sin(a[0]) + 1e-3 : F::sin(a[0]);
                  }));
  CHECK(r1.failures.size() == 1);
  CHECK_MESSAGE(dzt::has(r1.str(), "[float32 off] on cpu, float32: forward element 0: "), r1.str());
  // float32 in, float64 out: (a).
  Report r2 = run(check_forward, sin_row("float64 out", [](const Args& a) {
                    return F::sin(a[0].dtype() == float32 ? Variable(a[0].data().astype(float64)) : a[0]);
                  }));
  CHECK(dzt::has(r2.str(), "[float64 out] on cpu, float32: result dtype float64"));
  // A gradient 1% off: (b) and (c) (the first gradient is the one differenced).
  const Row off = sin_row("gradient off", [](const Args& a) { return call<SinGradOff>({a[0]}); });
  CHECK(run(check_forward, off).ok());  // the reference is the same wrong gradient
  {
    std::ostringstream err;  // gradient_check names the worst element on stderr
    std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
    Report rb = run(check_gradients, off);
    std::cerr.rdbuf(old);
    CHECK(dzt::has(rb.str(), "[gradient off] on cpu, float64: gradient_check of x"));
    CHECK(dzt::has(err.str(), "gradient_check failed (shape (2, 3))"));
  }
  // A backward that leaves the graph: first gradients right, second ones missing: (c) alone.
  const Row detached = sin_row("detached", [](const Args& a) { return call<SinDetached>({a[0]}); });
  CHECK(run(check_gradients, detached).ok());
  CHECK(dzt::has(run(check_double_backward, detached).str(),
                 "[detached] on cpu, float64: double backward with respect to x"));
  // A row that throws reports it, and the others still run.
  Report r3 = run(check_forward, sin_row("throws", [](const Args& a) -> Variable {
                    if (a[0].dtype() == float32) throw ValueError("no float32 here");
                    return F::sin(a[0]);
                  }));
  CHECK(r3.failures.size() == 1);
  CHECK(dzt::has(r3.str(), "[throws] on cpu, float32 threw: no float32 here"));
}

TEST_CASE("op table: (a) forward and gradients, float32 and float64, agree with the CPU float64 result") {
  dzt::on_each_device([](Device dev) { run_table(check_forward, dev, true); });
}

TEST_CASE("op table: (b) gradient_check of every differentiable argument (float64)") {
  dzt::on_each_device([](Device dev) { run_table(check_gradients, dev, false); });
}

TEST_CASE("op table: (c) double backward against differences of the first gradient (float64)") {
  dzt::on_each_device([](Device dev) { run_table(check_double_backward, dev, false); });
}

// The functions without a 16-bit path (DtypeError in bfloat16 and float16, kNo16BitPath): none.
// matmul and linear compute 16-bit tensors in float32 and round once (tensor/linalg.cpp), as the
// convolutions, pooling, im2col / col2im (tensor/conv.cpp) and batch norm (its composite formula)
// do. Any row that throws, or a listed one that starts to pass, fails here, so that the list stays
// the truth.
TEST_CASE("op table: (a16) forward and gradients in bfloat16 and float16 agree with float64 on the rounded inputs") {
  dzt::on_each_device([](Device dev) {
    for (DType dt : {bfloat16, float16}) {
      std::set<std::string> no_path;
      int checks = 0;
      for (const Row& r : table()) {
        Report rep;
        try {
          check_forward_16(r, dev, rep, dt);
        } catch (const DtypeError&) {
          no_path.insert(r.name);
          continue;
        } catch (const std::exception& e) {
          rep.failures.push_back(label(r, dev, dt) + " threw: " + e.what());
        }
        checks += rep.checks;
        CHECK_MESSAGE(rep.ok(), "[" << r.id << "]" << rep.str());
      }
      std::string listed;
      for (const std::string& n : no_path) listed += n + " ";
      CHECK_MESSAGE(no_path == std::set<std::string>(kNo16BitPath.begin(), kNo16BitPath.end()),
                    dtype_name(dt) << ": the rows without a 16-bit path are " << listed);
      MESSAGE(dev << ", " << std::string(dtype_name(dt)) << ": " << checks << " comparisons");
    }
  });
}

// The (ac) case: forward and gradients of the rows whose products autocast rounds, float32 inputs
// under autocast(bfloat16) and autocast(float16), against float64 on the rounded inputs.
TEST_CASE("op table: (ac) under autocast, products and their gradients agree with float64 to 16-bit precision") {
  dzt::on_each_device([](Device dev) {
    for (DType dt : {bfloat16, float16}) {
      int checks = 0, rows = 0;
      for (const Row& r : table()) {
        if (!kAutocastOps.count(r.name)) continue;
        Report rep;
        rep.guard(label(r, dev, float32), [&] { check_forward_16(r, dev, rep, dt, true); });
        checks += rep.checks;
        ++rows;
        CHECK_MESSAGE(rep.ok(), "[" << r.id << "]" << rep.str());
      }
      CHECK(rows >= 8);
      MESSAGE(dev << ", autocast(" << std::string(dtype_name(dt)) << "): " << rows << " rows, " << checks << " comparisons");
    }
  });
}

// --- dropout: what a random row cannot show by comparison ------------------------------------------
TEST_CASE("op table: dropout in test mode is the identity; in train mode its mask has the ratio") {
  dzt::on_each_device([](Device dev) {
    for (DType dt : {float32, float64}) {
      Variable x(ones({100, 100}, dt, dev));
      {
        auto guard = test_mode();
        CHECK(F::dropout(x, kDropoutRatio, random::Generator(kDropoutSeed)).is_same(x));
      }
      Variable y = F::dropout(x, kDropoutRatio, random::Generator(kDropoutSeed));
      CHECK(y.dtype() == dt);
      CHECK(y.device() == dev);
      auto v = dzt::vals(y);
      const double kept = static_cast<double>(dt == float32 ? static_cast<float>(1.0 / (1.0 - kDropoutRatio))
                                                            : 1.0 / (1.0 - kDropoutRatio));
      std::size_t zeros_n = 0, others = 0;
      for (double e : v) {
        if (e == 0.0) ++zeros_n;
        else if (std::abs(e - kept) > 1e-6 * kept) ++others;
      }
      CHECK(others == 0);
      // 10000 draws: the fraction dropped is 0.3 within 5 standard deviations (0.023).
      double frac = static_cast<double>(zeros_n) / static_cast<double>(v.size());
      CHECK(frac == doctest::Approx(kDropoutRatio).epsilon(0.023 / kDropoutRatio));
      // The same generator seed gives the same mask; another seed another one.
      CHECK(utils::array_equal(y.data(), F::dropout(x, kDropoutRatio, random::Generator(kDropoutSeed)).data()));
      Variable other = F::dropout(x, kDropoutRatio, random::Generator(kDropoutSeed + 1));
      CHECK_FALSE(utils::array_equal(y.data(), other.data()));
    }
  });
}
