// tests/test_functions_more.cpp - concat, pad (shape.hpp), maximum, minimum, where, pow with a tensor
// exponent (arithmetic.hpp), sqrt and abs (math.hpp), which the ONNX importer and exporter translate
// to and from Concat, Pad, Max, Min, Where, Pow, Sqrt and Abs: forward values against hand-computed
// ones, float64 finite-difference gradient checks for every input, double backward where the
// gradient is itself differentiable, and the argument checks' messages. The op table
// (test_op_table.cpp) runs each on every device and dtype.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

Tensor f64(const std::vector<double>& v, const Shape& s, Device d) { return array(v, s, float64, d); }

// Uniform values in [lo, hi) of `shape`, float64, from a seeded stream.
Tensor rnd(const Shape& s, Device d, double lo = -1.0, double hi = 1.0, std::uint64_t seed = 0) {
  random::Generator g(seed);
  return g.uniform(lo, hi, s, float64, d);
}

std::vector<double> grad_of(const Variable& x) { return x.grad().data().to_vector<double>(); }

}  // namespace

// --- concat -------------------------------------------------------------------------------------------
TEST_CASE("functions: concat joins along an axis and hands each input its slice of the gradient") {
  dzt::on_each_device([](Device d) {
    Variable a(f64({1, 2, 3, 4}, {2, 2}, d)), b(f64({5, 6}, {2, 1}, d));
    Variable y = F::concat({a, b}, -1);
    CHECK(y.shape() == Shape{2, 3});
    CHECK(dzt::vals(y) == std::vector<double>{1, 2, 5, 3, 4, 6});
    (y * Variable(f64({1, 2, 3, 4, 5, 6}, {2, 3}, d))).sum().backward();
    CHECK(grad_of(a) == std::vector<double>{1, 2, 4, 5});
    CHECK(grad_of(b) == std::vector<double>{3, 6});

    Tensor other = rnd({2, 3, 4}, d, -1, 1, 1);
    CHECK(utils::gradient_check([&](const Variable& x) { return F::concat({other, x, other}, 1); }, rnd({2, 2, 4}, d)));
    CHECK(utils::gradient_check([&](const Variable& x) { return F::concat({x, x}, 0); }, rnd({2, 3}, d)));
  });
}

TEST_CASE("functions: concat of nothing, or of shapes that differ, is an error") {
  CHECK(dzt::has(dzt::thrown<ValueError>([] { F::concat({}, 0); }), "concat: no inputs to join"));
  const std::string e = dzt::thrown<ShapeError>([] { F::concat({Variable(zeros({2, 2})), Variable(zeros({3, 3}))}, 0); });
  CHECK(dzt::has(e, "concat: input 1 (3, 3) float32 does not match input 0 (2, 2) float32 outside axis 0"));
  CHECK(dzt::has(e, "hint:"));
  CHECK(dzt::has(dzt::thrown<ShapeError>([] { F::concat({Variable(zeros({2, 2})), Variable(zeros({2}))}, 1); }),
                 "concat: input 1 (2,) float32"));
  CHECK(dzt::has(dzt::thrown<IndexError>([] { F::concat({Variable(zeros({2, 2}))}, 2); }), "concat"));
}

// --- pad ----------------------------------------------------------------------------------------------
TEST_CASE("functions: pad adds constants, crops with negative pads, and crops the gradient back") {
  dzt::on_each_device([](Device d) {
    Variable x(f64({1, 2, 3, 4, 5, 6}, {2, 3}, d));
    Variable y = F::pad(x, {{1, 0}, {0, 2}}, 9.0);
    CHECK(y.shape() == Shape{3, 5});
    CHECK(dzt::vals(y) == std::vector<double>{9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 4, 5, 6, 9, 9});

    Variable c = F::pad(x, {{0, -1}, {-1, 1}}, 0.0);  // crop a row and a column, add a column
    CHECK(c.shape() == Shape{1, 3});
    CHECK(dzt::vals(c) == std::vector<double>{2, 3, 0});
    c.sum().backward();
    CHECK(grad_of(x) == std::vector<double>{0, 1, 1, 0, 0, 0});

    Tensor ninf = F::pad(x, {{0, 0}, {1, 1}}, -std::numeric_limits<double>::infinity()).data();
    CHECK(std::isinf(ninf.to_vector<double>()[0]));
    CHECK(ninf.to_vector<double>()[1] == 1.0);

    CHECK(utils::gradient_check([](const Variable& v) { return F::pad(v, {{1, 2}, {0, 0}, {2, 1}}, 0.5); },
                                rnd({2, 3, 2}, d)));
    CHECK(utils::gradient_check([](const Variable& v) { return F::pad(v, {{-1, 1}, {2, -2}}, 0.0); }, rnd({3, 4}, d)));
  });
}

