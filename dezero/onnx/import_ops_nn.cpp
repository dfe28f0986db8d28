// dezero/onnx/import_ops_nn.cpp - internal: the importer's neural-network ops other than
// convolutions and pools (import_ops_conv.cpp), opsets 7-20: Gemm, MatMul, Einsum, BatchNormalization,
// LayerNormalization, Dropout, LSTM, SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss
// (register_nn_ops, ops.hpp).
//
// Every float result is built out of DeZero Functions (dezero::F: F::concat, F::where and
// the rest), so backward(), create_graph and the optimizers work on it. Where ONNX's
// semantics differ from DeZero's function, the op composes ONNX's out of DeZero's:
//   - Gemm's transA / transB run as one GEMM with transpose flags (no copy of the weight);
//   - LSTM is unrolled over time from matmul, sigmoid, tanh, get_item and concat;
//   - the losses pick the target class with a constant one-hot mask of the (integer, host) labels.
// Dropout's mask is an integer host tensor without a gradient. Refused with a NotImplementedError
// naming the node: LSTM's clip, activations other than the default and sequences shorter than
// the input.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dezero/error.hpp"
#include "dezero/functions.hpp"
#include "dezero/tensor/fused.hpp"
#include "dezero/onnx/import_util.hpp"
#include "dezero/onnx/ops.hpp"

