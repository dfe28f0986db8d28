// tests/test_conv_groups.cpp - grouped and depthwise convolutions: F::conv2d and F::deconv2d
// with `groups`, L::Conv2d / L::Deconv2d with ConvOptions::groups.
//
// The reference is the definition: a convolution with groups G is G ordinary (groups = 1)
// convolutions of the channel slices, x[:, j C/G : (j+1) C/G] with W[j OC/G : (j+1) OC/G]
// (deconv2d: W[j C/G : (j+1) C/G], the result's channels j OC/G ...), computed here with
// F::get_item and the groups = 1 functions that test_conv.cpp checks against PyTorch. Values
// and the gradients of sum(y * gy) (x, W, b) are compared in float32 and float64, depthwise
// (G = C, with a channel multiplier too) and grouped (G = 2, 3), with strides and pads, on
// the backend's library path (oneDNN / the host's im2col products / cuDNN) and on
// tensor/conv.cpp's batched im2col + GEMM; then gradient_check of x, W and b, second
// derivatives (the weight gradient differentiated again), the layers and the errors.
// Every body runs on the CPU and on each GPU ("skipped: no CUDA device" without one).
#include <doctest/doctest.h>

#include <cmath>
#include <dezero/dezero.hpp>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "dezero/tensor/fused.hpp"  // detail::set_conv_library_path
#include "support/conv_paths.hpp"
#include "support/test_util.hpp"

using namespace dezero;
using dezero::utils::gradient_check;

namespace {

using i64 = std::int64_t;

using dzt::on_each_conv_path;  // tests/support/conv_paths.hpp

// Channels [j n, (j + 1) n) of axis 0 or 1.
Variable chans(const Variable& v, int axis, i64 j, i64 n) {
  if (axis == 0) return F::get_item(v, Indices{Slice(j * n, (j + 1) * n)});
  return F::get_item(v, Indices{Slice(), Slice(j * n, (j + 1) * n)});
}

bool close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  std::string where;
  double scale = 1;
  const std::vector<double> w = dzt::vals(want.to_cpu());
  for (double e : w) scale = std::max(scale, std::abs(e));
  bool ok = got.shape() == want.shape() && dzt::close_vectors(dzt::vals(got.to_cpu()), w, tol, tol * scale, where);
  if (got.shape() != want.shape()) where = "shape " + got.shape().str() + " != " + want.shape().str();
  CHECK_MESSAGE(ok, what << ": " << where);
  return ok;
}

struct Geo {
  i64 n, c, oc, g, h, w;
  Pair k, s, p;
  bool bias;
};

// One grouped conv2d against its groups, forward and the gradients of sum(y * gy).
void check_conv(const Geo& q, DType dt, Device dev, std::uint64_t seed) {
  CAPTURE(q.c);
  CAPTURE(q.oc);
  CAPTURE(q.g);
  CAPTURE(dt);
  const double tol = dt == float64 ? 1e-10 : 2e-5;
  Tensor x = dzt::filled({q.n, q.c, q.h, q.w}, seed).astype(dt).to(dev);
  Tensor W = dzt::filled({q.oc, q.c / q.g, q.k.h, q.k.w}, seed + 1).astype(dt).to(dev);
  Tensor b = dzt::filled({q.oc}, seed + 2).astype(dt).to(dev);
  Variable xv(x), Wv(W), bv(b);
  Variable y = F::conv2d(xv, Wv, q.bias ? bv : Variable(), q.s, q.p, q.g);
  Tensor gy = dzt::filled(y.shape(), seed + 3).astype(dt).to(dev);
  F::sum(y * Variable(gy)).backward();

  Variable xr(x), Wr(W), br(b);
  const i64 cg = q.c / q.g, ocg = q.oc / q.g;
  Variable loss;
  for (i64 j = 0; j < q.g; ++j) {
    Variable yj = F::conv2d(chans(xr, 1, j, cg), chans(Wr, 0, j, ocg), q.bias ? chans(br, 0, j, ocg) : Variable(),
                            q.s, q.p);
    close(chans(y, 1, j, ocg).data(), yj.data(), tol, "forward, group " + std::to_string(j));
    Variable t = F::sum(yj * chans(Variable(gy), 1, j, ocg));
    loss = j == 0 ? t : loss + t;
  }
  loss.backward();
  close(xv.grad().data(), xr.grad().data(), tol, "gx");
  close(Wv.grad().data(), Wr.grad().data(), tol, "gW");
  if (q.bias) close(bv.grad().data(), br.grad().data(), tol, "gb");
}

