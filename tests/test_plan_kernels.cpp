// tests/test_plan_kernels.cpp - a plan whose every op is one backend call on planned buffers
// (plan/kernels.cpp): a small network's training step and inference.
//
// The judge is the network run without a plan: a kernel program must give the same bits (each
// kernel is the Function's own fast path, checked against the recorded run at compile). Then what
// a user relies on: stats() and summary() say which ops became kernels; a parameter given new data
// of its shape is read at the next step, one of another shape is an error; an op without a kernel,
// or autocast, leaves the plan replaying Functions, with the same results.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/plan.hpp>
#include <memory>
#include <string>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

// tanh(x W1 + b1) -> relu(h W + b) (a MatMul and a broadcast Add) -> (. W3 + b3) * 0.5 + 0.25.
class KernelNet : public Model {
 public:
  explicit KernelNet(DType dt = float32) {
    l1 = register_layer("l1", std::make_shared<L::Linear>(8, false, dt));
    W = register_parameter("W", Parameter(random::randn({8, 6}, dt) * 0.3, "W"));
    b = register_parameter("b", Parameter(random::randn({6}, dt) * 0.1, "b"));
    l3 = register_layer("l3", std::make_shared<L::Linear>(1, false, dt));
  }
  Variable forward(const Variable& x) override {
    Variable h = F::tanh(l1(x));
    Variable g = F::relu(F::matmul(h, W) + b);
    return l3(g) * 0.5 + 0.25;
  }
  L::LayerRef<L::Linear> l1, l3;
  Parameter W, b;
};

