// tests/test_autocast.cpp - mixed precision (issue 31): dezero::autocast's guard, and
// F::linear / F::matmul under it against a float64 reference computed from operands
// rounded to bfloat16 / float16, forward and backward (also when backward runs after the
// guard is gone), through whichever kernel the build has (oneDNN's bf16 matmul, or the
// rounded operands on the float32 GEMM; both are checked by calling the fallback too).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <dezero/dezero.hpp>
#include <dezero/onednn.hpp>
#include <vector>

#include "dezero/tensor/fused.hpp"
#include "support/test_util.hpp"

using namespace dezero;
using dzt::vals;

namespace {

// Round to nearest even at bfloat16's 8 significant bits / float16's 11 (normal range:
// the test's values are in [-2, 2] and away from float16's subnormals).
float round_bits(float x, int keep) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  const int drop = 23 - (keep - 1);
  const std::uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
  u = (u + half - 1 + lsb) & ~((1u << drop) - 1);
  std::memcpy(&x, &u, 4);
  return x;
}
float round_to(DType t, float x) { return round_bits(x, t == DType::BFloat16 ? 8 : 11); }

Tensor filled(const Shape& s, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (auto& e : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    e = float((seed >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f + 1.0f / 1024;  // not bf16-exact
  }
  return array(v, s);
}

// op(a) op(b) (+ bias) in float64 from operands rounded to t.
std::vector<double> reference(DType t, const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor* bias) {
  const std::int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  const std::int64_t n = tb ? b.shape()[0] : b.shape()[1];
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  std::vector<double> y(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = bias ? double(bias->data<float>()[j]) : 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        float av = ta ? pa[p * m + i] : pa[i * k + p];
        float bv = tb ? pb[j * k + p] : pb[p * n + j];
        s += double(round_to(t, av)) * double(round_to(t, bv));
      }
      y[static_cast<std::size_t>(i * n + j)] = s;
    }
  return y;
}

// Max |y - ref| relative to the largest |ref|.
double rel_err(const Tensor& y, const std::vector<double>& ref) {
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::abs(double(y.data<float>()[i]) - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return worst / scale;
}

}  // namespace

TEST_CASE("autocast: the guard sets and restores the type, and refuses a type products cannot use") {
  CHECK(Config::autocast == float32);
  {
    auto g = autocast(bfloat16);
    CHECK(Config::autocast == bfloat16);
    {
      auto off = autocast(float32);
      CHECK(Config::autocast == float32);
    }
    CHECK(Config::autocast == bfloat16);
  }
  CHECK(Config::autocast == float32);
  CHECK_THROWS_AS(static_cast<void>(autocast(float64)), DtypeError);
  CHECK_THROWS_AS(static_cast<void>(autocast(int32)), DtypeError);
  CHECK(Config::autocast == float32);
}

TEST_CASE("autocast: matmul_t rounds float32 operands and sums in float32, kernel and fallback alike") {
  for (DType t : {bfloat16, float16}) {
    for (int flags = 0; flags < 8; ++flags) {  // bit 2: m > n (the kernel rounds a transposed A by rows when m <= n)
      const bool ta = flags & 1, tb = flags & 2;
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(flags);
      const std::int64_t m = flags & 4 ? 45 : 37, n = flags & 4 ? 37 : 45, k = 70;
      Tensor a = filled(ta ? Shape{k, m} : Shape{m, k}, 1 + flags);
      Tensor b = filled(tb ? Shape{n, k} : Shape{k, n}, 7 + flags);
      Tensor bias = filled(Shape{n}, 3);
      auto ref = reference(t, a, b, ta, tb, &bias);
      Tensor y = detail::matmul_t(a, b, ta, tb, bias, t);
      CHECK(y.dtype() == float32);
      CHECK(rel_err(y, ref) < 1e-5);
      // The float32 product of the same operands is further off: the rounding happened.
      Tensor y32 = detail::matmul_t(a, b, ta, tb, bias);
      CHECK(rel_err(y32, ref) > 1e-4);
      // A bias that is not a row per output feature: broadcast, then accumulated into.
      Tensor col = filled(Shape{m, 1}, 5);
      Tensor yc = detail::matmul_t(a, b, ta, tb, col, t);
      auto refc = reference(t, a, b, ta, tb, nullptr);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) refc[static_cast<std::size_t>(i * n + j)] += col.data<float>()[i];
      CHECK(rel_err(yc, refc) < 1e-5);
    }
  }
}

