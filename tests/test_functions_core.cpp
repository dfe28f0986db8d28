// tests/test_functions_core.cpp - every function of dezero/functions.hpp (and the two
// activations of functions_nn.hpp it includes): forward values against NumPy
// (tests/data/functions.txt), a float64 gradient_check, and a double-backward check
// (d/dx of the create_graph gradient vs central differences) for the functions the
// book differentiates twice (steps 33-36) and those whose backward is nonlinear.
// Shapes are small on purpose: (3, 4) and (2, 3, 4) keep the whole file fast.
#include <cmath>

#include "support/fixtures.hpp"
#include "support/test_util.hpp"

using namespace dezero;
using dzt::close;
using Fn = std::function<Variable(const Variable&)>;

namespace {

Tensor X(const std::string& name, Device dev = Device::cpu()) { return dzt::fx("functions.txt", name).to(dev); }

// d/dx sum(grad_x sum(f(x))): analytic (create_graph) against central differences.
bool double_backward_check(const Fn& f, const Tensor& x0, double rtol = 1e-4, double atol = 1e-5) {
  Tensor x = x0.astype(float64);
  Variable xv(x);
  Variable y = f(xv);
  F::sum(y).backward(false, true);
  Variable gx = xv.grad();
  xv.cleargrad();
  F::sum(gx).backward();
  Tensor analytic = xv.has_grad() ? xv.grad().data() : zeros_like(x);
  auto first = [&](const Tensor& t) {
    Variable v(t);
    F::sum(f(v)).backward();
    return v.grad().data().astype(float64).sum().item<double>();
  };
  Tensor h = x.to_cpu().copy();
  double* p = h.data<double>();
  std::vector<double> num(static_cast<std::size_t>(h.size()));
  const double eps = 1e-4;
  for (std::int64_t i = 0; i < h.size(); ++i) {
    double v = p[i];
    p[i] = v + eps;
    double a = first(h.to(x.device()));
    p[i] = v - eps;
    double b = first(h.to(x.device()));
    p[i] = v;
    num[i] = (a - b) / (2 * eps);
  }
  Tensor n = array(num, x.shape());
  bool ok = analytic.shape() == n.shape() && utils::array_allclose(analytic, n, rtol, atol);
  if (!ok) MESSAGE("double backward: analytic " << analytic.to_cpu() << " numerical " << n);
  return ok;
}

}  // namespace

// --- arithmetic --------------------------------------------------------------------------------
TEST_CASE("F: add sub mul div with broadcasting") {
  dzt::on_each_device([](Device dev) {
    Tensor x = X("x", dev), y = X("y", dev), yb = X("yb", dev);
    CHECK(close(F::add(x, yb), X("add")));
    CHECK(close(F::sub(x, yb), X("sub")));
    CHECK(close(F::mul(x, yb), X("mul")));
    CHECK(close(F::div(x, yb), X("div")));
    CHECK(close(F::add(x, y), X("add_xy")));
    CHECK(close(x * Variable(y), X("mul_xy")));
    using BinOp = Variable (*)(const Variable&, const Variable&);
    for (BinOp f : std::vector<BinOp>{F::add, F::sub, F::mul, F::div}) {
      CHECK(utils::gradient_check([&](const Variable& v) { return f(v, yb); }, x));
      CHECK(utils::gradient_check([&](const Variable& v) { return f(x, v); }, yb));  // the broadcast operand
      CHECK(utils::gradient_check([&](const Variable& v) { return f(yb, v); }, x));
      CHECK(double_backward_check([&](const Variable& v) { return f(v, v * v); }, x));
    }
    // div: the broadcast operand's gradient, against NumPy's formula
    Variable vb(yb);
    F::div(x, vb).backward();
    CHECK(close(vb.grad(), X("g_div_y")));
  });
}

