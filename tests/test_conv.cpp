// tests/test_conv.cpp - convolution and pooling (DeZero's functions_conv.py; steps 55-57):
// conv2d, conv2d_simple, deconv2d, pooling, pooling_simple, average_pooling, im2col,
// col2im and dezero::Pair.
//
// Reference values come from PyTorch in float64 (tools/make_conv_fixtures.py ->
// tests/data/conv.txt): forward results and the gradients of sum(y * gy). Every body
// runs on the CPU and on each GPU. Also: gradient_check for every function, double
// backprop through a conv weight gradient (DeZero's Conv2DGradW crashed there) and
// through max pooling, DeZero's test cases for conv and pooling, bad input, and
// float32 against float64.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <dezero/dezero.hpp>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dezero/tensor/fused.hpp"  // detail::set_conv_library_path
#include "support/conv_paths.hpp"
#include "support/fixtures.hpp"
#include "support/test_util.hpp"

using namespace dezero;
using dezero::utils::gradient_check;

namespace {

Tensor fx(const std::string& name, Device dev = Device::cpu()) { return dzt::fx("conv.txt", name).to(dev); }
bool has_fx(const std::string& name) {
  const auto& f = dzt::fixture_file("conv.txt");
  return f.arrays.count(name) != 0;
}
std::vector<std::int64_t> ints(const std::string& name) { return fx(name).to_vector<std::int64_t>(); }
bool near(const Variable& v, const Tensor& ref, double tol = 1e-10) {
  return dzt::close(v.data().to_cpu(), ref, tol, tol);
}

using dzt::on_each_conv_path;  // tests/support/conv_paths.hpp
Pair pr(const std::vector<std::int64_t>& a, std::size_t i) { return Pair(int(a[i]), int(a[i + 1])); }

// sum(y * gy) as the loss whose gradients the fixtures hold.
void backward_with(const Variable& y, const Tensor& gy) { F::sum(y * Variable(gy)).backward(); }

// Gradient of f's output with respect to v, with create_graph, v's own grad cleared:
// a function of v that gradient_check can differentiate again. gradient_check's
// numerical pass runs f under no_grad(); the lambdas below switch the graph back on
// (GRAPH_ON) so that their inner backward has a graph to run on.
Variable grad_of(Variable out, Variable v) {
  out.backward(false, true);
  Variable g = v.grad();
  v.cleargrad();
  return g;
}

#define GRAPH_ON auto graph_on = using_config("enable_backprop", true)

// gradient_check of x -> d loss(x) / dx: the second derivative of a scalar loss.
bool second_order_check(const std::function<Variable(const Variable&)>& loss, const Tensor& x) {
  return gradient_check(
      [&](const Variable& a) {
        GRAPH_ON;
        return grad_of(loss(a), a);
      },
      x);
}

}  // namespace

// --- vocabulary ------------------------------------------------------------------------
TEST_CASE("Pair: an int or {h, w}; anything else is a ValueError (DeZero's pair)") {
  Pair a = 3, b = {2, 5};
  CHECK(a.h == 3);
  CHECK(a.w == 3);
  CHECK(b.h == 2);
  CHECK(b.w == 5);
  CHECK(b.str() == "(2, 5)");
  // Pair p = {1, 2, 3} does not compile (tests/compile/misuse.cpp, DEZERO_MISUSE=3).
  CHECK(utils::get_conv_outsize(4, 3, 1, 1) == 4);  // step 55
  CHECK(utils::get_deconv_outsize(5, 10, 5, 5) == 20);
}

// --- conv2d and conv2d_simple against PyTorch -----------------------------------------------
TEST_CASE("conv2d / conv2d_simple: forward and gradients match PyTorch (strides, pads, rectangular, 1x1, bias)") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      for (std::string c : {"c1", "c2", "c3", "c4", "c5"}) {
        CAPTURE(c);
        auto a = ints(c + "_args");
        bool bias = has_fx(c + "_b");
        for (int simple = 0; simple < 2; ++simple) {
          CAPTURE(simple);
          Variable x(fx(c + "_x", dev)), W(fx(c + "_W", dev)), b = bias ? Variable(fx(c + "_b", dev)) : Variable();
          Variable y = simple ? F::conv2d_simple(x, W, b, pr(a, 0), pr(a, 2)) : F::conv2d(x, W, b, pr(a, 0), pr(a, 2));
          CHECK(y.device() == dev);
          CHECK(near(y, fx(c + "_y")));
          backward_with(y, fx(c + "_gy", dev));
          CHECK(near(x.grad(), fx(c + "_gx")));
          CHECK(near(W.grad(), fx(c + "_gW")));
          if (bias) CHECK(near(b.grad(), fx(c + "_gb")));
        }
      }
    });
  });
}

TEST_CASE("deconv2d: forward and gradients match PyTorch's conv_transpose2d (strides, pads, outsize)") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      for (std::string c : {"d1", "d2", "d3", "d4"}) {
        CAPTURE(c);
        auto a = ints(c + "_args");  // stride, pad, outsize
        bool bias = has_fx(c + "_b");
        Variable x(fx(c + "_x", dev)), W(fx(c + "_W", dev)), b = bias ? Variable(fx(c + "_b", dev)) : Variable();
        Variable y = F::deconv2d(x, W, b, pr(a, 0), pr(a, 2), pr(a, 4));
        CHECK(near(y, fx(c + "_y")));
        if (c != "d2") CHECK(near(F::deconv2d(x, W, b, pr(a, 0), pr(a, 2)), fx(c + "_y")));  // the default outsize
        backward_with(y, fx(c + "_gy", dev));
        CHECK(near(x.grad(), fx(c + "_gx")));
        CHECK(near(W.grad(), fx(c + "_gW")));
        if (bias) CHECK(near(b.grad(), fx(c + "_gb")));
      }
    });
  });
}

