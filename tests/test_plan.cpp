// tests/test_plan.cpp - dezero::compile (plan.hpp): a recorded run replayed for fixed shapes.
//
// The judge is the model itself, run unplanned in test mode: a plan with CompileOptions::onednn
// false replays every Function and must give the same bits; the full plan (batch norm folded into
// the convolutions, activations and residual additions fused as oneDNN post-ops, blocked formats
// between primitives) must agree to float32 rounding. The networks: a ResNet-like block (conv, batch
// norm, ReLU, a residual addition, max and average pooling, a linear head) and a MobileNet-like one
// (depthwise convolution, Clip(0, 6), HardSwish, LeakyReLU, a global average as F::mean). Then what a
// user relies on: the plan keeps the weights it was compiled with, an output is never overwritten by
// the next call, concurrent calls are safe, and wrong inputs are errors naming what was expected.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <dezero/dezero.hpp>
#include <dezero/plan.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

// conv-BN-ReLU, conv-BN, + the block's input, ReLU, then a strided conv-BN with a 1x1 shortcut,
// max pool, average pool, linear.
class ResLike : public Model {
 public:
  ResLike() {
    c1 = register_layer("c1", std::make_shared<L::Conv2d>(8, 3, 1, 1));
    b1 = register_layer("b1", std::make_shared<L::BatchNorm>());
    c2 = register_layer("c2", std::make_shared<L::Conv2d>(8, 3, 1, 1, true));
    b2 = register_layer("b2", std::make_shared<L::BatchNorm>());
    c3 = register_layer("c3", std::make_shared<L::Conv2d>(16, 3, 2, 1));
    b3 = register_layer("b3", std::make_shared<L::BatchNorm>());
    sc = register_layer("sc", std::make_shared<L::Conv2d>(16, 1, 2, 0));
    fc = register_layer("fc", std::make_shared<L::Linear>(5));
  }
  Variable forward(const Variable& x) override {
    Variable h = F::relu(b1(c1(x)));
    Variable r = F::relu(b2(c2(h)) + h);
    Variable d = F::relu(b3(c3(r)) + sc(r));
    Variable p = F::average_pooling(F::pooling(d, 2, 2), 2, 2);
    return fc(F::reshape(p, {p.shape()[0], -1}));
  }
  L::LayerRef<L::Conv2d> c1, c2, c3, sc;
  L::LayerRef<L::BatchNorm> b1, b2, b3;
  L::LayerRef<L::Linear> fc;
};

// 1x1 expand, ReLU6; depthwise 3x3, HardSwish; 1x1 project, LeakyReLU; the global average.
class MobileLike : public Model {
 public:
  MobileLike() {
    e = register_layer("e", std::make_shared<L::Conv2d>(24, 1));
    dw = register_layer("dw", std::make_shared<L::Conv2d>(24, 3, L::ConvOptions{.pad = 1, .groups = 24}));
    p = register_layer("p", std::make_shared<L::Conv2d>(6, 1));
  }
  Variable forward(const Variable& x) override {
    Variable h = F::clip(e(x), 0.0, 6.0);
    h = F::hard_swish(dw(h));
    h = F::leaky_relu(p(h), 0.1);
    return F::mean(h, Axes({2, 3}), false);
  }
  L::LayerRef<L::Conv2d> e, dw, p;
};