TEST_CASE("functions: pad checks its pairs") {
  Variable x(zeros({2, 3}));
  const std::string pairs = dzt::thrown<ShapeError>([&] { F::pad(x, {{1, 1}}, 0.0); });
  CHECK(dzt::has(pairs, "pad: 1 (before, after) pairs for x (2, 3) float32"));
  CHECK(dzt::has(pairs, "hint: give one pair per axis"));
  const std::string crop = dzt::thrown<ShapeError>([&] { F::pad(x, {{-2, -1}, {0, 0}}, 0.0); });
  CHECK(dzt::has(crop, "pad: the pads (-2, -1) of axis 0 crop more than its 2 elements (x (2, 3) float32)"));
}

// --- maximum / minimum --------------------------------------------------------------------------------
TEST_CASE("functions: maximum and minimum broadcast and send the gradient to the chosen operand") {
  dzt::on_each_device([](Device d) {
    Variable a(f64({1, 5, 3, 2}, {2, 2}, d)), b(f64({3, 2}, {2}, d));
    Variable y = F::maximum(a, b);
    CHECK(dzt::vals(y) == std::vector<double>{3, 5, 3, 2});
    y.sum().backward();
    CHECK(grad_of(a) == std::vector<double>{0, 1, 1, 1});  // the tie at 3 goes to a
    CHECK(grad_of(b) == std::vector<double>{1, 0});
    a.cleargrad();
    b.cleargrad();
    Variable z = F::minimum(a, b);
    CHECK(dzt::vals(z) == std::vector<double>{1, 2, 3, 2});
    z.sum().backward();
    CHECK(grad_of(a) == std::vector<double>{1, 0, 1, 1});
    CHECK(grad_of(b) == std::vector<double>{0, 1});

    Tensor other = rnd({3, 4}, d, -1, 1, 7);
    CHECK(utils::gradient_check([&](const Variable& v) { return F::maximum(v, other); }, rnd({3, 4}, d)));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::minimum(other, v); }, rnd({4}, d, -1, 1, 3)));
  });
}

// --- pow ----------------------------------------------------------------------------------------------
TEST_CASE("functions: pow with a tensor exponent: values, both gradients, and the base's dtype") {
  dzt::on_each_device([](Device d) {
    Variable x(f64({1, 2, 3}, {3}, d)), y(f64({2, 3, 0.5}, {3}, d));
    Variable z = F::pow(x, y);
    CHECK(dzt::allclose(z.data(), f64({1, 8, std::sqrt(3.0)}, {3}, d)));
    z.sum().backward();
    CHECK(dzt::allclose(x.grad().data(), f64({2, 12, 0.5 / std::sqrt(3.0)}, {3}, d)));
    CHECK(dzt::allclose(y.grad().data(), f64({0, 8 * std::log(2.0), std::sqrt(3.0) * std::log(3.0)}, {3}, d)));

    Tensor e = rnd({2, 3}, d, 0.5, 2.5, 5);
    Tensor base = rnd({3}, d, 0.5, 2.0, 6);
    CHECK(utils::gradient_check([&](const Variable& v) { return F::pow(v, e); }, rnd({2, 3}, d, 0.5, 2.0)));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::pow(base, v); }, rnd({2, 3}, d, -1, 2)));

    // An integer exponent: x keeps its dtype, only x gets a gradient.
    Variable xf(array(std::vector<float>{2.f, 3.f}, Shape{2}, float32, d));
    Variable yi(array(std::vector<std::int64_t>{3, 2}, Shape{2}, int64, d));
    Variable zf = F::pow(xf, yi);
    CHECK(zf.dtype() == float32);
    CHECK(dzt::vals(zf) == std::vector<double>{8, 9});
    zf.sum().backward();
    CHECK(xf.grad().dtype() == float32);
    CHECK(grad_of(xf) == std::vector<double>{12, 6});
  });
}