// --- pooling against PyTorch --------------------------------------------------------------
TEST_CASE("pooling / pooling_simple / average_pooling match PyTorch (overlapping, odd sizes, zero padding)") {
  dzt::on_each_device([](Device dev) {
    for (std::string c : {"p1", "p2", "p3", "p4", "p5"}) {
      CAPTURE(c);
      auto a = ints(c + "_args");  // kernel, stride, pad
      for (int kind = 0; kind < 3; ++kind) {
        CAPTURE(kind);
        std::string r = c + (kind == 2 ? "avg" : "max");
        Variable x(fx(c + "_x", dev));
        Variable y = kind == 0   ? F::pooling(x, pr(a, 0), pr(a, 2), pr(a, 4))
                     : kind == 1 ? F::pooling_simple(x, pr(a, 0), pr(a, 2), pr(a, 4))
                                 : F::average_pooling(x, pr(a, 0), pr(a, 2), pr(a, 4));
        CHECK(y.device() == dev);
        CHECK(near(y, fx(r + "_y")));
        backward_with(y, fx(r + "_gy", dev));
        CHECK(near(x.grad(), fx(r + "_gx")));
      }
    }
  });
}

TEST_CASE("max pooling pads with zeros (DeZero), not -inf: an all-negative window at the border gives 0") {
  dzt::on_each_device([](Device dev) {
    Variable x(array({{-1.0, -2.0}, {-3.0, -4.0}}, float64, dev).reshape({1, 1, 2, 2}));
    Variable y = F::pooling(x, 2, 1, 1);  // (1, 1, 3, 3): all windows but the centre touch the padding
    CHECK(dzt::vals(y) == std::vector<double>{0, 0, 0, 0, -1, 0, 0, 0, 0});
    F::sum(y).backward();
    CHECK(dzt::vals(x.grad()) == std::vector<double>{1, 0, 0, 0});  // the other maxima were padding
  });
}

// --- max pooling and NaN: NumPy's rule (DeZero's max / argmax over im2col) on every path ----------
namespace {

// y and gx (the gradient of sum(y * gy)) of DeZero's Pooling on the host, in double, with
// NumPy's NaN rule: the window's first max (the padding reads 0), a NaN anywhere giving NaN
// and the gradient going to the first NaN (np.argmax's index).
void ref_max_pool_nan(const std::vector<double>& x, const Shape& s, Pair k, Pair st, Pair p,
                      const std::vector<double>& gy, std::vector<double>& y, std::vector<double>& gx) {
  const std::int64_t planes = s[0] * s[1], h = s[2], w = s[3];
  const std::int64_t oh = (h + 2 * p.h - k.h) / st.h + 1, ow = (w + 2 * p.w - k.w) / st.w + 1;
  y.assign(planes * oh * ow, 0.0);
  gx.assign(x.size(), 0.0);
  for (std::int64_t pl = 0; pl < planes; ++pl)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        double best = 0;
        std::int64_t arg = -1;  // an input offset, or -2 for the padding
        bool first = true;
        for (int i = 0; i < k.h; ++i)
          for (int j = 0; j < k.w; ++j) {
            std::int64_t r = oy * st.h - p.h + i, c = ox * st.w - p.w + j;
            bool in = r >= 0 && r < h && c >= 0 && c < w;
            double v = in ? x[(pl * h + r) * w + c] : 0.0;
            if (first || v > best || (std::isnan(v) && !std::isnan(best))) {
              best = v, arg = in ? (pl * h + r) * w + c : -2, first = false;
            }
          }
        std::int64_t o = (pl * oh + oy) * ow + ox;
        y[o] = best;
        if (arg >= 0) gx[arg] += gy[o];
      }
}

// NaN in every position that matters: a window's first, a middle and its last position, and
// a window with two NaN.
Tensor nan_input(DType dt, Device dev) {
  random::seed(21);
  Tensor x = random::randn({1, 2, 6, 6}, float64) * 10.0;  // distinct values: no ties
  std::vector<double> v = dzt::vals(x);
  const double nan = std::nan("");
  for (auto [c, r, q] : {std::array<int, 3>{0, 0, 0}, {0, 2, 3}, {0, 5, 5}, {1, 1, 2}, {1, 1, 3}, {1, 4, 1}})
    v[(c * 6 + r) * 6 + q] = nan;
  return array(v, x.shape(), dt).to(dev);
}