// ShuffleNet's and EfficientNet's patterns: a channel split (x[:, :8], x[:, 8:]), a channel shuffle
// (reshape, transpose, reshape), SiLU as x * sigmoid(x), HardSwish as x * hard_sigmoid(x, 1/6, 1/2)
// (PyTorch's opset-13 form), a squeeze-and-excitation gate (mean, 1x1 conv, sigmoid, a broadcast product).
class ShuffleLike : public Model {
 public:
  ShuffleLike() {
    a = register_layer("a", std::make_shared<L::Conv2d>(16, 3, 1, 1));
    b = register_layer("b", std::make_shared<L::Conv2d>(8, 1));  // 8 channels: AVX2 has no jit kernel for 4
    se = register_layer("se", std::make_shared<L::Conv2d>(16, 1));
  }
  Variable forward(const Variable& x) override {
    Variable h = a(x);
    h = h * F::sigmoid(h);                                                   // SiLU
    Variable left = F::get_item(h, Indices{Slice(), Slice(0, 8)});
    Variable right = F::get_item(h, Indices{Slice(), Slice(8, std::nullopt)});
    Variable r = b(right);
    r = r * F::hard_sigmoid(r, 1.0 / 6, 0.5);                                // HardSwish
    Variable g = F::sigmoid(se(F::mean(h, Axes({2, 3}), true)));             // (N, 16, 1, 1)
    Variable gated = h * g;
    const Shape& s = gated.shape();
    Variable sh = F::reshape(F::transpose(F::reshape(gated, {s[0], 2, s[1] / 2, s[2], s[3]}), {0, 2, 1, 3, 4}), s);
    return F::get_item(sh, Indices{Slice(), Slice(4, 12)}) + (left + r);  // (N, 8, H, W)
  }
  L::LayerRef<L::Conv2d> a, b, se;
};

// Whether the oneDNN program's choices can be asserted: the build has oneDNN, DEZERO_ONEDNN=0 does
// not turn it off, and it has its jit kernels (under DEZERO_CPU_ISA=sse2, capped at SSE4.1, many
// of its primitives are reference ones, which the program leaves to the replay).
bool program_kernels() {
  const char* env = std::getenv("DEZERO_ONEDNN");
  const bool off = env && (std::string(env) == "0" || std::string(env) == "off" || std::string(env) == "OFF");
  return is_onednn_available() && !off && cpu_info().isa != "sse2";
}

// Running statistics that are not the initial 0 and 1: a few train-mode batches.
void warm_batch_norms(Model& m, const Shape& s) {
  for (int i = 0; i < 3; ++i) {
    Variable x(dzt::filled(s, 100 + static_cast<std::uint64_t>(i)) * 2.0 + 0.5);
    (void)m(x);
  }
}

Variable unplanned(Model& m, const Variable& x) {
  auto t = test_mode();
  auto g = no_grad();
  return m(x);
}

double max_diff(const Variable& a, const Variable& b) {
  return max(abs(a.data().astype(float64) - b.data().astype(float64))).item<double>();
}
double scale_of(const Variable& a) { return max(abs(a.data().astype(float64))).item<double>(); }

// m compiled on x, whose plan must give m's test-mode output of `shape` (of magnitude above
// `min_scale`, so that the comparison means something) to 1e-5 of its scale.
Plan planned_as_unplanned(Model& m, const Variable& x, const Shape& shape, double min_scale) {
  Plan plan = compile(m, {x});
  const Variable want = unplanned(m, x), got = plan(x);
  REQUIRE(got.shape() == shape);
  CHECK(max_diff(got, want) <= 1e-5 * scale_of(want));
  CHECK(scale_of(want) > min_scale);
  return plan;
}

}  // namespace

TEST_CASE("compile: without oneDNN's program a plan replays every Function, bit for bit") {
  random::seed(0);
  ResLike m;
  const Shape s{2, 3, 12, 12};
  warm_batch_norms(m, s);
  Variable x(dzt::filled(s, 7));
  CompileOptions o;
  o.onednn = false;
  Plan plan = compile(m, {x}, o);
  const Variable want = unplanned(m, x), got = plan(x);
  CHECK(got.shape() == want.shape());
  CHECK(dzt::vals(got) == dzt::vals(want));
  const Plan::Stats st = plan.stats();
  CHECK(st.onednn == 0);
  CHECK(st.folded == 0);
  CHECK(st.replayed == st.recorded);
  CHECK(st.recorded == 16);  // 4 convolutions, 3 batch norms, 3 ReLUs, 2 additions, 2 pools, reshape, linear
  // another input of the same shape
  Variable x2(dzt::filled(s, 8));
  CHECK(dzt::vals(plan(x2)) == dzt::vals(unplanned(m, x2)));
  CHECK(!got.creator());
}