TEST_CASE("F: neg, pow and the operations with a constant") {
  dzt::on_each_device([](Device dev) {
    Tensor x = X("x", dev), p = X("p", dev);
    CHECK(close(F::neg(x), X("neg")));
    CHECK(close(F::pow(x, 3), X("pow3")));
    CHECK(close(F::pow(p, -1.5), X("pow_m1_5")));
    CHECK(close(F::add(x, 2.5), X("add_c")));
    CHECK(close(F::sub(x, 2.5), X("sub_c")));
    CHECK(close(F::mul(x, 2.5), X("mul_c")));
    CHECK(close(F::div(x, 2.5), X("div_c")));
    CHECK(close(F::rsub(x, 2.5), X("rsub_c")));
    CHECK(close(F::rdiv(p, 2.5), X("rdiv_c")));
    Variable vx(x);
    F::pow(vx, 3).backward();
    CHECK(close(vx.grad(), X("g_pow3")));
    std::vector<Fn> fs = {[](const Variable& v) { return F::neg(v); },
                          [](const Variable& v) { return F::pow(v, 3); },
                          [](const Variable& v) { return F::add(v, 2.5); },
                          [](const Variable& v) { return F::sub(v, 2.5); },
                          [](const Variable& v) { return F::mul(v, 2.5); },
                          [](const Variable& v) { return F::div(v, 2.5); },
                          [](const Variable& v) { return F::rsub(v, 2.5); }};
    for (auto& f : fs) CHECK(utils::gradient_check(f, x));
    CHECK(utils::gradient_check([](const Variable& v) { return F::pow(v, -1.5); }, p));
    CHECK(utils::gradient_check([](const Variable& v) { return F::rdiv(v, 2.5); }, p));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(v, 3); }, x));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(v, -1.5); }, p));
    CHECK(double_backward_check([](const Variable& v) { return F::rdiv(v, 2.5); }, p));
    CHECK(double_backward_check([](const Variable& v) { return F::mul(v * v, 2.5); }, x));
    // int operands: DeZero's div is true division
    CHECK(F::div(Variable(array({1, 2}, std::nullopt, dev)), 2.0).dtype() == float64);
  });
}

// --- element-wise math ----------------------------------------------------------------------------
TEST_CASE("F: sin cos tanh exp log (+ sigmoid relu)") {
  dzt::on_each_device([](Device dev) {
    Tensor x = X("x", dev), p = X("p", dev);
    struct C { const char* name; Fn f; bool positive; };
    std::vector<C> cs = {{"sin", [](const Variable& v) { return F::sin(v); }, false},
                         {"cos", [](const Variable& v) { return F::cos(v); }, false},
                         {"tanh", [](const Variable& v) { return F::tanh(v); }, false},
                         {"exp", [](const Variable& v) { return F::exp(v); }, false},
                         {"log", [](const Variable& v) { return F::log(v); }, true},
                         {"sigmoid", [](const Variable& v) { return F::sigmoid(v); }, false},
                         {"relu", [](const Variable& v) { return F::relu(v); }, false}};
    for (auto& c : cs) {
      CAPTURE(c.name);
      Tensor in = c.positive ? p : x;
      CHECK(close(c.f(in), X(c.name)));
      CHECK(utils::gradient_check(c.f, in));
      if (std::string(c.name) != "relu") CHECK(double_backward_check(c.f, in));
      std::string g = std::string("g_") + c.name;
      if (g != "g_sigmoid" && g != "g_relu") {
        Variable v(in);
        c.f(v).backward();
        CHECK(close(v.grad(), X(g)));
      }
    }
    // float32 in, float32 out
    CHECK(F::exp(x.astype(float32)).dtype() == float32);
  });
}

// --- shapes ------------------------------------------------------------------------------------------
TEST_CASE("F: reshape transpose expand_dims flatten get_item") {
  dzt::on_each_device([](Device dev) {
    Tensor x = X("x", dev), x3 = X("x3", dev);
    CHECK(close(F::reshape(x, {6, 2}), X("reshape_62")));
    CHECK(close(F::reshape(x, {-1}), X("reshape_m1")));
    CHECK(close(F::transpose(x), X("transpose")));
    CHECK(close(Variable(x).T(), X("transpose")));
    CHECK(close(F::transpose(x3, {1, 2, 0}), X("transpose_120")));
    CHECK(close(F::expand_dims(x, 1), X("expand_dims_1")));
    CHECK(close(F::expand_dims(x, -1), X("expand_dims_m1")));
    CHECK(close(F::flatten(x3), X("flatten")));
    Indices rows = {array({2, 0, 2}, std::nullopt, dev)};
    Indices sl = {Slice(1, std::nullopt), Slice(std::nullopt, std::nullopt, -2)};
    CHECK(close(F::get_item(x, rows), X("get_item_rows")));
    CHECK(close(F::get_item(x, sl), X("get_item_slice")));
    Variable vx(x);
    F::get_item(vx, rows).backward();
    CHECK(close(vx.grad(), X("g_get_item_rows")));  // repeated rows accumulate
    std::vector<Fn> fs = {[](const Variable& v) { return F::reshape(v, {6, 2}); },
                          [](const Variable& v) { return F::transpose(v); },
                          [](const Variable& v) { return F::expand_dims(v, 0); },
                          [](const Variable& v) { return F::flatten(v); },
                          [&](const Variable& v) { return F::get_item(v, rows); },
                          [&](const Variable& v) { return F::get_item(v, sl); }};
    for (auto& f : fs) CHECK(utils::gradient_check(f, x));
    CHECK(utils::gradient_check([](const Variable& v) { return F::transpose(v, {1, 2, 0}); }, x3));
    CHECK(utils::gradient_check([](const Variable& v) { return F::transpose(v, {-1, 0, 1}); }, x3));
    CHECK(double_backward_check([&](const Variable& v) { return F::pow(F::get_item(v, rows), 2); }, x));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(F::transpose(v, {1, 2, 0}), 3); }, x3));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(F::reshape(v, {6, 2}), 3); }, x));
    // reshape to the same shape records nothing
    Variable same(x);
    CHECK(F::reshape(same, {3, 4}).is_same(same));
  });
}

