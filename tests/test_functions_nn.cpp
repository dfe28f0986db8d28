// tests/test_functions_nn.cpp - dezero::F neural-network functions: activations, losses,
// accuracy, dropout, batch_norm, embed_id (DeZero test_relu/sigmoid/softmax/
// softmax_cross_entropy/loss/dropout/batchnorm).
// Reference values are DeZero's literals or computed here with plain double loops.
#include <cmath>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;
using dezero::utils::gradient_check;
using dzt::vals;

namespace {

void check_vals(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol));
}

// Softmax over axis 1 of a row-major (outer, c, inner) array, in doubles.
std::vector<double> ref_softmax(const std::vector<double>& x, std::int64_t outer, std::int64_t c, std::int64_t inner,
                                bool log_ = false) {
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < inner; ++j) {
      double mx = -INFINITY, s = 0;
      for (std::int64_t i = 0; i < c; ++i) mx = std::max(mx, x[(o * c + i) * inner + j]);
      for (std::int64_t i = 0; i < c; ++i) s += std::exp(x[(o * c + i) * inner + j] - mx);
      for (std::int64_t i = 0; i < c; ++i) {
        double v = x[(o * c + i) * inner + j] - mx;
        y[(o * c + i) * inner + j] = log_ ? v - std::log(s) : std::exp(v) / s;
      }
    }
  return y;
}

// Per-channel batch mean and biased variance of x (N, C) or (N, C, H, W), in doubles.
void ref_stats(const Tensor& x, std::vector<double>& mu, std::vector<double>& var) {
  auto v = vals(x);
  std::int64_t n = x.shape()[0], c = x.shape()[1], hw = x.size() / (n * c);
  mu.assign(c, 0.0);
  var.assign(c, 0.0);
  double m = static_cast<double>(n * hw);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < c; ++k)
      for (std::int64_t p = 0; p < hw; ++p) mu[k] += v[(i * c + k) * hw + p] / m;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < c; ++k)
      for (std::int64_t p = 0; p < hw; ++p) var[k] += std::pow(v[(i * c + k) * hw + p] - mu[k], 2) / m;
}

// gamma * (x - mu) / sqrt(var + eps) + beta per channel (axis 1), in doubles.
std::vector<double> ref_bn(const Tensor& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                           const std::vector<double>& mu, const std::vector<double>& var, double eps = 2e-5) {
  auto v = vals(x);
  std::int64_t n = x.shape()[0], c = x.shape()[1], hw = x.size() / (n * c);
  std::vector<double> y(v.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < c; ++k)
      for (std::int64_t p = 0; p < hw; ++p) {
        std::int64_t idx = (i * c + k) * hw + p;
        y[idx] = gamma[k] * (v[idx] - mu[k]) / std::sqrt(var[k] + eps) + beta[k];
      }
  return y;
}

const std::initializer_list<std::initializer_list<double>> kLogits = {{-1, 0, 1, 2}, {2, 0, 1, -1}};

}  // namespace

// --- sigmoid ---------------------------------------------------------------
TEST_CASE("sigmoid: forward literal, float32 stays float32") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({{0.0, 1.0, 2.0}, {0.0, 2.0, 4.0}}, float32, dev));
    Variable y = F::sigmoid(x);
    CHECK(y.dtype() == float32);
    check_vals(vals(y), {0.5, 0.73105858, 0.88079708, 0.5, 0.88079708, 0.98201379}, 1e-6);
    Variable big(array({-800.0, 800.0}, float64, dev));
    check_vals(vals(F::sigmoid(big)), {0.0, 1.0}, 1e-12);  // stable form: no overflow
  });
}

TEST_CASE("sigmoid: backward literal and gradient_check") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({{0.0, 1.0, 2.0}, {0.0, 2.0, 4.0}}, float64, dev));
    F::sigmoid(x).backward();
    check_vals(vals(x.grad()), {0.25, 0.19661193, 0.10499359, 0.25, 0.10499359, 0.01766271}, 1e-6);
    random::seed(0);
    CHECK(gradient_check([](const Variable& v) { return F::sigmoid(v); }, random::rand({10, 10}, float64, dev)));
    CHECK(gradient_check([](const Variable& v) { return F::sigmoid(v); }, random::rand({10, 10, 10}, float64, dev)));
  });
}