TEST_CASE("compile: a ResNet-like network planned agrees with the unplanned run to float32 rounding") {
  random::seed(1);
  ResLike m;
  const Shape s{2, 3, 12, 12};
  warm_batch_norms(m, s);
  for (std::uint64_t seed : {11u, 12u}) (void)planned_as_unplanned(m, Variable(dzt::filled(s, seed)), Shape{2, 5}, 0.1);
  Variable x(dzt::filled(s, 13));
  Plan plan = compile(m, {x});
  const Plan::Stats st = plan.stats();
  if (program_kernels()) {
    CHECK(st.folded == 3);        // b1, b2, b3 into c1, c2, c3
    CHECK(st.fused >= 5);         // 3 ReLUs after convolutions, 2 residual additions, ...
    CHECK(st.onednn >= 5);        // 4 convolutions, the pools
    CHECK(st.replayed <= 4);      // the reshape and the linear head
    CHECK(st.weight_bytes > 0);
    CHECK(st.arena_bytes > 0);
    CHECK(dzt::has(plan.summary(), "conv 3x3+sum+relu"));
    CHECK(dzt::has(plan.summary(), "replay  Linear"));
  } else if (!is_onednn_available()) {
    CHECK(st.onednn == 0);
    CHECK(st.replayed == st.recorded);
  }
  // Options that turn folding and fusion off still agree.
  CompileOptions o;
  o.fold_batch_norm = false;
  o.fuse = false;
  Plan plain = compile(m, {x}, o);
  CHECK(plain.stats().folded == 0);
  CHECK(plain.stats().fused == 0);
  CHECK(max_diff(plain(x), unplanned(m, x)) <= 1e-5 * scale_of(unplanned(m, x)));
}

TEST_CASE("compile: depthwise convolution, Clip, HardSwish, LeakyReLU and a global average") {
  random::seed(2);
  MobileLike m;
  const Shape s{1, 4, 9, 9};
  Variable x(dzt::filled(s, 21) * 3.0);
  Plan plan = planned_as_unplanned(m, x, Shape{1, 6}, 0.01);
  if (program_kernels()) {
    CHECK(plan.stats().fused == 3);  // the three activations
    CHECK(plan.stats().replayed == 0);
    CHECK(dzt::has(plan.summary(), "groups 24"));
  }
}

TEST_CASE("compile: channel split and shuffle, SiLU, HardSwish as a product, a squeeze-and-excitation gate") {
  random::seed(7);
  ShuffleLike m;
  const Shape s{2, 3, 7, 7};
  Variable x(dzt::filled(s, 71) * 2.0);
  Plan plan = planned_as_unplanned(m, x, Shape{2, 8, 7, 7}, 0.1);
  if (program_kernels()) {
    const std::string sum = plan.summary();
    CHECK(dzt::has(sum, "+swish"));          // the first convolution's SiLU
    CHECK(dzt::has(sum, "hardswish"));       // b's HardSwish (a post-op, or a step of its own)
    CHECK(dzt::has(sum, "mul (broadcast)"));  // the gate
    CHECK(dzt::has(sum, "shuffle of axis 1 groups of 8"));
    CHECK(dzt::has(sum, "slice 8:16 of axis 1"));
    CHECK(plan.stats().replayed == 0);
  }
  CompileOptions o;
  o.onednn = false;
  CHECK(dzt::vals(compile(m, {x}, o)(x)) == dzt::vals(unplanned(m, x)));
}

TEST_CASE("compile: the plan keeps its weights, its outputs and its callers apart") {
  random::seed(3);
  ResLike m;
  const Shape s{1, 3, 8, 8};
  warm_batch_norms(m, s);
  Variable x1(dzt::filled(s, 31)), x2(dzt::filled(s, 32));
  Plan plan = compile(m, {x1});
  const std::vector<double> before = dzt::vals(plan(x1));
  // Changing the model after compile() does not change the plan (the weights are its copies).
  for (const Parameter& p : m.params()) {
    Tensor t = p.data();  // shares the parameter's storage
    t.fill_(0.25);
  }
  CHECK(dzt::vals(plan(x1)) == before);
  CHECK(dzt::vals(unplanned(m, x1)) != before);
  // An output is the caller's: the next call does not overwrite it.
  const Variable y1 = plan(x1);
  const Variable y2 = plan(x2);
  CHECK(dzt::vals(y1) == before);
  CHECK(dzt::vals(y2) != before);
  // Two threads calling one plan (a copy shares it) get each their own result.
  Plan shared = plan;
  std::vector<double> r1, r2;
  std::thread t1([&] {
    for (int i = 0; i < 20; ++i) r1 = dzt::vals(plan(x1));
  });
  std::thread t2([&] {
    for (int i = 0; i < 20; ++i) r2 = dzt::vals(shared(x2));
  });
  t1.join();
  t2.join();
  CHECK(r1 == before);
  CHECK(r2 == dzt::vals(y2));
}

