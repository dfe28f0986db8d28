// tests/test_cuda_pool.cpp - pooling through cuDNN (gpu/cudnn_pool.cpp) and the CUDA
// backend's own pooling kernels (gpu/pool.cu).
//
// Everywhere: the rule for which windows cuDNN's pooling computes as DeZero does
// (detail/conv_algo.hpp's pool_geometry_fits_cudnn). In a CUDA build where cuDNN loads (no
// GPU needed): cuDNN's pooling descriptors give DeZero's output size for the cases the rule
// lets through, and max pooling's descriptor propagates NaN. With a GPU: the backend's
// library pooling (cuDNN) and its own average pooling against a direct computation in
// double on the host, the cases declined and left untouched, max pooling's NaN rule on
// every GPU path (cuDNN, pool.cu) against the CPU's, offset views, F::pooling and
// F::average_pooling on the GPU against the CPU with gradients of the first and second
// order, and the timings gpu-check prints.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dezero/dezero.hpp>
#include <limits>
#include <string>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#include "dezero/tensor/fused.hpp"  // detail::set_conv_library_path
#include "support/cudnn.hpp"
#include "support/test_util.hpp"

using namespace dezero;

namespace {

namespace cd = cuda::detail;
using detail::ConvGeom;

// A pooling window over (n, c, h, w): oh/ow from DeZero's formula.
ConvGeom pgeom(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t kh, std::int64_t kw,
               std::int64_t sh, std::int64_t sw, std::int64_t ph = 0, std::int64_t pw = 0) {
  ConvGeom g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw;
  g.oh = (h + 2 * ph - kh) / sh + 1;
  g.ow = (w + 2 * pw - kw) / sw + 1;
  return g;
}

std::string str(const ConvGeom& g) {
  return "x (" + std::to_string(g.n) + ", " + std::to_string(g.c) + ", " + std::to_string(g.h) + ", " +
         std::to_string(g.w) + ") window (" + std::to_string(g.kh) + ", " + std::to_string(g.kw) + ") stride (" +
         std::to_string(g.sh) + ", " + std::to_string(g.sw) + ") pad (" + std::to_string(g.ph) + ", " +
         std::to_string(g.pw) + ")";
}

// Unpadded max pooling windows (what cuDNN's max takes) and padded average pooling ones.
const std::vector<ConvGeom>& max_geometries() {
  static const std::vector<ConvGeom> gs = {
      pgeom(2, 3, 8, 8, 2, 2, 2, 2),      // the CNN's 2 x 2 / 2
      pgeom(1, 2, 7, 9, 2, 2, 2, 2),      // odd sizes: the last row and column are in no window
      pgeom(2, 2, 7, 6, 3, 3, 1, 1),      // overlapping windows
      pgeom(1, 3, 9, 7, 3, 2, 2, 1),      // rectangular window, stride per axis
      pgeom(100, 16, 28, 28, 2, 2, 2, 2)  // W2's first pooling
  };
  return gs;
}
const std::vector<ConvGeom>& avg_geometries() {
  static const std::vector<ConvGeom> gs = {
      pgeom(2, 3, 8, 8, 2, 2, 2, 2), pgeom(2, 2, 7, 6, 3, 3, 2, 2, 1, 1),  // padding counted
      pgeom(1, 3, 9, 7, 3, 2, 1, 2, 2, 1),                                 // rectangular, padding per axis
      pgeom(4, 8, 7, 7, 7, 7, 1, 1),                                       // global average pooling (ResNet's)
  };
  return gs;
}

}  // namespace

// --- host code: no GPU needed ------------------------------------------------------------------
TEST_CASE("cudnn pooling: which windows cuDNN computes as DeZero does") {
  CHECK(cd::pool_geometry_fits_cudnn(pgeom(2, 3, 8, 8, 2, 2, 2, 2), true));
  CHECK(cd::pool_geometry_fits_cudnn(pgeom(2, 3, 8, 8, 2, 2, 2, 2), false));
  // max pooling with padding: DeZero reads the padding as 0, cuDNN skips it
  CHECK_FALSE(cd::pool_geometry_fits_cudnn(pgeom(2, 3, 8, 8, 3, 3, 2, 2, 1, 1), true));
  CHECK_FALSE(cd::pool_geometry_fits_cudnn(pgeom(2, 3, 8, 8, 3, 3, 2, 2, 0, 1), true));
  CHECK(cd::pool_geometry_fits_cudnn(pgeom(2, 3, 8, 8, 3, 3, 2, 2, 1, 1), false));  // average counts it
  // a padding as large as the window (windows wholly in the padding): cuDNN's rule says no
  CHECK_FALSE(cd::pool_geometry_fits_cudnn(pgeom(1, 1, 4, 4, 2, 2, 1, 1, 2, 0), false));
  CHECK_FALSE(cd::pool_geometry_fits_cudnn(pgeom(1, 1, 4, 4, 1, 1, 1, 1, 0, 1), false));
  // sizes beyond int, and an output that is not the formula's
  CHECK_FALSE(cd::pool_geometry_fits_cudnn(pgeom(1 << 20, 64, 64, 64, 2, 2, 2, 2), true));
  ConvGeom bad = pgeom(1, 1, 6, 6, 2, 2, 2, 2);
  bad.oh = 4;
  CHECK_FALSE(cd::pool_geometry_fits_cudnn(bad, false));
}