bool same_with_nan(const std::vector<double>& a, const std::vector<double>& b, double tol, std::string& where) {
  if (a.size() != b.size()) {
    where = "sizes differ";
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    bool ok = std::isnan(b[i]) ? std::isnan(a[i]) : std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i]));
    if (!ok) {
      where = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " != " + std::to_string(b[i]);
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("max pooling and NaN: a NaN anywhere in a window gives NaN, its gradient goes to the first NaN") {
  // 2 x 2 / 2 (the host's AVX-512 rows for float32, cuDNN on a GPU), 3 x 3 / 3 (the host's
  // scalar windows, cuDNN), 3 x 3 / 2 pad 1 and 2 x 2 / 2 pad 1 (the padded windows, pool.cu)
  struct Case {
    Pair k, s, p;
  };
  const Case cases[] = {{2, 2, 0}, {3, 3, 0}, {3, 2, 1}, {2, 2, 1}};
  dzt::on_each_device([&](Device dev) {
    on_each_conv_path([&] {
      for (const Case& c : cases)
        for (DType dt : {float64, float32}) {
          CAPTURE(c.k.str());
          CAPTURE(c.s.str());
          CAPTURE(c.p.str());
          CAPTURE(dtype_name(dt));
          const double tol = dt == float64 ? 0.0 : 1e-6;
          Tensor x = nan_input(dt, dev);
          Variable xv(x);
          Variable y = F::pooling(xv, c.k, c.s, c.p);
          Tensor gy = (random::randn(y.shape(), float64) + 5.0).astype(dt).to(dev);
          F::sum(y * Variable(gy)).backward();
          std::vector<double> ry, rgx;
          ref_max_pool_nan(dzt::vals(x), x.shape(), c.k, c.s, c.p, dzt::vals(gy), ry, rgx);
          std::string where;
          CHECK_MESSAGE(same_with_nan(dzt::vals(y), ry, tol, where), "y: " << where);
          CHECK_MESSAGE(same_with_nan(dzt::vals(xv.grad()), rgx, tol, where), "gx: " << where);
          std::size_t nan_windows = 0;
          for (double v : ry) nan_windows += std::isnan(v) ? 1 : 0;
          CHECK(nan_windows >= 5);
          // pooling_simple (F::max over im2col): the same y; its gradient follows F::max's
          // rule (every element equal to the max gets it), so a NaN window's goes nowhere
          Variable xs(x);
          Variable ys = F::pooling_simple(xs, c.k, c.s, c.p);
          CHECK_MESSAGE(same_with_nan(dzt::vals(ys), ry, tol, where), "pooling_simple y: " << where);
          // pooling_simple's gradient follows F::max's rule (every element equal to the max
          // gets it), so a NaN, equal to nothing, gets none; F::pooling's first NaN gets gy
          F::sum(ys * Variable(gy)).backward();
          std::vector<double> hx = dzt::vals(x), gs = dzt::vals(xs.grad()), gp = dzt::vals(xv.grad());
          bool some_nan_got_gy = false;
          for (std::size_t i = 0; i < hx.size(); ++i)
            if (std::isnan(hx[i])) {
              CHECK(gs[i] == 0.0);
              some_nan_got_gy = some_nan_got_gy || gp[i] != 0.0;
            }
          CHECK(some_nan_got_gy);
        }
    });
  });
}

TEST_CASE("max pooling and infinities: +inf is a window's max, -inf loses, no NaN appears") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      const double inf = std::numeric_limits<double>::infinity();
      for (DType dt : {float64, float32}) {
        CAPTURE(dtype_name(dt));
        // 2 x 2 / 2 and 3 x 3 / 3 windows over (1, 1, 6, 6): +inf at (1, 1) and -inf at (0, 3)
        std::vector<double> v(36);
        for (int i = 0; i < 36; ++i) v[i] = i % 7 - 3.0;
        v[1 * 6 + 1] = inf, v[0 * 6 + 3] = -inf;
        for (int k : {2, 3}) {
          CAPTURE(k);
          Variable x(array(v, Shape{1, 1, 6, 6}, dt).to(dev));
          Variable y = F::pooling(x, k, k, 0);
          F::sum(y).backward();
          std::vector<double> hy = dzt::vals(y), g = dzt::vals(x.grad()), ry, rg;
          ref_max_pool_nan(v, Shape{1, 1, 6, 6}, k, k, 0, std::vector<double>(hy.size(), 1.0), ry, rg);
          CHECK(hy == ry);
          CHECK(g == rg);
          CHECK(hy[0] == inf);
          CHECK(g[1 * 6 + 1] == 1.0);
        }
      }
    });
  });
}

TEST_CASE("max pooling and NaN: the double backward reads the first NaN back (Pooling2DWithIndexes)") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      for (int pad : {0, 1}) {
        CAPTURE(pad);
        Tensor x = nan_input(float64, dev);
        // loss = sum(y^2 gy): gx = P^T(2 y gy), NaN at each NaN window's first NaN; then
        // d/dx sum(gx * r) = P^T(2 gy * P r) is finite: r gathered at the indexes
        Variable xv(x);
        Variable y = F::pooling(xv, 3, 3, pad);
        Tensor gy = (random::randn(y.shape(), float64) + 5.0).to(dev);
        Tensor r = random::randn(x.shape(), float64).to(dev);
        F::sum(y * y * Variable(gy)).backward(false, true);
        Variable gx = xv.grad();
        xv.cleargrad();
        F::sum(gx * Variable(r)).backward();
        std::vector<double> ry, unused, want_gx, want_ggx;
        std::vector<double> hx = dzt::vals(x), hgy = dzt::vals(gy), hr = dzt::vals(r);
        ref_max_pool_nan(hx, x.shape(), 3, 3, pad, hgy, ry, unused);
        std::vector<double> t(ry.size());
        for (std::size_t i = 0; i < ry.size(); ++i) t[i] = 2 * ry[i] * hgy[i];
        ref_max_pool_nan(hx, x.shape(), 3, 3, pad, t, ry, want_gx);
        // P r: r at each window's index (0 on the padding), from the reference's routing
        std::vector<double> pr(ry.size(), 0.0);
        for (std::size_t o = 0; o < ry.size(); ++o) {  // a unit gradient per window finds its index
          std::vector<double> e(ry.size(), 0.0), yy, gg;
          e[o] = 1.0;
          ref_max_pool_nan(hx, x.shape(), 3, 3, pad, e, yy, gg);
          for (std::size_t i = 0; i < gg.size(); ++i)
            if (gg[i] != 0) pr[o] = hr[i];
        }
        for (std::size_t i = 0; i < ry.size(); ++i) t[i] = 2 * hgy[i] * pr[i];
        ref_max_pool_nan(hx, x.shape(), 3, 3, pad, t, ry, want_ggx);
        std::string where;
        // gx: NaN exactly at the NaN windows' first NaN (2 y gy with y NaN), finite elsewhere
        std::vector<double> got = dzt::vals(gx);
        for (std::size_t i = 0; i < got.size(); ++i) {
          CAPTURE(i);
          CHECK(std::isnan(got[i]) == std::isnan(want_gx[i]));
        }
        CHECK_MESSAGE(same_with_nan(dzt::vals(xv.grad()), want_ggx, 1e-12, where), "ggx: " << where);
      }
    });
  });
}

