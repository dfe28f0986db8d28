// tests/test_autograd.cpp - the define-by-run core (DeZero core.py): backward order by
// generation, gradient accumulation, retain_grad, configuration guards,
// create_graph / higher-order derivatives, user-defined Functions, unchain, and
// memory behaviour (weak outputs, million-node chains, needs_input_grad).
// Literal values are the book's (the book's steps), within 1e-12.
#include <cmath>
#include <sstream>

#include "support/test_util.hpp"

using namespace dezero;

namespace {
double v0(const Variable& v) { return v.data().item<double>(); }
double g0(const Variable& v) { return v.grad().data().item<double>(); }
constexpr double kTol = 1e-12;
}  // namespace

// --- basics ---------------------------------------------------------------------------------
TEST_CASE("autograd: step 16 backward in generation order: 32 / 64") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(2.0, std::nullopt, dev));
    Variable a = F::pow(x, 2);
    Variable y = F::add(F::pow(a, 2), F::pow(a, 2));
    y.backward();
    CHECK(v0(y) == 32.0);
    CHECK(g0(x) == 64.0);
    CHECK(x.generation() == 0);
    CHECK(a.generation() == 1);
    CHECK(y.generation() == 3);
  });
}

TEST_CASE("autograd: step 14 gradient accumulation and cleargrad") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(3.0, std::nullopt, dev));
    Variable y = x + x;
    y.backward();
    CHECK(g0(x) == 2.0);
    x.cleargrad();
    CHECK(!x.has_grad());
    y = (x + x) + x;
    y.backward();
    CHECK(g0(x) == 3.0);
    // without cleargrad, a second backward accumulates
    Variable z = x * 2.0;
    z.backward();
    CHECK(g0(x) == 5.0);
  });
}

TEST_CASE("autograd: step 13 / 18 / 20 values and retain_grad") {
  dzt::on_each_device([](Device dev) {
    Variable x0(array(1.0, std::nullopt, dev)), x1(array(1.0, std::nullopt, dev));
    Variable t = x0 + x1;
    Variable y = x0 + t;
    y.backward();
    CHECK(!y.has_grad());  // intermediate gradients are dropped by default
    CHECK(!t.has_grad());
    CHECK(g0(x0) == 2.0);
    CHECK(g0(x1) == 1.0);
    x0.cleargrad();
    x1.cleargrad();
    t = x0 + x1;
    y = x0 + t;
    y.backward(true);
    CHECK(g0(y) == 1.0);
    CHECK(g0(t) == 1.0);
    CHECK(g0(x0) == 2.0);

    // step 20: y = a * b + c
    Variable a(array(3.0, std::nullopt, dev)), b(array(2.0, std::nullopt, dev)), c(array(1.0, std::nullopt, dev));
    Variable y2 = a * b + c;
    y2.backward();
    CHECK(v0(y2) == 7.0);
    CHECK(g0(a) == 2.0);
    CHECK(g0(b) == 3.0);
    // step 13: z = x^2 + y^2 at (2, 3)
    Variable p(array(2.0, std::nullopt, dev)), q(array(3.0, std::nullopt, dev));
    Variable z = F::pow(p, 2) + F::pow(q, 2);
    z.backward();
    CHECK(v0(z) == 13.0);
    CHECK(g0(p) == 4.0);
    CHECK(g0(q) == 6.0);
  });
}

TEST_CASE("autograd: step 22 operators with doubles and Tensors on either side") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(2.0, std::nullopt, dev));
    CHECK(v0(-x) == -2.0);
    CHECK(v0(2.0 - x) == 0.0);
    CHECK(v0(x - 1.0) == 1.0);
    CHECK(v0(3.0 / x) == 1.5);
    CHECK(v0(x.pow(3)) == 8.0);
    CHECK(v0(x + array(1.0, std::nullopt, dev)) == 3.0);
    CHECK(v0(Variable(array(1.0, std::nullopt, dev)) * x) == 2.0);
    Variable y = 3.0 / x - x * 2.0 + 1.0;  // d/dx = -3/x^2 - 2
    y.backward();
    CHECK(g0(x) == doctest::Approx(-2.75).epsilon(kTol));
    // a double takes the Variable's dtype
    Variable f(array({1.0, 2.0}, float32, dev));
    CHECK((f * 2.0).dtype() == float32);
    CHECK((2.0 / f).dtype() == float32);
    CHECK((1.0 - f).dtype() == float32);
  });
}

