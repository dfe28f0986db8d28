// tests/test_onednn.cpp - the host's two float32 convolution paths against each other:
// oneDNN (dezero/cpu/onednn_conv.cpp, in a build that found it) and im2col + our SGEMM
// (dezero/cpu/im2col.cpp), called directly on the same buffers, so both run in one
// process whatever DEZERO_ONEDNN says. Forward (bias and none), the data gradient and
// the weight gradient, for strides, paddings (with oneDNN's right padding shorter than
// the left where DeZero's output size rounds down), rectangular kernels, 1x1, batch 1
// and > 1, and W2's two layers. Outputs start as NaN: every element must be written.
// Also: is_onednn_available() says what the build has, threads share the cached
// primitives, and F::conv2d / F::deconv2d in float32 (through whichever path is on)
// agree with float64.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <dezero/dezero.hpp>
#include <dezero/onednn.hpp>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "dezero/cpu/kernels.hpp"
#include "support/test_util.hpp"

namespace cpu = dezero::detail::cpu;
using dezero::detail::ConvGeom;
using i64 = std::int64_t;

namespace {

struct Lcg {
  std::uint64_t s;
  float next() {  // uniform in [-1, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return float((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f;
  }
};

std::vector<float> randv(std::size_t n, std::uint64_t seed) {
  Lcg g{seed};
  std::vector<float> v(n);
  for (auto& x : v) x = g.next();
  return v;
}

ConvGeom geom(i64 n, i64 c, i64 h, i64 w, i64 oc, i64 kh, i64 kw, i64 sh, i64 sw, i64 ph, i64 pw) {
  ConvGeom g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.oc = oc, g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw;
  g.oh = (h + 2 * ph - kh) / sh + 1;
  g.ow = (w + 2 * pw - kw) / sw + 1;
  return g;
}

// g with `groups` channel groups (W (oc, c/groups, kh, kw)).
ConvGeom grouped(ConvGeom g, i64 groups) {
  g.groups = groups;
  return g;
}

std::string describe(const ConvGeom& g) {
  std::ostringstream s;
  s << "x (" << g.n << ", " << g.c << ", " << g.h << ", " << g.w << ") W (" << g.oc << ", " << g.c / g.groups << ", "
    << g.kh << ", " << g.kw << ") stride (" << g.sh << ", " << g.sw << ") pad (" << g.ph << ", " << g.pw << ")";
  if (g.groups != 1) s << " groups " << g.groups;
  return s.str();
}

// Largest |a - b| over |b|'s scale: the sums have `terms` float32 products each.
bool agree(const std::vector<float>& a, const std::vector<float>& b, i64 terms, const char* what) {
  const double tol = 2e-6 * double(terms) + 1e-5;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      MESSAGE(what << ": element " << i << " not written (" << a[i] << ", " << b[i] << ")");
      return false;
    }
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  }
  if (worst > tol) MESSAGE(what << ": max |difference| " << worst << " > " << tol);
  return worst <= tol;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs the three products on both paths; returns how many of them oneDNN took (0 to 4).
int compare_paths(const ConvGeom& g) {
  CAPTURE(describe(g));
  const auto F32 = dezero::DType::Float32;
  const std::size_t nx = g.n * g.c * g.h * g.w, nw = g.oc * (g.c / g.groups) * g.kh * g.kw,
                    ny = g.n * g.oc * g.oh * g.ow;
  const auto x = randv(nx, 1), w = randv(nw, 2), b = randv(g.oc, 3), gy = randv(ny, 4);
  int taken = 0;
  for (bool bias : {true, false}) {
    CAPTURE(bias);
    std::vector<float> y1(ny, kNaN), y2(ny, kNaN);
    bool on = cpu::onednn_conv2d_forward(F32, x.data(), w.data(), bias ? b.data() : nullptr, y1.data(), g);
    REQUIRE(cpu::conv2d_forward(F32, x.data(), w.data(), bias ? b.data() : nullptr, y2.data(), g));
    if (on) {
      ++taken;
      CHECK(agree(y1, y2, g.c / g.groups * g.kh * g.kw, "forward"));
    }
  }
  std::vector<float> gx1(nx, kNaN), gx2(nx, kNaN);
  bool on = cpu::onednn_conv2d_backward_data(F32, w.data(), gy.data(), gx1.data(), g);
  REQUIRE(cpu::conv2d_backward_data(F32, w.data(), gy.data(), gx2.data(), g));
  if (on) {
    ++taken;
    CHECK(agree(gx1, gx2, g.oc / g.groups * g.kh * g.kw, "data gradient"));
  }
  std::vector<float> gw1(nw, kNaN), gw2(nw, kNaN);
  on = cpu::onednn_conv2d_backward_filter(F32, x.data(), gy.data(), gw1.data(), g);
  REQUIRE(cpu::conv2d_backward_filter(F32, x.data(), gy.data(), gw2.data(), g));
  if (on) {
    ++taken;
    CHECK(agree(gw1, gw2, g.n * g.oh * g.ow, "weight gradient"));
  }
  return taken;
}

}  // namespace

