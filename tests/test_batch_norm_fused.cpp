// tests/test_batch_norm_fused.cpp - F::batch_norm's fused NCHW kernels (cpu/batch_norm.cpp,
// gpu/batch_norm.cu, through tensor/batch_norm.cpp) against the composite formula:
// DeZero's BatchNorm written here with F ops in float64 (mean and biased variance over
// every axis but 1, the gradients from autograd through that formula), and against the
// library's own composite route (running statistics of another dtype, and the backward
// with create_graph). float32 and float64, 2-D (N, C) and 4-D (N, C, H, W), train and
// test mode, on the CPU and on each GPU.
#include <cmath>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

// The axes of the statistics and the shape gamma broadcasts as: (0) and (1, C) for 2-D,
// (0, 2, 3) and (1, C, 1, 1) for 4-D.
Axes stat_axes(const Shape& s) { return s.ndim() == 2 ? Axes{0} : Axes{0, 2, 3}; }
Shape chan_shape(const Shape& s) { return s.ndim() == 2 ? Shape{1, s[1]} : Shape{1, s[1], 1, 1}; }

// y = gamma (x - mu) / sqrt(var + eps) + beta with the batch's statistics (train) or the
// given ones (test), in float64 Variables, so that backward gives the formula's gradients.
Variable ref_bn(const Variable& x, const Variable& gamma, const Variable& beta, const Tensor& rm, const Tensor& rv,
                bool train, double eps = 2e-5) {
  const Shape cs = chan_shape(x.shape());
  Variable mu, var;
  if (train) {
    mu = F::mean(x, stat_axes(x.shape()), true);
    Variable xc = x - mu;
    var = F::mean(xc * xc, stat_axes(x.shape()), true);
  } else {
    mu = Variable(rm.astype(float64).reshape(cs));
    var = Variable(rv.astype(float64).reshape(cs));
  }
  Variable xhat = (x - mu) * F::pow(var + eps, -0.5);
  return F::reshape(gamma, cs) * xhat + F::reshape(beta, cs);
}

struct Case {
  Tensor x, gamma, beta, W;  // W weights the loss sum(y * W) (the plain sum's gx is ~0 in train mode)
};
Case make_case(const Shape& s, DType dt, Device dev, double offset) {
  const std::int64_t c = s[1];
  Case k;
  k.x = (random::randn(s, float64) * 2.0 + offset).astype(dt).to(dev);
  k.gamma = random::randn({c}, float64).astype(dt).to(dev);
  k.beta = random::randn({c}, float64).astype(dt).to(dev);
  k.W = random::randn(s, float64).astype(dt).to(dev);
  return k;
}

}  // namespace

TEST_CASE("batch_norm fused: forward, running statistics and gradients vs the composite formula") {
  dzt::on_each_device([](Device dev) {
    random::seed(7);
    for (DType dt : {float32, float64}) {
      const double rtol = dt == float32 ? 2e-4 : 1e-9, atol = dt == float32 ? 2e-4 : 1e-10;
      for (const Shape& s : {Shape{16, 5}, Shape{1, 3}, Shape{4, 6, 5, 7}, Shape{3, 64, 28, 28}, Shape{2, 3, 1, 1}}) {
        for (bool train : {true, false}) {
          INFO("dtype ", dt, " shape ", s.str(), " train ", train);
          auto mode = using_config("train", train);
          const std::int64_t c = s[1];
          // An offset of 10 on x: the two-pass variance must not lose the small deviations.
          Case k = make_case(s, dt, dev, 10.0);
          Tensor rm = (random::randn({c}, float64) + 10.0).astype(dt).to(dev);
          Tensor rv = (abs(random::randn({c}, float64)) + 0.5).astype(dt).to(dev);
          Tensor rm0 = rm.copy(), rv0 = rv.copy();

          Variable x(k.x), gamma(k.gamma), beta(k.beta);
          Variable y = F::batch_norm(x, gamma, beta, rm, rv);
          CHECK(y.dtype() == dt);
          CHECK(y.shape() == s);
          F::sum(y * Variable(k.W)).backward();

          Variable x64(k.x.astype(float64)), g64(k.gamma.astype(float64)), b64(k.beta.astype(float64));
          Variable yr = ref_bn(x64, g64, b64, rm0, rv0, train);
          {
            auto g = using_config("train", true);  // ref_bn is plain F ops either way
            F::sum(yr * Variable(k.W.astype(float64))).backward();
          }
          CHECK(dzt::allclose(y.data(), yr.data(), rtol, atol));
          CHECK(dzt::allclose(gamma.grad().data(), g64.grad().data(), rtol, atol * 10));
          CHECK(dzt::allclose(beta.grad().data(), b64.grad().data(), rtol, atol * 10));
          if (train && s[0] * (s.ndim() == 4 ? s[2] * s[3] : 1) == 1) {
            // one value per channel: xhat = 0, gx = 0 up to rounding
            CHECK(dzt::allclose(x.grad().data(), zeros_like(x.data()), rtol, 1e-2));
          } else {
            CHECK(dzt::allclose(x.grad().data(), x64.grad().data(), rtol, atol * 10));
          }

          // Running statistics: decay 0.9, the unbiased m / (m - 1) variance (train); untouched (test).
          if (train) {
            const double m = static_cast<double>(k.x.size() / c);
            Tensor mu = mean(k.x.astype(float64), stat_axes(s));
            Tensor var = mean(square(k.x.astype(float64) - mean(k.x.astype(float64), stat_axes(s), true)), stat_axes(s));
            Tensor want_m = rm0.astype(float64) * 0.9 + mu * 0.1;
            Tensor want_v = rv0.astype(float64) * 0.9 + var * (0.1 * m / std::max(m - 1.0, 1.0));
            CHECK(dzt::allclose(rm, want_m, rtol, atol));
            CHECK(dzt::allclose(rv, want_v, rtol, atol));
            CHECK(rm.dtype() == dt);
          } else {
            CHECK(utils::array_equal(rm, rm0));
            CHECK(utils::array_equal(rv, rv0));
          }
        }
      }
    }
  });
}