#ifdef DEZERO_WITH_CUDA
// No GPU needed: descriptors only. Where the rule lets a case through, cuDNN's output size is
// DeZero's (h + 2 ph - kh) / sh + 1, so the window parameters reach cuDNN in the right order.
TEST_CASE("cudnn pooling: cuDNN's descriptors give DeZero's output size for every case the rule takes") {
  if (cd::cudnn_version() == 0) {
    MESSAGE("skipped: cuDNN does not load here");
    std::int64_t out[4];
    CHECK_FALSE(cd::cudnn_pooling_output(float32, max_geometries()[0], true, out));
    return;
  }
  std::vector<std::pair<ConvGeom, bool>> cases;
  for (const ConvGeom& g : max_geometries()) cases.push_back({g, true});
  for (const ConvGeom& g : avg_geometries()) cases.push_back({g, false});
  cases.push_back({pgeom(3, 5, 11, 13, 4, 3, 3, 2, 3, 2), false});
  cases.push_back({pgeom(1, 1, 5, 5, 5, 5, 1, 1), true});  // one window, the whole image
  for (const auto& [g, max] : cases) {
    CAPTURE(str(g));
    CAPTURE(max);
    REQUIRE(cd::pool_geometry_fits_cudnn(g, max));
    for (DType dt : {float32, float64}) {
      std::int64_t out[4] = {0, 0, 0, 0};
      REQUIRE(cd::cudnn_pooling_output(dt, g, max, out));
      CHECK(out[0] == g.n);
      CHECK(out[1] == g.c);
      CHECK(out[2] == g.oh);
      CHECK(out[3] == g.ow);
    }
  }
}

// No GPU needed: max pooling's descriptor carries CUDNN_PROPAGATE_NAN (a NaN anywhere in a
// window gives NaN, as NumPy's max over DeZero's im2col, cpu/pool.cpp and pool.cu).
TEST_CASE("cudnn pooling: max pooling's descriptor propagates NaN (DeZero's rule)") {
  if (cd::cudnn_version() == 0) {
    MESSAGE("skipped: cuDNN does not load here");
    CHECK(cd::cudnn_max_pooling_nan_propagation() == -1);
    return;
  }
  CHECK(cd::cudnn_max_pooling_nan_propagation() == 1);
}
#endif