// --- relu / leaky_relu ------------------------------------------------------
TEST_CASE("relu: forward literal and gradients") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({{-1.0, 0.0}, {2.0, -3.0}, {-2.0, 1.0}}, float32, dev));
    Variable y = F::relu(x);
    CHECK(y.dtype() == float32);
    check_vals(vals(y), {0, 0, 2, 0, 0, 1}, 1e-12);
    Variable x1(array({{-1.0, 1.0, 2.0}, {-1.0, 2.0, 4.0}}, float64, dev));
    F::relu(x1).backward();
    check_vals(vals(x1.grad()), {0, 1, 1, 0, 1, 1}, 1e-12);
    auto f = [](const Variable& v) { return F::relu(v); };
    CHECK(gradient_check(f, array({{-1.0, 1.0, 2.0}, {-1.0, 2.0, 4.0}}, float64, dev)));
    random::seed(0);
    CHECK(gradient_check(f, random::rand({10, 10}, float64, dev) * 100.0));
    CHECK(gradient_check(f, random::rand({10, 10, 10}, float64, dev) * 100.0));
  });
}

TEST_CASE("leaky_relu: forward literal, slope 0.002, gradients") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({{-1.0, 0.0}, {2.0, -3.0}, {-2.0, 1.0}}, float32, dev));
    Variable y = F::leaky_relu(x);
    CHECK(y.dtype() == float32);
    check_vals(vals(y), {-0.2, 0.0, 2.0, -0.6, -0.4, 1.0}, 1e-6);

    random::seed(0);
    Tensor r = random::randn({100}, float64, dev);
    auto rv = vals(r);
    std::vector<double> want;
    for (double v : rv) want.push_back(v > 0 ? v : 0.002 * v);
    check_vals(vals(F::leaky_relu(Variable(r), 0.002)), want, 1e-12);

    Variable x1(array({{-1.0, 1.0, 2.0}, {-1.0, 2.0, 4.0}}, float64, dev));
    F::leaky_relu(x1).backward();
    check_vals(vals(x1.grad()), {0.2, 1, 1, 0.2, 1, 1}, 1e-12);
    auto f = [](const Variable& v) { return F::leaky_relu(v); };
    CHECK(gradient_check(f, array({{-1.0, 1.0, 2.0}, {-1.0, 2.0, 4.0}}, float64, dev)));
    CHECK(gradient_check(f, random::rand({10, 10}, float64, dev) * 100.0 - 50.0));
    CHECK(gradient_check(f, random::rand({10, 10, 10}, float64, dev) * 100.0 - 50.0));
  });
}

// --- softmax / log_softmax ----------------------------------------------------
TEST_CASE("softmax: forward literal and reference on 2-D / 3-D / other axes") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({{0.0, 1.0, 2.0}, {0.0, 2.0, 4.0}}, float32, dev));
    Variable y = F::softmax(x);
    CHECK(y.dtype() == float32);
    check_vals(vals(y), {0.09003057, 0.24472846, 0.66524094, 0.01587624, 0.11731043, 0.86681336}, 1e-6);

    random::seed(0);
    Tensor a = random::rand({10, 10}, float32, dev);
    check_vals(vals(F::softmax(Variable(a))), ref_softmax(vals(a), 10, 10, 1), 1e-6);
    Tensor b = random::rand({4, 5, 6}, float64, dev);
    check_vals(vals(F::softmax(Variable(b))), ref_softmax(vals(b), 4, 5, 6), 1e-12);        // axis 1 of 3-D
    check_vals(vals(F::softmax(Variable(b), -1)), ref_softmax(vals(b), 20, 6, 1), 1e-12);   // last axis
    check_vals(vals(F::softmax(Variable(b), 0)), ref_softmax(vals(b), 1, 4, 30), 1e-12);
    Variable big(array({{1000.0, 1001.0}}, float64, dev));  // max-shifted: no overflow
    check_vals(vals(F::softmax(big)), {0.2689414213699951, 0.7310585786300049}, 1e-12);
  });
}

TEST_CASE("softmax: gradient_check (plain sums and weighted sums)") {
  dzt::on_each_device([](Device dev) {
    auto f = [](const Variable& v) { return F::softmax(v); };
    CHECK(gradient_check(f, array({{0.0, 1.0, 2.0}, {0.0, 2.0, 4.0}}, float64, dev)));
    random::seed(0);
    CHECK(gradient_check(f, random::rand({10, 10}, float64, dev)));
    CHECK(gradient_check(f, random::rand({10, 10, 10}, float64, dev)));
    // The plain sum's gradient is ~0; weight the outputs so the check means something.
    for (int axis : {1, -1, 0}) {
      Tensor W = random::randn({3, 4, 5}, float64, dev);
      auto fw = [W, axis](const Variable& v) { return F::softmax(v, axis) * W; };
      CHECK(gradient_check(fw, random::randn({3, 4, 5}, float64, dev)));
    }
  });
}