// --- configuration -------------------------------------------------------------------------------
TEST_CASE("autograd: no_grad / using_config / test_mode guards (step 18)") {
  Variable x(array(2.0));
  CHECK(Config::enable_backprop);
  {
    auto g = no_grad();
    CHECK(!Config::enable_backprop);
    Variable y = x * x;
    CHECK(!y.creator());
    CHECK(y.generation() == 0);
    {
      auto g2 = using_config("enable_backprop", true);
      CHECK((x * x).creator());
    }
    CHECK(!Config::enable_backprop);
  }
  CHECK(Config::enable_backprop);
  CHECK((x * x).creator());
  CHECK(Config::train);
  {
    auto t = test_mode();
    CHECK(!Config::train);
  }
  CHECK(Config::train);
  {
    auto g = using_config("train", false);
    CHECK(!Config::train);
  }
  CHECK(Config::train);
  CHECK_THROWS_AS(using_config("no_such_flag", true), ValueError);
}

// --- higher order ---------------------------------------------------------------------------------
namespace {
// The first n derivatives of f at x (step 33-35: backward(create_graph=true) repeatedly).
std::vector<double> derivatives(const std::function<Variable(const Variable&)>& f, double at, int n, Device dev) {
  Variable x(array(at, std::nullopt, dev));
  Variable y = f(x);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    x.cleargrad();
    y.backward(false, true);
    Variable gx = x.grad();
    out.push_back(v0(gx));
    y = gx;
  }
  return out;
}
}  // namespace

TEST_CASE("autograd: higher-order derivatives of sin and tanh at 1 (steps 34-35)") {
  dzt::on_each_device([](Device dev) {
    auto s = derivatives([](const Variable& x) { return F::sin(x); }, 1.0, 4, dev);
    std::vector<double> ws = {0.5403023058681397, -0.8414709848078965, -0.5403023058681397, 0.8414709848078965};
    CHECK(v0(F::sin(Variable(array(1.0, std::nullopt, dev)))) == doctest::Approx(0.8414709848078965).epsilon(kTol));
    for (int i = 0; i < 4; ++i) CHECK(s[i] == doctest::Approx(ws[i]).epsilon(kTol));
    auto t = derivatives([](const Variable& x) { return F::tanh(x); }, 1.0, 4, dev);
    std::vector<double> wt = {0.41997434161402614, -0.6397000084492246, 0.6216266807712962, 0.665091044750502};
    for (int i = 0; i < 4; ++i) CHECK(t[i] == doctest::Approx(wt[i]).epsilon(kTol));
    // x^4 - 2x^2 at 2: f' = 24, f'' = 44 (step 33)
    auto p = derivatives([](const Variable& x) { return x.pow(4) - 2.0 * x.pow(2); }, 2.0, 2, dev);
    CHECK(p[0] == 24.0);
    CHECK(p[1] == 44.0);
  });
}

TEST_CASE("autograd: step 36 double backprop = 100.0") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(2.0, std::nullopt, dev));
    Variable y = x.pow(2);
    y.backward(false, true);
    Variable gx = x.grad();
    x.cleargrad();
    Variable z = gx.pow(3) + y;
    z.backward();
    CHECK(g0(x) == doctest::Approx(100.0).epsilon(kTol));
  });
}