// --- reductions and broadcasting ---------------------------------------------------------------------------
TEST_CASE("F: sum sum_to broadcast_to average mean") {
  dzt::on_each_device([](Device dev) {
    Tensor x = X("x", dev), x3 = X("x3", dev);
    CHECK(close(F::sum(x3), X("sum")));
    CHECK(close(F::sum(x3, 1), X("sum_1")));
    CHECK(close(F::sum(x3, {0, 2}, true), X("sum_02_kd")));
    CHECK(close(F::sum_to(x, {1, 4}), X("sum_to_14")));
    CHECK(close(F::sum_to(x, {3, 1}), X("sum_to_31")));
    CHECK(close(F::sum_to(x, {4}), X("sum_to_4")));
    CHECK(close(F::broadcast_to(Variable(x)[0], {2, 3, 4}), X("broadcast_to_234")));
    CHECK(close(F::average(x3), X("average")));
    CHECK(close(F::mean(x3, 1), X("average_1")));
    std::vector<Fn> fs = {[](const Variable& v) { return F::sum(v); },
                          [](const Variable& v) { return F::sum(v, 1); },
                          [](const Variable& v) { return F::sum(v, {0, -1}, true); },
                          [](const Variable& v) { return F::average(v, 2); },
                          [](const Variable& v) { return F::mean(v); }};
    for (auto& f : fs) CHECK(utils::gradient_check(f, x3));
    CHECK(utils::gradient_check([](const Variable& v) { return F::sum_to(v, {1, 4}); }, x));
    CHECK(utils::gradient_check([](const Variable& v) { return F::sum_to(v, {3, 1}); }, x));
    CHECK(utils::gradient_check([](const Variable& v) { return F::broadcast_to(v, {2, 3, 4}); }, x));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(F::sum(v, 1), 2); }, x3));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(F::sum_to(v, {3, 1}), 2); }, x));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(F::broadcast_to(v, {2, 3, 4}), 2); }, x));
    CHECK(F::mean(Variable(array({1, 2}, std::nullopt, dev))).data().item<double>() == 1.5);
  });
}

TEST_CASE("F: max min clip") {
  dzt::on_each_device([](Device dev) {
    Tensor x = X("x", dev), x3 = X("x3", dev);
    CHECK(close(F::max(x3), X("max")));
    CHECK(close(F::max(x3, 1), X("max_1")));
    CHECK(close(F::max(x3, {0, 2}, true), X("max_02_kd")));
    CHECK(close(F::min(x3), X("min")));
    CHECK(close(F::min(x3, -1), X("min_m1")));
    CHECK(close(F::clip(x, -0.5, 0.5), X("clip")));
    Variable v3(x3);
    F::max(v3, 1).backward();
    CHECK(close(v3.grad(), X("g_max_1")));
    Variable vx(x);
    F::clip(vx, -0.5, 0.5).backward();
    CHECK(close(vx.grad(), X("g_clip")));
    std::vector<Fn> fs = {[](const Variable& v) { return F::max(v); },
                          [](const Variable& v) { return F::max(v, 1); },
                          [](const Variable& v) { return F::max(v, {0, 2}, true); },
                          [](const Variable& v) { return F::min(v, -1); },
                          [](const Variable& v) { return F::clip(v, -0.5, 0.5); }};
    for (auto& f : fs) CHECK(utils::gradient_check(f, x3));
    CHECK(double_backward_check([](const Variable& v) { return F::pow(F::max(v, 1), 2); }, x3));
    // ties share the full gradient (DeZero)
    Variable t(array({1.0, 3.0, 3.0}, std::nullopt, dev));
    F::max(t).backward();
    CHECK(dzt::vals(t.grad()) == std::vector<double>{0, 1, 1});
  });
}