// --- im2col / col2im against PyTorch's unfold / fold ------------------------------------------------
TEST_CASE("im2col / col2im match unfold / fold, both layouts") {
  dzt::on_each_device([](Device dev) {
    for (std::string c : {"i1", "i2", "i3"}) {
      CAPTURE(c);
      auto a = ints(c + "_args");
      Tensor x = fx(c + "_x", dev);
      Tensor col = fx(c + "_col");
      const Shape& cs = col.shape();
      Variable y = F::im2col(x, pr(a, 0), pr(a, 2), pr(a, 4), false);
      CHECK(near(y, col, 1e-14));
      Variable m = F::im2col(x, pr(a, 0), pr(a, 2), pr(a, 4), true);
      Tensor colm = col.transpose({0, 4, 5, 1, 2, 3}).reshape({cs[0] * cs[4] * cs[5], cs[1] * cs[2] * cs[3]});
      CHECK(near(m, colm, 1e-14));
      Tensor gcol = fx(c + "_gcol", dev);
      CHECK(near(F::col2im(gcol, x.shape(), pr(a, 0), pr(a, 2), pr(a, 4), false), fx(c + "_img")));
      Tensor gm = gcol.transpose({0, 4, 5, 1, 2, 3}).reshape({cs[0] * cs[4] * cs[5], cs[1] * cs[2] * cs[3]});
      CHECK(near(F::col2im(gm, x.shape(), pr(a, 0), pr(a, 2), pr(a, 4), true), fx(c + "_img")));
    }
  });
}

TEST_CASE("im2col: DeZero's test_forward1 and the step 57 shapes") {
  dzt::on_each_device([](Device dev) {
    Variable x(arange(9.0, float64, dev).reshape({1, 1, 3, 3}));
    Variable y = F::im2col(x, 3, 3, 0, true);
    CHECK(y.shape() == Shape{1, 9});
    CHECK(dzt::vals(y) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8});
    CHECK(F::im2col(x, 3, 3, 0, false).shape() == Shape{1, 1, 3, 3, 1, 1});
    CHECK(F::im2col(random::rand({1, 3, 7, 7}, float32, dev), 5, 1, 0).shape() == Shape{9, 75});
    CHECK(F::im2col(random::rand({10, 3, 7, 7}, float32, dev), 5, 1, 0).shape() == Shape{90, 75});
  });
}

// --- a small CNN end to end ---------------------------------------------------------------------
namespace {
struct Cnn {
  Variable W1, b1, W2, b2, W3, b3;
  explicit Cnn(Device dev, DType dt)
      : W1(fx("cnn_W1", dev).astype(dt)),
        b1(fx("cnn_b1", dev).astype(dt)),
        W2(fx("cnn_W2", dev).astype(dt)),
        b2(fx("cnn_b2", dev).astype(dt)),
        W3(fx("cnn_W3", dev).astype(dt)),
        b3(fx("cnn_b3", dev).astype(dt)) {}
  Variable loss(const Variable& x, const Variable& t) const {
    Variable h = F::pooling(F::relu(F::conv2d(x, W1, b1, 1, 1)), 2, 2);
    h = F::average_pooling(F::relu(F::conv2d(h, W2, b2, 1, 1)), 2, 2);
    Variable logits = F::linear(F::reshape(h, Shape{x.shape()[0], -1}), W3, b3);
    return F::softmax_cross_entropy(logits, t);
  }
};
}  // namespace

TEST_CASE("a small CNN (conv, relu, max pool, conv, relu, average pool, linear) matches PyTorch end to end") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      Cnn net(dev, float64);
      Variable loss = net.loss(fx("cnn_x", dev), fx("cnn_t", dev));
      CHECK(near(loss, fx("cnn_loss")));
      loss.backward();
      CHECK(near(net.W1.grad(), fx("cnn_gW1")));
      CHECK(near(net.b1.grad(), fx("cnn_gb1")));
      CHECK(near(net.W2.grad(), fx("cnn_gW2")));
      CHECK(near(net.b2.grad(), fx("cnn_gb2")));
      CHECK(near(net.W3.grad(), fx("cnn_gW3")));
      CHECK(near(net.b3.grad(), fx("cnn_gb3")));
    });
  });
}

TEST_CASE("float32 agrees with float64 (the CNN, and a conv large enough for the threaded SGEMM path)") {
  on_each_conv_path([] {
    Cnn n32(Device::cpu(), float32), n64(Device::cpu(), float64);
    Tensor x = fx("cnn_x"), t = fx("cnn_t");
    Variable l32 = n32.loss(x.astype(float32), t), l64 = n64.loss(x, t);
    CHECK(l32.dtype() == float32);
    CHECK(dzt::allclose(l32.data().astype(float64), l64.data(), 1e-5, 1e-6));
    l32.backward();
    l64.backward();
    CHECK(n32.W1.grad().dtype() == float32);
    CHECK(dzt::allclose(n32.W1.grad().data().astype(float64), n64.W1.grad().data(), 1e-4, 1e-5));
    CHECK(dzt::allclose(n32.W2.grad().data().astype(float64), n64.W2.grad().data(), 1e-4, 1e-5));

    random::seed(3);  // 5 images: two threads split them 2 + 3; oc = 32 takes the transposed products
    Tensor xb = random::randn({5, 16, 14, 14}, float64), wb = random::randn({32, 16, 3, 3}, float64) * 0.1,
           bb = random::randn({32}, float64), gy = random::randn({5, 32, 14, 14}, float64);
    Variable X64(xb), W64(wb), X32(xb.astype(float32)), W32(wb.astype(float32));
    Variable y64 = F::conv2d(X64, W64, bb, 1, 1), y32 = F::conv2d(X32, W32, bb.astype(float32), 1, 1);
    CHECK(dzt::allclose(y32.data().astype(float64), y64.data(), 1e-4, 1e-4));
    backward_with(y64, gy);
    backward_with(y32, gy.astype(float32));
    CHECK(dzt::allclose(X32.grad().data().astype(float64), X64.grad().data(), 1e-4, 1e-4));
    CHECK(dzt::allclose(W32.grad().data().astype(float64), W64.grad().data(), 1e-4, 1e-3));
  });
}