TEST_CASE("autograd: step 33 Newton's method sequence") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(2.0, std::nullopt, dev));
    std::vector<double> want = {2.0, 1.4545454545454546, 1.1510467893775467, 1.0253259289766978,
                                1.0009084519430513, 1.0000012353089454, 1.000000000002289, 1.0};
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(v0(x) == doctest::Approx(want[i]).epsilon(kTol));
      Variable y = x.pow(4) - 2.0 * x.pow(2);
      x.cleargrad();
      y.backward(false, true);
      Variable gx = x.grad();
      x.cleargrad();
      gx.backward();
      Variable gx2 = x.grad();
      x.set_data(x.data() - gx.data() / gx2.data());
    }
  });
}

TEST_CASE("autograd: without create_graph the gradient has no graph") {
  Variable x(array(2.0));
  Variable y = x.pow(3);
  y.backward();
  CHECK(!x.grad().creator());
  x.cleargrad();
  y = x.pow(3);
  y.backward(false, true);
  CHECK(x.grad().creator());
}

// --- user-defined Function ---------------------------------------------------------------------------
namespace {
class Square : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {xs[0] * xs[0]}; }
  VariableList backward(const VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
};

// Two inputs; records which gradients the core asks for.
class Probe : public Function {
 public:
  bool asked[2] = {false, false};
  bool called = false;
  TensorList forward(const TensorList& xs) override { return {xs[0] * xs[1]}; }
  VariableList backward(const VariableList& gys) override {
    called = true;
    asked[0] = needs_input_grad(0);
    asked[1] = needs_input_grad(1);
    return {asked[0] ? gys[0] * input(1) : Variable(), asked[1] ? gys[0] * input(0) : Variable()};
  }
};
}  // namespace

// A Function with a constructor argument, for dezero::call.
class Scale : public Function {
 public:
  explicit Scale(double c) : c_(c) {}
  TensorList forward(const TensorList& xs) override { return {xs[0] * c_}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] * c_}; }

 private:
  double c_;
};

TEST_CASE("autograd: dezero::call makes a graph node, or none under no_grad") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({1.0, -2.0}, std::nullopt, dev));
    Variable y = dezero::call<Scale>({x}, 3.0);
    CHECK(y.data().to_vector<double>() == std::vector<double>{3.0, -6.0});
    REQUIRE(y.creator() != nullptr);
    CHECK(y.creator()->name() == "Scale");
    CHECK(y.creator()->input(0).is_same(x));
    y.backward();
    CHECK(x.grad().data().to_vector<double>() == std::vector<double>{3.0, 3.0});
    // the book's spelling still works and gives the same node
    Variable y2 = (*std::make_shared<Scale>(3.0))(x);
    CHECK(utils::array_equal(y2.data(), y.data()));
    CHECK(y2.creator() != nullptr);
    {
      auto g = no_grad();
      Variable z = dezero::call<Scale>({x}, 3.0);
      CHECK(z.creator() == nullptr);  // no graph: the Function lived on the stack
      CHECK(utils::array_equal(z.data(), y.data()));
      VariableList zs = dezero::call_all<Scale>({x}, 0.5);
      REQUIRE(zs.size() == 1);
      CHECK(zs[0].data().to_vector<double>() == std::vector<double>{0.5, -1.0});
    }
    // gradients of a user Function called through call<> are differentiable again
    x.cleargrad();
    Variable s = dezero::call<Square>({x});
    s.backward(false, true);
    Variable gx = x.grad();
    x.cleargrad();
    gx.backward();
    CHECK(x.grad().data().to_vector<double>() == std::vector<double>{2.0, 2.0});
  });
}