TEST_CASE("log_softmax: forward literal, reference, gradient_check") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(kLogits, float32, dev));
    Variable y = F::log_softmax(x);
    CHECK(y.dtype() == float32);
    check_vals(vals(y), {-3.4401897, -2.4401897, -1.4401897, -0.4401897, -0.4401897, -2.4401897, -1.4401897, -3.4401897},
               1e-6);
    random::seed(0);
    Tensor b = random::randn({4, 5, 6}, float64, dev);
    check_vals(vals(F::log_softmax(Variable(b), 2)), ref_softmax(vals(b), 20, 6, 1, true), 1e-12);
    auto f = [](const Variable& v) { return F::log_softmax(v); };
    CHECK(gradient_check(f, array(kLogits, float64, dev)));
    CHECK(gradient_check(f, random::randn({10, 10}, float64, dev)));
    Tensor W = random::randn({4, 5, 6}, float64, dev);
    CHECK(gradient_check([W](const Variable& v) { return F::log_softmax(v, 1) * W; }, b));
    Variable big(array({{-1000.0, 0.0}}, float64, dev));
    check_vals(vals(F::log_softmax(big)), {-1000.0, 0.0}, 1e-12);
  });
}

TEST_CASE("softmax / log_softmax: double backprop") {
  dzt::on_each_device([](Device dev) {
    // d/dx sum(W * d/dx sum(V * softmax(x))) against finite differences of the first derivative.
    random::seed(1);
    Tensor V = random::randn({3, 4}, float64, dev), W = random::randn({3, 4}, float64, dev);
    Tensor x0 = random::randn({3, 4}, float64, dev);
    auto first = [V](const Variable& v) {  // analytic first derivative written with F ops
      Variable s = F::softmax(v);
      Variable sv = s * V;
      return sv - s * F::sum(sv, Axes{1}, true);
    };
    Variable x(x0);
    Variable y = F::sum(F::softmax(x) * V);
    y.backward(false, true);
    Variable gx = x.grad();
    CHECK(dzt::allclose(gx.data(), first(Variable(x0)).data(), 1e-10, 1e-12));
    x.cleargrad();
    F::sum(gx * W).backward();
    Tensor num = utils::numerical_grad([&](const Variable& v) { return F::sum(first(v) * W); }, x0);
    CHECK(dzt::allclose(x.grad().data(), num));
  });
}

// --- softmax cross entropy ------------------------------------------------
TEST_CASE("softmax_cross_entropy: literal loss and gradient, int32 and int64 labels") {
  dzt::on_each_device([](Device dev) {
    const std::vector<double> want_g = {0.0160293,   0.04357216, 0.11844141, -0.17804287,
                                        -0.17804287, 0.04357216, 0.11844141, 0.0160293};
    for (DType lt : {int64, int32}) {
      Variable t(array({3, 0}, lt, dev));
      Variable x(array(kLogits, float64, dev));
      Variable y = F::softmax_cross_entropy(x, t);
      CHECK(y.dtype() == float64);
      CHECK(y.shape() == Shape{});
      CHECK(y.data().item<double>() == doctest::Approx(0.4401896985611953).epsilon(1e-14));
      y.backward();
      CHECK(x.grad().dtype() == float64);
      check_vals(vals(x.grad()), want_g, 1e-6);
      CHECK_FALSE(t.has_grad());

      // float32 logits: loss and gradient are float32 whatever the label dtype.
      Variable x32(array(kLogits, float32, dev));
      Variable y32 = F::softmax_cross_entropy(x32, t);
      CHECK(y32.dtype() == float32);
      CHECK(y32.data().item<float>() == doctest::Approx(0.4401896985611953).epsilon(1e-6));
      y32.backward();
      CHECK(x32.grad().dtype() == float32);
      check_vals(vals(x32.grad()), want_g, 1e-6);
    }
    // Labels of any shape holding N ids.
    Variable t2(array({3, 0}, int64, dev).reshape({2, 1}));
    CHECK(F::softmax_cross_entropy(Variable(array(kLogits, float64, dev)), t2).data().item<double>() ==
          doctest::Approx(0.4401896985611953).epsilon(1e-14));
  });
}

