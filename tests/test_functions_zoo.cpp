// tests/test_functions_zoo.cpp - the functions of PyTorch's model zoo (issue 47): erf, gelu (both
// forms), hard_sigmoid, hard_swish, layer_norm and L::LayerNorm. Literals are PyTorch 1.13's
// float64 values (torch.erf, F.gelu, F.hardsigmoid, F.hardswish, F.layer_norm on the same inputs);
// gradients by utils::gradient_check, second derivatives against central differences of the first.
// The op table (test_op_table.cpp) runs them on every device and dtype; ONNX import and export are
// in tests/onnx (the zoo_ops fixtures, the ZooNet round trip).
#include <cmath>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;
using dezero::utils::gradient_check;
using dzt::vals;

namespace {

const std::vector<double> kX = {-4.0, -2.5, -1.0, -0.3, 0.0, 0.5, 1.2, 3.5};

void check_vals(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1e-3));
}

bool has_all(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (!dzt::has(msg, p)) {
      INFO("message: " << msg << "\n  expected to contain: " << p);
      return false;
    }
  return true;
}

BackwardOptions create_graph() {
  BackwardOptions o;
  o.create_graph = true;
  return o;
}

// d/dx of sum(f'(x)) at x, by central differences of the first derivative (element-wise f).
std::vector<double> second_derivative(const std::function<Variable(const Variable&)>& f, const std::vector<double>& x) {
  auto first = [&](double v) {
    Variable xv(array(std::vector<double>{v}, float64));
    Variable y = f(xv);
    y.backward();
    return vals(xv.grad())[0];
  };
  std::vector<double> out;
  for (double v : x) out.push_back((first(v + 1e-5) - first(v - 1e-5)) / 2e-5);
  return out;
}

// The gradient of sum(f'(x)), taken with create_graph.
std::vector<double> double_backward(const std::function<Variable(const Variable&)>& f, const std::vector<double>& x) {
  Variable xv(array(x, float64));
  Variable y = F::sum(f(xv));
  y.backward(create_graph());
  Variable gx = xv.grad();
  xv.cleargrad();
  F::sum(gx).backward();
  // no path from x to f'(x) (a constant slope, as hard_sigmoid's): the second derivative is 0
  return xv.has_grad() ? vals(xv.grad()) : std::vector<double>(x.size(), 0.0);
}

}  // namespace

TEST_CASE("erf: PyTorch's values, float32 stays float32, gradient 2/sqrt(pi) exp(-x^2)") {
  dzt::on_each_device([](Device dev) {
    const std::vector<double> want = {-0.9999999845827421, -0.999593047982555, -0.8427007929497149,
                                      -0.3286267594591274, 0.0, 0.5204998778130465, 0.9103139782296354,
                                      0.9999992569016276};
    check_vals(vals(F::erf(Variable(array(kX, float64, dev)))), want, 1e-14);
    Variable y32 = F::erf(Variable(array(kX, float32, dev)));
    CHECK(y32.dtype() == float32);
    check_vals(vals(y32), want, 1e-6);
    CHECK(vals(erf(array(std::vector<std::int64_t>{0, 1}, int64, dev)))[1] == doctest::Approx(0.8427007929497149));
    Variable x(array(kX, float64, dev));
    F::sum(F::erf(x)).backward();
    std::vector<double> g;
    for (double v : kX) g.push_back(2.0 / std::sqrt(M_PI) * std::exp(-v * v));
    check_vals(vals(x.grad()), g, 1e-14);
    CHECK(gradient_check([](const Variable& v) { return F::erf(v); }, random::randn({3, 4}, float64, dev)));
  });
  auto f = [](const Variable& v) { return F::erf(v); };
  check_vals(double_backward(f, kX), second_derivative(f, kX), 1e-5);
}