namespace dezero::onnx::detail {

namespace {

bool output_named(const ::onnx::NodeProto& node, int i) {
  return i < node.output_size() && !node.output(i).empty();
}

// --- Gemm, MatMul -----------------------------------------------------------------------------
// op(a) op(b) for 2-d a and b, op = transpose where the flag is set: F::matmul with Transposed, one
// GEMM with transpose flags, so Gemm's transA / transB (PyTorch writes Linear as Gemm with
// transB = 1) copy no weight, and the node exports again as a MatMul with its flags.
Variable product(const Variable& a, const Variable& b, bool ta, bool tb) {
  if (!ta && !tb) return F::matmul(a, b);
  return F::matmul(a, b, ta && tb ? F::Transposed::both : ta ? F::Transposed::x : F::Transposed::W);
}

// Y (M, N) = alpha A' (M, K) B' (K, N) + beta C (broadcast to (M, N)); A' = A^T with transA.
VariableList run_gemm(OpContext& ctx) {
  const Attrs& a = ctx.attrs();
  const double alpha = a.f("alpha", 1.0f), beta = a.f("beta", 1.0f);
  const bool ta = a.i("transA", 0) != 0, tb = a.i("transB", 0) != 0;
  const Variable &A = float_input(ctx, 0, "A"), &B = float_input(ctx, 1, "B");
  if (A.ndim() != 2 || B.ndim() != 2)
    shape_error(ctx, "A and B must be 2-d, got " + A.shape().str() + " and " + B.shape().str());
  if (A.shape()[ta ? 0 : 1] != B.shape()[tb ? 1 : 0])
    shape_error(ctx, "A " + A.shape().str() + " and B " + B.shape().str() + " (transA " +
                         std::to_string(ta) + ", transB " + std::to_string(tb) + ") do not multiply");
  const bool has_c = ctx.has_input(2) && beta != 0.0;
  if (!ta && !tb && has_c && alpha == 1.0 && beta == 1.0 && ctx.input(2).ndim() <= 2)
    return {F::linear(A, B, ctx.input(2))};
  Variable y = product(A, B, ta, tb);
  if (alpha != 1.0) y = y * alpha;
  if (has_c) y = y + (beta == 1.0 ? ctx.input(2) : ctx.input(2) * beta);
  return {y};
}

// np.matmul's rules: 1-d operands, broadcast batch axes.
VariableList run_matmul(OpContext& ctx) { return {F::matmul(ctx.input(0), ctx.input(1))}; }
// --- Einsum ---------------------------------------------------------------------------------------
// The equation's terms, one letter per axis ("bghij,bghjd->bghid"; without "->", the output is
// the letters that occur once, in alphabetical order, as NumPy). Refused at load time: "..."
// (broadcast axes) and a letter twice in one term (a diagonal).
struct Einsum {
  std::vector<std::string> in;
  std::string out;
};

Einsum parse_einsum(const Attrs& a) {
  if (!a.has("equation")) malformed(a.node, a.opset, "attribute 'equation' is required");
  std::string eq;
  for (char c : a.s("equation", "")) if (c != ' ') eq += c;
  if (eq.find("...") != std::string::npos)
    unsupported(a.node, a.opset, "an equation with '...' (broadcast axes): '" + eq + "'");
  Einsum e;
  const std::size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::size_t start = 0;
  for (std::size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      e.in.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  auto check_term = [&](const std::string& t, bool repeats_ok) {
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!std::isalpha(static_cast<unsigned char>(t[i])))
        malformed(a.node, a.opset, "equation '" + eq + "': '" + t[i] + "' is not a letter");
      if (!repeats_ok && t.find(t[i], i + 1) != std::string::npos)
        unsupported(a.node, a.opset, "equation '" + eq + "': '" + t[i] + "' twice in one term (a diagonal)");
    }
  };
  for (const std::string& t : e.in) check_term(t, false);
  if (arrow != std::string::npos) {
    e.out = eq.substr(arrow + 2);
    check_term(e.out, false);
    for (char c : e.out)
      if (lhs.find(c) == std::string::npos) malformed(a.node, a.opset, "equation '" + eq + "': output letter '" +
                                                                          std::string(1, c) + "' is in no input");
  } else {
    for (char c = 'A'; c <= 'z'; ++c)
      if (std::isalpha(static_cast<unsigned char>(c)) && std::count(lhs.begin(), lhs.end(), c) == 1) e.out += c;
  }
  if (e.in.size() != static_cast<std::size_t>(a.node.input_size()))
    malformed(a.node, a.opset, "equation '" + eq + "' has " + std::to_string(e.in.size()) + " terms for " +
                                   std::to_string(a.node.input_size()) + " inputs");
  return e;
}

// One operand and its letters.
struct Term {
  Variable v;
  std::string t;
};

// Sums out the axes of `x` whose letters are in neither `other` nor `keep`.
void sum_out(Term& x, const std::string& other, const std::string& keep) {
  std::vector<int> axes;
  std::string left;
  for (std::size_t i = 0; i < x.t.size(); ++i) {
    if (other.find(x.t[i]) == std::string::npos && keep.find(x.t[i]) == std::string::npos) axes.push_back(static_cast<int>(i));
    else left += x.t[i];
  }
  if (!axes.empty()) x.v = F::sum(x.v, Axes(axes));
  x.t = left;
}

// a (x) b over their common letters, keeping those in `keep`: as one batched product
//   A (batch, a's own, summed) -> (B, M, K),  B (batch, summed, b's own) -> (B, K, N),
//   A B -> (B, M, N) -> (batch..., a's own..., b's own...).
Term contract(const OpContext& ctx, Term a, Term b, const std::string& keep) {
  sum_out(a, b.t, keep);
  sum_out(b, a.t, keep);
  std::string batch, own_a, own_b, summed;
  for (char c : a.t) {
    if (b.t.find(c) == std::string::npos) own_a += c;
    else if (keep.find(c) != std::string::npos) batch += c;
    else summed += c;
  }
  for (char c : b.t) if (a.t.find(c) == std::string::npos) own_b += c;
  auto extent = [](const Term& x, char c) { return x.v.shape()[static_cast<int>(x.t.find(c))]; };
  for (char c : batch + summed)
    if (extent(a, c) != extent(b, c))
      shape_error(ctx, "letter '" + std::string(1, c) + "' has extent " + std::to_string(extent(a, c)) + " in " +
                           a.v.shape().str() + " and " + std::to_string(extent(b, c)) + " in " + b.v.shape().str());
  auto arrange = [&](const Term& x, const std::string& first, const std::string& second, const std::string& third) {
    std::vector<int> perm;
    std::int64_t n[3] = {1, 1, 1};
    const std::string* parts[3] = {&first, &second, &third};
    for (int k = 0; k < 3; ++k)
      for (char c : *parts[k]) {
        perm.push_back(static_cast<int>(x.t.find(c)));
        n[k] *= extent(x, c);
      }
    return F::reshape(F::transpose(x.v, perm), Shape{n[0], n[1], n[2]});
  };
  Variable y = F::matmul(arrange(a, batch, own_a, summed), arrange(b, batch, summed, own_b));
  Shape s;
  for (char c : batch + own_a) s.push_back(extent(a, c));
  for (char c : own_b) s.push_back(extent(b, c));
  return {F::reshape(y, s), batch + own_a + own_b};
}

// Einsum (opset 12): the operands contracted left to right (a letter is summed as soon as no
// later operand and not the output has it), then the result's axes put in the output's order.
// Every step is F::sum, F::transpose, F::reshape or F::matmul, so it differentiates.
VariableList run_einsum(OpContext& ctx) {
  const Einsum e = parse_einsum(ctx.attrs());
  std::vector<Term> terms;
  for (std::size_t i = 0; i < e.in.size(); ++i) {
    const Variable& v = ctx.input(i);
    if (v.ndim() != static_cast<int>(e.in[i].size()))
      shape_error(ctx, "operand " + std::to_string(i) + " " + v.shape().str() + " does not have the " +
                           std::to_string(e.in[i].size()) + " axes of its term '" + e.in[i] + "'");
    terms.push_back({v, e.in[i]});
  }
  Term acc = terms[0];
  for (std::size_t i = 1; i < terms.size(); ++i) {
    std::string keep = e.out;
    for (std::size_t j = i + 1; j < terms.size(); ++j) keep += terms[j].t;
    acc = contract(ctx, acc, terms[i], keep);
  }
  sum_out(acc, "", e.out);
  std::vector<int> perm;
  for (char c : e.out) perm.push_back(static_cast<int>(acc.t.find(c)));
  return {perm.size() > 1 ? F::transpose(acc.v, perm) : acc.v};
}

// --- BatchNormalization -----------------------------------------------------------------------
void check_batch_norm(const Attrs& a) {
  if (a.opset < 9 && a.i("spatial", 1) != 1)
    unsupported(a.node, a.opset, "spatial = 0 (per-activation statistics) is not supported");
  if (a.f("epsilon", 1e-5f) <= 0.0f) unsupported(a.node, a.opset, "epsilon <= 0");
  if (a.opset < 14)
    for (int i = 1; i < a.node.output_size(); ++i)
      if (output_named(a.node, i))
        unsupported(a.node, a.opset,
                    "the training outputs (mean, var, saved_mean, saved_var) of BatchNormalization before opset "
                    "14 are not supported");
  const std::int64_t t = a.i("training_mode", 0);
  if (t != 0 && t != 1) malformed(a.node, a.opset, "training_mode must be 0 or 1");
}

// Y = scale (x - mean) / sqrt(var + epsilon) + B per channel (axis 1). Inference (training_mode
// 0 and Config::train off) uses the running statistics, which get no gradient. training_mode = 1
// uses the batch statistics and returns ONNX's running statistics as outputs 1 and 2
// (momentum * running + (1 - momentum) * batch, biased variance), leaving the inputs as they
// are. Config::train alone (fine-tuning an imported model) uses the batch statistics too and
// updates the running statistics in place as L::BatchNorm does (decay = momentum).
VariableList run_batch_norm(OpContext& ctx) {
  const Attrs& a = ctx.attrs();
  const Variable& x = float_input(ctx, 0, "X");
  const Variable &scale = ctx.input(1), &bias = ctx.input(2);
  const double eps = a.f("epsilon", 1e-5f), momentum = a.f("momentum", 0.9f);
  const bool training_mode = ctx.opset() >= 14 && a.i("training_mode", 0) == 1;
  const bool train = training_mode || Config::train;
  if (x.ndim() < 2) shape_error(ctx, "X must be (N, C, ...), got " + x.shape().str());
  const Shape& xs = x.shape();
  const std::int64_t C = xs[1];
  Variable x4 = x;
  if (x.ndim() != 2 && x.ndim() != 4) {
    std::int64_t rest = 1;
    for (int i = 2; i < x.ndim(); ++i) rest *= xs[i];
    x4 = F::reshape(x, Shape{xs[0], C, rest, 1});
  }
  Tensor mean = ctx.input(3).data(), var = ctx.input(4).data();  // handles: F::batch_norm updates in place
  for (const Tensor* t : std::initializer_list<const Tensor*>{&scale.data(), &bias.data(), &mean, &var})
    if (t->shape() != Shape{C})
      shape_error(ctx, "scale, B, mean and var must be (C,) = (" + std::to_string(C) + ",), got " +
                           t->shape().str() + " for X " + xs.str());
  VariableList outs(3);
  {
    auto mode = using_config("train", train);
    if (training_mode) {
      Tensor m = mean.copy(), v = var.copy();
      outs[0] = F::batch_norm(x4, scale, bias, m, v, momentum, eps);
    } else {
      outs[0] = F::batch_norm(x4, scale, bias, mean, var, momentum, eps);
    }
  }
  if (x4.ndim() != x.ndim()) outs[0] = F::reshape(outs[0], xs);
  if (ctx.wants_output(1) || ctx.wants_output(2)) {
    if (training_mode) {
      std::vector<int> axes{0};
      for (int i = 2; i < x.ndim(); ++i) axes.push_back(i);
      const Tensor& xd = x.data();
      const Tensor bm = dezero::mean(xd, Axes(axes), true);
      const Tensor bv = dezero::mean(square(xd - bm), Axes(axes));
      outs[1] = Variable(mean * momentum + bm.reshape(Shape{C}) * (1.0 - momentum));
      outs[2] = Variable(var * momentum + bv * (1.0 - momentum));
    } else {
      outs[1] = Variable(mean.copy());
      outs[2] = Variable(var.copy());
    }
  }
  outs.resize(std::max<std::size_t>(1, ctx.num_outputs()));
  return outs;
}

// --- Dropout ----------------------------------------------------------------------------------
void check_dropout(const Attrs& a) {
  if (a.opset < 12) {
    const float r = a.f("ratio", 0.5f);
    if (!(r >= 0.0f && r < 1.0f)) malformed(a.node, a.opset, "ratio must be in [0, 1)");
  }
}

// ONNX's reference Dropout with a seed draws its mask as NumPy's legacy
// RandomState(seed).uniform(size=shape) >= ratio: std::mt19937 seeded with `seed` is the same
// MT19937 stream, and each uniform double is made of two 32-bit draws as random_sample does.
// keep: 1 where an element is kept, on the host.
Tensor seeded_keep_mask(const Shape& shape, std::int64_t seed, double ratio, DType dtype) {
  std::mt19937 gen(static_cast<std::uint32_t>(seed));
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  std::vector<double> keep(static_cast<std::size_t>(n));
  for (double& k : keep) {
    const std::uint32_t a = gen() >> 5, b = gen() >> 6;
    k = (a * 67108864.0 + b) / 9007199254740992.0 >= ratio ? 1.0 : 0.0;
  }
  return array(keep, shape, dtype);
}

// Identity with a mask of ones unless training: then y = x * mask / (1 - ratio). Training is the
// training_mode input's value where the node has one (opset 12+), Config::train elsewhere. The
// mask is rand > ratio from dezero's random stream, except that a node with a seed whose
// training_mode input asks for training draws ONNX's reference mask for that seed (the same on
// every run; under Config::train alone the seed is ignored). The mask output is int64 on the host
// (ONNX's bool; float in x's dtype before opset 10).
VariableList run_dropout(OpContext& ctx) {
  const Attrs& a = ctx.attrs();
  const Variable& x = float_input(ctx, 0, "data");
  double ratio = a.f("ratio", 0.5f);
  bool train = Config::train, explicit_train = false;
  if (ctx.opset() >= 12) {
    ratio = ctx.has_input(1) ? ctx.host_input(1).item<double>() : 0.5;
    if (ctx.has_input(2)) train = explicit_train = ctx.host_input(2).item<double>() != 0.0;
  }
  if (!(ratio >= 0.0 && ratio < 1.0))
    throw ValueError(describe_node(ctx.node(), ctx.opset()) + ": ratio " + std::to_string(ratio) +
                     " is outside [0, 1)");
  const DType mask_dtype = ctx.opset() >= 10 ? int64 : x.dtype();
  const Device mask_device = mask_dtype == int64 ? Device::cpu() : x.device();
  VariableList outs{x};
  Tensor keep;
  if (!train || ratio == 0.0) {
    if (ctx.wants_output(1)) keep = dezero::ones(x.shape(), mask_dtype, mask_device);
  } else {
    const Tensor k = explicit_train && a.has("seed")
                         ? seeded_keep_mask(x.shape(), a.i("seed", 0), ratio, x.dtype()).to(x.device())
                         : greater(random::rand(x.shape(), x.dtype(), x.device()), ratio);
    outs[0] = x * Variable(k / (1.0 - ratio));
    if (ctx.wants_output(1)) keep = k.astype(mask_dtype).to(mask_device);
  }
  if (ctx.wants_output(1)) outs.push_back(Variable(keep));
  return outs;
}

// --- LSTM -------------------------------------------------------------------------------------
void check_lstm(const Attrs& a) {
  const std::string dir = a.s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    malformed(a.node, a.opset, "direction '" + dir + "' is none of forward, reverse, bidirectional");
  if (a.has("clip")) unsupported(a.node, a.opset, "clip (cell clipping) is not supported");
  if (a.i("input_forget", 0) != 0) unsupported(a.node, a.opset, "input_forget = 1 (coupled gates) is not supported");
  if (a.has("activation_alpha") || a.has("activation_beta"))
    unsupported(a.node, a.opset, "activation_alpha / activation_beta are not supported");
  if (const ::onnx::AttributeProto* acts = a.find("activations")) {
    const int nd = dir == "bidirectional" ? 2 : 1;
    static const char* const kDefault[3] = {"Sigmoid", "Tanh", "Tanh"};
    bool ok = acts->strings_size() == 3 * nd;
    for (int i = 0; ok && i < acts->strings_size(); ++i) ok = acts->strings(i) == kDefault[i % 3];
    if (!ok) unsupported(a.node, a.opset, "activations other than the default Sigmoid, Tanh, Tanh");
  }
  const std::int64_t layout = a.i("layout", 0);
  if (layout != 0 && layout != 1) malformed(a.node, a.opset, "layout must be 0 or 1");
  if (a.has("hidden_size") && a.i("hidden_size", 0) < 1) malformed(a.node, a.opset, "hidden_size must be positive");
}

// The LSTM of ONNX, unrolled over time (gates in the order i, o, f, c in W, R, B; peepholes
// i, o, f in P):
//   i = sigmoid(x Wi^T + h Ri^T + Pi c + bi), f = sigmoid(x Wf^T + h Rf^T + Pf c + bf),
//   c' = f c + i tanh(x Wc^T + h Rc^T + bc), o = sigmoid(x Wo^T + h Ro^T + Po c' + bo),
//   h' = o tanh(c').
// X: (seq, batch, input) (layout 0) or (batch, seq, input) (layout 1); W: (dirs, 4H, input),
// R: (dirs, 4H, H), B: (dirs, 8H), initial_h / initial_c: (dirs, batch, H) (layout 1:
// (batch, dirs, H)), P: (dirs, 3H). Outputs Y (seq, dirs, batch, H) (layout 1:
// (batch, seq, dirs, H)), Y_h and Y_c (dirs, batch, H) (layout 1: (batch, dirs, H)).
VariableList run_lstm(OpContext& ctx) {
  const Attrs& a = ctx.attrs();
  const bool batch_first = ctx.opset() >= 14 && a.i("layout", 0) == 1;
  const std::string dir = a.s("direction", "forward");
  const std::int64_t nd = dir == "bidirectional" ? 2 : 1;
  Variable X = float_input(ctx, 0, "X");
  const Variable &W = float_input(ctx, 1, "W"), &R = float_input(ctx, 2, "R");
  if (X.ndim() != 3 || X.size() == 0) shape_error(ctx, "X must be 3-d and not empty, got " + X.shape().str());
  if (batch_first) X = F::transpose(X, {1, 0, 2});
  const std::int64_t seq = X.shape()[0], batch = X.shape()[1], in = X.shape()[2];
  const std::int64_t H = a.has("hidden_size") ? a.i("hidden_size", 0) : (R.ndim() == 3 ? R.shape()[2] : 0);
  auto expect = [&](const Variable& v, const Shape& s, const char* name) {
    if (v.shape() != s)
      shape_error(ctx, std::string(name) + " must be " + s.str() + ", got " + v.shape().str() +
                           " (X " + ctx.input(0).shape().str() + ", hidden_size " + std::to_string(H) + ")");
  };
  expect(W, Shape{nd, 4 * H, in}, "W");
  expect(R, Shape{nd, 4 * H, H}, "R");
  const Variable B = ctx.has_input(3) ? ctx.input(3) : Variable();
  if (B.defined()) expect(B, Shape{nd, 8 * H}, "B");
  if (ctx.has_input(4)) {
    for (std::int64_t len : ctx.int_list(4))
      if (len != seq)
        ctx.unsupported("sequence_lens " + ints_str(ctx.int_list(4)) + " shorter than the sequence length " +
                        std::to_string(seq) + ": only full-length sequences are supported");
  }
  auto initial = [&](std::size_t i, const char* name) {
    if (!ctx.has_input(i)) return Variable();
    Variable v = ctx.input(i);
    if (batch_first) v = F::transpose(v, {1, 0, 2});
    expect(v, Shape{nd, batch, H}, name);
    return v;
  };
  const Variable h0 = initial(5, "initial_h"), c0 = initial(6, "initial_c");
  const Variable P = ctx.has_input(7) ? ctx.input(7) : Variable();
  if (P.defined()) expect(P, Shape{nd, 3 * H}, "P");

  // A graph per step: the steps are capped as well as what they make (Y: seq, directions, batch, H).
  if (seq > kMaxRecurrentSteps)
    ctx.unsupported("a sequence of " + std::to_string(seq) + " steps (X " + X.shape().str() + "): more than the " +
                    std::to_string(kMaxRecurrentSteps) + " steps the importer unrolls");
  check_output_size(ctx, {seq, nd, batch, H}, "output Y");
  const Variable X2 = F::reshape(X, Shape{seq * batch, in});
  auto gate = [&](const Variable& g, std::int64_t k) {  // g (batch, 4H) -> gate k (batch, H)
    return F::get_item(g, Indices{Slice(), Slice(k * H, (k + 1) * H)});
  };
  VariableList ys, hs, cs;
  for (std::int64_t d = 0; d < nd; ++d) {
    const bool reverse = dir == "reverse" || d == 1;
    const Variable Wd = F::get_item(W, Indices{d});                   // (4H, input)
    const Variable Rd = F::get_item(R, Indices{d});                   // (4H, H)
    Variable xw = product(X2, Wd, false, true);     // (seq * batch, 4H)
    if (B.defined()) {
      const Variable Bd = F::get_item(B, Indices{d});
      xw = xw + (F::get_item(Bd, Indices{Slice(0, 4 * H)}) + F::get_item(Bd, Indices{Slice(4 * H, 8 * H)}));
    }
    xw = F::reshape(xw, Shape{seq, batch, 4 * H});
    Variable Pi, Po, Pf;
    if (P.defined()) {
      const Variable Pd = F::get_item(P, Indices{d});
      Pi = F::get_item(Pd, Indices{Slice(0, H)});
      Po = F::get_item(Pd, Indices{Slice(H, 2 * H)});
      Pf = F::get_item(Pd, Indices{Slice(2 * H, 3 * H)});
    }
    Variable h = h0.defined() ? F::get_item(h0, Indices{d}) : Variable(zeros(Shape{batch, H}, X.dtype(), X.device()));
    Variable c = c0.defined() ? F::get_item(c0, Indices{d}) : Variable(zeros(Shape{batch, H}, X.dtype(), X.device()));
    VariableList steps(static_cast<std::size_t>(seq));
    for (std::int64_t step = 0; step < seq; ++step) {
      const std::int64_t t = reverse ? seq - 1 - step : step;
      // (batch, 4H)
      const Variable g = F::get_item(xw, Indices{t}) + product(h, Rd, false, true);
      Variable gi = gate(g, 0), go = gate(g, 1), gf = gate(g, 2);
      const Variable gc = gate(g, 3);
      if (P.defined()) {
        gi = gi + Pi * c;
        gf = gf + Pf * c;
      }
      const Variable i = F::sigmoid(gi), f = F::sigmoid(gf);
      c = f * c + i * F::tanh(gc);
      if (P.defined()) go = go + Po * c;
      h = F::sigmoid(go) * F::tanh(c);
      steps[static_cast<std::size_t>(t)] = F::expand_dims(h, 0);
    }
    ys.push_back(F::expand_dims(seq == 1 ? steps[0] : F::concat(steps, 0), 1));  // (seq, 1, batch, H)
    hs.push_back(F::expand_dims(h, 0));
    cs.push_back(F::expand_dims(c, 0));
  }
  Variable Y = nd == 1 ? ys[0] : F::concat(ys, 1);
  Variable Yh = nd == 1 ? hs[0] : F::concat(hs, 0), Yc = nd == 1 ? cs[0] : F::concat(cs, 0);
  if (batch_first) {
    Y = F::transpose(Y, {2, 0, 1, 3});
    Yh = F::transpose(Yh, {1, 0, 2});
    Yc = F::transpose(Yc, {1, 0, 2});
  }
  VariableList outs{Y, Yh, Yc};
  outs.resize(std::max<std::size_t>(1, ctx.num_outputs()));
  return outs;
}

// --- SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss ---------------------------------------
void check_loss(const Attrs& a) {
  const std::string r = a.s("reduction", "mean");
  if (r != "none" && r != "sum" && r != "mean")
    malformed(a.node, a.opset, "reduction '" + r + "' is none of none, sum, mean");
}

// The weighted negative log-likelihood of log-probabilities logp (N, C, d1, ...) at the labels
// (N, d1, ...) (integers, on the host):
//   loss[n, d] = -logp[n, label[n, d], d] * weight[label[n, d]]   (0 where label == ignore_index)
// reduced as ONNX does: none, sum, or mean = the sum over the sum of the weights picked.
// The label picks through a constant one-hot mask, so the gradient flows to logp and weight.
Variable nll_loss(const OpContext& ctx, const Variable& logp, std::size_t label_input, std::size_t weight_input) {
  const Attrs& a = ctx.attrs();
  const Shape& xs = logp.shape();
  if (logp.ndim() < 2) shape_error(ctx, "the scores must be (N, C, d1, ...), got " + xs.str());
  const Tensor labels = ctx.host_input(label_input);
  Shape ls{xs[0]};
  for (int i = 2; i < logp.ndim(); ++i) ls.push_back(xs[i]);
  if (is_floating(labels.dtype()))
    ctx.unsupported(std::string("labels of dtype ") + dtype_name(labels.dtype()) + ": they must be integers");
  if (labels.shape() != ls)
    shape_error(ctx, "the labels must be " + ls.str() + " for scores " + xs.str() + ", got " +
                         labels.shape().str());
  const std::int64_t N = xs[0], C = xs[1], D = xs[0] ? labels.size() / xs[0] : 0;
  const bool has_ignore = a.has("ignore_index");
  const std::int64_t ignore = a.i("ignore_index", 0);
  const std::vector<std::int64_t> lv = labels.to_vector<std::int64_t>();
  std::vector<double> onehot(static_cast<std::size_t>(N * C * D), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t r = 0; r < D; ++r) {
      const std::int64_t y = lv[static_cast<std::size_t>(n * D + r)];
      if (has_ignore && y == ignore) continue;
      if (y < 0 || y >= C)
        throw IndexError(describe_node(ctx.node(), ctx.opset()) + ": label " + std::to_string(y) + " at position " +
                         std::to_string(n * D + r) + " is outside [0, " + std::to_string(C) + ")" +
                         (has_ignore ? " and is not ignore_index " + std::to_string(ignore) : ""));
      onehot[static_cast<std::size_t>((n * C + y) * D + r)] = 1.0;
    }
  Variable mask(array(onehot, xs, logp.dtype()).to(logp.device()));
  if (ctx.has_input(weight_input)) {
    const Variable& w = ctx.input(weight_input);
    if (w.shape() != Shape{C}) shape_error(ctx, "the weights must be (C,) = (" + std::to_string(C) + ",), got " +
                                                    w.shape().str());
    Shape ws(xs.size(), 1);
    ws[1] = C;
    mask = mask * F::reshape(w, ws);
  }
  const Variable loss = -F::sum(logp * mask, Axes{1});  // (N, d1, ...)
  const std::string reduction = a.s("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return F::sum(loss);
  if (ctx.has_input(weight_input)) return F::sum(loss) / F::sum(mask);
  return F::sum(loss) / mask.data().sum().item<double>();
}

VariableList run_softmax_cross_entropy(OpContext& ctx) {
  const Variable& x = float_input(ctx, 0, "scores");
  if (x.ndim() < 2) shape_error(ctx, "the scores must be (N, C, d1, ...), got " + x.shape().str());
  const Variable logp = F::log_softmax(x, 1);
  VariableList outs{nll_loss(ctx, logp, 1, 2)};
  if (ctx.num_outputs() > 1) outs.push_back(ctx.wants_output(1) ? logp : Variable());
  return outs;
}

VariableList run_nll_loss(OpContext& ctx) {
  const Variable& x = float_input(ctx, 0, "input");
  return {nll_loss(ctx, x, 1, 2)};
}

// --- LayerNormalization (opset 17) -----------------------------------------------------------------
void check_layer_norm(const Attrs& a) {
  if (a.f("epsilon", 1e-5f) <= 0.0f) unsupported(a.node, a.opset, "epsilon <= 0");
  if (a.i("stash_type", 1) != 1)
    unsupported(a.node, a.opset, "stash_type other than 1 (statistics in float32) is not supported");
}

// Y = Scale (X - mean) / sqrt(var + epsilon) + B over the axes [axis, rank) of X: F::layer_norm
// with gamma = Scale broadcast to those axes' shape. The optional outputs Mean and InvStdDev
// (X's shape with 1 on the normalised axes) are computed again, as Variables, when named.
VariableList run_layer_norm(OpContext& ctx) {
  const Variable& x = float_input(ctx, 0, "X");
  const int nd = x.ndim();
  std::int64_t axis = ctx.attrs().i("axis", -1);
  if (axis < -nd || axis >= nd)
    shape_error(ctx, "axis " + std::to_string(axis) + " is out of range for X " + x.shape().str());
  if (axis < 0) axis += nd;
  const Shape norm(x.shape().begin() + axis, x.shape().end());
  auto as_norm = [&](const Variable& v, const char* what) {
    if (v.shape() == norm) return v;
    if (v.ndim() > norm.ndim()) shape_error(ctx, std::string(what) + " " + v.shape().str() +
                                                     " does not broadcast to the normalised shape " + norm.str());
    for (int i = 0; i < v.ndim(); ++i) {
      const std::int64_t d = v.shape()[i], want = norm[norm.ndim() - v.ndim() + i];
      if (d != want && d != 1)
        shape_error(ctx, std::string(what) + " " + v.shape().str() + " does not broadcast to the normalised shape " +
                             norm.str() + " of X " + x.shape().str());
    }
    return F::broadcast_to(v, norm);
  };
  const double eps = ctx.attrs().f("epsilon", 1e-5f);
  Variable gamma = as_norm(ctx.input(1), "Scale");
  Variable beta = ctx.has_input(2) ? as_norm(ctx.input(2), "B") : Variable();
  VariableList outs{F::layer_norm(x, gamma, beta, eps), Variable(), Variable()};
  if (ctx.wants_output(1) || ctx.wants_output(2)) {
    std::vector<int> axes;
    for (int i = static_cast<int>(axis); i < nd; ++i) axes.push_back(i);
    Variable mean = F::mean(x, axes, true);
    Variable xc = x - mean;
    if (ctx.wants_output(1)) outs[1] = mean;
    if (ctx.wants_output(2)) outs[2] = F::pow(F::mean(xc * xc, axes, true) + eps, -0.5);
  }
  outs.resize(std::max<std::size_t>(1, std::min<std::size_t>(3, ctx.num_outputs())));
  return outs;
}

}  // namespace

// --- the table --------------------------------------------------------------------------------
void register_nn_ops(OpTable& table) {
  add(table, "Gemm", 7, 20, {"alpha", "beta", "transA", "transB"}, nullptr, run_gemm);
  add(table, "MatMul", 7, 20, {}, nullptr, run_matmul);
  add(table, "Einsum", 12, 20, {"equation"}, [](const Attrs& a) { parse_einsum(a); }, run_einsum);

  add(table, "BatchNormalization", 7, 8, {"epsilon", "momentum", "spatial"}, check_batch_norm, run_batch_norm);
  add(table, "BatchNormalization", 9, 13, {"epsilon", "momentum"}, check_batch_norm, run_batch_norm);
  add(table, "BatchNormalization", 14, 20, {"epsilon", "momentum", "training_mode"}, check_batch_norm,
      run_batch_norm);

  add(table, "LayerNormalization", 17, 20, {"axis", "epsilon", "stash_type"}, check_layer_norm, run_layer_norm);

  add(table, "Dropout", 7, 11, {"ratio"}, check_dropout, run_dropout);
  add(table, "Dropout", 12, 20, {"seed"}, check_dropout, run_dropout);

  const std::vector<std::string> lstm_attrs{"activation_alpha", "activation_beta", "activations", "clip",
                                            "direction",        "hidden_size",     "input_forget"};
  add(table, "LSTM", 7, 13, lstm_attrs, check_lstm, run_lstm);
  std::vector<std::string> lstm14 = lstm_attrs;
  lstm14.push_back("layout");
  add(table, "LSTM", 14, 20, lstm14, check_lstm, run_lstm);

  add(table, "SoftmaxCrossEntropyLoss", 12, 20, {"ignore_index", "reduction"}, check_loss,
      run_softmax_cross_entropy);
  add(table, "NegativeLogLikelihoodLoss", 12, 20, {"ignore_index", "reduction"}, check_loss, run_nll_loss);
}

}  // namespace dezero::onnx::detail