TEST_CASE("compile: several inputs and outputs, an output also read inside, and a function instead of a model") {
  random::seed(4);
  auto conv = std::make_shared<L::Conv2d>(4, 3, 1, 1);
  auto fn = [&](const VariableList& xs) -> VariableList {
    Variable a = F::relu((*conv)(xs[0]));
    Variable b = a + xs[1];
    return {a, F::sum(b * b), b};
  };
  Variable x(dzt::filled({1, 2, 6, 6}, 41)), z(dzt::filled({1, 4, 6, 6}, 42));
  Plan plan = compile(fn, {x, z});
  VariableList want;
  {
    auto g = no_grad();
    want = fn({x, z});
  }
  const VariableList got = plan({x, z});
  REQUIRE(got.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(got[i].shape() == want[i].shape());
    CHECK(max_diff(got[i], want[i]) <= 1e-5 * scale_of(want[i]));
  }
  CHECK(plan.input_shapes() == std::vector<Shape>{Shape{1, 2, 6, 6}, Shape{1, 4, 6, 6}});
}

TEST_CASE("compile: errors name the input and what the plan was compiled for") {
  random::seed(5);
  MobileLike m;
  Variable x(dzt::filled({1, 4, 9, 9}, 51));
  Plan plan = compile(m, {x});
  const std::string shape = dzt::thrown<ShapeError>([&] { (void)plan(Variable(dzt::filled({2, 4, 9, 9}, 1))); });
  CHECK(dzt::has(shape, "Plan: input 0 is (2, 4, 9, 9), the plan was compiled for (1, 4, 9, 9)"));
  CHECK(dzt::has(shape, "hint"));
  const std::string dtype = dzt::thrown<DtypeError>([&] { (void)plan(Variable(x.data().astype(float64))); });
  CHECK(dzt::has(dtype, "float64"));
  CHECK(dzt::has(dtype, "float32"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)plan(VariableList{x, x}); }), "2 inputs given"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)Plan()(x); }), "empty plan"));
  // A forward under no_grad records nothing to compile.
  auto no_graph = [&](const VariableList& xs) -> VariableList {
    auto g = no_grad();
    return {F::relu(xs[0])};
  };
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)compile(no_graph, {x}); }), "has no recorded graph"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)compile(m, {Variable()}); }), "holds no data"));
}

TEST_CASE("compile: what the function computes from the inputs' values outside the graph is refused") {
  Variable x(dzt::filled({3, 4}, 55));
  // a mask made on the host from x's data: a constant of the recorded run
  auto masked = [](const VariableList& xs) -> VariableList {
    return {xs[0] * Variable(greater(xs[0].data(), 0.0))};
  };
  CHECK(dzt::has(dzt::thrown<NotImplementedError>([&] { (void)compile(masked, {x}); }),
                 "a tensor (3, 4) that the graph reads was computed from the inputs' values outside the graph"));
  // a branch on x's values
  auto branch = [](const VariableList& xs) -> VariableList {
    if (xs[0].data().sum().item<double>() < 15.0) return {F::relu(xs[0])};  // 12 here; 19.5 for compile's other values
    return {F::sigmoid(xs[0])};
  };
  CHECK(dzt::has(dzt::thrown<NotImplementedError>([&] { (void)compile(branch, {Variable(x.data() * 0.0 + 1.0)}); }),
                 "records another graph"));
  // a hyperparameter taken from x's values
  auto scaled = [](const VariableList& xs) -> VariableList { return {F::clip(xs[0], 0.0, max(xs[0].data()).item<double>())}; };
  CHECK(dzt::has(dzt::thrown<NotImplementedError>([&] { (void)compile(scaled, {x}); }),
                 "Clip (Function 0) has hyperparameters that depend on the inputs' values"));
  // what depends on the shapes only is fine
  auto shaped = [](const VariableList& xs) -> VariableList { return {F::reshape(xs[0], {xs[0].shape()[0] * 2, -1})}; };
  CHECK(compile(shaped, {x})(x).shape() == Shape{6, 2});
}