// One grouped deconv2d against its groups: x (N, C, H, W), W (C, OC/G, KH, KW).
void check_deconv(const Geo& q, DType dt, Device dev, std::uint64_t seed, std::optional<Pair> outsize) {
  CAPTURE(q.c);
  CAPTURE(q.oc);
  CAPTURE(q.g);
  CAPTURE(dt);
  const double tol = dt == float64 ? 1e-10 : 2e-5;
  const i64 cg = q.c / q.g, ocg = q.oc / q.g;
  Tensor x = dzt::filled({q.n, q.c, q.h, q.w}, seed).astype(dt).to(dev);
  Tensor W = dzt::filled({q.c, ocg, q.k.h, q.k.w}, seed + 1).astype(dt).to(dev);
  Tensor b = dzt::filled({q.oc}, seed + 2).astype(dt).to(dev);
  Variable xv(x), Wv(W), bv(b);
  Variable y = F::deconv2d(xv, Wv, q.bias ? bv : Variable(), q.s, q.p, outsize, q.g);
  CHECK(y.shape()[1] == q.oc);
  Tensor gy = dzt::filled(y.shape(), seed + 3).astype(dt).to(dev);
  F::sum(y * Variable(gy)).backward();

  Variable xr(x), Wr(W), br(b);
  Variable loss;
  for (i64 j = 0; j < q.g; ++j) {
    Variable yj = F::deconv2d(chans(xr, 1, j, cg), chans(Wr, 0, j, cg), q.bias ? chans(br, 0, j, ocg) : Variable(),
                              q.s, q.p, outsize);
    close(chans(y, 1, j, ocg).data(), yj.data(), tol, "deconv forward, group " + std::to_string(j));
    Variable t = F::sum(yj * chans(Variable(gy), 1, j, ocg));
    loss = j == 0 ? t : loss + t;
  }
  loss.backward();
  close(xv.grad().data(), xr.grad().data(), tol, "deconv gx");
  close(Wv.grad().data(), Wr.grad().data(), tol, "deconv gW");
  if (q.bias) close(bv.grad().data(), br.grad().data(), tol, "deconv gb");
}

// The geometries: depthwise (G = C), depthwise with a channel multiplier (OC = 2C), G = 2
// and 3, strides and pads, a 1x1 kernel; then sizes where oneDNN's depthwise and grouped
// kernels take the case (channels in its blocks of 16) and where the host's products are the
// transposed ones (32 or more filters per group).
const std::vector<Geo>& geometries() {
  static const std::vector<Geo> g = {
      {2, 6, 6, 6, 7, 6, 3, 1, 1, true},                // depthwise
      {2, 4, 8, 4, 6, 7, {3, 2}, {2, 1}, {1, 0}, true},   // depthwise, multiplier 2
      {3, 6, 4, 2, 5, 5, 3, 2, 1, false},               // groups 2
      {1, 6, 9, 3, 4, 5, 1, 1, 0, true},                // groups 3, 1x1
      {2, 9, 6, 3, 5, 6, {2, 3}, {1, 2}, {0, 1}, true},   // groups 3, rectangular
      {4, 32, 32, 32, 10, 9, 3, 1, 1, true},            // depthwise, oneDNN's blocks
      {2, 16, 64, 2, 6, 6, 3, 2, 1, false},             // groups 2, 32 filters per group
  };
  return g;
}

}  // namespace