// --- with a GPU: the backend's entry points against a direct computation ---------------------
namespace {

// y (n, c, oh, ow): each window's first max (unpadded windows) or its mean, padding counted.
std::vector<double> ref_pool(const ConvGeom& g, const std::vector<double>& x, bool max) {
  std::vector<double> y(g.n * g.c * g.oh * g.ow);
  for (std::int64_t p = 0; p < g.n * g.c; ++p)
    for (std::int64_t i = 0; i < g.oh; ++i)
      for (std::int64_t j = 0; j < g.ow; ++j) {
        double acc = 0, best = 0;
        bool first = true;
        for (std::int64_t a = 0; a < g.kh; ++a)
          for (std::int64_t b = 0; b < g.kw; ++b) {
            std::int64_t r = i * g.sh + a - g.ph, s = j * g.sw + b - g.pw;
            double v = (r < 0 || r >= g.h || s < 0 || s >= g.w) ? 0.0 : x[(p * g.h + r) * g.w + s];
            acc += v;
            if (first || v > best) best = v, first = false;
          }
        y[(p * g.oh + i) * g.ow + j] = max ? best : acc / double(g.kh * g.kw);
      }
  return y;
}

// gx (n, c, h, w): gy to each window's first max, or gy / (kh kw) spread over the window.
std::vector<double> ref_pool_backward(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& gy,
                                      bool max) {
  std::vector<double> gx(g.n * g.c * g.h * g.w, 0.0);
  for (std::int64_t p = 0; p < g.n * g.c; ++p)
    for (std::int64_t i = 0; i < g.oh; ++i)
      for (std::int64_t j = 0; j < g.ow; ++j) {
        double d = gy[(p * g.oh + i) * g.ow + j];
        std::int64_t arg = -1;
        double best = 0;
        for (std::int64_t a = 0; a < g.kh; ++a)
          for (std::int64_t b = 0; b < g.kw; ++b) {
            std::int64_t r = i * g.sh + a - g.ph, s = j * g.sw + b - g.pw;
            if (r < 0 || r >= g.h || s < 0 || s >= g.w) continue;
            std::int64_t at = (p * g.h + r) * g.w + s;
            if (!max) {
              gx[at] += d / double(g.kh * g.kw);
            } else if (arg < 0 || x[at] > best) {
              best = x[at], arg = at;
            }
          }
        if (max && arg >= 0) gx[arg] += d;
      }
  return gx;
}


using dzt::skip_without_cudnn;  // support/cudnn.hpp: says why cuDNN is not used, where it is not

// Forward and backward of one geometry on cuda:0 against the host: through the library
// entry points (cuDNN), which must take it, or through the backend's own kernels (pool.cu's
// average pooling; library false).
void check_pool(const ConvGeom& g, DType dt, bool max, double tol, bool library = true) {
  CAPTURE(str(g));
  CAPTURE(dtype_name(dt));
  CAPTURE(max);
  Device gpu = Device::cuda(0);
  Tensor x = random::randn(Shape{g.n, g.c, g.h, g.w}, dt), gy = random::randn(Shape{g.n, g.c, g.oh, g.ow}, dt);
  Tensor xd = x.to(gpu), gyd = gy.to(gpu);
  Tensor y = Tensor::empty(gy.shape(), dt, gpu), gx = Tensor::empty(x.shape(), dt, gpu);
  detail::Backend& be = detail::backend_for(gpu);
  CAPTURE(library);
  if (max) {
    REQUIRE(library);
    REQUIRE(be.library()->max_pool_forward(dt, xd.raw_data(), y.raw_data(), g));
    REQUIRE(be.library()->max_pool_backward(dt, xd.raw_data(), y.raw_data(), gyd.raw_data(), gx.raw_data(), g));
  } else if (library) {
    REQUIRE(be.library()->avg_pool_forward(dt, xd.raw_data(), y.raw_data(), g));
    REQUIRE(be.library()->avg_pool_backward(dt, xd.raw_data(), y.raw_data(), gyd.raw_data(), gx.raw_data(), g));
  } else {
    be.avg_pool_forward(dt, xd.raw_data(), y.raw_data(), g);
    be.avg_pool_backward(dt, xd.raw_data(), y.raw_data(), gyd.raw_data(), gx.raw_data(), g);
  }
  std::vector<double> hx = dzt::vals(x);
  std::string where;
  CHECK_MESSAGE(dzt::close_vectors(dzt::vals(y), ref_pool(g, hx, max), tol, tol, where), "forward: " << where);
  CHECK_MESSAGE(dzt::close_vectors(dzt::vals(gx), ref_pool_backward(g, hx, dzt::vals(gy), max), tol, tol, where),
                "backward: " << where);
}

}  // namespace

TEST_CASE("cudnn pooling: max (unpadded) and average pooling match a direct computation, float64 and float32") {
  if (skip_without_cudnn()) return;
  random::seed(0);
  for (DType dt : {float64, float32}) {
    double tol = dt == float64 ? 1e-12 : 1e-5;
    for (const ConvGeom& g : max_geometries()) check_pool(g, dt, true, tol);
    for (const ConvGeom& g : avg_geometries()) check_pool(g, dt, false, tol);
  }
}