TEST_CASE("softmax_cross_entropy: gradient_check and reference loss") {
  dzt::on_each_device([](Device dev) {
    auto lit_t = array({3, 0}, int64, dev);
    CHECK(gradient_check([lit_t](const Variable& v) { return F::softmax_cross_entropy(v, lit_t); },
                         array(kLogits, float64, dev)));
    random::seed(0);
    for (std::int64_t n : {10, 100}) {
      for (DType lt : {int64, int32}) {
        Tensor x = random::randn({n, 10}, float64, dev);
        Tensor t = random::randint(0, 10, {n}, lt, dev);
        CHECK(gradient_check([t](const Variable& v) { return F::softmax_cross_entropy(v, t); }, x));
        auto ls = ref_softmax(vals(x), n, 10, 1, true);
        auto tv = vals(t);
        double want = 0;
        for (std::int64_t i = 0; i < n; ++i) want -= ls[i * 10 + static_cast<std::int64_t>(tv[i])] / n;
        CHECK(F::softmax_cross_entropy(Variable(x), Variable(t)).data().item<double>() ==
              doctest::Approx(want).epsilon(1e-12));
      }
    }
    // Large logits stay finite.
    Variable big(array({{1000.0, -1000.0}, {0.0, 2000.0}}, float64, dev));
    double l = F::softmax_cross_entropy(big, Variable(array({0, 0}, int64, dev))).data().item<double>();
    CHECK(l == doctest::Approx(1000.0).epsilon(1e-12));
  });
}

TEST_CASE("softmax_cross_entropy: double backprop (x and the upstream gradient)") {
  dzt::on_each_device([](Device dev) {
    random::seed(2);
    const std::int64_t n = 5, c = 4;
    Tensor x0 = random::randn({n, c}, float64, dev);
    Tensor t = random::randint(0, c, {n}, int64, dev);
    Tensor W = random::randn({n, c}, float64, dev);
    Tensor onehot = equal(arange(0.0, double(c), 1.0, int64, dev).reshape({1, c}), t.reshape({n, 1})).astype(float64);
    auto g_ref = [&](const Variable& v) { return (F::softmax(v) - Variable(onehot)) / double(n); };

    Variable x(x0);
    Variable k(array(3.0, float64, dev));  // loss = k * sce: the grad kernel's gy is k
    Variable loss = k * F::softmax_cross_entropy(x, t);
    loss.backward(false, true);
    Variable gx = x.grad();
    CHECK(dzt::allclose(gx.data(), (g_ref(Variable(x0)) * 3.0).data(), 1e-10, 1e-12));
    x.cleargrad();
    k.cleargrad();
    F::sum(gx * W).backward();
    Tensor num = utils::numerical_grad([&](const Variable& v) { return F::sum(g_ref(v) * W) * 3.0; }, x0);
    CHECK(dzt::allclose(x.grad().data(), num));
    REQUIRE(k.has_grad());
    CHECK(k.grad().data().item<double>() ==
          doctest::Approx(F::sum(g_ref(Variable(x0)) * W).data().item<double>()).epsilon(1e-10));
  });
}

TEST_CASE("softmax_cross_entropy: errors") {
  Variable x(array(kLogits, float64));
  CHECK_THROWS_AS(F::softmax_cross_entropy(x, array({4, 0})), IndexError);
  CHECK_THROWS_AS(F::softmax_cross_entropy(x, array({-1, 0})), IndexError);
  CHECK_THROWS_AS(F::softmax_cross_entropy(x, array({1, 0, 2})), ShapeError);
  CHECK_THROWS_AS(F::softmax_cross_entropy(x, array({1.0, 0.0})), DtypeError);
  CHECK_THROWS_AS(F::softmax_cross_entropy(Variable(zeros({2, 2, 2}, float64)), array({0, 0})), ShapeError);
  CHECK_THROWS_AS(F::softmax_cross_entropy(Variable(zeros({2, 4}, int64)), array({0, 0})), DtypeError);
  try {
    F::softmax_cross_entropy(x, array({4, 0}));
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("softmax_cross_entropy") != std::string::npos);
    CHECK(std::string(e.what()).find("[0, 4)") != std::string::npos);
  }
  CHECK_THROWS_AS(F::softmax(Variable(zeros({2, 3})), 2), IndexError);
}