TEST_CASE("batch_norm fused: the same numbers as the library's composite route") {
  dzt::on_each_device([](Device dev) {
    random::seed(11);
    for (DType dt : {float32, float64}) {
      const double tol = dt == float32 ? 1e-4 : 1e-10;
      for (const Shape& s : {Shape{12, 4}, Shape{5, 8, 6, 6}}) {
        for (bool train : {true, false}) {
          INFO("dtype ", dt, " shape ", s.str(), " train ", train);
          auto mode = using_config("train", train);
          const std::int64_t c = s[1];
          Case k = make_case(s, dt, dev, 1.0);
          // Running statistics that float32 holds exactly, so that both routes start from the same values.
          Tensor rm64 = random::randn({c}, float32).astype(float64).to(dev);
          Tensor rv64 = (abs(random::randn({c}, float32)) + 0.5).astype(float64).to(dev);
          // Fused: running statistics of x's dtype. Composite: float64 running statistics with
          // float32 x (and float32 ones with float64 x), which the fused kernels do not take.
          Tensor rm_f = rm64.astype(dt), rv_f = rv64.astype(dt);
          DType other = dt == float32 ? float64 : float32;
          Tensor rm_c = rm64.astype(other), rv_c = rv64.astype(other);
          Variable xf(k.x), gf(k.gamma), bf(k.beta), xc(k.x.copy()), gc(k.gamma.copy()), bc(k.beta.copy());
          Variable yf = F::batch_norm(xf, gf, bf, rm_f, rv_f);
          Variable yc = F::batch_norm(xc, gc, bc, rm_c, rv_c);
          CHECK(dzt::allclose(yf.data(), yc.data(), tol, tol));
          // (the composite route of float64 x stores its updated statistics in float32)
          const double stol = train ? 1e-6 : 0.0;
          CHECK(dzt::allclose(rm_f, rm_c.astype(dt), stol, stol));
          CHECK(dzt::allclose(rv_f, rv_c.astype(dt), stol, stol));
          F::sum(yf * Variable(k.W)).backward();
          F::sum(yc * Variable(k.W)).backward();
          CHECK(dzt::allclose(xf.grad().data(), xc.grad().data(), tol * 10, tol * 10));
          CHECK(dzt::allclose(gf.grad().data(), gc.grad().data(), tol * 10, tol * 10));
          CHECK(dzt::allclose(bf.grad().data(), bc.grad().data(), tol * 10, tol * 10));

          // The backward with create_graph takes the composite (differentiable) route: same gradients.
          Tensor rm_g = rm64.astype(dt), rv_g = rv64.astype(dt);
          Variable xg(k.x.copy()), gg(k.gamma.copy()), bg(k.beta.copy());
          F::sum(F::batch_norm(xg, gg, bg, rm_g, rv_g) * Variable(k.W)).backward(false, true);
          CHECK(dzt::allclose(xf.grad().data(), xg.grad().data(), tol * 10, tol * 10));
          CHECK(dzt::allclose(gf.grad().data(), gg.grad().data(), tol * 10, tol * 10));
          CHECK(dzt::allclose(bf.grad().data(), bg.grad().data(), tol * 10, tol * 10));
        }
      }
    }
  });
}

TEST_CASE("batch_norm fused: L::BatchNorm over NCHW trains its running statistics, then normalises with them") {
  dzt::on_each_device([](Device dev) {
    random::seed(3);
    L::BatchNorm bn;
    Tensor x = (random::randn({8, 3, 4, 4}, float32) * 3.0 + 5.0).to(dev);
    for (int i = 0; i < 60; ++i) bn(Variable(x));  // running stats -> the batch's (0.9^60 ~ 0.002 left)
    CHECK(bn.avg_mean.data().dtype() == float32);
    CHECK(dzt::allclose(bn.avg_mean.data(), mean(x, Axes{0, 2, 3}), 1e-2, 1e-2));
    auto g = using_config("train", false);
    Variable y = bn(Variable(x));
    // test mode with the running statistics ~ the batch's: y ~ the standardised x (var * m/(m-1))
    Tensor ym = mean(y.data(), Axes{0, 2, 3});
    CHECK(dzt::allclose(ym, zeros({3}, float32, dev), 1e-2, 2e-2));
    Tensor yv = mean(square(y.data()), Axes{0, 2, 3});
    CHECK(dzt::allclose(yv, full({3}, 127.0 / 128.0, float32, dev), 1e-2, 2e-2));
  });
}
