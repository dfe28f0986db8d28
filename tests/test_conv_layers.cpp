// tests/test_conv_layers.cpp - L::Conv2d and L::Deconv2d: shapes, lazy in_channels,
// DeZero's initialisation (seeded values and statistics), the layers' wiring of stride
// and pad (against a direct loop), gradients, weight files, to_gpu and plot, errors.
#include <cmath>
#include <filesystem>

#include "support/test_util.hpp"

using namespace dezero;
namespace F = dezero::F;
namespace L = dezero::L;

namespace {

// Direct cross-correlation with zero padding: x (N, C, H, W), W (OC, C, KH, KW), b (OC,).
std::vector<double> direct_conv(const Tensor& x, const Tensor& w, const Tensor& b, Pair s, Pair p) {
  Shape xs = x.shape(), ws = w.shape();
  std::int64_t N = xs[0], C = xs[1], H = xs[2], Wd = xs[3], OC = ws[0], KH = ws[2], KW = ws[3];
  std::int64_t OH = (H + 2 * p.h - KH) / s.h + 1, OW = (Wd + 2 * p.w - KW) / s.w + 1;
  std::vector<double> xv = dzt::vals(x), wv = dzt::vals(w), bv = b.defined() ? dzt::vals(b) : std::vector<double>();
  std::vector<double> y(static_cast<std::size_t>(N * OC * OH * OW), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < OC; ++o)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = bv.empty() ? 0.0 : bv[static_cast<std::size_t>(o)];
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t ki = 0; ki < KH; ++ki)
              for (std::int64_t kj = 0; kj < KW; ++kj) {
                std::int64_t r = i * s.h - p.h + ki, q = j * s.w - p.w + kj;
                if (r < 0 || r >= H || q < 0 || q >= Wd) continue;
                acc += xv[static_cast<std::size_t>(((n * C + c) * H + r) * Wd + q)] *
                       wv[static_cast<std::size_t>(((o * C + c) * KH + ki) * KW + kj)];
              }
          y[static_cast<std::size_t>(((n * OC + o) * OH + i) * OW + j)] = acc;
        }
  return y;
}

// Direct transposed convolution: x (N, C, H, W), W (C, OC, KH, KW) -> (N, OC, OH, OW),
// OH = s (H - 1) + KH - 2p: every input pixel scatters W[c] into the output.
std::vector<double> direct_deconv(const Tensor& x, const Tensor& w, const Tensor& b, Pair s, Pair p) {
  Shape xs = x.shape(), ws = w.shape();
  std::int64_t N = xs[0], C = xs[1], H = xs[2], Wd = xs[3], OC = ws[1], KH = ws[2], KW = ws[3];
  std::int64_t OH = s.h * (H - 1) + KH - 2 * p.h, OW = s.w * (Wd - 1) + KW - 2 * p.w;
  std::vector<double> xv = dzt::vals(x), wv = dzt::vals(w), bv = b.defined() ? dzt::vals(b) : std::vector<double>();
  std::vector<double> y(static_cast<std::size_t>(N * OC * OH * OW), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t i = 0; i < H; ++i)
        for (std::int64_t j = 0; j < Wd; ++j)
          for (std::int64_t o = 0; o < OC; ++o)
            for (std::int64_t ki = 0; ki < KH; ++ki)
              for (std::int64_t kj = 0; kj < KW; ++kj) {
                std::int64_t r = i * s.h - p.h + ki, q = j * s.w - p.w + kj;
                if (r < 0 || r >= OH || q < 0 || q >= OW) continue;
                y[static_cast<std::size_t>(((n * OC + o) * OH + r) * OW + q)] +=
                    xv[static_cast<std::size_t>(((n * C + c) * H + i) * Wd + j)] *
                    wv[static_cast<std::size_t>(((c * OC + o) * KH + ki) * KW + kj)];
              }
  if (!bv.empty())
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t o = 0; o < OC; ++o)
        for (std::int64_t k = 0; k < OH * OW; ++k) y[static_cast<std::size_t>((n * OC + o) * OH * OW + k)] += bv[static_cast<std::size_t>(o)];
  return y;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
}