// --- mean squared error ---------------------------------------------------
TEST_CASE("mean_squared_error: forward (divides by the first axis) and gradients") {
  dzt::on_each_device([](Device dev) {
    Variable a(array({0.0, 1.0, 2.0}, float64, dev));
    CHECK(F::mean_squared_error(a, a).data().item<double>() == 0.0);
    Variable x(array({{1.0, 2.0}, {3.0, 4.0}}, float64, dev));
    CHECK(F::mean_squared_error(x, Variable(zeros({2, 2}, float64, dev))).data().item<double>() == 15.0);
    Variable x32(array({{1.0, 2.0}, {3.0, 4.0}}, float32, dev));
    Variable y32 = F::mean_squared_error(x32, Variable(zeros({2, 2}, float32, dev)));
    CHECK(y32.dtype() == float32);
    CHECK(y32.data().item<float>() == 15.0f);

    random::seed(0);
    for (std::int64_t n : {10, 100}) {
      Tensor x1 = random::rand({n}, float64, dev);
      CHECK(gradient_check([x1](const Variable& v) { return F::mean_squared_error(v, x1); },
                           random::rand({n}, float64, dev)));
    }
    Tensor p = random::randn({4, 3}, float64, dev), q = random::randn({4, 3}, float64, dev);
    CHECK(gradient_check([q](const Variable& v) { return F::mean_squared_error(v, q); }, p));
    CHECK(gradient_check([p](const Variable& v) { return F::mean_squared_error(p, v); }, q));
    Variable pv(p), qv(q);
    F::mean_squared_error(pv, qv).backward();
    check_vals(vals(pv.grad()), vals((p - q) * 0.5), 1e-12);  // 2 / len = 2 / 4
    check_vals(vals(qv.grad()), vals((q - p) * 0.5), 1e-12);
  });
}

// --- sigmoid / binary cross entropy ---------------------------------------------------------------
TEST_CASE("sigmoid_cross_entropy: forward vs DeZero's formula, gradients, stability") {
  dzt::on_each_device([](Device dev) {
    random::seed(0);
    Tensor x = random::randn({6, 3}, float64, dev);
    Tensor t = random::randint(0, 2, {6, 3}, int64, dev);
    auto xv = vals(x), tv = vals(t);
    double want = 0;
    for (std::size_t i = 0; i < xv.size(); ++i) {
      double p = 1 / (1 + std::exp(-xv[i]));
      want -= (tv[i] * std::log(p) + (1 - tv[i]) * std::log(1 - p)) / 6;
    }
    Variable y = F::sigmoid_cross_entropy(Variable(x), Variable(t));
    CHECK(y.dtype() == float64);
    CHECK(y.data().item<double>() == doctest::Approx(want).epsilon(1e-12));
    Variable y32 = F::sigmoid_cross_entropy(Variable(x.astype(float32)), Variable(t.astype(int32)));
    CHECK(y32.dtype() == float32);
    CHECK(y32.data().item<float>() == doctest::Approx(want).epsilon(1e-5));
    // t of another shape with the same size is reshaped (DeZero: when ndims differ).
    CHECK(F::sigmoid_cross_entropy(Variable(x), Variable(t.reshape({18}))).data().item<double>() ==
          doctest::Approx(want).epsilon(1e-12));

    CHECK(gradient_check([t](const Variable& v) { return F::sigmoid_cross_entropy(v, t); }, x));
    Tensor tf = random::rand({6, 3}, float64, dev);  // soft targets get a gradient too
    CHECK(gradient_check([x](const Variable& v) { return F::sigmoid_cross_entropy(x, v); }, tf));
    Variable zero(zeros({2, 1}, float64, dev));  // gradient at x == 0 is sigmoid(0) - t
    F::sigmoid_cross_entropy(zero, Variable(array({1.0, 0.0}, float64, dev).reshape({2, 1}))).backward();
    check_vals(vals(zero.grad()), {-0.25, 0.25}, 1e-12);

    Variable big(array({{40.0, -40.0}}, float64, dev));  // DeZero's clip gives nan/inf here
    Variable l = F::sigmoid_cross_entropy(big, Variable(array({{1.0, 1.0}}, float64, dev)));
    CHECK(l.data().item<double>() == doctest::Approx(40.0).epsilon(1e-12));
  });
}

TEST_CASE("binary_cross_entropy: forward vs formula and gradients") {
  dzt::on_each_device([](Device dev) {
    random::seed(0);
    Tensor p = random::rand({8, 2}, float64, dev) * 0.8 + 0.1;
    Tensor t = random::randint(0, 2, {8, 2}, int64, dev);
    auto pv = vals(p), tv = vals(t);
    double want = 0;
    for (std::size_t i = 0; i < pv.size(); ++i)
      want -= (tv[i] * std::log(pv[i]) + (1 - tv[i]) * std::log(1 - pv[i])) / 8;
    Variable y = F::binary_cross_entropy(Variable(p), Variable(t));
    CHECK(y.dtype() == float64);
    CHECK(y.data().item<double>() == doctest::Approx(want).epsilon(1e-12));
    CHECK(F::binary_cross_entropy(Variable(p.astype(float32)), Variable(t)).dtype() == float32);
    CHECK(gradient_check([t](const Variable& v) { return F::binary_cross_entropy(v, t); }, p));
    // Clipped to [1e-15, 0.999]: p = 1 with t = 0 stays finite.
    double l = F::binary_cross_entropy(Variable(array({1.0}, float64, dev)), Variable(array({0.0}, float64, dev)))
                   .data()
                   .item<double>();
    CHECK(l == doctest::Approx(-std::log(1 - 0.999)).epsilon(1e-12));
  });
}