TEST_CASE("cuda average pooling: pool.cu's kernels (cuDNN declines windows wholly in the padding)") {
  if (dzt::skip_without_gpu()) return;
  random::seed(1);
  ConvGeom g = pgeom(2, 2, 5, 4, 2, 1, 1, 2, 2, 1);  // pads 2 and 1 >= windows 2 and 1
  REQUIRE_FALSE(cd::pool_geometry_fits_cudnn(g, false));
  detail::Backend& be = detail::backend_for(Device::cuda(0));
  Tensor x = zeros(Shape{2, 2, 5, 4}, float64, Device::cuda(0)), y = Tensor::empty(Shape{2, 2, g.oh, g.ow}, float64, Device::cuda(0));
  CHECK_FALSE(be.library()->avg_pool_forward(float64, x.raw_data(), y.raw_data(), g));
  check_pool(g, float64, false, 1e-12, false);
  // and every geometry cuDNN takes, on pool.cu's kernels too (the library path off)
  for (DType dt : {float64, float32})
    for (const ConvGeom& a : avg_geometries()) check_pool(a, dt, false, dt == float64 ? 1e-12 : 1e-5, false);
}

// --- max pooling's NaN rule on every GPU path ---------------------------------------------------
namespace {
// x (2, 3, 6, 6) of distinct values with NaN at the first, a middle and the last position of
// some 3 x 3 / 3 windows (and one window with two NaN).
Tensor with_nans(DType dt) {
  Tensor x = random::randn(Shape{2, 3, 6, 6}, float64) * 10.0;
  std::vector<double> v = dzt::vals(x);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto at = [&](int n, int c, int r, int q) -> double& { return v[((n * 3 + c) * 6 + r) * 6 + q]; };
  at(0, 0, 0, 0) = nan;  // window (0, 0): the first position
  at(0, 1, 4, 4) = nan;  // window (1, 1): the middle
  at(1, 2, 2, 5) = nan;  // window (0, 1): the last
  at(1, 0, 3, 4) = nan, at(1, 0, 5, 3) = nan;  // window (1, 1): two, the first at position 1
  return array(v, x.shape(), dt);
}
}  // namespace

TEST_CASE("cuda max pooling: a NaN in a window gives NaN and its gradient goes to the first NaN, on every path") {
  if (dzt::skip_without_gpu()) return;
  struct Restore {
    ~Restore() { detail::set_conv_library_path(true); }
  } restore;
  for (DType dt : {float64, float32}) {
    CAPTURE(dtype_name(dt));
    for (Pair pad : {Pair(0), Pair(1)}) {  // unpadded: cuDNN's (library path on); padded: pool.cu's
      CAPTURE(pad.str());
      random::seed(12);
      Tensor x = with_nans(dt);
      Tensor gy = (random::randn(Shape{2, 3, 2, 2}, float64) + 5.0).astype(dt);  // distinct, nonzero
      Tensor r = random::randn(x.shape(), float64).astype(dt);
      std::vector<Tensor> out[3];  // CPU, GPU library path, GPU own kernels
      for (int path = 0; path < 3; ++path) {
        detail::set_conv_library_path(path != 2);
        Device dev = path == 0 ? Device::cpu() : Device::cuda(0);
        Variable xv(x.to(dev));
        Variable y = F::pooling(xv, 3, 3, pad);
        F::sum(y * Variable(gy.to(dev))).backward();  // gx: gy at each window's first max or first NaN
        Tensor gx1 = xv.grad().data().to_cpu();
        xv.cleargrad();
        // second order: sum(y^2 gy)'s gradient (NaN at the first NaN), differentiated again
        F::sum(y * y * Variable(gy.to(dev))).backward(false, true);
        Variable gx = xv.grad();
        xv.cleargrad();
        F::sum(gx * Variable(r.to(dev))).backward();
        out[path] = {y.data().to_cpu(), gx1, gx.data().to_cpu(), xv.grad().data().to_cpu()};
      }
      const std::vector<double> y0 = dzt::vals(out[0][0]), g0 = dzt::vals(out[0][1]);
      if (pad.h == 0) {  // the rule on the CPU: NaN windows, gy at the first NaN
        CHECK(std::isnan(y0[0]));
        CHECK(g0[0] == dzt::vals(gy)[0]);
        CHECK(g0[1] == 0.0);
        CHECK(std::isnan(y0[(0 * 3 + 1) * 4 + 3]));
        CHECK(g0[((0 * 3 + 1) * 6 + 4) * 6 + 4] == dzt::vals(gy)[(0 * 3 + 1) * 4 + 3]);
        CHECK(g0[((1 * 3 + 2) * 6 + 2) * 6 + 5] == dzt::vals(gy)[(1 * 3 + 2) * 4 + 1]);
        CHECK(g0[((1 * 3 + 0) * 6 + 3) * 6 + 4] == dzt::vals(gy)[(1 * 3 + 0) * 4 + 3]);
        CHECK(g0[((1 * 3 + 0) * 6 + 5) * 6 + 3] == 0.0);  // the window's second NaN gets nothing
      }
      for (int path = 1; path < 3; ++path) {
        CAPTURE(path);
        const char* what[] = {"y", "gx", "gx of sum(y^2 gy)", "its gradient"};
        for (int i = 0; i < 4; ++i) {
          CAPTURE(what[i]);
          std::vector<double> a = dzt::vals(out[path][i]), b = dzt::vals(out[0][i]);
          REQUIRE(a.size() == b.size());
          for (std::size_t k = 0; k < a.size(); ++k) {
            CAPTURE(k);
            CHECK(std::isnan(a[k]) == std::isnan(b[k]));
            if (!std::isnan(b[k])) CHECK(a[k] == doctest::Approx(b[k]).epsilon(1e-6));
          }
        }
      }
    }
  }
}