// --- gradient_check for every function -----------------------------------------------------------
TEST_CASE("gradient_check: conv2d, conv2d_simple, deconv2d with respect to x, W and b") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      random::seed(0);
      Tensor x = random::randn({2, 3, 5, 4}, float64, dev), W = random::randn({2, 3, 3, 2}, float64, dev),
             b = random::randn({2}, float64, dev);
      for (int simple = 0; simple < 2; ++simple) {
        auto conv = [simple](const Variable& a, const Variable& w, const Variable& c) {
          return simple ? F::conv2d_simple(a, w, c, {2, 1}, {1, 2}) : F::conv2d(a, w, c, {2, 1}, {1, 2});
        };
        CHECK(gradient_check([&](const Variable& v) { return conv(v, W, b); }, x));
        CHECK(gradient_check([&](const Variable& v) { return conv(x, v, b); }, W));
        CHECK(gradient_check([&](const Variable& v) { return conv(x, W, v); }, b));
      }
      Tensor xd = random::randn({2, 2, 3, 4}, float64, dev), Wd = random::randn({2, 3, 3, 3}, float64, dev),
             bd = random::randn({3}, float64, dev);
      auto de = [](const Variable& a, const Variable& w, const Variable& c) {
        return F::deconv2d(a, w, c, 2, {1, 0}, Pair{6, 10});
      };
      CHECK(gradient_check([&](const Variable& v) { return de(v, Wd, bd); }, xd));
      CHECK(gradient_check([&](const Variable& v) { return de(xd, v, bd); }, Wd));
      CHECK(gradient_check([&](const Variable& v) { return de(xd, Wd, v); }, bd));
    });
  });
}

TEST_CASE("gradient_check: pooling, pooling_simple, average_pooling, im2col, col2im") {
  dzt::on_each_device([](Device dev) {
    random::seed(1);
    Tensor x = random::randn({2, 2, 5, 6}, float64, dev) * 100.0;  // distinct maxima under the 1e-4 steps
    CHECK(gradient_check([](const Variable& v) { return F::pooling(v, 3, 2, 1); }, x));
    CHECK(gradient_check([](const Variable& v) { return F::pooling_simple(v, {2, 3}, 1, 0); }, x));
    CHECK(gradient_check([](const Variable& v) { return F::average_pooling(v, 3, {1, 2}, 1); }, x));
    Tensor s = random::randn({1, 2, 4, 5}, float64, dev);
    for (bool m : {false, true}) {
      CHECK(gradient_check([m](const Variable& v) { return F::im2col(v, {2, 3}, 1, 1, m); }, s));
      Tensor col = F::im2col(s, {2, 3}, 1, 1, m).data();
      CHECK(gradient_check(
          [m](const Variable& v) {
            return F::col2im(v, Shape{1, 2, 4, 5}, {2, 3}, 1, 1, m);
          },
          random::randn(col.shape(), float64, dev)));
    }
  });
}

// --- double backprop ---------------------------------------------------------------------------
TEST_CASE("double backprop through a conv WEIGHT gradient (DeZero's Conv2DGradW crashed) and through x.grad") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      random::seed(2);
      Tensor x = random::randn({2, 2, 5, 5}, float64, dev), W = random::randn({3, 2, 3, 3}, float64, dev);
      // gW = d sum(conv(x, W)^3) / dW is a function of W and x; differentiate it again.
      auto loss = [](const Variable& a, const Variable& w) {
        Variable y = F::conv2d(a, w, Variable(), 2, 1);
        return F::sum(y * y * y);
      };
      CHECK(gradient_check(
          [&](const Variable& w) {
            GRAPH_ON;
            return grad_of(loss(Variable(x), w), w);
          },
          W));
      CHECK(gradient_check(
          [&](const Variable& a) {
            GRAPH_ON;
            Variable w(W);
            Variable g = grad_of(loss(a, w), w);
            Variable av = a;
            av.cleargrad();
            return g;
          },
          x));
      CHECK(second_order_check([&](const Variable& a) { return loss(a, Variable(W)); }, x));
      // deconv2d's weight gradient is a Conv2DGradW too
      Tensor Wd = random::randn({2, 3, 3, 3}, float64, dev);
      CHECK(gradient_check(
          [&](const Variable& w) {
            GRAPH_ON;
            Variable y = F::deconv2d(Variable(x), w, Variable(), 1, 1);
            return grad_of(F::sum(y * y * y), w);
          },
          Wd));
      // an explicit second derivative of a weight: d/dW sum(gW) with gW from create_graph
      Variable Wv(W);
      Variable L = loss(Variable(x), Wv);
      L.backward(false, true);
      Variable gW = Wv.grad();
      Wv.cleargrad();
      F::sum(gW).backward();
      CHECK(Wv.has_grad());
      CHECK(Wv.grad().shape() == W.shape());
    });
  });
}

TEST_CASE("double backprop through max pooling on every device (Pooling2DWithIndexes), and a third order") {
  // pad 1 (the indexed kernels everywhere) and pad 0 (cuDNN's pooling on a GPU, whose
  // backward has no indexes: the double backward makes them), on both paths
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      for (int pad : {1, 0}) {
        CAPTURE(pad);
        random::seed(4);
        Tensor x = random::randn({2, 2, 6, 5}, float64, dev) * 10.0;
        auto loss = [pad](const Variable& a) {
          Variable y = F::pooling(a, 3, 2, pad);
          return F::sum(y * y * y);
        };
        CHECK(second_order_check(loss, x));
        // third order: d^3/dx^3 sum(y^3) = 6 at each window's max (counted once per window)
        Variable a(x);
        Variable g1 = grad_of(loss(a), a);
        Variable g2 = grad_of(F::sum(g1), a);
        F::sum(g2).backward();
        REQUIRE(a.has_grad());
        CHECK(a.grad().device() == dev);
        Variable b(x);
        F::sum(F::pooling(b, 3, 2, pad)).backward();
        CHECK(dzt::allclose(a.grad().data(), b.grad().data() * 6.0, 1e-12, 1e-12));
      }
    });
  });
}