std::vector<double> flat(const Model& m) {
  std::vector<double> out;
  for (const Parameter& p : m.params()) {
    const std::vector<double> v = dzt::vals(p);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

Variable mse(Model& m, const VariableList& in) { return F::mean_squared_error(m(in[0]), in[1]); }

}  // namespace

TEST_CASE("plan kernels: a small network's training step is a kernel program, bit for bit with ordinary steps") {
  const Shape s{16, 3};
  Variable x1(dzt::filled(s, 11)), x2(dzt::filled(s, 12));
  Variable t1(dzt::filled({16, 1}, 13)), t2(dzt::filled({16, 1}, 14));
  auto made = [&](KernelNet& m) {
    auto g = no_grad();
    (void)m(x1);  // the lazy weights
  };
  random::seed(4);
  KernelNet a;
  made(a);
  random::seed(4);
  KernelNet b;
  made(b);
  REQUIRE(flat(a) == flat(b));
  optimizers::SGD oa(0.1), ob(0.1);
  oa.setup(a);
  ob.setup(b);
  StepPlan step = compile_step(b, [&](const VariableList& in) { return mse(b, in); }, ob, {x1, t1});
  const Plan::Stats st = step.stats();
  CHECK(st.recorded > 20);
  CHECK(st.kernels == st.recorded);  // every forward and backward Function
  CHECK(st.replayed == st.recorded);
  const std::string sum = step.summary();
  CHECK(dzt::has(sum, "kernel  Linear -> (16, 8)"));
  CHECK(dzt::has(sum, "kernel  MatMul"));
  CHECK(dzt::has(sum, "kernel  ReLUMask"));  // ReLU's recorded backward
  CHECK(dzt::has(sum, "kernel  SumTo -> (6,)"));
  CHECK(!dzt::has(sum, "replay"));
  Variable last_grad;
  for (int i = 0; i < 10; ++i) {
    const VariableList batch = i % 2 ? VariableList{x2, t2} : VariableList{x1, t1};
    Variable la = mse(a, batch);
    a.cleargrads();
    la.backward();
    oa.update();
    const Variable lb = step(batch);
    REQUIRE(dzt::vals(lb) == dzt::vals(la));
    CHECK(!lb.creator());
    // each step's gradients are new tensors: the previous step's stay as they were
    if (last_grad.defined()) CHECK(!last_grad.data().is_same(b.W.grad().data()));
    last_grad = b.W.grad();
    CHECK(dzt::vals(b.W.grad()) == dzt::vals(a.W.grad()));
  }
  CHECK(flat(a) == flat(b));
  const std::vector<double> kept = dzt::vals(last_grad);
  (void)step({x1, t1});
  CHECK(dzt::vals(last_grad) == kept);
}

TEST_CASE("plan kernels: a parameter is read where it is at each step; another shape is an error") {
  const Shape s{8, 3};
  Variable x(dzt::filled(s, 21)), t(dzt::filled({8, 1}, 22));
  random::seed(5);
  KernelNet m;
  optimizers::SGD opt(0.05);
  opt.setup(m);
  {
    auto g = no_grad();
    (void)m(x);
  }
  StepPlan step = compile_step(m, [&](const VariableList& in) { return mse(m, in); }, opt, {x, t});
  REQUIRE(step.stats().kernels == step.stats().recorded);
  // new data of the same shape (a loaded checkpoint): the next step reads it
  m.W.set_data(dzt::filled({8, 6}, 23) * 0.2);
  const Variable want = [&] {
    auto g = no_grad();
    return mse(m, {x, t});
  }();
  const Variable got = step({x, t});
  CHECK(dzt::vals(got) == dzt::vals(want));
  // another shape: the recorded kernels no longer fit
  m.W.set_data(dzt::filled({8, 5}, 24));
  const std::string msg = dzt::thrown<ValueError>([&] { (void)step({x, t}); });
  CHECK(dzt::has(msg, "(8, 6) float32"));
  CHECK(dzt::has(msg, "is now (8, 5) float32"));
  CHECK(dzt::has(msg, "compile the step again"));
}

TEST_CASE("plan kernels: inference in float64 with the constant forms and Div, Exp, Neg; weights copied") {
  random::seed(6);
  L::Linear l1(5, false, float64, 4), l2(2, false, float64, 5);
  const Variable c(array(std::vector<double>{0.5, -0.25}, Shape{2}));
  auto f = [&](const VariableList& in) -> VariableList {
    Variable h = l1(in[0]);
    Variable z = 1.0 / (1.0 + F::exp(-h));   // RDivConst, AddConst, Exp, Neg
    Variable q = (z - 0.5) / (F::exp(z) * 2.0);  // AddConst, Div of two tensors, MulConst
    return {l2(q) - c, 3.0 - q};  // a broadcast Sub, RSubConst, and a second output
  };
  Variable x1(dzt::filled({6, 4}, 31).astype(float64)), x2(dzt::filled({6, 4}, 32).astype(float64) * 3.0);
  auto unplanned = [&](const Variable& x) {
    auto g = no_grad();
    return f({x});
  };
  Plan plan = compile(f, {x1});
  const Plan::Stats st = plan.stats();
  CHECK(st.kernels == st.recorded);
  CHECK(st.onednn == 0);
  const VariableList y1 = plan(VariableList{x1});
  REQUIRE(y1.size() == 2);
  const VariableList w1 = unplanned(x1);
  CHECK(dzt::vals(y1[0]) == dzt::vals(w1[0]));
  CHECK(dzt::vals(y1[1]) == dzt::vals(w1[1]));
  CHECK(y1[0].dtype() == float64);
  const std::vector<double> kept = dzt::vals(y1[0]);
  // the plan keeps the weights it was compiled with; the next call leaves y1 alone
  const Tensor W = l1.W.data().copy();
  l1.W.set_data(W * 2.0);
  const VariableList y2 = plan(VariableList{x2});
  l1.W.set_data(W);
  const VariableList w2 = unplanned(x2);
  CHECK(dzt::vals(y2[0]) == dzt::vals(w2[0]));
  CHECK(dzt::vals(y2[1]) == dzt::vals(w2[1]));
  CHECK(dzt::vals(y1[0]) == kept);
}

TEST_CASE("plan kernels: an op without a kernel, or autocast, leaves the Functions replayed") {
  random::seed(7);
  L::Linear l1(4, false, float32, 3);
  Variable x(dzt::filled({5, 3}, 41));
  auto soft = [&](const VariableList& in) -> VariableList { return {F::softmax(l1(in[0]), 1)}; };
  Plan p1 = compile(soft, {x});
  CHECK(p1.stats().kernels == 0);
  CHECK(p1.stats().replayed == 2);
  CHECK(dzt::has(p1.summary(), "replay  Linear"));
  {
    auto g = no_grad();
    CHECK(dzt::vals(p1(VariableList{x})[0]) == dzt::vals(soft({x})[0]));
  }
  auto lin = [&](const VariableList& in) -> VariableList { return {F::sigmoid(l1(in[0]))}; };
  CHECK(compile(lin, {x}).stats().kernels == 2);
  auto ac = autocast(bfloat16);
  Plan p2 = compile(lin, {x});
  CHECK(p2.stats().kernels == 0);  // the product rounds its operands under autocast: no kernel
  auto g = no_grad();
  CHECK(dzt::vals(p2(VariableList{x})[0]) == dzt::vals(lin({x})[0]));
}