TEST_CASE("gelu: both forms equal PyTorch's values and gradients, and differentiate twice") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(kX, float64, dev));
    check_vals(vals(F::gelu(x)),
               {-0.00012668496733247991, -0.015524163314440398, -0.15865525393145702, -0.1146265733433142, 0.0,
                0.34573123063700656, 1.0619163957339501, 3.4991857982233756},
               1e-13);
    check_vals(vals(F::gelu(x, "tanh")),
               {-7.024594819227126e-05, -0.015084266089998577, -0.1588080093917233, -0.11462907645724074, 0.0,
                0.34571400982514394, 1.0617027691378647, 3.499383802344626},
               1e-13);
    F::sum(F::gelu(x)).backward();
    check_vals(vals(x.grad()),
               {-0.0005036496612264215, -0.03761108590814519, -0.08331547058768635, 0.26767223317289013, 0.5,
                0.8674951246561629, 1.1179535957581472, 1.0028217603536247},
               1e-12);
    CHECK(F::gelu(Variable(array(kX, float32, dev))).dtype() == float32);
    for (const char* form : {"none", "tanh"}) {
      CAPTURE(form);
      CHECK(gradient_check([&](const Variable& v) { return F::gelu(v, form); }, random::randn({3, 4}, float64, dev) * 2.0));
    }
  });
  for (const char* form : {"none", "tanh"}) {
    CAPTURE(form);
    auto f = [&](const Variable& v) { return F::gelu(v, form); };
    check_vals(double_backward(f, kX), second_derivative(f, kX), 1e-5);
  }
  CHECK_THROWS_AS(F::gelu(Variable(zeros({2})), "erf"), ValueError);
  CHECK(dzt::has(dzt::thrown<ValueError>([] { F::gelu(Variable(zeros({2})), "Tanh"); }), "\"none\" or \"tanh\""));
}

TEST_CASE("hard_sigmoid and hard_swish: PyTorch's values and gradients") {
  dzt::on_each_device([](Device dev) {
    Variable x(array(kX, float64, dev));
    // PyTorch's F.hardsigmoid is alpha = 1/6, beta = 1/2
    check_vals(vals(F::hard_sigmoid(x, 1.0 / 6.0, 0.5)),
               {0.0, 0.08333333333333333, 0.3333333333333333, 0.45, 0.5, 0.5833333333333334, 0.7000000000000001, 1.0},
               1e-15);
    // the defaults are ONNX's and Chainer's: 0.2 x + 0.5
    check_vals(vals(F::hard_sigmoid(x)), {0.0, 0.0, 0.3, 0.44, 0.5, 0.6, 0.74, 1.0}, 1e-15);
    F::sum(F::hard_sigmoid(x)).backward();
    check_vals(vals(x.grad()), {0, 0, 0.2, 0.2, 0.2, 0.2, 0.2, 0}, 1e-15);

    Variable x2(array(kX, float64, dev));
    check_vals(vals(F::hard_swish(x2)),
               {-0.0, -0.20833333333333334, -0.3333333333333333, -0.135, 0.0, 0.2916666666666667, 0.84, 3.5}, 1e-15);
    F::sum(F::hard_swish(x2)).backward();
    check_vals(vals(x2.grad()),
               {0.0, -0.33333333333333337, 0.16666666666666669, 0.4, 0.5, 0.6666666666666666, 0.8999999999999999, 1.0},
               1e-14);
    CHECK(F::hard_swish(Variable(array(kX, float32, dev))).dtype() == float32);
  });
  // second derivatives: 0 for hard_sigmoid, 1/3 for hard_swish between -3 and 3 (away from the kinks)
  const std::vector<double> xs = {-4.0, -2.0, -0.5, 0.7, 2.9, 3.5};
  check_vals(double_backward([](const Variable& v) { return F::hard_sigmoid(v); }, xs), {0, 0, 0, 0, 0, 0}, 1e-15);
  check_vals(double_backward([](const Variable& v) { return F::hard_swish(v); }, xs),
             {0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0}, 1e-14);
}