TEST_CASE("double backprop through average pooling (AveragePooling and AveragePoolingGrad are adjoints)") {
  dzt::on_each_device([](Device dev) {
    random::seed(5);
    Tensor x = random::randn({2, 3, 7, 6}, float64, dev);
    for (int pad : {0, 1, 2}) {  // pad 2 > kernel 2 - 1: windows wholly in the padding
      CAPTURE(pad);
      auto loss = [pad](const Variable& a) {
        Variable y = F::average_pooling(a, 2, {2, 1}, pad);
        return F::sum(y * y * y);
      };
      CHECK(second_order_check(loss, x));
      // the backward is the adjoint: <A 1, gy> = <1, A^T gy>
      Variable a(x);
      Variable gy(random::randn(F::average_pooling(a, 2, {2, 1}, pad).shape(), float64, dev));
      Variable ones_like_x(ones(x.shape(), float64, dev));
      CHECK(dzt::allclose(F::sum(F::average_pooling(ones_like_x, 2, {2, 1}, pad) * gy).data(),
                          F::sum(ones_like_x * grad_of(F::sum(F::average_pooling(a, 2, {2, 1}, pad) * gy), a)).data(),
                          1e-12, 1e-12));
    }
  });
}

// --- DeZero's test cases (dezero-testcases.md sections 4, 5, 8, 13) ------------------------------------
TEST_CASE("DeZero test_conv2d / test_deconv2d / test_pooling: shapes, conv2d == conv2d_simple, gradients") {
  dzt::on_each_device([](Device dev) {
    random::seed(5);
    Tensor x = random::randn({1, 5, 15, 15}, float32, dev), W = random::randn({8, 5, 3, 3}, float32, dev);
    Variable y1 = F::conv2d(x, W, Variable(), 1, 1);
    CHECK(y1.shape() == Shape{1, 8, 15, 15});
    CHECK(dzt::allclose(y1.data(), F::conv2d_simple(x, W, Variable(), 1, 1).data(), 1e-5, 1e-5));
    Variable y2 = F::conv2d(x, W, Variable(), {3, 1}, {2, 1});
    CHECK(y2.shape() == Shape{1, 8, 6, 15});
    CHECK(dzt::allclose(y2.data(), F::conv2d_simple(x, W, Variable(), {3, 1}, {2, 1}).data(), 1e-5, 1e-5));
    Tensor x3 = random::randn({1, 5, 20, 15}, float32, dev), W3 = random::randn({3, 5, 5, 3}, float32, dev),
           b3 = random::randn({3}, float32, dev);
    CHECK(F::conv2d(x3, W3, Variable(), 1, 3).shape() == Shape{1, 3, 22, 19});
    CHECK(dzt::allclose(F::conv2d(x3, W3, b3, 1, 3).data(), F::conv2d_simple(x3, W3, b3, 1, 3).data(), 1e-5, 1e-5));
    Tensor x64 = x3.astype(float64), W64 = W3.astype(float64), b64 = b3.astype(float64);
    CHECK(gradient_check([&](const Variable& v) { return F::conv2d(v, W64, b64, 1, 3); }, x64));
    CHECK(gradient_check([&](const Variable& v) { return F::conv2d(x64, W64, v, 1, 3); }, b64));
    CHECK(gradient_check([&](const Variable& v) { return F::conv2d(x64, v, b64, 1, 3); }, W64));

    Tensor xd = random::rand({10, 1, 5, 10}, float32, dev), Wd = random::rand({1, 3, 10, 10}, float32, dev);
    CHECK(F::deconv2d(xd, Wd, random::rand({3}, float32, dev), 5, 5).shape() == Shape{10, 3, 20, 45});

    Tensor p16 = random::randn({1, 5, 16, 16}, float32, dev), p15 = random::randn({1, 5, 15, 15}, float32, dev);
    CHECK(F::pooling(p16, 2, 2).shape() == Shape{1, 5, 8, 8});
    CHECK(F::pooling(p15, 2, 2).shape() == Shape{1, 5, 7, 7});
    CHECK(dzt::allclose(F::pooling(p15, 2, 2).data(), F::pooling_simple(p15, 2, 2).data(), 0, 0));
    CHECK(F::average_pooling(p15, 2, 2).shape() == Shape{1, 5, 7, 7});
    Tensor g = p16.astype(float64);
    CHECK(gradient_check([](const Variable& v) { return F::pooling_simple(v, 2, 2); }, g * 100.0));
    CHECK(gradient_check([](const Variable& v) { return F::pooling(v, 2, 2); }, g * 1000.0));
    CHECK(gradient_check([](const Variable& v) { return F::average_pooling(v, 2, 2); }, g * 1000.0));
  });
}