TEST_CASE("functions: pow differentiates twice (create_graph)") {
  Variable x(array(std::vector<double>{1.5, 2.0}, Shape{2}));
  Variable y(array(std::vector<double>{3.0, 2.5}, Shape{2}));
  Variable z = F::pow(x, y).sum();
  BackwardOptions opts;
  opts.create_graph = true;
  z.backward(opts);
  Variable gx = x.grad();
  x.cleargrad();
  gx.sum().backward();
  // d2/dx2 x^y = y (y - 1) x^(y - 2)
  const std::vector<double> want{3.0 * 2.0 * 1.5, 2.5 * 1.5 * std::pow(2.0, 0.5)};
  CHECK(dzt::allclose(x.grad().data(), array(want, Shape{2})));
}

// --- where --------------------------------------------------------------------------------------------
TEST_CASE("functions: where picks by a fixed condition and splits the gradient by it") {
  dzt::on_each_device([](Device d) {
    Tensor cond = array(std::vector<std::int64_t>{1, 0, 1}, Shape{3}, int64, d);
    Variable a(f64({1, 2, 3, 4, 5, 6}, {2, 3}, d)), b(f64({-1}, {1}, d));
    Variable y = F::where(cond, a, b);
    CHECK(y.shape() == Shape{2, 3});
    CHECK(dzt::vals(y) == std::vector<double>{1, -1, 3, 4, -1, 6});
    y.sum().backward();
    CHECK(grad_of(a) == std::vector<double>{1, 0, 1, 1, 0, 1});
    CHECK(grad_of(b) == std::vector<double>{2});

    Tensor other = rnd({2, 3}, d, -1, 1, 9);
    CHECK(utils::gradient_check([&](const Variable& v) { return F::where(cond, v, other); }, rnd({2, 3}, d)));
    CHECK(utils::gradient_check([&](const Variable& v) { return F::where(cond, other, v); }, rnd({3}, d)));
  });
}

// --- sqrt, abs, cast ----------------------------------------------------------------------------------
TEST_CASE("functions: sqrt, abs and cast differentiate") {
  dzt::on_each_device([](Device d) {
    CHECK(dzt::vals(F::sqrt(Variable(f64({4, 9}, {2}, d)))) == std::vector<double>{2, 3});
    CHECK(dzt::vals(F::abs(Variable(f64({-4, 9}, {2}, d)))) == std::vector<double>{4, 9});
    CHECK(utils::gradient_check([](const Variable& v) { return F::sqrt(v); }, rnd({3, 2}, d, 0.5, 3.0)));
    CHECK(utils::gradient_check([](const Variable& v) { return F::abs(v); }, rnd({3, 2}, d, 0.1, 1.0) * -1.0));
    CHECK(utils::gradient_check([](const Variable& v) { return F::cast(F::cast(v, float32), float64) * v; },
                                rnd({4}, d), 1e-3, 1e-3));

    Variable x(f64({1.5, -2.5}, {2}, d));
    CHECK(F::cast(x, float64).is_same(x));
    Variable xf = F::cast(x, float32);
    CHECK(xf.dtype() == float32);
    xf.sum().backward();
    CHECK(x.grad().dtype() == float64);
    CHECK(grad_of(x) == std::vector<double>{1, 1});
    Variable xi = F::cast(x, int64);
    CHECK(dzt::vals(xi) == std::vector<double>{1, -2});  // truncation toward zero
  });
}

TEST_CASE("functions: sqrt differentiates twice (create_graph)") {
  Variable x(array(std::vector<double>{4.0}, Shape{1}));
  BackwardOptions opts;
  opts.create_graph = true;
  F::sqrt(x).sum().backward(opts);
  Variable gx = x.grad();  // 1 / (2 sqrt(x)) = 0.25
  CHECK(dzt::vals(gx)[0] == doctest::Approx(0.25));
  x.cleargrad();
  gx.sum().backward();  // -1 / (4 x^1.5) = -1/32
  CHECK(dzt::vals(x.grad())[0] == doctest::Approx(-1.0 / 32.0));
}

