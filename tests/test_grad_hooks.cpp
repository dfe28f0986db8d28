// tests/test_grad_hooks.cpp - grad-ready hooks (Variable::register_post_accumulate_grad_hook,
// issue 32): a leaf's hooks run once per backward pass, as soon as the last Function of the
// pass that uses it has run its backward (an MLP's last layer first), with its final
// gradient; unreached leaves are not called; removal, errors, hooks that throw or register
// hooks, create_graph, accumulation over passes, and results bit-identical to a pass
// without hooks.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {
std::vector<double> values(const Variable& v) { return v.data().to_vector<double>(); }
std::vector<double> grad_values(const Variable& v) { return v.grad().data().to_vector<double>(); }

// A 2-5-4-1 sigmoid MLP with its own parameters, float64, fixed values.
struct Mlp {
  std::vector<Parameter> params;  // W1 b1 W2 b2 W3 b3
  std::vector<std::string> names{"W1", "b1", "W2", "b2", "W3", "b3"};
  Mlp() {
    random::Generator gen(7);
    const std::int64_t sizes[] = {2, 5, 4, 1};
    for (int l = 0; l < 3; ++l) {
      params.emplace_back(gen.randn({sizes[l], sizes[l + 1]}), names[2 * l]);
      params.emplace_back(gen.randn({sizes[l + 1]}), names[2 * l + 1]);
    }
  }
  Variable loss() const {
    random::Generator gen(3);
    Variable x(gen.randn({8, 2})), t(gen.randn({8, 1}));
    Variable h = F::sigmoid(F::linear(x, params[0], params[1]));
    h = F::sigmoid(F::linear(h, params[2], params[3]));
    return F::mean_squared_error(F::linear(h, params[4], params[5]), t);
  }
};

// The gradient a hook saw, and when.
struct Seen {
  std::vector<std::string> order;
  std::vector<std::vector<double>> grads;
};
void watch(Parameter& p, Seen& seen) {
  const std::string name = p.name();
  p.register_post_accumulate_grad_hook([&seen, name](const Variable& v) {
    seen.order.push_back(name);
    seen.grads.push_back(grad_values(v));
  });
}

// y = Stop(x): forward passes x through, backward returns no gradient for it.
class Stop : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {xs[0]}; }
  VariableList backward(const VariableList&) override { return {Variable()}; }
};
}  // namespace

TEST_CASE("grad hooks: an MLP's hooks run last layer first, once, with the final gradient") {
  Mlp m;
  Seen seen;
  std::vector<bool> first_layer_had_grad;  // when W3's hook runs, W1 has no gradient yet
  for (Parameter& p : m.params) watch(p, seen);
  m.params[4].register_post_accumulate_grad_hook(
      [&](const Variable&) { first_layer_had_grad.push_back(m.params[0].has_grad()); });
  m.loss().backward();
  CHECK(seen.order == std::vector<std::string>{"W3", "b3", "W2", "b2", "W1", "b1"});
  CHECK(first_layer_had_grad == std::vector<bool>{false});
  for (std::size_t i = 0; i < seen.order.size(); ++i) {
    const int k = static_cast<int>(std::find(m.names.begin(), m.names.end(), seen.order[i]) - m.names.begin());
    CHECK(seen.grads[i] == grad_values(m.params[k]));
  }

  // The same gradients, bit for bit, as a pass without hooks.
  Mlp plain;
  plain.loss().backward();
  for (std::size_t k = 0; k < m.params.size(); ++k) CHECK(grad_values(m.params[k]) == grad_values(plain.params[k]));
}

TEST_CASE("grad hooks: two passes without cleargrad: each hook once per pass, on the sum") {
  Mlp m;
  Seen seen;
  watch(m.params[0], seen);
  watch(m.params[5], seen);
  m.loss().backward();
  const std::vector<double> g1 = grad_values(m.params[0]);
  m.loss().backward();
  REQUIRE(seen.order == std::vector<std::string>{"b3", "W1", "b3", "W1"});
  CHECK(seen.grads[1] == g1);
  CHECK(seen.grads[3] == grad_values(m.params[0]));
  for (std::size_t i = 0; i < g1.size(); ++i) CHECK(seen.grads[3][i] == doctest::Approx(2 * g1[i]));
}