TEST_CASE("conv2d groups: forward and gradients equal the groups = 1 convolutions of the channel slices") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      std::uint64_t seed = 1;
      for (DType dt : {float32, float64})
        for (const Geo& q : geometries()) check_conv(q, dt, dev, seed += 10);
    });
  });
}

TEST_CASE("deconv2d groups: forward and gradients equal the groups = 1 transposed convolutions of the slices") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      std::uint64_t seed = 100;
      for (DType dt : {float32, float64}) {
        check_deconv({2, 6, 6, 6, 4, 5, 3, 1, 1, true}, dt, dev, seed += 10, std::nullopt);        // depthwise
        check_deconv({1, 4, 6, 2, 3, 3, 3, 2, 1, true}, dt, dev, seed += 10, std::nullopt);        // groups 2
        check_deconv({2, 6, 3, 3, 3, 4, {2, 3}, {2, 1}, {1, 0}, false}, dt, dev, seed += 10, Pair{5, 6});
        check_deconv({2, 32, 32, 32, 5, 5, 4, 2, 1, true}, dt, dev, seed += 10, std::nullopt);     // oneDNN's blocks
      }
    });
  });
}

TEST_CASE("conv2d groups: bfloat16 and float16 are computed in float32 per group as well") {
  dzt::on_each_device([](Device dev) {
    Tensor x = dzt::filled({2, 4, 5, 5}, 7).to(dev), W = dzt::filled({4, 2, 3, 3}, 8).to(dev);
    for (DType dt : {bfloat16, float16}) {
      Tensor xr = x.astype(dt), Wr = W.astype(dt);
      Variable y = F::conv2d(Variable(xr), Variable(Wr), Variable(), 1, 1, 2);
      CHECK(y.dtype() == dt);
      Variable want = F::conv2d(Variable(xr.astype(float64)), Variable(Wr.astype(float64)), Variable(), 1, 1, 2);
      close(y.data().astype(float64), want.data(), dt == bfloat16 ? 2e-2 : 2e-3, dtype_name(dt));
    }
  });
}

TEST_CASE("gradient_check: grouped and depthwise conv2d and deconv2d with respect to x, W and b") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      random::seed(11);
      // groups 2: x (2, 4, 5, 4), W (6, 2, 3, 2), stride (2, 1), pad (1, 2)
      Tensor x = random::randn({2, 4, 5, 4}, float64, dev), W = random::randn({6, 2, 3, 2}, float64, dev),
             b = random::randn({6}, float64, dev);
      auto conv = [](const Variable& a, const Variable& w, const Variable& c) {
        return F::conv2d(a, w, c, {2, 1}, {1, 2}, 2);
      };
      CHECK(gradient_check([&](const Variable& v) { return conv(v, W, b); }, x));
      CHECK(gradient_check([&](const Variable& v) { return conv(x, v, b); }, W));
      CHECK(gradient_check([&](const Variable& v) { return conv(x, W, v); }, b));
      // depthwise: x (2, 3, 5, 5), W (3, 1, 3, 3)
      Tensor xd = random::randn({2, 3, 5, 5}, float64, dev), Wd = random::randn({3, 1, 3, 3}, float64, dev),
             bd = random::randn({3}, float64, dev);
      auto dw = [](const Variable& a, const Variable& w, const Variable& c) { return F::conv2d(a, w, c, 1, 1, 3); };
      CHECK(gradient_check([&](const Variable& v) { return dw(v, Wd, bd); }, xd));
      CHECK(gradient_check([&](const Variable& v) { return dw(xd, v, bd); }, Wd));
      CHECK(gradient_check([&](const Variable& v) { return dw(xd, Wd, v); }, bd));
      // deconv2d, groups 2: x (2, 4, 3, 4), W (4, 3, 3, 3) -> OC 6, outsize (6, 10)
      Tensor xt = random::randn({2, 4, 3, 4}, float64, dev), Wt = random::randn({4, 3, 3, 3}, float64, dev),
             bt = random::randn({6}, float64, dev);
      auto de = [](const Variable& a, const Variable& w, const Variable& c) {
        return F::deconv2d(a, w, c, 2, {1, 0}, Pair{6, 10}, 2);
      };
      CHECK(gradient_check([&](const Variable& v) { return de(v, Wt, bt); }, xt));
      CHECK(gradient_check([&](const Variable& v) { return de(xt, v, bt); }, Wt));
      CHECK(gradient_check([&](const Variable& v) { return de(xt, Wt, v); }, bt));
    });
  });
}