// A small model with both layers: (N, 3, 8, 8) -> conv (N, 4, 4, 4) -> deconv (N, 2, 8, 8).
class ConvNet : public Model {
 public:
  ConvNet() {
    c = register_layer("c", std::make_shared<L::Conv2d>(4, 3, 2, 1));
    d = register_layer("d", std::make_shared<L::Deconv2d>(2, 4, 2, 1));
  }
  Variable forward(const Variable& x) override { return d(F::relu(c(x))); }
  L::LayerRef<L::Conv2d> c;
  L::LayerRef<L::Deconv2d> d;
};

}  // namespace

// --- shapes and lazy initialisation ------------------------------------------------------------
TEST_CASE("Conv2d: lazy in_channels, explicit in_channels, nobias, dtype, rectangular kernel, stride and pad") {
  dzt::on_each_device([](Device dev) {
    L::Conv2d lazy(6, 3, 1, 1);
    CHECK_FALSE(lazy.W.data().defined());
    CHECK(lazy.b.data().shape() == Shape{6});
    lazy.to(dev);
    Variable y = lazy(random::randn({2, 5, 9, 7}, float32, dev));
    CHECK(lazy.in_channels == 5);
    CHECK(lazy.W.data().shape() == Shape{6, 5, 3, 3});
    CHECK(lazy.W.data().device() == dev);
    CHECK(y.shape() == Shape{2, 6, 9, 7});
    CHECK(y.dtype() == float32);
    CHECK(y.device() == dev);

    L::Conv2d rect(4, {3, 2}, {2, 1}, {1, 0}, true, float64, 3);
    CHECK(rect.W.data().shape() == Shape{4, 3, 3, 2});
    CHECK(rect.W.data().dtype() == float64);
    CHECK_FALSE(rect.b.defined());
    CHECK(rect.params().size() == 1);
    rect.to(dev);
    // OH = (10 + 2 - 3) / 2 + 1 = 5, OW = (6 + 0 - 2) / 1 + 1 = 5
    CHECK(rect(random::randn({1, 3, 10, 6}, float64, dev)).shape() == Shape{1, 4, 5, 5});
  });
}

TEST_CASE("Deconv2d: W (C, OC, KH, KW), output s (H - 1) + k - 2p, lazy in_channels") {
  dzt::on_each_device([](Device dev) {
    L::Deconv2d lazy(3, 4, 2, 1);
    lazy.to(dev);
    Variable y = lazy(random::randn({2, 5, 6, 7}, float32, dev));
    CHECK(lazy.in_channels == 5);
    CHECK(lazy.W.data().shape() == Shape{5, 3, 4, 4});
    CHECK(lazy.W.data().device() == dev);
    CHECK(y.shape() == Shape{2, 3, 12, 14});  // 2 * (6 - 1) + 4 - 2 = 12, 2 * (7 - 1) + 4 - 2 = 14

    L::Deconv2d eager(2, {3, 1}, 1, 0, true, float64, 4);
    CHECK(eager.W.data().shape() == Shape{4, 2, 3, 1});
    CHECK_FALSE(eager.b.defined());
    eager.to(dev);
    CHECK(eager(random::randn({1, 4, 5, 5}, float64, dev)).shape() == Shape{1, 2, 7, 5});
  });
}

// --- initialisation ------------------------------------------------------------------------------
TEST_CASE("Conv2d / Deconv2d: W = randn(shape) * sqrt(1 / (C KH KW)) from dezero::random, like DeZero") {
  double scale = std::sqrt(1.0 / (3 * 2 * 5));
  random::seed(0);
  Tensor conv_expect = (random::randn({4, 3, 2, 5}, float64).astype(float32) * scale).astype(float64);
  random::seed(0);
  L::Conv2d conv(4, {2, 5}, 1, 0, false, float32, 3);
  CHECK(dzt::vals(conv.W.data()) == dzt::vals(conv_expect));
  CHECK(dzt::vals(conv.b.data()) == std::vector<double>(4, 0.0));

  random::seed(0);
  Tensor deconv_expect = (random::randn({3, 4, 2, 5}, float64).astype(float32) * scale).astype(float64);
  random::seed(0);
  L::Deconv2d deconv(4, {2, 5}, 1, 0, false, float32, 3);
  CHECK(dzt::vals(deconv.W.data()) == dzt::vals(deconv_expect));
}