TEST_CASE("grad hooks: a leaf used by two Functions is called after the second has run") {
  Variable x(array(3.0));
  std::vector<std::vector<double>> seen;
  x.register_post_accumulate_grad_hook([&](const Variable& v) { seen.push_back(grad_values(v)); });
  // a = 2x (generation 0), y = a * x (generation 1): y's Mul adds x's first share, a's Mul
  // the second; dy/dx = 4x = 12.
  Variable a = x * 2.0;
  Variable y = a * x;
  y.backward();
  CHECK(seen == std::vector<std::vector<double>>{{12.0}});

  // x * x: one Function, x twice.
  Variable z(array(5.0));
  int calls = 0;
  z.register_post_accumulate_grad_hook([&](const Variable& v) {
    ++calls;
    CHECK(values(v.grad()) == std::vector<double>{10.0});
  });
  (z * z).backward();
  CHECK(calls == 1);
}

TEST_CASE("grad hooks: a parameter shared by two layers is called after the first layer's backward") {
  random::Generator gen(11);
  Parameter W(gen.randn({3, 3}), "W"), b1(gen.randn({3}), "b1"), b2(gen.randn({3}), "b2");
  Variable x(gen.randn({4, 3}));
  std::vector<std::string> order;
  std::vector<double> seen_w;
  W.register_post_accumulate_grad_hook([&](const Variable& v) {
    order.push_back("W");
    seen_w = grad_values(v);
  });
  b1.register_post_accumulate_grad_hook([&](const Variable&) { order.push_back("b1"); });
  b2.register_post_accumulate_grad_hook([&](const Variable&) { order.push_back("b2"); });
  Variable y = F::linear(F::tanh(F::linear(x, W, b1)), W, b2).sum();
  y.backward();
  CHECK(order == std::vector<std::string>{"b2", "W", "b1"});
  CHECK(seen_w == grad_values(W));
}

TEST_CASE("grad hooks: create_graph: the hook sees the gradient with its graph, and again in the next order") {
  Variable x(array(2.0));
  std::vector<double> seen;
  std::vector<bool> has_creator;
  x.register_post_accumulate_grad_hook([&](const Variable& v) {
    seen.push_back(values(v.grad())[0]);
    has_creator.push_back(v.grad().creator() != nullptr);
  });
  Variable y = F::pow(x, 3);
  BackwardOptions opts;
  opts.create_graph = true;
  y.backward(opts);  // dy/dx = 3x^2 = 12, recorded
  Variable gx = x.grad();
  x.cleargrad();
  gx.backward(opts);  // d2y/dx2 = 6x = 12
  CHECK(seen == std::vector<double>{12.0, 12.0});
  CHECK(has_creator == std::vector<bool>{true, true});
}

TEST_CASE("grad hooks: leaves the pass does not reach are not called, and do not hold others back") {
  Variable x(array(1.5)), w(array(2.0)), unused(array(4.0));
  int x_calls = 0, unused_calls = 0;
  std::vector<double> w_seen;
  x.register_post_accumulate_grad_hook([&](const Variable&) { ++x_calls; });
  unused.register_post_accumulate_grad_hook([&](const Variable&) { ++unused_calls; });
  w.register_post_accumulate_grad_hook([&](const Variable& v) { w_seen.push_back(values(v.grad())[0]); });
  // Stop returns no gradient, so x * w never runs its backward: w gets 3 from w * 3 only.
  Variable y = call<Stop>({x * w}) + w * 3.0;
  y.backward();
  CHECK(x_calls == 0);
  CHECK(unused_calls == 0);
  CHECK(w_seen == std::vector<double>{3.0});
  CHECK_FALSE(x.has_grad());

  // A leaf with hooks that is itself the output: no Function uses it.
  int self_calls = 0;
  Variable s(array(1.0));
  s.register_post_accumulate_grad_hook([&](const Variable&) { ++self_calls; });
  s.backward();
  CHECK(self_calls == 0);
}