TEST_CASE("double backprop through a grouped and a depthwise conv (the weight gradient differentiated again)") {
  dzt::on_each_device([](Device dev) {
    on_each_conv_path([&] {
      random::seed(12);
      for (i64 groups : {2, 4}) {
        CAPTURE(groups);
        Tensor x = random::randn({2, 4, 5, 5}, float64, dev), W = random::randn({4, 4 / groups, 3, 3}, float64, dev);
        auto loss = [groups](const Variable& a, const Variable& w) {
          Variable y = F::conv2d(a, w, Variable(), 2, 1, groups);
          return F::sum(y * y * y);
        };
        // d loss / dW as a function of W, and of x (Conv2DGradW's two inputs); d loss / dx of x.
        auto grad_wrt = [&](const Variable& a, const Variable& w, bool of_w) {
          auto on = using_config("enable_backprop", true);
          Variable av = a, wv = w;
          Variable L = loss(av, wv);
          L.backward(false, true);
          Variable g = of_w ? wv.grad() : av.grad();
          av.cleargrad();
          wv.cleargrad();
          return g;
        };
        CHECK(gradient_check([&](const Variable& w) { return grad_wrt(Variable(x), w, true); }, W));
        CHECK(gradient_check([&](const Variable& a) { return grad_wrt(a, Variable(W), true); }, x));
        CHECK(gradient_check([&](const Variable& a) { return grad_wrt(a, Variable(W), false); }, x));
        CHECK(gradient_check([&](const Variable& w) { return grad_wrt(Variable(x), w, false); }, W));
      }
      // deconv2d's weight gradient is a grouped Conv2DGradW too
      Tensor x = random::randn({1, 4, 3, 3}, float64, dev), Wd = random::randn({4, 1, 3, 3}, float64, dev);
      CHECK(gradient_check(
          [&](const Variable& w) {
            auto on = using_config("enable_backprop", true);
            Variable wv = w;
            Variable y = F::deconv2d(Variable(x), wv, Variable(), 2, 1, std::nullopt, 2);
            F::sum(y * y * y).backward(false, true);
            Variable g = wv.grad();
            wv.cleargrad();
            return g;
          },
          Wd));
    });
  });
}

TEST_CASE("conv2d groups: groups appears in the Function's attributes; groups = 1 is the ordinary convolution") {
  auto groups_of = [](const Variable& v) -> i64 {
    for (const auto& [k, a] : v.creator()->attributes())
      if (k == "groups") return std::get<std::int64_t>(a);
    return -1;
  };
  Tensor x = dzt::filled({1, 4, 5, 5}, 3).astype(float64), W = dzt::filled({4, 4, 3, 3}, 4).astype(float64);
  Variable y = F::conv2d(Variable(x), Variable(W), Variable(), 1, 1, 1);
  CHECK(groups_of(y) == 1);
  CHECK(utils::array_equal(y.data(), F::conv2d(Variable(x), Variable(W), Variable(), 1, 1).data()));
  Variable z = F::conv2d(Variable(x), Variable(dzt::filled({4, 1, 3, 3}, 5).astype(float64)), Variable(), 1, 1, 4);
  CHECK(z.shape() == Shape{1, 4, 5, 5});
  CHECK(groups_of(z) == 4);
  Variable d = F::deconv2d(Variable(x), Variable(dzt::filled({4, 2, 3, 3}, 6).astype(float64)), Variable(), 1, 1,
                           std::nullopt, 2);
  CHECK(d.shape() == Shape{1, 4, 5, 5});
  CHECK(groups_of(d) == 2);
}