// Issue 35: the book's `f = Square(); y1 = f(a); y2 = f(b)` with one Function object gave a
// an empty gradient (the object kept b as its input); now the second call is an error that names
// the cure, and a call after the first output is gone is allowed (nothing can go wrong then).
TEST_CASE("autograd: calling one Function object twice while its first output lives is an error") {
  Variable a(array(2.0)), b(array(3.0));
  auto f = std::make_shared<Square>();
  Variable y1 = (*f)(a);
  std::string msg = dzt::thrown<Error>([&] { (*f)(b); });
  CHECK_MESSAGE(dzt::has(msg, "Square: this Function object was called already"), msg);
  CHECK_MESSAGE(dzt::has(msg, "std::make_shared<Square>()"), msg);
  CHECK_MESSAGE(dzt::has(msg, "dezero::call<Square>"), msg);
  // the first call's graph is untouched: a's gradient is right
  y1.backward();
  CHECK(g0(a) == 4.0);
  // under no_grad there is no graph to spoil
  {
    auto g = no_grad();
    CHECK(v0((*f)(b)) == 9.0);
  }
  // once y1 is gone, the object may be called again
  y1 = Variable();
  Variable y2 = (*f)(b);
  y2.backward();
  CHECK(g0(b) == 6.0);
}

TEST_CASE("autograd: a user-defined Function subclass") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(3.0, std::nullopt, dev));
    auto f = std::make_shared<Square>();
    Variable y = (*f)(x);
    CHECK(v0(y) == 9.0);
    CHECK(f->name() == "Square");
    CHECK(y.creator() == f);
    CHECK(f->input(0).is_same(x));
    CHECK(f->output(0).is_same(y));
    y.backward();
    CHECK(g0(x) == 6.0);
    // its backward is differentiable too
    x.cleargrad();
    Variable y2 = (*std::make_shared<Square>())(x);
    y2.backward(false, true);
    Variable gx = x.grad();
    x.cleargrad();
    gx.backward();
    CHECK(g0(x) == 2.0);
    CHECK(utils::gradient_check([](const Variable& v) { return (*std::make_shared<Square>())(v); },
                                array({0.5, -1.5, 2.0}, std::nullopt, dev)));
  });
}

TEST_CASE("autograd: a Function used outside make_shared is refused in a graph") {
  Square sq;
  Variable x(array(1.0));
  CHECK_THROWS_AS(sq(x), Error);
  auto g = no_grad();
  CHECK(v0(sq(x)) == 1.0);  // without a graph it is just a computation
}

// --- unchain -------------------------------------------------------------------------------------------
TEST_CASE("autograd: unchain and unchain_backward") {
  Variable x(array(2.0));
  Variable a = x * 3.0;
  Variable b = a + 1.0;
  Variable y = b * b;
  b.unchain();
  CHECK(!b.creator());
  CHECK(b.generation() == 2);  // DeZero keeps the generation
  y.backward();
  CHECK(g0(b) == 14.0);  // b is a leaf now: it keeps its gradient
  CHECK(!x.has_grad());

  Variable x2(array(2.0));
  Variable c = F::sin(x2) * 2.0;
  Variable d = F::exp(c);
  Variable e = d + x2;
  d.unchain_backward();
  CHECK(d.creator());   // d itself keeps its creator ...
  CHECK(!c.creator());  // ... but everything above it is cut
  e.backward();
  CHECK(g0(x2) == 1.0);  // only the direct edge e = d + x2 is left
  CHECK(c.has_grad());

  // a long chain (truncated BPTT cuts one every few steps)
  Variable h(array(1.0));
  Variable s = h;
  for (int i = 0; i < 200000; ++i) s = s * 1.0;
  Variable top = s + 1.0;
  s.unchain_backward();
  CHECK(!h.has_grad());
  top.backward();
  CHECK(!h.has_grad());
  CHECK(s.creator());
}

// --- memory -----------------------------------------------------------------------------------------------
TEST_CASE("autograd: outputs are held weakly (no reference cycle, step 17)") {
  std::weak_ptr<VariableNode> wy, wa;
  std::weak_ptr<Function> wf;
  Variable x(array({1.0, 2.0}));
  {
    Variable a = F::exp(x);
    Variable y = F::sin(a) * 2.0;
    wy = y.node();
    wa = a.node();
    wf = y.creator();
    y.backward();
  }
  CHECK(wy.expired());
  CHECK(wa.expired());
  CHECK(wf.expired());
  CHECK(x.has_grad());
}