TEST_CASE("grad hooks: several hooks run in registration order; remove() unregisters one") {
  Variable x(array(2.0));
  std::string log;
  HookHandle a = x.register_post_accumulate_grad_hook([&](const Variable&) { log += "a"; });
  HookHandle b = x.register_post_accumulate_grad_hook([&](const Variable&) { log += "b"; });
  HookHandle c = x.register_post_accumulate_grad_hook([&](const Variable&) { log += "c"; });
  (x * 3.0).backward();
  CHECK(log == "abc");
  CHECK(b.registered());
  b.remove();
  CHECK_FALSE(b.registered());
  b.remove();  // idempotent
  HookHandle none;
  none.remove();
  CHECK_FALSE(none.registered());
  log.clear();
  (x * 3.0).backward();
  CHECK(log == "ac");

  // A hook that removes a later one of the same leaf: that one is not called in this pass.
  HookHandle d = x.register_post_accumulate_grad_hook([&](const Variable&) {
    log += "d";
    c.remove();
  });
  HookHandle e = x.register_post_accumulate_grad_hook([&](const Variable&) { log += "e"; });
  a.remove();
  c.remove();
  c = x.register_post_accumulate_grad_hook([&](const Variable&) { log += "c"; });
  log.clear();
  (x * 3.0).backward();
  CHECK(log == "de");

  // The hooks go with the variable's node; their handles then name nothing.
  {
    Variable tmp(array(1.0));
    HookHandle h = tmp.register_post_accumulate_grad_hook([](const Variable&) {});
    Variable copy = tmp;  // another handle to the node: the hook stays
    tmp = Variable();
    CHECK(h.registered());
    copy = Variable();
    CHECK_FALSE(h.registered());
    h.remove();
  }
  d.remove();
  e.remove();
}

TEST_CASE("grad hooks: registering on a non-leaf, an empty variable or with an empty hook is a ValueError") {
  Variable x(array(2.0));
  Variable y = x * 3.0;
  const std::string msg = dzt::thrown<ValueError>([&] { y.register_post_accumulate_grad_hook([](const Variable&) {}); });
  CHECK(dzt::has(msg, "not a leaf"));
  CHECK(dzt::has(msg, "Mul"));
  CHECK(dzt::has(dzt::thrown<ValueError>([] { Variable().register_post_accumulate_grad_hook([](const Variable&) {}); }),
                 "empty"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { x.register_post_accumulate_grad_hook(GradReadyHook()); }),
                 "empty std::function"));
  Variable frozen(array(1.0));
  frozen.set_requires_grad(false);
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { frozen.register_post_accumulate_grad_hook([](const Variable&) {}); }),
                 "does not require grad"));
  // unchain() makes a leaf: then it may have hooks.
  y.unchain();
  int calls = 0;
  y.register_post_accumulate_grad_hook([&](const Variable&) { ++calls; });
  (y * 2.0).backward();
  CHECK(calls == 1);
}

TEST_CASE("grad hooks: a hook that throws stops backward; the next pass runs normally") {
  Mlp m;
  HookHandle h = m.params[4].register_post_accumulate_grad_hook(
      [](const Variable&) { throw std::runtime_error("hook failed"); });
  int b1_calls = 0;
  m.params[1].register_post_accumulate_grad_hook([&](const Variable&) { ++b1_calls; });
  Variable loss = m.loss();
  CHECK_THROWS_WITH_AS(loss.backward(), "hook failed", std::runtime_error);
  CHECK(m.params[4].has_grad());  // final: its hook ran
  CHECK_FALSE(m.params[0].has_grad());  // the first layer's backward never ran
  CHECK(b1_calls == 0);

  h.remove();
  for (Parameter& p : m.params) p.cleargrad();
  loss.backward();  // the same graph again: nothing left queued by the failed pass
  CHECK(b1_calls == 1);
  Mlp plain;
  plain.loss().backward();
  for (std::size_t k = 0; k < m.params.size(); ++k) CHECK(grad_values(m.params[k]) == grad_values(plain.params[k]));
}

TEST_CASE("grad hooks: a hook registered during a pass is called from the next pass on") {
  Mlp m;
  int w1_calls = 0;
  bool added = false;
  m.params[4].register_post_accumulate_grad_hook([&](const Variable&) {
    if (added) return;
    added = true;
    m.params[0].register_post_accumulate_grad_hook([&](const Variable&) { ++w1_calls; });  // not yet hooked
    m.params[4].register_post_accumulate_grad_hook([&](const Variable&) { ++w1_calls; });  // hooked already
  });
  m.loss().backward();
  CHECK(w1_calls == 0);
  m.loss().backward();
  CHECK(w1_calls == 2);
}