TEST_CASE("Conv2d / Deconv2d: the drawn weights have mean 0 and standard deviation sqrt(1 / (C KH KW))") {
  random::seed(1);
  L::Conv2d conv(64, 3, 1, 0, false, float32, 32);    // 18,432 weights, std 1/sqrt(288)
  L::Deconv2d deconv(32, 3, 1, 0, false, float32, 64);  // 18,432 weights, std 1/sqrt(576)
  auto stats = [](const Tensor& w) {
    std::vector<double> v = dzt::vals(w);
    double m = 0, s = 0;
    for (double a : v) m += a;
    m /= static_cast<double>(v.size());
    for (double a : v) s += (a - m) * (a - m);
    return std::pair<double, double>(m, std::sqrt(s / static_cast<double>(v.size())));
  };
  auto [cm, cs] = stats(conv.W.data());
  auto [dm, ds] = stats(deconv.W.data());
  // The standard error of the mean is std / sqrt(18432) = std / 136: 5 of them is 0.037 std.
  CHECK(std::fabs(cm) < 0.037 / std::sqrt(288.0));
  CHECK(cs == doctest::Approx(1.0 / std::sqrt(288.0)).epsilon(0.03));
  CHECK(std::fabs(dm) < 0.037 / std::sqrt(576.0));
  CHECK(ds == doctest::Approx(1.0 / std::sqrt(576.0)).epsilon(0.03));
}

// --- values and gradients ------------------------------------------------------------------------
TEST_CASE("Conv2d / Deconv2d: forward matches a direct loop (stride and pad reach the function); gradients") {
  dzt::on_each_device([](Device dev) {
    random::seed(3);
    Tensor x = random::randn({2, 3, 7, 6}, float64);
    L::Conv2d conv(4, {3, 2}, {2, 1}, {1, 2}, false, float64, 3);
    conv.b.set_data(random::randn({4}, float64));
    std::vector<double> want = direct_conv(x, conv.W.data(), conv.b.data(), {2, 1}, {1, 2});
    conv.to(dev);
    Variable y = conv(x.to(dev));
    CHECK(y.shape() == Shape{2, 4, 4, 9});
    check_close(dzt::vals(y), want, 1e-10);
    F::sum(y).backward();
    CHECK(conv.W.grad().shape() == conv.W.shape());
    CHECK(conv.W.grad().device() == dev);
    // d sum(y) / d b[o] = N * OH * OW
    CHECK(dzt::vals(conv.b.grad()) == std::vector<double>(4, 2.0 * 4 * 9));

    Tensor xd = random::randn({2, 3, 4, 5}, float64);
    L::Deconv2d deconv(2, 3, 2, 1, false, float64, 3);
    deconv.b.set_data(random::randn({2}, float64));
    std::vector<double> want_d = direct_deconv(xd, deconv.W.data(), deconv.b.data(), 2, 1);
    deconv.to(dev);
    Variable yd = deconv(xd.to(dev));
    CHECK(yd.shape() == Shape{2, 2, 7, 9});
    check_close(dzt::vals(yd), want_d, 1e-10);
    F::sum(yd).backward();
    CHECK(deconv.W.grad().shape() == deconv.W.shape());
    CHECK(dzt::vals(deconv.b.grad()) == std::vector<double>(2, 2.0 * 7 * 9));
  });
}

// --- weight files, devices, plot ------------------------------------------------------------------
TEST_CASE("Conv2d / Deconv2d: save_weights / load_weights round trip with DeZero's keys, into a lazy model") {
  dzt::on_each_device([](Device dev) {
    dzt::TempDir dir;
    std::string path = (dir.path / "convnet.npz").string();
    random::seed(5);
    Tensor x = random::randn({2, 3, 8, 8}, float32);
    ConvNet a;
    a.to(dev);
    Variable ya = a(x.to(dev));
    CHECK(ya.shape() == Shape{2, 2, 8, 8});
    std::vector<std::string> keys;
    for (auto& [k, p] : a.named_params()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"c/W", "c/b", "d/W", "d/b"});
    a.save_weights(path);

    random::seed(99);  // different weights unless the file is read
    ConvNet b;
    b.to(dev);
    b.load_weights(path);  // lazy parameters take the file's arrays
    CHECK(b.c->W.data().shape() == Shape{4, 3, 3, 3});
    CHECK(b.d->W.data().shape() == Shape{4, 2, 4, 4});
    CHECK(b.c->W.data().device() == dev);
    Variable yb = b(x.to(dev));
    CHECK(dzt::vals(yb) == dzt::vals(ya));
  });
}