TEST_CASE("autograd: a chain of 1,000,000 nodes: backward and destruction without stack overflow") {
  std::weak_ptr<VariableNode> first;
  {
    Variable x(array(1.0));
    Variable y = x;
    const int n = 1000000;
    for (int i = 0; i < n; ++i) {
      y = y + 1.0;
      if (i == 0) first = y.node();
    }
    CHECK(v0(y) == 1000001.0);
    CHECK(y.generation() == n);
    y.backward();
    CHECK(g0(x) == 1.0);
  }
  CHECK(first.expired());
}

TEST_CASE("autograd: needs_input_grad skips leaves that nobody holds") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({1.0, 2.0}, std::nullopt, dev));
    auto p = std::make_shared<Probe>();
    Variable y = (*p)(x, array({3.0, 4.0}, std::nullopt, dev));  // a Tensor: a leaf only the graph holds
    y.backward();
    CHECK(p->called);
    CHECK(p->asked[0]);
    CHECK(!p->asked[1]);
    CHECK(dzt::vals(x.grad()) == std::vector<double>{3.0, 4.0});

    // a leaf the user holds gets its gradient
    Variable w(array({3.0, 4.0}, std::nullopt, dev));
    auto p2 = std::make_shared<Probe>();
    (*p2)(x, w).backward();
    CHECK(p2->asked[1]);
    CHECK(dzt::vals(w.grad()) == std::vector<double>{1.0, 2.0});

    // requires_grad = false opts a held variable out
    Variable c(array({3.0, 4.0}, std::nullopt, dev));
    c.set_requires_grad(false);
    auto p3 = std::make_shared<Probe>();
    (*p3)(x, c).backward();
    CHECK(!p3->asked[1]);
    CHECK(!c.has_grad());

    // an intermediate result always needs its gradient
    auto p4 = std::make_shared<Probe>();
    (*p4)(x, F::exp(x)).backward();
    CHECK(p4->asked[1]);
  });
}

// --- printing ---------------------------------------------------------------------------------------------
TEST_CASE("autograd: Variable prints like DeZero's repr") {
  CHECK(Variable(array({1.0, 2.0})).str() == "variable([1. 2.])");
  CHECK(Variable(array({{1.0, 2.0}, {3.0, 4.0}})).str() == "variable([[1. 2.]\n          [3. 4.]])");
  CHECK(Variable().str() == "variable(None)");
  std::ostringstream os;
  os << Variable(array(2.0));
  CHECK(os.str() == "variable(2.0)");
  Variable n(array(1.0), "x");
  CHECK(n.name() == "x");
}

// create_graph leaves a gradient whose graph leads back to its leaf (x.grad -> Mul ->
// x): a reference cycle. Dropping the last handle to the leaf frees the whole graph.
TEST_CASE("autograd: a create_graph gradient does not keep its leaf alive (no cycle)") {
  std::weak_ptr<VariableNode> leaf, grad;
  std::weak_ptr<Function> grad_creator;
  {
    Variable x(array(2.0));
    Variable y = x * x * x;
    y.backward(false, true);
    REQUIRE(x.grad().creator());
    leaf = x.node();
    grad = x.grad().node();
    grad_creator = x.grad().creator();
    Variable gx = x.grad();
    CHECK(v0(gx) == 12.0);
  }
  CHECK(leaf.expired());
  CHECK(grad.expired());
  CHECK(grad_creator.expired());
  // While a handle lives, its gradient stays readable (and differentiable again).
  Variable x(array(2.0));
  Variable y = x * x * x;
  y.backward(false, true);
  Variable gx = x.grad();
  x.cleargrad();
  gx.backward();
  CHECK(v0(x.grad()) == 12.0);  // d2y/dx2 = 6x
}