// --- accuracy ------------------------------------------------------------------------
TEST_CASE("accuracy: literal, float64 0-d, outside the graph") {
  dzt::on_each_device([](Device dev) {
    Variable y(array({{0.2, 0.8, 0.0}, {0.1, 0.9, 0.0}, {0.8, 0.1, 0.1}}, float32, dev));
    for (DType lt : {int64, int32}) {
      Variable acc = F::accuracy(y, Variable(array({1, 2, 0}, lt, dev)));
      CHECK(acc.dtype() == float64);
      CHECK(acc.shape() == Shape{});
      CHECK(acc.creator() == nullptr);
      CHECK(acc.data().item<double>() == 0.6666666666666666);
    }
    CHECK(F::accuracy(y, Variable(array({1, 1, 0}, int64, dev).reshape({3, 1}))).data().item<double>() == 1.0);
  });
  CHECK_THROWS_AS(F::accuracy(Variable(zeros({3, 2})), array({0, 1})), ShapeError);
  CHECK_THROWS_AS(F::accuracy(Variable(zeros({3})), array({0, 1, 1})), ShapeError);
}

// --- dropout -------------------------------------------------------------------------
TEST_CASE("dropout: ratio 0 and test mode are identities") {
  dzt::on_each_device([](Device dev) {
    random::seed(0);
    Tensor x = random::randn({100, 100}, float64, dev);
    Variable xv(x);
    CHECK(utils::array_equal(F::dropout(xv, 0.0).data(), x));
    {
      auto g = test_mode();
      Variable y = F::dropout(xv);
      CHECK(y.is_same(xv));
    }
    CHECK(Config::train);
  });
  CHECK_THROWS_AS(F::dropout(Variable(zeros({2})), 1.0), ValueError);
}

TEST_CASE("dropout: inverted mask from dezero::random (NumPy's stream)") {
  // np.random.seed(0); np.random.rand(10) = .549 .715 .603 .545 .424 .646 .438 .892 .964 .383
  random::seed(0);
  Variable y = F::dropout(Variable(ones({10}, float32)), 0.5);
  CHECK(y.dtype() == float32);
  check_vals(vals(y), {2, 2, 2, 2, 0, 2, 0, 2, 2, 0}, 1e-12);
  dzt::on_each_device([](Device dev) {
    Tensor x = random::randn({50, 40}, float64, dev);
    random::seed(3);
    Tensor r = random::rand({50, 40}, float64, dev);
    random::seed(3);
    Variable yv = F::dropout(Variable(x), 0.3);
    auto xs = vals(x), rs = vals(r), ys = vals(yv);
    bool ok = true;
    for (std::size_t i = 0; i < xs.size(); ++i) ok = ok && std::abs(ys[i] - (rs[i] > 0.3 ? xs[i] / 0.7 : 0.0)) < 1e-12;
    CHECK(ok);
  });
}

TEST_CASE("dropout: backward with the mask frozen by reseeding") {
  dzt::on_each_device([](Device dev) {
    random::seed(0);
    struct Case { Shape s; double ratio; };
    for (const Case& c : {Case{{10, 10}, 0.5}, Case{{10, 20}, 0.99}, Case{{10, 10}, 0.0}}) {
      Tensor x = random::randn(c.s, float64, dev);
      double ratio = c.ratio;
      auto f = [ratio](const Variable& v) {
        random::seed(0);
        return F::dropout(v, ratio);
      };
      CHECK(gradient_check(f, x));
    }
  });
}