TEST_CASE("autocast: F::linear's forward and backward compute in the type it was called under") {
  Variable x(filled(Shape{20, 33}, 11)), W(filled(Shape{33, 17}, 12)), b(filled(Shape{17}, 13));
  Variable y;
  {
    auto g = autocast(bfloat16);
    y = F::linear(x, W, b);
  }
  CHECK(rel_err(y.data(), reference(bfloat16, x.data(), W.data(), false, false, &b.data())) < 1e-5);
  // Backward after the guard is gone still runs in bfloat16: gx = gy W^T, gW = x^T gy.
  Tensor gy = filled(Shape{20, 17}, 14);
  y.set_grad(Variable(gy));
  y.backward();
  CHECK(x.grad().data().dtype() == float32);
  CHECK(rel_err(x.grad().data(), reference(bfloat16, gy, W.data(), false, true, nullptr)) < 1e-5);
  CHECK(rel_err(W.grad().data(), reference(bfloat16, x.data(), gy, true, false, nullptr)) < 1e-5);
  CHECK(W.grad().data().dtype() == float32);
}

// The products of a backward recorded with create_graph are MatMul nodes with transposes (gx =
// gy W^T); a second backward through them runs from the operands they rounded and kept.
TEST_CASE("autocast: a double backward through the kept rounded operands (gx = C W^T, then D^T C)") {
  for (DType t : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(t)));
    Variable x(filled(Shape{6, 13}, 31)), W(filled(Shape{13, 9}, 32));
    Tensor C = filled(Shape{6, 9}, 33), D = filled(Shape{6, 13}, 34);
    auto g = autocast(t);
    Variable y = F::matmul(x, W);
    F::sum(y * Variable(C)).backward([] { BackwardOptions o; o.create_graph = true; return o; }());
    Variable gx = x.grad();
    CHECK(rel_err(gx.data(), reference(t, C, W.data(), false, true, nullptr)) < 1e-5);
    W.cleargrad();
    x.cleargrad();
    F::sum(gx * Variable(D)).backward();  // d/dW sum(D * (C W^T)) = D^T C
    REQUIRE(W.has_grad());
    CHECK(W.grad().dtype() == float32);
    CHECK(rel_err(W.grad().data(), reference(t, D, C, true, false, nullptr)) < 1e-5);
  }
}

TEST_CASE("autocast: float64 products and the default are not rounded") {
  Tensor a = filled(Shape{8, 9}, 21), b = filled(Shape{9, 10}, 22);
  Variable x(a.astype(float64)), W(b.astype(float64));
  Variable y64, y64_amp;
  y64 = F::matmul(x, W);
  {
    auto g = autocast(float16);
    y64_amp = F::matmul(x, W);
  }
  CHECK(y64_amp.dtype() == float64);
  CHECK(vals(y64) == vals(y64_amp));
}

TEST_CASE("autocast: cpu_supports_bf16 is false where the build has no oneDNN") {
  if (!is_onednn_available()) CHECK_FALSE(cpu_supports_bf16());
  MESSAGE("cpu_supports_bf16: " << cpu_supports_bf16() << ", cpu_supports_fp16: " << cpu_supports_fp16());
}

// --- loss scaling (Optimizer::loss_scaling, Chainer's) -----------------------------------

namespace {
// y = sum(x W) * tiny: every element of gy is `tiny`, below float16's smallest subnormal
// (2^-24 ~ 6e-8) when tiny = 1e-8, so W's gradient, computed in float16, underflows to 0.
Variable tiny_loss(const Variable& x, const Variable& W, double tiny) { return F::sum(F::matmul(x, W)) * tiny; }
}  // namespace

TEST_CASE("loss scaling: float16 gradients that underflow without it survive with it") {
  Variable x(filled(Shape{4, 8}, 31)), W0(filled(Shape{8, 3}, 32));
  // Without loss scaling: every element of W's gradient is 0.
  {
    Parameter W(W0.data().copy());
    optimizers::SGD opt(0.1);
    opt.setup(std::vector<Parameter>{W});
    Variable loss;
    {
      auto g = autocast(float16);
      loss = tiny_loss(x, W, 1e-8);
    }
    opt.backward(loss);
    for (double v : vals(W.grad())) CHECK(v == 0.0);
  }
  // With it (dynamic, from 65536): the gradient is x^T 1e-8 to float16's precision (each
  // term rounded: a tolerance of 2^-9 of the sum of the terms' sizes).
  Parameter W(W0.data().copy());
  optimizers::SGD opt(1e5);  // a large rate, so that the update shows in float32 weights near 1
  opt.setup(std::vector<Parameter>{W}).loss_scaling();
  CHECK(opt.loss_scale() == 65536.0);
  Variable loss;
  {
    auto g = autocast(float16);
    loss = tiny_loss(x, W, 1e-8);
  }
  opt.backward(loss);
  const auto xs = vals(x);
  std::vector<double> want(8), size(8);  // per row of W: sum over the batch of x, and of |x|
  for (std::size_t b = 0; b < 4; ++b)
    for (std::size_t i = 0; i < 8; ++i) want[i] += xs[b * 8 + i] * 1e-8, size[i] += std::abs(xs[b * 8 + i]) * 1e-8;
  const auto got = vals(W.grad());
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(got[i * 3 + j] - want[i] * 65536.0) <= size[i] * 65536.0 / 512);
  const auto before = vals(W);
  opt.update();
  CHECK_FALSE(opt.last_step_skipped());
  CHECK(opt.t() == 1);
  // The update used the unscaled gradient: W -= 1e5 * (x^T 1e-8).
  const auto after = vals(W);
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      CHECK(std::abs((before[i * 3 + j] - after[i * 3 + j]) - 1e5 * want[i]) <= 1e5 * size[i] / 512 + 1e-6);
}