TEST_CASE("conv2d / deconv2d groups errors name the function, the shapes and groups") {
  Variable x(zeros({1, 4, 5, 5}, float64));
  auto msg_v = [](const std::function<void()>& f) { return dzt::thrown<ValueError>(f); };
  auto msg_s = [](const std::function<void()>& f) { return dzt::thrown<ShapeError>(f); };
  std::string m = msg_v([&] { F::conv2d(x, Variable(zeros({4, 4, 3, 3}, float64)), Variable(), 1, 0, 0); });
  CHECK_MESSAGE(dzt::has(m, "conv2d: groups must be >= 1, got 0"), m);
  m = msg_v([&] { F::conv2d(x, Variable(zeros({4, 4, 3, 3}, float64)), Variable(), 1, 0, -2); });
  CHECK_MESSAGE(dzt::has(m, "conv2d: groups must be >= 1, got -2"), m);
  // 4 channels, groups 3
  m = msg_s([&] { F::conv2d(x, Variable(zeros({6, 1, 3, 3}, float64)), Variable(), 1, 0, 3); });
  CHECK_MESSAGE(dzt::has(m, "conv2d: groups 3 must divide the 4 input channels of x (1, 4, 5, 5)"), m);
  // 6 output channels, groups 4
  m = msg_s([&] { F::conv2d(x, Variable(zeros({6, 1, 3, 3}, float64)), Variable(), 1, 0, 4); });
  CHECK_MESSAGE(dzt::has(m, "and the 6 output channels of W (6, 1, 3, 3)"), m);
  // W's second axis is C / groups
  m = msg_s([&] { F::conv2d(x, Variable(zeros({4, 4, 3, 3}, float64)), Variable(), 1, 0, 2); });
  CHECK_MESSAGE(dzt::has(m, "conv2d: x (1, 4, 5, 5) float64 has 4 channels, 2 per group with groups 2, but W"), m);
  CHECK_MESSAGE(dzt::has(m, "hint: W is (out_channels, in_channels / groups, KH, KW)"), m);
  // the bias is per output channel
  m = msg_s([&] {
    F::conv2d(x, Variable(zeros({4, 1, 3, 3}, float64)), Variable(zeros({2}, float64)), 1, 0, 4);
  });
  CHECK_MESSAGE(dzt::has(m, "conv2d: b must be (4,)"), m);
  // deconv2d: groups must divide x's channels; OC = groups W.shape[1]
  m = msg_v([&] { F::deconv2d(x, Variable(zeros({4, 1, 3, 3}, float64)), Variable(), 1, 0, std::nullopt, 0); });
  CHECK_MESSAGE(dzt::has(m, "deconv2d: groups must be >= 1, got 0"), m);
  m = msg_s([&] { F::deconv2d(x, Variable(zeros({4, 1, 3, 3}, float64)), Variable(), 1, 0, std::nullopt, 3); });
  CHECK_MESSAGE(dzt::has(m, "deconv2d: groups 3 must divide the 4 input channels of x (1, 4, 5, 5)"), m);
  m = msg_s([&] {
    F::deconv2d(x, Variable(zeros({4, 3, 3, 3}, float64)), Variable(zeros({3}, float64)), 1, 0, std::nullopt, 2);
  });
  CHECK_MESSAGE(dzt::has(m, "deconv2d: b must be (6,)"), m);
  m = msg_s([&] { F::deconv2d(x, Variable(zeros({2, 3, 3, 3}, float64)), Variable(), 1, 0, std::nullopt, 2); });
  CHECK_MESSAGE(dzt::has(m, "hint: deconv2d's W is (in_channels, out_channels / groups, KH, KW)"), m);
  // groups beyond the channels, with no channels at all too (0 % groups is 0): refused, no overflow
  const std::int64_t huge = std::int64_t{1} << 62;
  Variable empty(zeros({1, 0, 4, 4}, float64));
  m = msg_s([&] { F::conv2d(empty, Variable(zeros({0, 0, 3, 3}, float64)), Variable(), 1, 0, huge); });
  CHECK_MESSAGE(dzt::has(m, "conv2d: groups 4611686018427387904 must divide the 0 input channels"), m);
  m = msg_s([&] { F::deconv2d(empty, Variable(zeros({0, 5, 3, 3}, float64)), Variable(), 1, 0, std::nullopt, huge); });
  CHECK_MESSAGE(dzt::has(m, "deconv2d: groups 4611686018427387904 must divide the 0 input channels"), m);
  // one group and no channels is an empty result, as before
  CHECK(F::conv2d(empty, Variable(zeros({3, 0, 3, 3}, float64)), Variable(), 1, 1).shape() == Shape{1, 3, 4, 4});
}