// The same cycle when the leaf's last handle went before the backward (a temporary such
// as f(x, Variable(W)), used twice): a leaf that only graphs refer to gets no gradient
// (Function::needs_input_grad), so none with a graph either, and the whole graph is freed
// with its output. A leaf with a handle gets its gradient as always.
TEST_CASE("autograd: a leaf with no handle left gets no gradient, even used twice (no create_graph cycle)") {
  std::weak_ptr<VariableNode> leaf;
  std::weak_ptr<Function> mul;
  for (bool create_graph : {true, false}) {
    CAPTURE(create_graph);
    {
      Variable x(array(3.0));
      Variable y = [&] {
        Variable w(array(2.0));  // dropped before the backward: only the graph refers to it
        leaf = w.node();
        return x * w * w;
      }();
      mul = y.creator();
      REQUIRE_FALSE(leaf.expired());
      y.backward(false, create_graph);
      CHECK(v0(x.grad()) == 4.0);  // x has a handle: its gradient w^2
      CHECK(bool(x.grad().creator()) == create_graph);
      CHECK_FALSE(y.creator()->input(1).has_grad());  // w: nobody could read it
    }
    CHECK(leaf.expired());
    CHECK(mul.expired());
  }
}

// Sigmoid, ReLU, linear, matmul and mean_squared_error compute their gradients on
// Tensors when no graph is recorded (backward without create_graph) and with
// Functions otherwise: the two paths must give the same bits, broadcasts included (a
// (1, 3) target), and through the host's fused MSE gradient (a (5, 3) target).
TEST_CASE("autograd: gradients are identical with and without create_graph (sigmoid, relu, linear, matmul, MSE)") {
  random::seed(5);
  for (DType dt : {float32, float64}) {
    for (std::int64_t rows : {1, 5}) {
      CAPTURE(rows);
      Tensor a = random::randn({5, 4}).astype(dt), w = random::randn({4, 3}).astype(dt);
      Tensor bias = random::randn({3}).astype(dt), w2 = random::randn({3, 3}).astype(dt);
      Tensor target = random::randn({rows, 3}).astype(dt);
      auto grads = [&](bool create_graph) {
        Variable x(a), W(w), b(bias), W2(w2), t(target);
        Variable h = F::matmul(F::sigmoid(F::linear(F::relu(x), W, b)), W2);
        Variable loss = F::mean_squared_error(h, t) * 0.7;  // a loss gradient other than 1
        loss.backward(false, create_graph);
        std::vector<std::vector<double>> out;
        for (const Variable& v : {x, W, b, W2, t}) out.push_back(v.grad().data().to_vector<double>());
        return out;
      };
      auto plain = grads(false), recorded = grads(true);
      CHECK(plain == recorded);
      CHECK(plain[4].size() == std::size_t(rows * 3));  // t's gradient summed back to its (rows, 3) shape
    }
  }
}

// --- BackwardOptions: DeZero's keywords by name ------------------------------------------------------
TEST_CASE("autograd: backward(BackwardOptions) names retain_grad and create_graph") {
  // step 33's f(x) = x^4 - 2x^2 at 2: f' = 24, f'' = 44.
  auto f = [](const Variable& x) { return x.pow(4) - 2.0 * x.pow(2); };
  Variable x(array(2.0));
  Variable y = f(x);
  BackwardOptions opts;
  opts.create_graph = true;
  y.backward(opts);
  Variable gx = x.grad();
  CHECK(v0(gx) == doctest::Approx(24.0).epsilon(kTol));
  CHECK(gx.creator() != nullptr);  // recorded
  x.cleargrad();
  gx.backward();
  CHECK(g0(x) == doctest::Approx(44.0).epsilon(kTol));

  // retain_grad keeps the intermediate's gradient; the default keeps only the leaves'.
  Variable a(array(3.0));
  Variable b = a * a;
  Variable c = b * 2.0;
  c.backward(BackwardOptions{/*retain_grad=*/true, /*create_graph=*/false});
  CHECK(b.has_grad());
  CHECK(g0(b) == doctest::Approx(2.0));
  a.cleargrad();
  Variable b2 = a * a, c2 = b2 * 2.0;
  c2.backward(BackwardOptions{});
  CHECK_FALSE(b2.has_grad());
  CHECK(g0(a) == doctest::Approx(12.0));
  CHECK_FALSE(x.grad().creator());  // backward without create_graph records nothing
}