TEST_CASE("cudnn pooling: offset views are copied for cuDNN, unaligned outputs declined") {
  if (skip_without_cudnn()) return;
  random::seed(13);
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  Tensor x5 = random::randn(Shape{4, 1, 5, 6}, float32) * 10.0;
  Tensor v5 = x5.to(gpu)[Slice(1, std::nullopt)];  // 120 bytes in
  REQUIRE_FALSE(cd::cudnn_aligned(v5.raw_data()));
  ConvGeom g = pgeom(3, 1, 5, 6, 2, 2, 2, 2);
  for (bool max : {true, false}) {
    CAPTURE(max);
    Tensor y = Tensor::empty(Shape{3, 1, g.oh, g.ow}, float32, gpu);
    bool took = max ? be.library()->max_pool_forward(float32, v5.raw_data(), y.raw_data(), g)
                    : be.library()->avg_pool_forward(float32, v5.raw_data(), y.raw_data(), g);
    CHECK(took);
    Tensor h = x5[Slice(1, std::nullopt)].copy();
    std::vector<double> want = ref_pool(g, dzt::vals(h), max);
    std::string where;
    CHECK_MESSAGE(dzt::close_vectors(dzt::vals(y), want, 1e-5, 1e-5, where), where);
    Tensor big = full(Shape{3 * g.oh * g.ow + 1}, 7.0, float32, gpu);
    void* out = static_cast<char*>(big.raw_data()) + 4;
    CHECK_FALSE(max ? be.library()->max_pool_forward(float32, v5.raw_data(), out, g)
                    : be.library()->avg_pool_forward(float32, v5.raw_data(), out, g));
    CHECK(big.sum().item<float>() == 7.0f * (3 * g.oh * g.ow + 1));
  }
}

TEST_CASE("cudnn pooling: padded max pooling and other dtypes are declined, the output untouched") {
  if (dzt::skip_without_gpu()) return;
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  ConvGeom g = pgeom(1, 2, 5, 5, 3, 3, 2, 2, 1, 1);
  Tensor x = random::randn(Shape{1, 2, 5, 5}, float32, gpu);
  Tensor y = full(Shape{1, 2, g.oh, g.ow}, 7.0, float32, gpu);
  CHECK_FALSE(be.library()->max_pool_forward(float32, x.raw_data(), y.raw_data(), g));
  Tensor gx = full(Shape{1, 2, 5, 5}, 7.0, float32, gpu);
  CHECK_FALSE(be.library()->max_pool_backward(float32, x.raw_data(), y.raw_data(), y.raw_data(), gx.raw_data(), g));
  ConvGeom u = pgeom(1, 2, 4, 4, 2, 2, 2, 2);
  Tensor xi = ones(Shape{1, 2, 4, 4}, int64, gpu), yi = full(Shape{1, 2, 2, 2}, 7.0, int64, gpu);
  CHECK_FALSE(be.library()->max_pool_forward(int64, xi.raw_data(), yi.raw_data(), u));
  be.synchronize();
  CHECK(y.sum().item<float>() == 7.0f * g.oh * g.ow * 2);
  CHECK(gx.sum().item<float>() == 7.0f * 50);
  CHECK(yi.sum().item<std::int64_t>() == 7 * 8);
}