TEST_CASE("L::Conv2d / L::Deconv2d groups: weight shapes, the fan-in C / groups, forward, and the checks") {
  // ConvOptions keeps its aggregate order; groups is the last field.
  L::ConvOptions o{float64, 1, 1};
  CHECK(o.groups == 1);
  o.groups = 4;
  o.gen = random::Generator(5);
  L::Conv2d dw(8, 3, o);  // lazy: C from the first input
  Variable x(dzt::filled({2, 4, 6, 6}, 9).astype(float64));
  Variable y = dw(x);
  CHECK(dw.groups == 4);
  CHECK(dw.in_channels == 4);
  CHECK(dw.W.shape() == Shape{8, 1, 3, 3});
  CHECK(y.shape() == Shape{2, 8, 6, 6});
  CHECK(utils::array_equal(y.data(), F::conv2d(x, dw.W, dw.b, 1, 1, 4).data()));
  // W = randn(OC, C/G, KH, KW) * sqrt(1 / (C/G KH KW)), drawn from the layer's generator
  Tensor want = random::Generator(5).randn({8, 1, 3, 3}, float64) * std::sqrt(1.0 / 9.0);
  CHECK(utils::array_allclose(dw.W.data(), want, 1e-12, 0));

  L::Deconv2d up(6, 3, 2, 1, false, float64, 4, random::Generator(6), 2);  // in_channels given: drawn now
  CHECK(up.W.shape() == Shape{4, 3, 3, 3});
  Tensor want_d = random::Generator(6).randn({4, 3, 3, 3}, float64) * std::sqrt(1.0 / 18.0);
  CHECK(utils::array_allclose(up.W.data(), want_d, 1e-12, 0));
  Variable z = up(x);
  CHECK(z.shape() == Shape{2, 6, 11, 11});
  CHECK(utils::array_equal(z.data(), F::deconv2d(x, up.W, up.b, 2, 1, std::nullopt, 2).data()));

  std::string m = dzt::thrown<ValueError>([] { L::Conv2d(6, 3, 1, 0, false, float32, 0, random::Generator(1), 4); });
  CHECK_MESSAGE(dzt::has(m, "Conv2d: groups 4 must divide out_channels 6"), m);
  m = dzt::thrown<ValueError>([] { L::Conv2d(6, 3, 1, 0, false, float32, 4, random::Generator(1), 3); });
  CHECK_MESSAGE(dzt::has(m, "Conv2d: groups 3 must divide out_channels 6 and in_channels 4"), m);
  m = dzt::thrown<ValueError>([] { L::Deconv2d(6, 3, 1, 0, false, float32, 0, random::Generator(1), 0); });
  CHECK_MESSAGE(dzt::has(m, "Deconv2d: groups must be >= 1, got 0"), m);
  L::Conv2d lazy(6, 3, 1, 0, false, float64, 0, random::Generator(1), 2);
  m = dzt::thrown<ShapeError>([&] { lazy(Variable(zeros({1, 3, 5, 5}, float64))); });
  CHECK_MESSAGE(dzt::has(m, "Conv2d: input (1, 3, 5, 5) has 3 channels, which groups 2 does not divide"), m);
}