TEST_CASE("onednn: is_onednn_available() says what the build has") {
#if DEZERO_TEST_ONEDNN
  CHECK(dezero::is_onednn_available());
  const char* env = std::getenv("DEZERO_ONEDNN");
  CHECK(cpu::onednn_enabled() == !(env && std::string(env) == "0"));
#else
  CHECK_FALSE(dezero::is_onednn_available());
  CHECK_FALSE(cpu::onednn_enabled());
#endif
  // float64 is never oneDNN's: the im2col + GEMM path always takes it.
  ConvGeom g = geom(1, 1, 4, 4, 1, 3, 3, 1, 1, 1, 1);
  std::vector<double> x(16, 1.0), w(9, 1.0), y(16, 0.0);
  CHECK_FALSE(cpu::onednn_conv2d_forward(dezero::DType::Float64, x.data(), w.data(), nullptr, y.data(), g));
  CHECK(y[0] == 0.0);
}

TEST_CASE("onednn: both CPU convolution paths agree (values and gradients)") {
  if (!cpu::onednn_enabled()) {
    MESSAGE("skipped: oneDNN is not built in or DEZERO_ONEDNN=0");
    return;
  }
  // W2's two layers (batch 100). conv1's forward is always oneDNN's; its gradients have 1 input
  // channel, which oneDNN's blocked formats pad to the vector width: the products padded more than
  // twice over are left to im2col + SGEMM, and which those are depends on the instruction set
  // oneDNN runs at (AVX-512: the data gradient; AVX2: both gradients; SSE4.1: none). So the
  // choice is reported and the values of what oneDNN took are checked, at every level.
  const int conv1 = compare_paths(geom(100, 1, 28, 28, 16, 3, 3, 1, 1, 1, 1));
  MESSAGE("conv1 (1 channel): oneDNN took " << conv1 << " of 4 products at ISA level " << dezero::cpu_info().isa);
  CHECK(conv1 >= 2);
  CHECK(compare_paths(geom(100, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1)) == 4);
  // Channels in multiples of 16 (oneDNN's blocks): every product is oneDNN's.
  const ConvGeom blocked[] = {
      geom(1, 16, 5, 5, 16, 3, 3, 1, 1, 0, 0),      // batch 1, no padding
      geom(2, 16, 7, 7, 32, 3, 3, 2, 2, 1, 1),      // stride 2
      geom(3, 32, 9, 8, 16, 3, 5, 2, 1, 1, 2),      // rectangular kernel, mixed strides and pads
      geom(2, 16, 6, 6, 48, 1, 1, 1, 1, 0, 0),      // 1x1
      geom(2, 32, 6, 6, 16, 1, 1, 2, 2, 0, 0),      // 1x1 stride 2: right padding -1
      geom(2, 16, 10, 11, 16, 4, 4, 3, 3, 2, 1),    // rounding down: right padding < left
      geom(1, 16, 8, 8, 32, 5, 5, 1, 1, 2, 2),      // 5x5
      geom(2, 16, 3, 3, 16, 3, 3, 1, 1, 2, 2),      // padding larger than half the kernel
      geom(3, 48, 13, 5, 32, 2, 3, 1, 2, 0, 1),     // odd sizes and an even kernel
  };
  for (const ConvGeom& g : blocked) CHECK(compare_paths(g) == 4);
  // Other channel counts: oneDNN takes what its blocked formats do not pad more than
  // twice over (the forwards, mostly); the rest is im2col's.
  int total = 0;
  const ConvGeom cases[] = {
      geom(1, 1, 5, 5, 1, 3, 3, 1, 1, 0, 0),       geom(2, 3, 7, 7, 4, 3, 3, 2, 2, 1, 1),
      geom(3, 2, 9, 8, 5, 3, 5, 2, 1, 1, 2),       geom(2, 8, 6, 6, 16, 1, 1, 1, 1, 0, 0),
      geom(2, 4, 6, 6, 3, 1, 1, 2, 2, 0, 0),       geom(2, 3, 10, 11, 6, 4, 4, 3, 3, 2, 1),
      geom(4, 16, 12, 12, 48, 3, 3, 1, 1, 1, 1),   geom(1, 5, 8, 8, 7, 5, 5, 1, 1, 2, 2),
      geom(2, 24, 3, 3, 20, 3, 3, 1, 1, 2, 2),     geom(3, 6, 13, 5, 33, 2, 3, 1, 2, 0, 1),
  };
  for (const ConvGeom& g : cases) total += compare_paths(g);
  MESSAGE("oneDNN took " << total << " of " << 4 * std::size(cases) << " products of the other geometries");
  CHECK(total > 0);
}