// --- linear algebra ---------------------------------------------------------------------------------------
TEST_CASE("F: matmul linear (2-d and batched)") {
  dzt::on_each_device([](Device dev) {
    Tensor x = X("x", dev), W = X("W", dev), b = X("b", dev);
    CHECK(close(F::matmul(x, W), X("matmul")));
    CHECK(close(Variable(x).matmul(W), X("matmul")));
    CHECK(close(F::linear(x, W, b), X("linear")));
    CHECK(close(F::linear(x, W), X("matmul")));
    CHECK(close(F::matmul(X("bmm_a", dev), X("bmm_b", dev)), X("bmm")));
    Variable vx(x), vW(W);
    F::matmul(vx, vW).backward();
    CHECK(close(vx.grad(), X("g_matmul_x")));
    CHECK(close(vW.grad(), X("g_matmul_W")));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::matmul(v, W); }, x));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::matmul(x, v); }, W));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::linear(v, W, b); }, x));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::linear(x, v, b); }, W));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::linear(x, W, v); }, b));
    Tensor ba = X("bmm_a", dev), bb = X("bmm_b", dev);
    CHECK(utils::gradient_check([&](const Variable& v) { return F::matmul(v, bb); }, ba));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::matmul(ba, v); }, bb));
    Tensor w2 = bb[0];  // (4, 5) broadcast over the batch
    CHECK(utils::gradient_check([&](const Variable& v) { return F::matmul(ba, v); }, w2));
    Tensor v1 = X("b", dev);  // 1-d operands follow np.dot
    CHECK(F::matmul(v1, F::transpose(W)).shape() == Shape{4});
    CHECK(utils::gradient_check([&](const Variable& v) { return F::matmul(v, F::transpose(W)); }, v1));
    CHECK(double_backward_check([&](const Variable& v) { return F::matmul(v, v.T()); }, x));
    CHECK(double_backward_check([&](const Variable& v) { return F::pow(F::linear(x, v, b), 2); }, W));
    CHECK(double_backward_check([&](const Variable& v) { return F::pow(F::matmul(v, bb), 2); }, ba));
  });
}

// --- step values (the book's steps) --------------------------------------------------------------------
TEST_CASE("F: the book's test functions (step 24) and Taylor sin (step 27)") {
  auto grads = [](auto f) {
    Variable x(array(1.0)), y(array(1.0));
    f(x, y).backward();
    return std::make_pair(x.grad().data().item<double>(), y.grad().data().item<double>());
  };
  auto sphere = [](const Variable& x, const Variable& y) { return x.pow(2) + y.pow(2); };
  auto matyas = [](const Variable& x, const Variable& y) { return 0.26 * (x.pow(2) + y.pow(2)) - 0.48 * x * y; };
  auto goldstein = [](const Variable& x, const Variable& y) {
    return (1.0 + (x + y + 1.0).pow(2) * (19.0 - 14.0 * x + 3.0 * x.pow(2) - 14.0 * y + 6.0 * x * y + 3.0 * y.pow(2))) *
           (30.0 + (2.0 * x - 3.0 * y).pow(2) * (18.0 - 32.0 * x + 12.0 * x.pow(2) + 48.0 * y - 36.0 * x * y + 27.0 * y.pow(2)));
  };
  CHECK(grads(sphere) == std::make_pair(2.0, 2.0));
  auto m = grads(matyas);
  CHECK(m.first == doctest::Approx(0.040000000000000036).epsilon(1e-12));
  CHECK(m.second == doctest::Approx(0.040000000000000036).epsilon(1e-12));
  CHECK(grads(goldstein) == std::make_pair(-5376.0, 8064.0));
  Variable x(array(std::atan(1.0)));
  Variable y = F::sin(x);
  y.backward();
  CHECK(y.data().item<double>() == doctest::Approx(0.7071067811865476).epsilon(1e-15));
  CHECK(x.grad().data().item<double>() == doctest::Approx(0.7071067811865477).epsilon(1e-15));
}