// --- batch_norm -------------------------------------------------------------------------
TEST_CASE("batch_norm: test-mode forward vs the fixed formula, float32 stays float32") {
  dzt::on_each_device([](Device dev) {
    random::seed(0);
    for (const Shape& s : {Shape{8, 1}, Shape{1, 10}, Shape{20, 10}, Shape{20, 10, 5, 5}}) {
      std::int64_t c = s[1];
      Tensor x = random::randn(s, float32, dev), gamma = random::randn({c}, float32, dev),
             beta = random::randn({c}, float32, dev), mean = random::randn({c}, float32, dev),
             var = abs(random::randn({c}, float32, dev));
      Tensor mean0 = mean.copy(), var0 = var.copy();
      auto g = test_mode();
      Variable y = F::batch_nrom(Variable(x), gamma, beta, mean, var);
      CHECK(y.dtype() == float32);
      CHECK(y.shape() == s);
      CHECK(dzt::allclose(y.data(), array(ref_bn(x, vals(gamma), vals(beta), vals(mean), vals(var)), s, float64)));
      CHECK(utils::array_equal(mean, mean0));  // test mode leaves the running statistics alone
      CHECK(utils::array_equal(var, var0));
    }
  });
}

TEST_CASE("batch_norm: train-mode forward and running statistics vs the formulas") {
  dzt::on_each_device([](Device dev) {
    random::seed(0);
    for (const Shape& s : {Shape{8, 1}, Shape{1, 10}, Shape{20, 10}, Shape{20, 10, 5, 5}}) {
      std::int64_t c = s[1];
      Tensor gamma = random::randn({c}, float32, dev), beta = random::randn({c}, float32, dev);
      Tensor mean, var;  // created as zeros / ones
      std::vector<double> rm(c, 0.0), rv(c, 1.0);
      const double m = static_cast<double>(s.ndim() == 2 ? s[0] : s[0] * s[2] * s[3]);
      for (int it = 0; it < 10; ++it) {
        Tensor x = random::randn(s, float32, dev);
        Variable y = F::batch_norm(Variable(x), gamma, beta, mean, var);
        CHECK(y.dtype() == float32);
        std::vector<double> mu, sig2;
        ref_stats(x, mu, sig2);
        CHECK(dzt::allclose(y.data(), array(ref_bn(x, vals(gamma), vals(beta), mu, sig2), s, float64), 1e-4, 1e-4));
        for (std::int64_t k = 0; k < c; ++k) {
          rm[k] = 0.9 * rm[k] + 0.1 * mu[k];
          rv[k] = 0.9 * rv[k] + 0.1 * (m / std::max(m - 1.0, 1.0)) * sig2[k];
        }
      }
      REQUIRE(mean.defined());
      CHECK(mean.dtype() == float32);
      CHECK(mean.device() == dev);
      CHECK(dzt::allclose(mean, array(rm, Shape{c}, float64)));
      CHECK(dzt::allclose(var, array(rv, Shape{c}, float64)));
    }
    // N = 1: x - mu = 0, so y = beta.
    Tensor rm = zeros({3}, float64, dev), rv = ones({3}, float64, dev);
    Tensor beta = array({1.0, 2.0, 3.0}, float64, dev);
    Variable y = F::batch_norm(Variable(array({{5.0, 6.0, 7.0}}, float64, dev)), ones({3}, float64, dev), beta, rm, rv);
    check_vals(vals(y), {1, 2, 3}, 1e-12);
  });
}

TEST_CASE("batch_norm: gradient_check in train and test mode, 2-D and 4-D") {
  dzt::on_each_device([](Device dev) {
    random::seed(0);
    for (bool train : {true, false}) {
      auto g = using_config("train", train);
      for (const Shape& s : {Shape{8, 3}, Shape{10, 20, 5, 5}}) {
        std::int64_t c = s[1];
        Tensor x = random::randn(s, float64, dev), gamma = random::randn({c}, float64, dev),
               beta = random::randn({c}, float64, dev), mean = random::randn({c}, float64, dev),
               var = abs(random::randn({c}, float64, dev)) + 0.5;
        INFO("train ", train, " shape ", s.str());
        CHECK(gradient_check([&](const Variable& v) { return F::batch_norm(v, gamma, beta, mean, var); }, x));
        CHECK(gradient_check([&](const Variable& v) { return F::batch_norm(x, v, beta, mean, var); }, gamma));
        CHECK(gradient_check([&](const Variable& v) { return F::batch_norm(x, gamma, v, mean, var); }, beta));
        // A weighted sum: the plain sum's gradient w.r.t. x is ~0 in train mode.
        Tensor W = random::randn(s, float64, dev);
        CHECK(gradient_check([&](const Variable& v) { return F::batch_norm(v, gamma, beta, mean, var) * W; }, x));
      }
    }
  });
}