TEST_CASE("onednn: grouped and depthwise convolutions (goihw weights) agree with the per-group im2col products") {
  if (!cpu::onednn_enabled()) {
    MESSAGE("skipped: oneDNN is not built in or DEZERO_ONEDNN=0");
    return;
  }
  // Depthwise (groups = c) with channels in oneDNN's blocks of 16: its depthwise kernels take
  // all four products; so do grouped ones whose groups hold 16 channels each.
  const ConvGeom blocked[] = {
      grouped(geom(2, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1), 32),   // MobileNet's 3x3 depthwise
      grouped(geom(1, 64, 9, 8, 64, 3, 3, 2, 2, 1, 1), 64),     // stride 2, batch 1
      grouped(geom(3, 16, 7, 7, 16, 5, 5, 1, 1, 2, 2), 16),     // 5x5
      grouped(geom(2, 32, 8, 8, 64, 3, 3, 1, 1, 1, 1), 2),      // 16 channels, 32 filters per group
  };
  for (const ConvGeom& g : blocked) {
    const int took = compare_paths(g);
    MESSAGE(describe(g) << ": oneDNN took " << took << " of 4 products");
    CHECK(took >= 3);
  }
  // Others (a channel multiplier, 3 channels, groups of 2): whatever oneDNN takes agrees; the rest
  // is the per-group im2col products'.
  const ConvGeom others[] = {
      grouped(geom(2, 8, 6, 6, 16, 3, 3, 1, 1, 1, 1), 8),  grouped(geom(2, 3, 7, 7, 3, 3, 3, 2, 2, 1, 1), 3),
      grouped(geom(1, 6, 5, 5, 4, 3, 2, 1, 1, 0, 1), 2),   grouped(geom(2, 48, 6, 6, 48, 1, 1, 1, 1, 0, 0), 3),
  };
  int total = 0;
  for (const ConvGeom& g : others) total += compare_paths(g);
  MESSAGE("oneDNN took " << total << " of " << 4 * std::size(others) << " products of the other grouped geometries");
}

TEST_CASE("onednn: threads share the cached primitives") {
  if (!cpu::onednn_enabled()) {
    MESSAGE("skipped: oneDNN is not built in or DEZERO_ONEDNN=0");
    return;
  }
  // Four threads run the same (new) geometry at once, each on its own data: each result
  // matches im2col + SGEMM's for that data.
  const ConvGeom g = geom(4, 16, 10, 10, 32, 3, 3, 1, 1, 1, 1);
  const std::size_t nx = 4 * 16 * 100, nw = 32 * 16 * 9, ny = 4 * 32 * 100;
  std::vector<std::vector<float>> xs, ys(4, std::vector<float>(ny, kNaN)), refs(4, std::vector<float>(ny, kNaN));
  const auto w = randv(nw, 9);
  for (int t = 0; t < 4; ++t) xs.push_back(randv(nx, 20 + t));
  bool taken[4] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep)
        taken[t] = cpu::onednn_conv2d_forward(dezero::DType::Float32, xs[t].data(), w.data(), nullptr,
                                              ys[t].data(), g);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    CHECK(taken[t]);
    REQUIRE(cpu::conv2d_forward(dezero::DType::Float32, xs[t].data(), w.data(), nullptr, refs[t].data(), g));
    CHECK(agree(ys[t], refs[t], 16 * 9, "forward on a thread"));
  }
}

TEST_CASE("onednn: F::conv2d in float32 (the path that is on) matches float64") {
  namespace F = dezero::F;
  dezero::random::seed(3);
  dezero::Tensor x64 = dezero::random::randn({4, 3, 9, 9}), w64 = dezero::random::randn({8, 3, 3, 3}),
                 b64 = dezero::random::randn({8});
  dezero::Variable x(x64.astype(dezero::float32)), w(w64.astype(dezero::float32)), b(b64.astype(dezero::float32));
  dezero::Variable xd(x64), wd(w64), bd(b64);
  dezero::Variable y = F::conv2d(x, w, b, 2, 1), yd = F::conv2d(xd, wd, bd, 2, 1);
  F::sum(y * y).backward();
  F::sum(yd * yd).backward();
  CHECK(dzt::allclose(y.data().astype(dezero::float64), yd.data(), 1e-4, 1e-4));
  CHECK(dzt::allclose(x.grad().data().astype(dezero::float64), xd.grad().data(), 1e-3, 1e-3));
  CHECK(dzt::allclose(w.grad().data().astype(dezero::float64), wd.grad().data(), 1e-3, 1e-3));

  // deconv2d (its forward is the data gradient's product), 16 channels in and out: oneDNN's
  // blocks hold them unpadded, so every product of it is oneDNN's when the path is on.
  dezero::Tensor u64 = dezero::random::randn({2, 16, 5, 6}), v64 = dezero::random::randn({16, 16, 3, 3});
  dezero::Variable u(u64.astype(dezero::float32)), v(v64.astype(dezero::float32)), ud(u64), vd(v64);
  dezero::Variable z = F::deconv2d(u, v, dezero::Variable(), 2, 1), zd = F::deconv2d(ud, vd, dezero::Variable(), 2, 1);
  CHECK(z.shape() == dezero::Shape{2, 16, 9, 11});
  F::sum(z * z).backward();
  F::sum(zd * zd).backward();
  CHECK(dzt::allclose(z.data().astype(dezero::float64), zd.data(), 1e-4, 1e-4));
  CHECK(dzt::allclose(u.grad().data().astype(dezero::float64), ud.grad().data(), 1e-3, 1e-3));
  CHECK(dzt::allclose(v.grad().data().astype(dezero::float64), vd.grad().data(), 1e-3, 1e-3));
}