TEST_CASE("compile: on a GPU every Function is replayed") {
  if (dzt::skip_without_gpu()) return;
  random::seed(6);
  ResLike m;
  m.to_gpu();
  Variable x(dzt::filled({1, 3, 8, 8}, 61));
  x.to_gpu();
  Plan plan = compile(m, {x});
  CHECK(plan.stats().onednn == 0);
  CHECK(dzt::vals(plan(x).data().to_cpu()) == dzt::vals(unplanned(m, x).data().to_cpu()));
}

// --- training steps (compile_step) --------------------------------------------------------------------
namespace {

// Two models built alike from the same seed: one trained by ordinary steps, one by a StepPlan.
template <class M>
struct Twins {
  M a, b;
};

std::vector<double> flat_params(const Model& m) {
  std::vector<double> out;
  for (const Parameter& p : m.params()) {
    if (!p.data().defined()) continue;  // a lazy layer's weights before its first call
    const std::vector<double> v = dzt::vals(p);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

class ConvTrainNet : public Model {
 public:
  explicit ConvTrainNet(bool with_bn = false) : with_bn_(with_bn) {
    c = register_layer("c", std::make_shared<L::Conv2d>(4, 3, 1, 1));
    bn = register_layer("bn", std::make_shared<L::BatchNorm>());
    fc = register_layer("fc", std::make_shared<L::Linear>(3));
  }
  Variable forward(const Variable& x) override {
    Variable h = c(x);
    if (with_bn_) h = bn(h);
    h = F::pooling(F::relu(h), 2, 2);
    return fc(F::reshape(h, {h.shape()[0], -1}));
  }
  L::LayerRef<L::Conv2d> c;
  L::LayerRef<L::BatchNorm> bn;
  L::LayerRef<L::Linear> fc;

 private:
  bool with_bn_;
};

}  // namespace

TEST_CASE("compile_step: a W3-like step replayed gives the ordinary step's losses and weights bit for bit") {
  const Shape s{100, 2};
  Variable x1(dzt::filled(s, 81)), x2(dzt::filled(s, 82));
  Variable t1(dzt::filled({100, 1}, 83)), t2(dzt::filled({100, 1}, 84));
  random::seed(8);
  models::MLP a({10, 1}, F::sigmoid);
  random::seed(8);
  models::MLP b({10, 1}, F::sigmoid);
  optimizers::SGD oa(0.2), ob(0.2);
  oa.setup(a);
  ob.setup(b);
  auto loss_of = [](Model& m, const VariableList& in) { return F::mean_squared_error(m(in[0]), in[1]); };
  StepPlan step = compile_step(b, [&](const VariableList& in) { return loss_of(b, in); }, ob, {x1, t1});
  random::seed(8);
  (void)a(x1);  // the same draws as b's recording
  CHECK(flat_params(a) == flat_params(b));
  CHECK(step.stats().replayed == 15);  // 4 forward Functions and 11 of the backward
  for (int i = 0; i < 20; ++i) {
    const VariableList batch = i % 2 ? VariableList{x2, t2} : VariableList{x1, t1};
    Variable la = loss_of(a, batch);
    a.cleargrads();
    la.backward();
    oa.update();
    const Variable lb = step(batch);
    REQUIRE(dzt::vals(lb) == dzt::vals(la));
    CHECK(!lb.creator());
  }
  CHECK(flat_params(a) == flat_params(b));
  for (const Parameter& p : b.params()) CHECK(p.grad().defined());
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)step({x1}); }), "1 inputs given, the step was compiled for 2"));
  CHECK(dzt::has(dzt::thrown<ShapeError>([&] { (void)step({x1, Variable(dzt::filled({3, 1}, 1))}); }),
                 "compiled for (100, 1)"));
}