TEST_CASE("Conv2d: to_gpu / to_cpu move W, b and their gradients; W stays the same parameter") {
  dzt::on_each_device([](Device dev) {
    L::Conv2d conv(3, 3, 1, 1, false, float32, 2);
    Parameter w = conv.W;
    conv.to(dev);
    CHECK(conv.W.data().device() == dev);
    CHECK(conv.b.data().device() == dev);
    F::sum(conv(random::randn({1, 2, 5, 5}, float32, dev))).backward();
    CHECK(conv.W.grad().device() == dev);
    conv.to_cpu();
    CHECK(conv.W.data().device() == Device::cpu());
    CHECK(conv.W.grad().device() == Device::cpu());
    CHECK(w.data().device() == Device::cpu());  // the same node
  });
}

TEST_CASE("Model::plot draws a CNN's graph") {
  ConvNet net;
  dzt::TempDir dir;
  std::string written = net.plot(Variable(random::randn({1, 3, 8, 8}, float32)), (dir.path / "cnn.dot").string());
  CHECK(std::filesystem::exists(written));
  std::string dot = dzt::read_bytes(written);
  CHECK(dzt::has(dot, "Conv2d"));
  CHECK(dzt::has(dot, "Deconv2d"));
}

// --- errors --------------------------------------------------------------------------------------
TEST_CASE("Conv2d / Deconv2d: bad arguments and inputs throw errors naming the layer and the shapes") {
  std::string m = dzt::thrown<ValueError>([] { L::Conv2d(0, 3); });
  CHECK(dzt::has(m, "Conv2d: out_channels must be positive, got 0"));
  m = dzt::thrown<ValueError>([] { L::Deconv2d(4, {3, 0}); });
  CHECK(dzt::has(m, "Deconv2d: kernel_size must be positive, got (3, 0)"));
  m = dzt::thrown<ValueError>([] { L::Conv2d(4, 3, 0); });
  CHECK(dzt::has(m, "Conv2d: stride must be positive, got (0, 0)"));
  m = dzt::thrown<ValueError>([] { L::Conv2d(4, 3, 1, {0, -1}); });
  CHECK(dzt::has(m, "Conv2d: pad must be >= 0, got (0, -1)"));
  m = dzt::thrown<ValueError>([] { L::Conv2d(4, 3, 1, 0, false, float32, -2); });
  CHECK(dzt::has(m, "in_channels must be positive (or 0 for lazy), got -2"));
  m = dzt::thrown<DtypeError>([] { L::Conv2d(4, 3, 1, 0, false, int64); });
  CHECK(dzt::has(m, "Conv2d: dtype must be float32 or float64, got int64"));

  m = dzt::thrown<ShapeError>([] { L::Conv2d(4, 3)(random::randn({3, 8, 8}, float32)); });
  CHECK(dzt::has(m, "Conv2d: input of shape (3, 8, 8) is not 4-d"));
  CHECK(dzt::has(m, "hint"));
  m = dzt::thrown<ShapeError>([] { L::Deconv2d(4, 3)(random::randn({8}, float32)); });
  CHECK(dzt::has(m, "Deconv2d: input of shape (8,) is not 4-d"));

  // Once W exists, the function checks the input: a channel mismatch names conv2d and both shapes.
  L::Conv2d conv(4, 3, 1, 0, false, float32, 3);
  m = dzt::thrown<Error>([&] { conv(random::randn({1, 2, 8, 8}, float32)); });
  CHECK(dzt::has(m, "conv2d"));
  CHECK(dzt::has(m, "(1, 2, 8, 8)"));
  CHECK(dzt::has(m, "(4, 3, 3, 3)"));
  // A kernel larger than the padded input.
  m = dzt::thrown<Error>([&] { conv(random::randn({1, 3, 2, 2}, float32)); });
  CHECK(dzt::has(m, "conv2d"));
}