// --- through dezero::F: the GPU against the CPU, first and second order ------------------------
TEST_CASE("cuda pooling: F::pooling and F::average_pooling on the GPU match the CPU, with double backward") {
  if (dzt::skip_without_gpu()) return;
  random::seed(2);
  struct Case {
    Pair k, s, p;
  };
  const Case cases[] = {{2, 2, 0}, {3, 1, 0}, {{3, 2}, {2, 1}, 0}, {3, 2, 1}, {{2, 3}, 1, {1, 2}}};
  for (const Case& c : cases) {
    CAPTURE(c.k.str());
    CAPTURE(c.s.str());
    CAPTURE(c.p.str());
    Tensor x = random::randn(Shape{2, 3, 7, 8}, float64) * 10.0;  // distinct maxima
    for (bool avg : {false, true}) {
      CAPTURE(avg);
      auto f = [&](const Variable& v) {
        return avg ? F::average_pooling(v, c.k, c.s, c.p) : F::pooling(v, c.k, c.s, c.p);
      };
      Tensor gy = random::randn(f(Variable(x)).shape(), float64);
      std::vector<Tensor> out[2];
      for (int d = 0; d < 2; ++d) {  // loss = sum(y^3 gy); then sum(gx^2) differentiated again
        Device dev = d == 0 ? Device::cpu() : Device::cuda(0);
        Variable xv(x.to(dev));
        Variable y = f(xv);
        F::sum(y * y * y * Variable(gy.to(dev))).backward(false, true);
        Variable gx = xv.grad();
        xv.cleargrad();
        F::sum(gx * gx).backward();
        out[d] = {y.data().to_cpu(), gx.data().to_cpu(), xv.grad().data().to_cpu()};
      }
      const char* what[] = {"y", "gx", "ggx"};
      for (int i = 0; i < 3; ++i) {
        CAPTURE(what[i]);
        CHECK(dzt::allclose(out[1][i], out[0][i], 1e-10, 1e-10));
      }
    }
  }
}

// Microseconds per call, float32: W2's first pooling (2 x 2 / 2 of (100, 16, 28, 28)) through
// cuDNN and through pool.cu's indexed kernels, and the global average pooling of ResNet50's
// last block. Printed for tools/gpu-check.sh; asserts that cuDNN took the calls.
TEST_CASE("cudnn pooling: timings") {
  if (skip_without_cudnn()) return;
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  auto time_us = [](auto&& call) { return dzt::gpu_time_us(50, call); };
  ConvGeom g = pgeom(100, 16, 28, 28, 2, 2, 2, 2);
  Tensor x = random::randn(Shape{g.n, g.c, g.h, g.w}, float32, gpu);
  Tensor y = Tensor::empty(Shape{g.n, g.c, g.oh, g.ow}, float32, gpu), gy = random::randn(y.shape(), float32, gpu);
  Tensor gx = Tensor::empty(x.shape(), float32, gpu), idx = Tensor::empty(y.shape(), int64, gpu);
  bool took = true;
  double lib_f = time_us([&] { took = be.library()->max_pool_forward(float32, x.raw_data(), y.raw_data(), g) && took; });
  double lib_b = time_us([&] {
    took = be.library()->max_pool_backward(float32, x.raw_data(), y.raw_data(), gy.raw_data(), gx.raw_data(), g) && took;
  });
  auto* ip = static_cast<std::int64_t*>(idx.raw_data());
  double own_f = time_us([&] { be.max_pool_forward(float32, x.raw_data(), y.raw_data(), ip, g); });
  double own_b = time_us([&] { be.max_pool_backward(float32, gy.raw_data(), ip, gx.raw_data(), g); });
  CHECK(took);
  ConvGeom a = pgeom(8, 2048, 7, 7, 7, 7, 1, 1);
  Tensor xa = random::randn(Shape{a.n, a.c, a.h, a.w}, float32, gpu),
         ya = Tensor::empty(Shape{a.n, a.c, 1, 1}, float32, gpu);
  Tensor gxa = Tensor::empty(xa.shape(), float32, gpu);
  double avg_f = time_us([&] { took = be.library()->avg_pool_forward(float32, xa.raw_data(), ya.raw_data(), a) && took; });
  double avg_b = time_us([&] {
    took = be.library()->avg_pool_backward(float32, xa.raw_data(), ya.raw_data(), ya.raw_data(), gxa.raw_data(), a) && took;
  });
  CHECK(took);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "pooling 2x2/2 of (100, 16, 28, 28): cuDNN forward %.1f us backward %.1f us; pool.cu (indexed) "
                "forward %.1f us backward %.1f us; average 7x7 of (8, 2048, 7, 7): forward %.1f us backward %.1f us",
                lib_f, lib_b, own_f, own_b, avg_f, avg_b);
  MESSAGE("cudnn timing: " << buf);
}