TEST_CASE("loss scaling: a non-finite gradient skips the step and halves the scale; good steps double it") {
  Parameter W(filled(Shape{3, 2}, 41));
  optimizers::SGD opt(0.5);
  opt.setup(std::vector<Parameter>{W}).loss_scaling(3);
  Tensor w0 = W.data().copy();
  Variable x(filled(Shape{2, 3}, 42));
  // An inf in the input makes W's gradient non-finite.
  Tensor bad = x.data().copy();
  bad.data<float>()[0] = std::numeric_limits<float>::infinity();
  opt.backward(F::sum(F::matmul(Variable(bad), W)));
  opt.update();
  CHECK(opt.last_step_skipped());
  CHECK(opt.t() == 0);
  CHECK(opt.loss_scale() == 32768.0);
  CHECK(vals(W) == vals(Variable(w0)));
  for (int step = 0; step < 3; ++step) {
    W.cleargrad();
    opt.backward(F::sum(F::matmul(x, W)));
    opt.update();
    CHECK_FALSE(opt.last_step_skipped());
  }
  CHECK(opt.t() == 3);
  CHECK(opt.loss_scale() == 65536.0);
  // The state keeps the scale and the good steps: a fresh optimizer resumes them.
  W.cleargrad();
  opt.backward(F::sum(F::matmul(x, W)));
  opt.update();
  optimizers::SGD again(0.5);
  again.setup(std::vector<Parameter>{W}).loss_scaling(3);
  again.load_state_dict(opt.state_dict());
  CHECK(again.loss_scale() == 65536.0);
  CHECK(again.t() == 4);
}

TEST_CASE("loss scaling: a fixed scale gives the unscaled update; a plain backward is refused") {
  Tensor w0 = filled(Shape{5, 4}, 51);
  Variable x(filled(Shape{6, 5}, 52));
  Parameter A(w0.copy()), B(w0.copy());
  optimizers::SGD plain(0.25), scaled(0.25);
  plain.setup(std::vector<Parameter>{A});
  scaled.setup(std::vector<Parameter>{B}).loss_scaling(1000, 1024.0);
  plain.backward(F::sum(F::matmul(x, A)));  // without loss scaling: loss.backward()
  plain.update();
  scaled.backward(F::sum(F::matmul(x, B)));
  scaled.update();
  CHECK(scaled.loss_scale() == 1024.0);
  CHECK(vals(A) == vals(B));  // a power of two scales and unscales exactly
  B.cleargrad();
  F::sum(F::matmul(x, B)).backward();
  std::string msg = dzt::thrown<ValueError>([&] { scaled.update(); });
  CHECK(dzt::has(msg, "optimizer.backward(loss)"));
  CHECK_THROWS_AS(scaled.loss_scaling(0), ValueError);
  CHECK_THROWS_AS(scaled.loss_scaling(10, -1.0), ValueError);
}

TEST_CASE("autocast: where the CPU has no 16-bit products, float32 unless DEZERO_AUTOCAST_EMULATE=1") {
  // CTest's autocast_float32_fallback runs this at DEZERO_CPU_ISA=avx2 with DEZERO_AUTOCAST_EMULATE=0;
  // the rest of the suite runs with it set to 1 (tests/support/main.cpp).
  const char* e = std::getenv("DEZERO_AUTOCAST_EMULATE");
  const bool emulate = e && std::string(e) == "1";
  for (DType t : {bfloat16, float16}) {
    CAPTURE(dtype_name(t));
    const bool native = t == bfloat16 ? cpu_supports_bf16() : cpu_supports_fp16();
    if (native) {
      MESSAGE("skipped: this CPU has " << dtype_name(t) << " products");
      continue;
    }
    CHECK(detail::autocast_compute(t, Device::cpu()) == (emulate ? t : float32));
    Parameter W(filled(Shape{33, 17}, 61)), W2(filled(Shape{33, 17}, 61));
    Variable x(filled(Shape{8, 33}, 62));
    Variable y32 = F::linear(x, W);
    F::sum(y32).backward();
    Variable y16;
    {
      auto g = autocast(t);
      y16 = F::linear(x, W2);
    }
    F::sum(y16).backward();
    const auto a = vals(y32), b = vals(y16);
    if (!emulate) {  // float32's products, bit for bit, forward and backward
      CHECK(a == b);
      CHECK(vals(W.grad()) == vals(W2.grad()));
    } else {  // the rounded operands: other values, within the type's precision
      CHECK(a != b);
      double worst = 0;
      for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
      CHECK(worst < (t == bfloat16 ? 0.2 : 0.02));
    }
  }
}