TEST_CASE("layer_norm: PyTorch's values, gradients over one and two axes, double backward") {
  dzt::on_each_device([](Device dev) {
    Tensor xd = pow(arange(6.0, float64, dev).reshape({2, 3}), 1.5);
    Variable g(array(std::vector<double>{1.0, 2.0, 0.5}, float64, dev));
    Variable b(array(std::vector<double>{0.0, -1.0, 1.0}, float64, dev));
    check_vals(vals(F::layer_norm(Variable(xd), g, b)),
               {-1.0896972944909962, -1.4715956538306714, 1.662747560703166, -1.1982688761759854,
                -1.1026711922013162, 1.624802236138322},
               1e-12);
    // each row normalised: mean 0, biased variance 1 / (1 + eps / var)
    Tensor y = F::layer_norm(Variable(random::randn({4, 5}, float64, dev) * 3.0 + 1.0),
                             Variable(ones({5}, float64, dev)))
                   .data();
    for (double m : vals(mean(y, 1))) CHECK(std::abs(m) < 1e-12);
    Tensor x3 = random::randn({2, 3, 4}, float64, dev);
    Tensor g2 = random::rand({3, 4}, float64, dev) + 0.5, b2 = random::randn({3, 4}, float64, dev);
    CHECK(gradient_check([&](const Variable& v) { return F::layer_norm(v, Variable(g2), Variable(b2)); }, x3));
    CHECK(gradient_check([&](const Variable& v) { return F::layer_norm(Variable(x3), v, Variable(b2), 1e-3); }, g2));
    CHECK(gradient_check([&](const Variable& v) { return F::layer_norm(Variable(x3), Variable(g2), v); }, b2));
    CHECK(gradient_check([&](const Variable& v) { return F::layer_norm(v, Variable(g2.reshape({3, 4})[Slice(2, 3)].reshape({4}))); },
                         x3));
  });
  // The gradient of sum(gx * w) with respect to x: with create_graph against central differences.
  Tensor x0 = random::randn({2, 5}, float64), w = random::randn({2, 5}, float64);
  Variable gamma(random::rand({5}, float64) + 0.5);
  auto first = [&](const Tensor& xt) {
    Variable xv(xt);
    F::sum(F::layer_norm(xv, gamma) * Variable(w)).backward(create_graph());
    return xv.grad();
  };
  Variable xv(x0);
  F::sum(F::layer_norm(xv, gamma) * Variable(w)).backward(create_graph());
  Variable gx = xv.grad();
  xv.cleargrad();
  F::sum(gx * gx).backward();
  const std::vector<double> got = vals(xv.grad());
  std::vector<double> x0v = vals(x0);
  for (std::size_t i = 0; i < x0v.size(); ++i) {
    std::vector<double> hi = x0v, lo = x0v;
    hi[i] += 1e-5;
    lo[i] -= 1e-5;
    auto s2 = [&](const std::vector<double>& v) {
      auto g = vals(first(array(v, float64).reshape({2, 5})));
      double s = 0;
      for (double e : g) s += e * e;
      return s;
    };
    CHECK(got[i] == doctest::Approx((s2(hi) - s2(lo)) / 2e-5).epsilon(1e-5).scale(1e-3));
  }
}

TEST_CASE("layer_norm: errors name the function, the shapes and a hint") {
  Variable x(zeros({2, 3}));
  CHECK(has_all(dzt::thrown<ShapeError>([&] { F::layer_norm(x, Variable(ones({2}))); }),
                {"layer_norm", "(2,)", "(2, 3)", "normalized_shape"}));
  CHECK(has_all(dzt::thrown<ShapeError>([&] { F::layer_norm(x, Variable(ones({3})), Variable(zeros({2}))); }),
                {"layer_norm: beta"}));
  CHECK(has_all(dzt::thrown<ValueError>([&] { F::layer_norm(x, Variable()); }), {"gamma is undefined"}));
  CHECK_THROWS_AS(F::layer_norm(Variable(zeros({2, 3}, int64)), Variable(ones({3}))), DtypeError);
  CHECK_THROWS_AS(F::layer_norm(x, Variable(ones({3}, float64))), DtypeError);
  CHECK_THROWS_AS(F::layer_norm(x, Variable(ones({3})), Variable(), 0.0), ValueError);
  CHECK_THROWS_AS(F::layer_norm(x, Variable(ones({4, 2, 3}))), ShapeError);
}

TEST_CASE("L::LayerNorm: lazy over the last axis or a given shape; gamma and beta are parameters") {
  L::LayerNorm ln;
  Variable x(random::randn({3, 2, 5}, float32));
  Variable y = ln(x);
  CHECK(y.shape() == x.shape());
  CHECK(ln.gamma.shape() == Shape{5});
  CHECK(ln.beta.shape() == Shape{5});
  CHECK(ln.params().size() == 2);
  F::sum(y * y).backward();
  CHECK(ln.gamma.has_grad());
  CHECK(ln.beta.has_grad());
  CHECK_THROWS_AS(ln(Variable(random::randn({3, 4}, float32))), ShapeError);  // the first call fixed D = 5

  L::LayerNorm ln2(Shape{2, 5}, 1e-3);
  Variable y2 = ln2(x);
  CHECK(ln2.gamma.shape() == Shape{2, 5});
  check_vals(vals(y2), vals(F::layer_norm(x, Variable(ones({2, 5}, float32)), Variable(zeros({2, 5}, float32)), 1e-3)),
             1e-6);
  CHECK_THROWS_AS(L::LayerNorm(Shape{}), ValueError);
  CHECK_THROWS_AS(L::LayerNorm(Shape{0}), ValueError);
  CHECK_THROWS_AS(L::LayerNorm(Shape{4}, -1.0), ValueError);
  CHECK_THROWS_AS(ln2(Variable(zeros({5}))), ShapeError);
}