// --- bad input: a dezero::Error naming the function, the shapes and a hint, on every device -----------
TEST_CASE("conv / pooling errors name the function, the shapes and a hint") {
  dzt::on_each_device([](Device dev) {
    Tensor x = zeros({2, 3, 5, 5}, float32, dev), W = zeros({4, 3, 3, 3}, float32, dev);
    auto check_msg = [](const std::string& m, std::initializer_list<const char*> parts) {
      CAPTURE(m);
      for (const char* p : parts) CHECK(dzt::has(m, p));
      CHECK(dzt::has(m, "hint"));
    };
    // channel mismatch
    Tensor W2 = zeros({4, 2, 3, 3}, float32, dev);
    check_msg(dzt::thrown<ShapeError>([&] { F::conv2d(x, W2); }), {"conv2d", "(2, 3, 5, 5)", "(4, 2, 3, 3)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::conv2d_simple(x, W2); }), {"conv2d_simple", "(4, 2, 3, 3)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::deconv2d(x, W); }), {"deconv2d", "(2, 3, 5, 5)", "(4, 3, 3, 3)"});
    // kernel larger than the padded input
    Tensor big = zeros({4, 3, 8, 3}, float32, dev);
    check_msg(dzt::thrown<ShapeError>([&] { F::conv2d(x, big, Variable(), 1, 1); }),
              {"conv2d", "(8, 3)", "larger than the padded input (7, 7)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::pooling(x, 6); }), {"pooling", "(6, 6)", "(2, 3, 5, 5)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::average_pooling(x, {2, 9}); }), {"average_pooling", "(2, 9)"});
    // non-4-d input, wrong weight rank
    Tensor x3 = zeros({3, 5, 5}, float32, dev);
    check_msg(dzt::thrown<ShapeError>([&] { F::conv2d(x3, W); }), {"conv2d", "x must be 4-d", "(3, 5, 5)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::pooling(x3, 2); }), {"pooling", "(3, 5, 5)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::pooling_simple(x3, 2); }), {"pooling_simple", "(3, 5, 5)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::im2col(x3, 2); }), {"im2col", "(3, 5, 5)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::deconv2d(x3, W); }), {"deconv2d", "(3, 5, 5)"});
    Tensor W3 = zeros({4, 27}, float32, dev);
    check_msg(dzt::thrown<ShapeError>([&] { F::conv2d(x, W3); }), {"conv2d", "W must be 4-d", "(4, 27)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::conv2d_simple(x, W3); }), {"conv2d_simple", "(4, 27)"});
    // bad Pair values, bad bias, mixed dtypes
    check_msg(dzt::thrown<ValueError>([&] { F::conv2d(x, W, Variable(), 0); }), {"conv2d", "stride", "(0, 0)"});
    check_msg(dzt::thrown<ValueError>([&] { F::pooling(x, 2, 1, -1); }), {"pooling", "pad", "(-1, -1)"});
    check_msg(dzt::thrown<ValueError>([&] { F::pooling(x, {0, 2}); }), {"pooling", "kernel", "(0, 2)"});
    check_msg(dzt::thrown<ShapeError>([&] { F::conv2d(x, W, zeros({3}, float32, dev)); }), {"conv2d", "(4,)", "(3,)"});
    check_msg(dzt::thrown<DtypeError>([&] {
                F::conv2d(x, zeros({4, 3, 3, 3}, float64, dev));
              }),
              {"conv2d", "float32", "float64"});
    check_msg(dzt::thrown<DtypeError>([&] { F::pooling(zeros({1, 1, 4, 4}, int64, dev), 2); }), {"pooling", "int64"});
    // outsize inconsistent with the input
    Tensor xd = zeros({2, 3, 4, 5}, float32, dev), Wd = zeros({3, 2, 3, 3}, float32, dev);
    CHECK(F::deconv2d(xd, Wd, Variable(), 2, 1, Pair{8, 10}).shape() == Shape{2, 2, 8, 10});
    check_msg(dzt::thrown<ShapeError>([&] {
                F::deconv2d(xd, Wd, Variable(), 2, 1, Pair{12, 10});
              }),
              {"deconv2d", "outsize (12, 10)", "(2, 3, 4, 5)", "(7, 9)"});
    // col2im with a col that does not fit
    check_msg(dzt::thrown<ShapeError>([&] {
                F::col2im(zeros({10, 27}, float32, dev), Shape{2, 3, 5, 5}, 3);
              }),
              {"col2im", "(10, 27)", "(18, 27)"});
  });
}

// --- random geometries: the two conv paths, conv2d_simple, pooling_simple agree ------------------------
TEST_CASE("random geometries: library path == im2col + GEMM path == conv2d_simple; pooling == pooling_simple") {
  dzt::on_each_device([](Device dev) {
    random::seed(7);
    for (int it = 0; it < 25; ++it) {
      auto r = [](int lo, int hi) { return int(random::randint(lo, hi + 1, {1}).item<std::int64_t>()); };
      int n = r(1, 3), c = r(1, 4), oc = r(1, 5), h = r(1, 9), w = r(1, 9);
      Pair k(r(1, 4), r(1, 4)), s(r(1, 3), r(1, 3)), p(r(0, 2), r(0, 2));
      if (h + 2 * p.h < k.h || w + 2 * p.w < k.w) continue;
      CAPTURE(it);
      Tensor x = random::randn({n, c, h, w}, float64, dev), W = random::randn({oc, c, k.h, k.w}, float64, dev),
             b = random::randn({oc}, float64, dev);
      Variable y[3], gx[3], gW[3], gb[3];
      for (int path = 0; path < 3; ++path) {
        detail::set_conv_library_path(path != 1);
        Variable xv(x), Wv(W), bv(b);
        y[path] = path == 2 ? F::conv2d_simple(xv, Wv, bv, s, p) : F::conv2d(xv, Wv, bv, s, p);
        F::sum(y[path] * y[path]).backward();
        gx[path] = xv.grad(), gW[path] = Wv.grad(), gb[path] = bv.grad();
      }
      detail::set_conv_library_path(true);
      for (int path = 1; path < 3; ++path) {
        CHECK(dzt::allclose(y[path].data(), y[0].data(), 1e-10, 1e-10));
        CHECK(dzt::allclose(gx[path].data(), gx[0].data(), 1e-10, 1e-10));
        CHECK(dzt::allclose(gW[path].data(), gW[0].data(), 1e-10, 1e-10));
        CHECK(dzt::allclose(gb[path].data(), gb[0].data(), 1e-10, 1e-10));
      }
      // deconv2d of y back to x's size, both paths
      Tensor Wd = random::randn({oc, c, k.h, k.w}, float64, dev);
      Variable d0, d1;
      for (int path = 0; path < 2; ++path) {
        detail::set_conv_library_path(path == 0);
        (path ? d1 : d0) = F::deconv2d(y[0].data(), Wd, Variable(), s, p, Pair(h, w));
      }
      detail::set_conv_library_path(true);
      CHECK(d0.shape() == Shape{n, c, h, w});
      CHECK(dzt::allclose(d1.data(), d0.data(), 1e-10, 1e-10));
      // float32 (the host's vector im2col / col2im rows) against float64
      Variable x32(x.astype(float32));
      Variable y32 = F::conv2d(x32, W.astype(float32), b.astype(float32), s, p);
      F::sum(y32 * y32).backward();
      CHECK(dzt::allclose(y32.data().astype(float64), y[0].data(), 1e-4, 1e-4));
      CHECK(dzt::allclose(x32.grad().data().astype(float64), gx[0].data(), 1e-3, 1e-3));
      Tensor col = F::im2col(x, k, s, p, false).data();
      CHECK(dzt::allclose(F::im2col(x.astype(float32), k, s, p, false).data().astype(float64), col, 1e-6, 1e-6));
      CHECK(dzt::allclose(F::col2im(col.astype(float32), x.shape(), k, s, p, false).data().astype(float64),
                          F::col2im(col, x.shape(), k, s, p, false).data(), 1e-5, 1e-5));
      // max pooling: the Function on both paths (the library's, cuDNN's on a GPU when
      // unpadded, and the indexed kernels) and the composite (distinct values: no ties)
      Tensor xp = random::randn({n, c, h, w}, float64, dev);
      Variable bsim(xp);
      Variable yb = F::pooling_simple(bsim, k, s, p);
      F::sum(yb * yb).backward();
      for (bool lib : {true, false}) {
        CAPTURE(lib);
        detail::set_conv_library_path(lib);
        Variable a(xp);
        Variable ya = F::pooling(a, k, s, p);
        CHECK(dzt::allclose(ya.data(), yb.data(), 0, 0));
        F::sum(ya * ya).backward();
        CHECK(dzt::allclose(a.grad().data(), bsim.grad().data(), 1e-12, 1e-12));
      }
      detail::set_conv_library_path(true);
      // average pooling: the Function on both paths (host loops; on a GPU cuDNN where it
      // takes the case, and pool.cu's kernels with the library path off) against DeZero's
      // definition, the mean of im2col (windows wholly in the padding too)
      Variable cv(xp);
      Variable ycv = F::mean(F::im2col(cv, k, s, p, false), Axes{2, 3});
      F::sum(ycv * ycv).backward();
      for (bool lib : {true, false}) {
        CAPTURE(lib);
        detail::set_conv_library_path(lib);
        Variable av(xp);
        Variable yav = F::average_pooling(av, k, s, p);
        CHECK(dzt::allclose(yav.data(), ycv.data(), 1e-12, 1e-12));
        F::sum(yav * yav).backward();
        CHECK(dzt::allclose(av.grad().data(), cv.grad().data(), 1e-12, 1e-12));
      }
      detail::set_conv_library_path(true);
      Variable y32a = F::average_pooling(Variable(xp.astype(float32)), k, s, p);
      CHECK(y32a.dtype() == float32);
      CHECK(dzt::allclose(y32a.data().astype(float64), ycv.data(), 1e-5, 1e-5));
    }
  });
}