TEST_CASE("compile_step: convolution, max pooling, softmax cross entropy and Adam; train-mode batch norm with SGD") {
  Variable x1(dzt::filled({4, 2, 6, 6}, 91)), x2(dzt::filled({4, 2, 6, 6}, 92) * 2.0);
  Variable t1(Tensor(array(std::vector<std::int64_t>{0, 2, 1, 2}, Shape{4})));
  Variable t2(Tensor(array(std::vector<std::int64_t>{1, 1, 0, 2}, Shape{4})));
  for (bool with_bn : {false, true}) {
    CAPTURE(with_bn);
    random::seed(9);
    ConvTrainNet a(with_bn);
    random::seed(9);
    ConvTrainNet b(with_bn);
    // Adam, bit for bit; with batch norm SGD, whose steps do not magnify rounding (Adam's do, for
    // gradients near 0)
    std::unique_ptr<optimizers::Optimizer> oa, ob;
    if (with_bn) {
      oa = std::make_unique<optimizers::SGD>(0.05);
      ob = std::make_unique<optimizers::SGD>(0.05);
    } else {
      oa = std::make_unique<optimizers::Adam>(0.01);
      ob = std::make_unique<optimizers::Adam>(0.01);
    }
    oa->setup(a);
    ob->setup(b);
    auto loss_of = [](Model& m, const VariableList& in) { return F::softmax_cross_entropy(m(in[0]), in[1]); };
    StepPlan step = compile_step(b, [&](const VariableList& in) { return loss_of(b, in); }, *ob, {x1, t1});
    random::seed(9);
    (void)[&] {
      auto g = no_grad();
      return a(x1);  // a's lazy weights (and running statistics): the same as b's recording
    }();
    CHECK(flat_params(a) == flat_params(b));
    for (int i = 0; i < 8; ++i) {
      const VariableList batch = i % 2 ? VariableList{x2, t2} : VariableList{x1, t1};
      Variable la = loss_of(a, batch);
      a.cleargrads();
      la.backward();
      oa->update();
      const Variable lb = step(batch);
      if (!with_bn) {
        REQUIRE(dzt::vals(lb) == dzt::vals(la));
      } else {
        // batch norm's recorded backward is its Variable form, whose float32 rounding differs from the
        // fused kernel that an ordinary backward runs
        REQUIRE(std::abs(dzt::vals(lb)[0] - dzt::vals(la)[0]) <= 1e-5 * std::abs(dzt::vals(la)[0]));
      }
    }
    const std::vector<double> pa = flat_params(a), pb = flat_params(b);  // with BatchNorm, its running statistics too
    REQUIRE(pa.size() == pb.size());
    if (!with_bn) CHECK(pa == pb);
    double worst = 0;
    for (std::size_t k = 0; k < pa.size(); ++k) worst = std::max(worst, std::abs(pa[k] - pb[k]));
    CHECK(worst <= 1e-5);
  }
}

TEST_CASE("compile_step: what a replay cannot reproduce is refused") {
  Variable x(dzt::filled({8, 3}, 95)), t(dzt::filled({8, 2}, 96));
  random::seed(10);
  models::MLP m({4, 2});
  optimizers::SGD o(0.1);
  o.setup(m);
  const std::string dropout = dzt::thrown<NotImplementedError>([&] {
    (void)compile_step(m, [&](const VariableList& in) { return F::mean_squared_error(F::dropout(m(in[0])), in[1]); },
                       o, {x, t});
  });
  CHECK(dzt::has(dropout, "compile_step: the step reads a tensor (8, 2)"));
  CHECK(dzt::has(dropout, "dropout"));
  // EmbedID keeps its ids (an input's values) as a constant of its own.
  auto W = std::make_shared<Parameter>(Tensor(dzt::filled({5, 3}, 97)));
  Variable ids(Tensor(array(std::vector<std::int64_t>{0, 4, 2}, Shape{3})));
  const std::string embed = dzt::thrown<NotImplementedError>(
      [&] { (void)compile([&](const VariableList& in) -> VariableList { return {F::embed_id(in[0], *W)}; }, {ids}); });
  CHECK(dzt::has(embed, "EmbedID keeps the values of (3,)"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)StepPlan()({x}); }), "empty plan"));
}