// --- argument checks and overloads --------------------------------------------------------------------
TEST_CASE("functions: maximum, minimum, pow and where name themselves and the shapes that do not broadcast") {
  Variable a(zeros({2, 3})), b(zeros({4}));
  for (const auto& [name, f] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"maximum", [&] { F::maximum(a, b); }}, {"minimum", [&] { F::minimum(a, b); }}, {"pow", [&] { F::pow(a, b); }}}) {
    CAPTURE(name);
    const std::string e = dzt::thrown<ShapeError>(f);
    CHECK(dzt::has(e, name + ": a (2, 3) float32 and b (4,) float32 do not broadcast together"));
    CHECK(dzt::has(e, "hint:"));
  }
  const std::string w = dzt::thrown<ShapeError>([&] { F::where(zeros({4}), a, Variable(zeros({3}))); });
  CHECK(dzt::has(w, "where: cond (4,) float32, a (2, 3) float32 and b (3,) float32 do not broadcast together"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { F::where(Tensor(), a, a); }), "where: cond holds no data"));
}

TEST_CASE("functions: F::pow(x, 2) is the constant power, F::pow(x, y) with a Variable or Tensor y the tensor one") {
  Variable x(array(std::vector<double>{1.5, 2.0}, Shape{2}));
  CHECK(F::pow(x, 2).creator()->name() == "Pow");  // an int converts to double, never to a Variable
  CHECK(F::pow(x, 2.0).creator()->name() == "Pow");
  CHECK(F::pow(x.data(), 3).creator()->name() == "Pow");
  Tensor e = array(std::vector<double>{2.0, 3.0}, Shape{2});
  CHECK(F::pow(x, e).creator()->name() == "PowTensor");
  CHECK(F::pow(x, Variable(e)).creator()->name() == "PowTensor");
  CHECK(dzt::vals(F::pow(x, e)) == std::vector<double>{2.25, 8.0});
}

TEST_CASE("functions: the Functions keep the names and attributes the ONNX exporter reads") {
  Variable x(array(std::vector<double>{1, -2, 3, 4}, Shape{2, 2}));
  CHECK(F::concat({x, x}, 1).creator()->name() == "Concat");
  CHECK(F::pad(x, {{1, 0}, {0, 2}}, 0.5).creator()->name() == "Pad");
  CHECK(F::maximum(x, x).creator()->name() == "Maximum");
  CHECK(F::minimum(x, x).creator()->name() == "Minimum");
  CHECK(F::where(zeros({2}), x, x).creator()->name() == "Where");
  CHECK(F::sqrt(F::abs(x)).creator()->name() == "Sqrt");
  CHECK(F::abs(x).creator()->name() == "Abs");
  const FunctionAttrs pad_attrs = F::pad(x, {{1, 0}, {0, 2}}, 0.5).creator()->attributes();
  REQUIRE(pad_attrs.size() == 2);
  CHECK(pad_attrs[0].first == "pads");
  CHECK(std::get<std::vector<std::int64_t>>(pad_attrs[0].second) == std::vector<std::int64_t>{1, 0, 0, 2});
  CHECK(pad_attrs[1].first == "value");
  CHECK(std::get<double>(pad_attrs[1].second) == 0.5);
  const FunctionAttrs concat_attrs = F::concat({x, x}, -1).creator()->attributes();
  REQUIRE(concat_attrs.size() == 1);
  CHECK(std::get<std::int64_t>(concat_attrs[0].second) == -1);
}