// --- an empty gradient says why it is empty ----------------------------------------------------------
TEST_CASE("autograd: using a gradient that is not there says which and why") {
  // backward(true) meant as create_graph sets retain_grad: the second-order gradient is
  // then missing, and the error says that the first backward needed create_graph.
  Variable x(array(2.0));
  Variable y = x.pow(4);
  y.backward(true);
  Variable gx = x.grad();
  x.cleargrad();
  gx.backward();
  Variable gx2 = x.grad();
  CHECK_FALSE(gx2.defined());
  CHECK_THROWS_WITH_AS(gx.data() / gx2.data(),
                       doctest::Contains("div: the tensor holds no data: it came from grad() of a leaf that no "
                                         "backward() has reached"),
                       ValueError);
  CHECK_THROWS_WITH_AS(gx / gx2, doctest::Contains("backward({.create_graph = true})"), ValueError);
  CHECK_THROWS_WITH_AS(gx2.shape(), doctest::Contains("shape: the variable holds no data: it came from grad()"),
                       ValueError);

  // A non-leaf's gradient is dropped by backward() without retain_grad.
  Variable a(array(3.0));
  Variable b = a * a;
  (b * 2.0).backward();
  CHECK_THROWS_WITH_AS(b.grad().backward(), doctest::Contains("backward({.retain_grad = true})"), ValueError);
  CHECK_THROWS_WITH_AS(b.grad().data() + 1.0, doctest::Contains("not a leaf"), ValueError);

  // Under no_grad() nothing is recorded, so backward() reaches nothing.
  {
    auto g = no_grad();
    Variable z = x * x;
    z.backward();
    CHECK_THROWS_WITH_AS(x.grad().data() * 2.0, doctest::Contains("while backprop is off"), ValueError);
  }
  // A plain empty Variable keeps its own message.
  CHECK_THROWS_WITH_AS(Variable().shape(), doctest::Contains("the variable is empty (Variable())"), ValueError);
  CHECK_THROWS_WITH_AS(Tensor() + 1.0, doctest::Contains("(an empty Tensor/Variable was passed)"), ValueError);
  // The cause travels with a copy of the empty handle, not with a defined one.
  Variable copy = gx2;
  CHECK_THROWS_WITH_AS(copy.data() * 2.0, doctest::Contains("no backward() has reached"), ValueError);
  // A gradient read before any backward(): the hint names the usual cause first (issue 35: it
  // used to point at create_graph alone).
  Variable fresh(array(2.0));
  CHECK_THROWS_WITH_AS(fresh.grad().data() * 2.0,
                       doctest::Contains("hint: call backward() on a result computed from it first"), ValueError);
  copy = Variable(array(1.0));
  CHECK(v0(copy * 2.0) == 2.0);
  CHECK(sizeof(Variable) == 3 * sizeof(void*));  // the cause lives in the handle's padding
}

// --- numerical_grad / gradient_check call f with backprop on, as DeZero does ----------------------------
TEST_CASE("autograd: gradient_check of a function that differentiates inside (double backprop)") {
  // g(x) = d/dx sum(x^3) = 3x^2, computed by backward(create_graph) inside the function;
  // its gradient is 6x.
  auto g = [](const Variable& x) {
    Variable y = F::sum(x.pow(3));
    BackwardOptions opts;
    opts.create_graph = true;
    y.backward(opts);
    Variable gx = x.grad();
    Variable(x).cleargrad();  // x's own gradient would add to the outer backward's
    return gx;
  };
  Tensor x = array({0.5, -1.0, 2.0});
  Tensor num = utils::numerical_grad(g, x);
  CHECK(utils::array_allclose(num, array({3.0, -6.0, 12.0}), 1e-6, 1e-6));
  CHECK(utils::gradient_check(g, x));
}