TEST_CASE("average pooling == DeZero's mean of im2col: tiling windows (odd sizes), 2 x 2 rows, global, float32") {
  dzt::on_each_device([](Device dev) {
    random::seed(8);
    struct Case {
      Shape x;
      Pair k, s, p;
    };
    const Case cases[] = {
        {{2, 3, 8, 8}, 2, 2, 0},          {{1, 2, 7, 9}, 2, 2, 0},     {{2, 2, 8, 10}, 3, 3, 0},
        {{1, 3, 7, 11}, {2, 3}, {2, 3}, 0}, {{2, 4, 7, 7}, 7, 1, 0},     {{1, 2, 9, 8}, 2, {1, 2}, 0},
        {{1, 2, 6, 6}, 2, 2, 1},          {{2, 2, 5, 7}, {3, 1}, 1, 0}};
    for (const Case& c : cases) {
      CAPTURE(c.x.str());
      CAPTURE(c.k.str());
      CAPTURE(c.s.str());
      CAPTURE(c.p.str());
      Tensor x = random::randn(c.x, float64, dev);
      for (DType dt : {float64, float32}) {
        CAPTURE(dtype_name(dt));
        double tol = dt == float64 ? 1e-12 : 1e-5;
        Variable a(x.astype(dt)), b(x.astype(dt));
        Variable ya = F::average_pooling(a, c.k, c.s, c.p);
        Variable yb = F::mean(F::im2col(b, c.k, c.s, c.p, false), Axes{2, 3});
        CHECK(ya.shape() == yb.shape());
        CHECK(dzt::allclose(ya.data().astype(float64), yb.data().astype(float64), tol, tol));
        Tensor gy = random::randn(ya.shape(), float64, dev).astype(dt);
        F::sum(ya * Variable(gy)).backward();
        F::sum(yb * Variable(gy)).backward();
        CHECK(dzt::allclose(a.grad().data().astype(float64), b.grad().data().astype(float64), tol, tol));
      }
    }
  });
}

TEST_CASE("max pooling 2 x 2 / 2: float32 (the host's vector path) == float64, ties to the first max, odd sizes") {
  dzt::on_each_device([](Device dev) {
    random::seed(8);
    // small integers: exact in both dtypes, and many ties, which must go to the first max
    for (Shape shape : {Shape{2, 3, 10, 41}, Shape{1, 2, 7, 33}, Shape{3, 1, 4, 2}}) {
      CAPTURE(shape.str());
      Tensor x = random::randint(-5, 5, shape, int64, dev).astype(float64);
      Variable a(x), b(x.astype(float32));
      Variable ya = F::pooling(a, 2, 2), yb = F::pooling(b, 2, 2);
      CHECK(yb.dtype() == float32);
      CHECK(dzt::allclose(yb.data().astype(float64), ya.data(), 0, 0));
      Tensor gy = random::randint(1, 9, ya.shape(), int64, dev).astype(float64);
      F::sum(ya * Variable(gy)).backward();
      F::sum(yb * Variable(gy.astype(float32))).backward();
      CHECK(dzt::allclose(b.grad().data().astype(float64), a.grad().data(), 0, 0));
      CHECK(dzt::allclose(F::pooling_simple(x, 2, 2).data(), ya.data(), 0, 0));
    }
  });
}