TEST_CASE("functions: F::matmul with Transposed is one MatMul node with its flags; its errors") {
  Variable x(array(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  Variable w(array(std::vector<double>{1, 0, -1, 2, 1, 0.5}, Shape{2, 3}));
  const Variable y = F::matmul(x, w, F::Transposed::W);  // (2, 3) @ (3, 2)
  CHECK(y.shape() == Shape{2, 2});
  CHECK(dzt::vals(y) == std::vector<double>{-2, 5.5, -2, 16});
  CHECK(dzt::vals(F::matmul(x, w, F::Transposed::W)) == dzt::vals(F::matmul(x, F::transpose(w))));
  CHECK(dzt::vals(F::matmul(x, w, F::Transposed::x)) == dzt::vals(F::matmul(F::transpose(x), w)));
  const FunctionAttrs attrs = y.creator()->attributes();
  CHECK(y.creator()->name() == "MatMul");
  REQUIRE(attrs.size() == 2);
  CHECK(std::get<std::int64_t>(attrs[0].second) == 0);
  CHECK(std::get<std::int64_t>(attrs[1].second) == 1);
  CHECK(dzt::has(dzt::thrown<ShapeError>([&] { (void)F::matmul(x, x, F::Transposed::none); }),
                 "matmul: shapes (2, 3) and (2, 3) are not aligned: 3 != 2"));
  CHECK(dzt::has(dzt::thrown<ShapeError>([&] { (void)F::matmul(x, w, F::Transposed::both); }),
                 "(2, 3)^T and (2, 3)^T are not aligned"));
  Variable x3(zeros({2, 2, 3}, float64));
  CHECK(dzt::has(dzt::thrown<ShapeError>([&] { (void)F::matmul(x3, w, F::Transposed::W); }),
                 "a transposed product takes 2-d operands"));
}

TEST_CASE("functions: F::conv3d is the 3-d cross-correlation, grouped and strided, with its errors") {
  // x (1, 4, 4, 3, 3), W (2, 2, 2, 2, 2), groups 2, stride (2, 1, 1), pad (1, 0, 1), bias
  const Tensor xt = dzt::filled({1, 4, 4, 3, 3}, 61).astype(float64), wt = dzt::filled({2, 2, 2, 2, 2}, 62).astype(float64);
  const Tensor bt = array(std::vector<double>{0.25, -0.5}, Shape{2});
  const Variable y = F::conv3d(Variable(xt), Variable(wt), Variable(bt), {2, 1, 1}, {1, 0, 1}, 2);
  REQUIRE(y.shape() == Shape{1, 2, 3, 2, 4});  // D: (4 + 2 - 2) / 2 + 1, H: 3 - 2 + 1, W: 3 + 2 - 2 + 1
  const std::vector<double> x = dzt::vals(Variable(xt)), w = dzt::vals(Variable(wt)), got = dzt::vals(y);
  auto X = [&](int c, int d, int h, int ww) -> double {  // zero padding (1, 0, 1)
    d -= 1;
    ww -= 1;
    if (d < 0 || d >= 4 || ww < 0 || ww >= 3) return 0.0;
    return x[static_cast<std::size_t>(((c * 4 + d) * 3 + h) * 3 + ww)];
  };
  double worst = 0;
  for (int oc = 0; oc < 2; ++oc)
    for (int od = 0; od < 3; ++od)
      for (int oh = 0; oh < 2; ++oh)
        for (int ow = 0; ow < 4; ++ow) {
          double want = oc == 0 ? 0.25 : -0.5;
          for (int ic = 0; ic < 2; ++ic)
            for (int kd = 0; kd < 2; ++kd)
              for (int kh = 0; kh < 2; ++kh)
                for (int kw = 0; kw < 2; ++kw)
                  want += X(oc * 2 + ic, od * 2 + kd, oh + kh, ow + kw) *
                          w[static_cast<std::size_t>((((oc * 2 + ic) * 2 + kd) * 2 + kh) * 2 + kw)];
          const double g = got[static_cast<std::size_t>(((oc * 3 + od) * 2 + oh) * 4 + ow)];
          worst = std::max(worst, std::abs(g - want));
        }
  CHECK(worst < 1e-12);
  const Variable x5(xt), w5(wt);
  CHECK(dzt::has(dzt::thrown<ShapeError>([&] { (void)F::conv3d(x5, w5); }), "do not fit groups 1"));
  CHECK(dzt::has(dzt::thrown<ShapeError>([&] { (void)F::conv3d(Variable(zeros({1, 4, 3, 3}, float64)), w5); }),
                 "x must be 5-d (N, C, D, H, W)"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)F::conv3d(x5, w5, Variable(), 0, 0, 2); }),
                 "stride (0, 0, 0) must be at least 1"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { (void)F::conv3d(x5, w5, Variable(), 1, -1, 2); }),
                 "pad (-1, -1, -1) must not be negative"));
  CHECK(dzt::has(dzt::thrown<ShapeError>([&] { (void)F::conv3d(x5, w5, Variable(zeros({3}, float64)), 1, 0, 2); }),
                 "the bias"));
  CHECK(dzt::has(dzt::thrown<DtypeError>([&] { (void)F::conv3d(x5, Variable(dzt::filled({2, 2, 2, 2, 2}, 1)), Variable(), 1, 0, 2); }),
                 "must be of one float dtype"));
}