TEST_CASE("batch_norm: double backprop through the train-mode gradient") {
  dzt::on_each_device([](Device dev) {
    random::seed(4);
    Tensor x0 = random::randn({6, 3}, float64, dev), gamma = random::randn({3}, float64, dev),
           beta = random::randn({3}, float64, dev), V = random::randn({6, 3}, float64, dev),
           W = random::randn({6, 3}, float64, dev);
    Tensor mean, var;
    // The train-mode gradient of sum(V * bn(x)) w.r.t. x, written with F ops.
    auto first = [&](const Variable& v) {
      Variable xc = v - F::mean(v, Axes{0}, true);
      Variable inv = F::pow(F::mean(xc * xc, Axes{0}, true) + 2e-5, -0.5);
      Variable xhat = xc * inv;
      Variable gy(V * gamma);
      return (gy - F::mean(gy, Axes{0}, true) - xhat * F::mean(xhat * gy, Axes{0}, true)) * inv;
    };
    Variable x(x0);
    F::sum(F::batch_norm(x, gamma, beta, mean, var) * V).backward(false, true);
    Variable gx = x.grad();
    CHECK(dzt::allclose(gx.data(), first(Variable(x0)).data(), 1e-8, 1e-10));
    x.cleargrad();
    F::sum(gx * W).backward();
    Tensor num = utils::numerical_grad([&](const Variable& v) { return F::sum(first(v) * W); }, x0);
    CHECK(dzt::allclose(x.grad().data(), num));
  });
}

TEST_CASE("batch_norm: errors") {
  Tensor rm, rv;
  Tensor g = ones({3}), b = zeros({3});
  CHECK_THROWS_AS(F::batch_norm(Variable(zeros({2, 3, 4})), g, b, rm, rv), ShapeError);
  CHECK_THROWS_AS(F::batch_norm(Variable(zeros({3})), g, b, rm, rv), ShapeError);
  CHECK_THROWS_AS(F::batch_norm(Variable(zeros({2, 4})), g, b, rm, rv), ShapeError);
  CHECK_THROWS_AS(F::batch_norm(Variable(zeros({2, 3}, int64)), g, b, rm, rv), DtypeError);
  Tensor bad = zeros({4});
  CHECK_THROWS_AS(F::batch_norm(Variable(zeros({2, 3})), g, b, bad, rv), ShapeError);
}

// --- embed_id ------------------------------------------------------------------------------------------
TEST_CASE("embed_id: rows, repeated ids accumulate, gradients") {
  dzt::on_each_device([](Device dev) {
    Tensor W0 = arange(0.0, 15.0, 1.0, float32, dev).reshape({5, 3});
    for (DType it : {int64, int32}) {
      Variable W(W0.copy());
      Variable y = F::embed_id(Variable(array({1, 1, 3}, it, dev)), W);
      CHECK(y.dtype() == float32);
      CHECK(y.shape() == Shape{3, 3});
      check_vals(vals(y), {3, 4, 5, 3, 4, 5, 9, 10, 11}, 1e-12);
      y.backward();
      check_vals(vals(W.grad()), {0, 0, 0, 2, 2, 2, 0, 0, 0, 1, 1, 1, 0, 0, 0}, 1e-12);
    }
    Variable y2 = F::embed_id(Variable(array({{0, 4}, {2, 2}}, int64, dev)), Variable(W0));
    CHECK(y2.shape() == Shape{2, 2, 3});
    check_vals(vals(y2), {0, 1, 2, 12, 13, 14, 6, 7, 8, 6, 7, 8}, 1e-12);
    Tensor ids = array({{0, 4, 4}, {2, 1, 0}}, int64, dev);
    Tensor M = random::randn({2, 3, 3}, float64, dev);
    CHECK(gradient_check([&](const Variable& v) { return F::embed_id(ids, v) * M; }, random::randn({5, 3}, float64, dev)));
    // Double backprop: the gradient w.r.t. W is linear in gy, so d/dgy of sum(gW * V) is V[ids].
    Variable Wv(random::randn({5, 3}, float64, dev));
    Variable s(array(2.0, float64, dev));
    F::sum(F::embed_id(ids, Wv) * s).backward(false, true);
    Variable gW = Wv.grad();
    s.cleargrad();
    Tensor V = random::randn({5, 3}, float64, dev);
    F::sum(gW * V).backward();
    REQUIRE(s.has_grad());
    CHECK(s.grad().data().item<double>() == doctest::Approx(V[Index(ids)].sum().item<double>()).epsilon(1e-12));
  });
  CHECK_THROWS_AS(F::embed_id(Variable(array({5})), Variable(zeros({5, 3}))), IndexError);
  CHECK_THROWS_AS(F::embed_id(Variable(array({1.0})), Variable(zeros({5, 3}))), DtypeError);
}
