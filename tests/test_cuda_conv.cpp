// tests/test_cuda_conv.cpp - the GPU convolution path through cuDNN (cuda/cudnn_conv.cpp).
//
// Everywhere: the algorithm choice as host code (detail/conv_algo.hpp: the cache key, the
// workspace and math-mode rule, the version check, the geometries cuDNN takes), the
// TF32 switch, and in a CUDA build that the cuDNN found by the build loads and is 8.x or
// later. With a GPU: the backend's three entry points against a direct convolution in
// double on the host, on several geometries, float32 and float64, with TF32 allowed and
// with no workspace, a deconvolution's geometry, the cases cuDNN declines, the pool
// getting every workspace back, a stream of its own, the timings gpu-check prints, and
// F::conv2d / F::deconv2d on the GPU (cuDNN) against the CPU backend, with gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dezero/dezero.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/cuda/detail/conv_algo.hpp"
#include "support/test_util.hpp"

using namespace dezero;

namespace {

namespace cd = cuda::detail;
using detail::ConvGeom;

// (n, c, h, w) * (oc, c, kh, kw), stride, pad; oh/ow from the convolution's formula.
ConvGeom geom(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t oc, std::int64_t kh,
              std::int64_t kw, std::int64_t sh = 1, std::int64_t sw = 1, std::int64_t ph = 0, std::int64_t pw = 0) {
  ConvGeom g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.oc = oc, g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw;
  g.oh = (h + 2 * ph - kh) / sh + 1;
  g.ow = (w + 2 * pw - kw) / sw + 1;
  return g;
}

std::string str(const ConvGeom& g) {
  return "x (" + std::to_string(g.n) + ", " + std::to_string(g.c) + ", " + std::to_string(g.h) + ", " +
         std::to_string(g.w) + ") W (" + std::to_string(g.oc) + ", " + std::to_string(g.c) + ", " +
         std::to_string(g.kh) + ", " + std::to_string(g.kw) + ") stride (" + std::to_string(g.sh) + ", " +
         std::to_string(g.sw) + ") pad (" + std::to_string(g.ph) + ", " + std::to_string(g.pw) + ")";
}

}  // namespace

// --- host code: no GPU needed ------------------------------------------------------------------
TEST_CASE("cudnn conv: the algorithm cache key holds every field that changes the choice") {
  cd::ConvAlgoKey a;
  a.g = geom(2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1);
  a.workspace_limit = 8u << 20;
  cd::ConvAlgoKeyHash hash;
  cd::ConvAlgoKey b = a;
  CHECK(a == b);
  CHECK(hash(a) == hash(b));
  std::vector<cd::ConvAlgoKey> variants;
  auto vary = [&](auto change) {
    cd::ConvAlgoKey k = a;
    change(k);
    variants.push_back(k);
  };
  vary([](cd::ConvAlgoKey& k) { k.pass = cd::ConvPass::backward_data; });
  vary([](cd::ConvAlgoKey& k) { k.pass = cd::ConvPass::backward_filter; });
  vary([](cd::ConvAlgoKey& k) { k.device = 1; });
  vary([](cd::ConvAlgoKey& k) { k.dtype = float64; });
  vary([](cd::ConvAlgoKey& k) { k.allow_tf32 = true; });
  vary([](cd::ConvAlgoKey& k) { k.workspace_limit = 0; });
  vary([](cd::ConvAlgoKey& k) { k.g.n = 3; });
  vary([](cd::ConvAlgoKey& k) { k.g.c = 4; });
  vary([](cd::ConvAlgoKey& k) { k.g.h = 8; });
  vary([](cd::ConvAlgoKey& k) { k.g.w = 8; });
  vary([](cd::ConvAlgoKey& k) { k.g.kh = 2; });
  vary([](cd::ConvAlgoKey& k) { k.g.kw = 2; });
  vary([](cd::ConvAlgoKey& k) { k.g.sh = 2; });
  vary([](cd::ConvAlgoKey& k) { k.g.sw = 2; });
  vary([](cd::ConvAlgoKey& k) { k.g.ph = 0; });
  vary([](cd::ConvAlgoKey& k) { k.g.pw = 0; });
  vary([](cd::ConvAlgoKey& k) { k.g.oh = 6; });
  vary([](cd::ConvAlgoKey& k) { k.g.ow = 6; });
  vary([](cd::ConvAlgoKey& k) { k.g.oc = 5; });
  std::unordered_map<cd::ConvAlgoKey, int, cd::ConvAlgoKeyHash> cache;
  cache[a] = -1;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    CAPTURE(i);
    CHECK(variants[i] != a);
    cache[variants[i]] = static_cast<int>(i);
  }
  CHECK(cache.size() == variants.size() + 1);  // every variant is its own entry
  CHECK(cache.at(b) == -1);                    // and the original is found again
}

TEST_CASE("cudnn conv: the fastest algorithm that succeeded, fits the workspace and keeps the math mode") {
  using M = cd::ConvMath;
  const std::size_t MiB = 1u << 20;
  // cuDNN lists rows fastest first
  std::vector<cd::ConvAlgoCandidate> rows = {
      {7, false, 0, M::fma},            // failed
      {6, true, 64 * MiB, M::fma},      // too much workspace
      {5, true, 0, M::tensor_op},       // TF32 tensor cores
      {4, true, 2 * MiB, M::fma},       // the pick without TF32
      {1, true, 0, M::fma},
  };
  cd::ConvAlgoChoice c = cd::choose_conv_algo(rows, 8 * MiB, float32, false, 0);
  CHECK(c.algo == 4);
  CHECK(c.math == M::fma);
  CHECK(c.workspace == 2 * MiB);
  CHECK_FALSE(c.fallback);
  // TF32 allowed: the tensor-op row wins
  c = cd::choose_conv_algo(rows, 8 * MiB, float32, true, 0);
  CHECK(c.algo == 5);
  CHECK(c.math == M::tensor_op);
  // a larger limit: the row that needs 64 MiB
  CHECK(cd::choose_conv_algo(rows, 64 * MiB, float32, false, 0).algo == 6);
  // no workspace at all: the first workspace-free FMA row
  CHECK(cd::choose_conv_algo(rows, 0, float32, false, 0).algo == 1);
  // float64 has no TF32: any math mode but down-conversion
  CHECK(cd::choose_conv_algo(rows, 8 * MiB, float64, false, 0).algo == 5);
  std::vector<cd::ConvAlgoCandidate> conversion = {{3, true, 0, M::tensor_op_allow_conversion}};
  for (DType dt : {float32, float64})
    for (bool tf32 : {false, true}) CHECK(cd::choose_conv_algo(conversion, 8 * MiB, dt, tf32, 9).fallback);
  // nothing usable: the fallback with the requested math mode
  std::vector<cd::ConvAlgoCandidate> none = {{2, false, 0, M::fma}, {3, true, 16 * MiB, M::fma}};
  c = cd::choose_conv_algo(none, 8 * MiB, float32, false, 9);
  CHECK(c.algo == 9);
  CHECK(c.fallback);
  CHECK(c.math == M::fma);
  CHECK(cd::choose_conv_algo({}, 8 * MiB, float64, false, 9).math == M::default_math);
  // the descriptor's request: FMA for float32 without TF32, cuDNN's default otherwise
  CHECK(cd::requested_conv_math(float32, false) == M::fma);
  CHECK(cd::requested_conv_math(float32, true) == M::default_math);
  CHECK(cd::requested_conv_math(float64, false) == M::default_math);
}

TEST_CASE("cudnn conv: cuDNN 8 and later are used, older ones are not") {
  CHECK(cd::cudnn_version_major(8907) == 8);    // 8.9.7
  CHECK(cd::cudnn_version_major(90100) == 9);   // 9.1.0
  CHECK(cd::cudnn_version_major(91900) == 9);   // 9.19.0
  CHECK(cd::cudnn_version_major(7605) == 7);    // 7.6.5
  CHECK(cd::cudnn_version_usable(8000));
  CHECK(cd::cudnn_version_usable(90100));
  CHECK_FALSE(cd::cudnn_version_usable(7605));
  CHECK_FALSE(cd::cudnn_version_usable(0));  // did not load
}

TEST_CASE("cudnn conv: the geometries cuDNN's descriptors take") {
  CHECK(cd::conv_geometry_fits_cudnn(geom(2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1)));
  CHECK(cd::conv_geometry_fits_cudnn(geom(1, 1, 5, 6, 2, 2, 3, 2, 1, 0, 1)));
  CHECK(cd::conv_geometry_fits_cudnn(geom(1, 3, 4, 4, 2, 4, 4)));  // kernel = input: 1x1 out
  ConvGeom g = geom(2, 3, 7, 7, 4, 3, 3, 2, 2, 1, 1);
  // a deconvolution's outsize one larger (stride 2): the same conv output size, still cuDNN
  ConvGeom d = geom(2, 3, 8, 8, 4, 3, 3, 2, 2, 1, 1);
  CHECK(d.oh == g.oh);
  CHECK(cd::conv_geometry_fits_cudnn(d));
  ConvGeom bad = g;
  bad.oh += 1;  // an outsize beyond stride - 1: not a cuDNN convolution
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(bad));
  bad = g;
  bad.kh = 10;  // kernel larger than the padded input
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(bad));
  bad = g;
  bad.oc = 0;
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(bad));
  bad = g;
  bad.sh = 0;
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(bad));
  bad = g;
  bad.ph = -1;
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(bad));
  // more than INT_MAX elements in x: cuDNN's int sizes cannot hold it
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(geom(1024, 64, 256, 256, 1, 1, 1)));
  CHECK(cd::conv_geometry_fits_cudnn(geom(511, 64, 256, 256, 1, 1, 1)));  // just under 2^31 - 1
}

TEST_CASE("cudnn conv: TF32 is off by default and the switch is read back") {
  CHECK_FALSE(cuda::get_allow_tf32());
  cuda::set_allow_tf32(true);
  CHECK(cuda::get_allow_tf32());
  cuda::set_allow_tf32(false);
  CHECK_FALSE(cuda::get_allow_tf32());
}

#ifdef DEZERO_WITH_CUDA
#include "dezero/cuda/detail/libs.hpp"

// No GPU needed: the build's cuDNN loads and is recent enough for the legacy API.
TEST_CASE("cudnn conv: the cuDNN the build found loads and is 8.x or later") {
  std::string path;
  try {
    path = cd::load_gpu_library("cudnn");
  } catch (const DeviceError& e) {
    MESSAGE("skipped: cuDNN does not load here: " << e.what());
    CHECK(cd::cudnn_version() == 0);
    CHECK_FALSE(cd::cudnn_enabled());
    return;
  }
  std::size_t v = cd::cudnn_version();
  MESSAGE("cuDNN " << v << " from " << path);
  CHECK(cd::cudnn_version_major(v) >= 8);
  const char* env = std::getenv("DEZERO_CUDNN");
  CHECK(cd::cudnn_enabled() == !(env != nullptr && std::string(env) == "0"));
}
#endif

// --- with a GPU: the backend's entry points against a direct convolution ---------------------
namespace {

// y (n, oc, oh, ow) = x * W + b, in double on the host (b may be empty).
std::vector<double> ref_forward(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& W,
                                const std::vector<double>& b) {
  std::vector<double> y(g.n * g.oc * g.oh * g.ow, 0.0);
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.oc; ++o)
      for (std::int64_t i = 0; i < g.oh; ++i)
        for (std::int64_t j = 0; j < g.ow; ++j) {
          double acc = b.empty() ? 0.0 : b[o];
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t p = 0; p < g.kh; ++p)
              for (std::int64_t q = 0; q < g.kw; ++q) {
                std::int64_t r = i * g.sh + p - g.ph, s = j * g.sw + q - g.pw;
                if (r < 0 || r >= g.h || s < 0 || s >= g.w) continue;
                acc += x[((n * g.c + c) * g.h + r) * g.w + s] * W[((o * g.c + c) * g.kh + p) * g.kw + q];
              }
          y[((n * g.oc + o) * g.oh + i) * g.ow + j] = acc;
        }
  return y;
}

// gx (n, c, h, w) from gy and W; gW (oc, c, kh, kw) from x and gy.
void ref_backward(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& W,
                  const std::vector<double>& gy, std::vector<double>& gx, std::vector<double>& gW) {
  gx.assign(g.n * g.c * g.h * g.w, 0.0);
  gW.assign(g.oc * g.c * g.kh * g.kw, 0.0);
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.oc; ++o)
      for (std::int64_t i = 0; i < g.oh; ++i)
        for (std::int64_t j = 0; j < g.ow; ++j) {
          double d = gy[((n * g.oc + o) * g.oh + i) * g.ow + j];
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t p = 0; p < g.kh; ++p)
              for (std::int64_t q = 0; q < g.kw; ++q) {
                std::int64_t r = i * g.sh + p - g.ph, s = j * g.sw + q - g.pw;
                if (r < 0 || r >= g.h || s < 0 || s >= g.w) continue;
                std::int64_t xi = ((n * g.c + c) * g.h + r) * g.w + s, wi = ((o * g.c + c) * g.kh + p) * g.kw + q;
                gx[xi] += d * W[wi];
                gW[wi] += d * x[xi];
              }
        }
}


// Runs the three passes on cuda:0 for g (cuDNN must take each) and compares them with the
// host's direct convolution.
void check_geometry(const ConvGeom& g, DType dt, bool bias, double rtol, double atol) {
  CAPTURE(str(g));
  CAPTURE(dtype_name(dt));
  CAPTURE(bias);
  Device gpu = Device::cuda(0);
  Tensor x = random::randn(Shape{g.n, g.c, g.h, g.w}, dt);
  Tensor W = random::randn(Shape{g.oc, g.c, g.kh, g.kw}, dt);
  Tensor b = random::randn(Shape{g.oc}, dt);
  Tensor gy = random::randn(Shape{g.n, g.oc, g.oh, g.ow}, dt);
  Tensor xd = x.to(gpu), Wd = W.to(gpu), bd = b.to(gpu), gyd = gy.to(gpu);
  Tensor y = Tensor::empty(Shape{g.n, g.oc, g.oh, g.ow}, dt, gpu);
  Tensor gx = Tensor::empty(x.shape(), dt, gpu), gW = Tensor::empty(W.shape(), dt, gpu);
  detail::Backend& be = detail::backend_for(gpu);
  REQUIRE(be.conv2d_forward(dt, xd.raw_data(), Wd.raw_data(), bias ? bd.raw_data() : nullptr, y.raw_data(), g));
  REQUIRE(be.conv2d_backward_data(dt, Wd.raw_data(), gyd.raw_data(), gx.raw_data(), g));
  REQUIRE(be.conv2d_backward_filter(dt, xd.raw_data(), gyd.raw_data(), gW.raw_data(), g));
  std::vector<double> hx = dzt::vals(x), hW = dzt::vals(W), hgy = dzt::vals(gy), rgx, rgW;
  std::vector<double> ry = ref_forward(g, hx, hW, bias ? dzt::vals(b) : std::vector<double>{});
  ref_backward(g, hx, hW, hgy, rgx, rgW);
  std::string where;
  CHECK_MESSAGE(dzt::close_vectors(dzt::vals(y), ry, rtol, atol, where), "forward: " << where);
  CHECK_MESSAGE(dzt::close_vectors(dzt::vals(gx), rgx, rtol, atol, where), "backward data: " << where);
  CHECK_MESSAGE(dzt::close_vectors(dzt::vals(gW), rgW, rtol, atol, where), "backward filter: " << where);
}

const std::vector<ConvGeom>& geometries() {
  static const std::vector<ConvGeom> gs = {
      geom(2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1),        // 3x3, pad 1
      geom(1, 1, 5, 6, 2, 2, 3, 2, 1, 0, 1),        // rectangular kernel, stride and pad per axis
      geom(3, 4, 8, 8, 5, 1, 1),                    // 1x1
      geom(2, 2, 9, 7, 3, 3, 3, 2, 2, 1, 0),        // stride 2, odd sizes
      geom(1, 3, 4, 4, 2, 4, 4),                    // kernel = input: one output pixel
      geom(4, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1),    // the CNN's second convolution (W2)
      geom(8, 1, 28, 28, 16, 3, 3, 1, 1, 1, 1),     // and its first, on MNIST's size
  };
  return gs;
}

// cuDNN must be there for the GPU cases to mean anything; say so where it is not.
bool skip_without_cudnn() {
  if (dzt::skip_without_gpu()) return true;
#ifdef DEZERO_WITH_CUDA
  if (!cd::cudnn_enabled()) {
    MESSAGE("skipped: cuDNN is not used here (version " << cd::cudnn_version() << ", DEZERO_CUDNN="
                                                        << (std::getenv("DEZERO_CUDNN") ? std::getenv("DEZERO_CUDNN") : "")
                                                        << ")");
    return true;
  }
#endif
  return false;
}

}  // namespace

TEST_CASE("cudnn conv: forward, backward data and backward filter match a direct convolution (float64)") {
  if (skip_without_cudnn()) return;
  random::seed(0);
  for (const ConvGeom& g : geometries())
    for (bool bias : {true, false}) check_geometry(g, float64, bias, 1e-10, 1e-10);
}

TEST_CASE("cudnn conv: float32 matches to float32 precision (no TF32 by default)") {
  if (skip_without_cudnn()) return;
  REQUIRE_FALSE(cuda::get_allow_tf32());
  random::seed(1);
  // sums of up to 6272 products of N(0, 1) values: float32 rounding (also through Winograd or
  // FFT algorithms) stays within 1e-4 + 1e-4 |y|; TF32 (10-bit mantissas, ~5e-4 per product) does not
  for (const ConvGeom& g : geometries()) check_geometry(g, float32, true, 1e-4, 1e-4);
}

TEST_CASE("cudnn conv: TF32 allowed still computes the convolution (to TF32 precision)") {
  if (skip_without_cudnn()) return;
  cuda::set_allow_tf32(true);
  random::seed(2);
  try {
    for (const ConvGeom& g : geometries()) check_geometry(g, float32, true, 2e-2, 5e-2);
  } catch (...) {
    cuda::set_allow_tf32(false);
    throw;
  }
  cuda::set_allow_tf32(false);
  CHECK_FALSE(cuda::get_allow_tf32());
}

TEST_CASE("cudnn conv: with no workspace allowed the workspace-free algorithms still give the result") {
  if (skip_without_cudnn()) return;
  std::size_t old = cuda::get_max_workspace_size();
  cuda::set_max_workspace_size(0);
  random::seed(3);
  try {
    for (const ConvGeom& g : geometries()) check_geometry(g, float64, true, 1e-10, 1e-10);
    check_geometry(geometries()[5], float32, true, 1e-4, 1e-4);
  } catch (...) {
    cuda::set_max_workspace_size(old);
    throw;
  }
  cuda::set_max_workspace_size(old);
  // and a large limit (algorithms that want workspace may be picked)
  cuda::set_max_workspace_size(std::size_t(256) << 20);
  check_geometry(geometries()[5], float32, true, 1e-4, 1e-4);
  cuda::set_max_workspace_size(old);
}

TEST_CASE("cudnn conv: a deconvolution's geometry (backward data is deconv2d's forward)") {
  if (skip_without_cudnn()) return;
  random::seed(4);
  // deconv2d of x (2, 4, 5, 5) with W (4, 3, 3, 3), stride 2, pad 1: outsize 2 * 4 + 3 - 2 = 9,
  // and 10 (DeZero's outsize may add up to stride - 1); as a conv: (2, 3, 9|10, 9|10) -> (2, 4, 5, 5)
  for (std::int64_t out : {9, 10}) {
    ConvGeom g = geom(2, 3, out, out, 4, 3, 3, 2, 2, 1, 1);
    REQUIRE(g.oh == 5);
    check_geometry(g, float64, false, 1e-10, 1e-10);
  }
}

TEST_CASE("cudnn conv: other dtypes and geometries cuDNN cannot express are declined, untouched") {
  if (dzt::skip_without_gpu()) return;
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  ConvGeom g = geom(1, 2, 5, 5, 3, 3, 3);
  Tensor x = ones(Shape{1, 2, 5, 5}, int64, gpu), W = ones(Shape{3, 2, 3, 3}, int64, gpu);
  Tensor y = full(Shape{1, 3, 3, 3}, 7.0, int64, gpu);
  CHECK_FALSE(be.conv2d_forward(int64, x.raw_data(), W.raw_data(), nullptr, y.raw_data(), g));
  CHECK(y.sum().item<std::int64_t>() == 7 * 27);
  ConvGeom bad = g;
  bad.oh = 4;  // not (5 - 3) / 1 + 1
  Tensor xf = ones(Shape{1, 2, 5, 5}, float32, gpu), Wf = ones(Shape{3, 2, 3, 3}, float32, gpu);
  Tensor yf = full(Shape{1, 3, 4, 3}, 7.0, float32, gpu);
  CHECK_FALSE(be.conv2d_forward(float32, xf.raw_data(), Wf.raw_data(), nullptr, yf.raw_data(), bad));
  CHECK(yf.sum().item<float>() == 7.0f * 36);
  CHECK_FALSE(be.conv2d_backward_data(int32, Wf.raw_data(), yf.raw_data(), xf.raw_data(), g));
  CHECK_FALSE(be.conv2d_backward_filter(int32, xf.raw_data(), yf.raw_data(), Wf.raw_data(), g));
}

TEST_CASE("cudnn conv: every workspace goes back to the pool; a second call reuses the cached algorithm") {
  if (skip_without_cudnn()) return;
  Device gpu = Device::cuda(0);
  std::size_t old = cuda::get_max_workspace_size();
  cuda::set_max_workspace_size(std::size_t(64) << 20);
  ConvGeom g = geom(16, 16, 28, 28, 32, 5, 5, 1, 1, 2, 2);
  Tensor x = random::randn(Shape{g.n, g.c, g.h, g.w}, float32, gpu);
  Tensor W = random::randn(Shape{g.oc, g.c, g.kh, g.kw}, float32, gpu);
  Tensor y = Tensor::empty(Shape{g.n, g.oc, g.oh, g.ow}, float32, gpu);
  Tensor y2 = Tensor::empty(y.shape(), float32, gpu);
  Tensor gx = Tensor::empty(x.shape(), float32, gpu), gW = Tensor::empty(W.shape(), float32, gpu);
  detail::Backend& be = detail::backend_for(gpu);
  be.synchronize();
  std::size_t used = cuda::memory_pool(0).used_bytes();
  REQUIRE(be.conv2d_forward(float32, x.raw_data(), W.raw_data(), nullptr, y.raw_data(), g));
  REQUIRE(be.conv2d_backward_data(float32, W.raw_data(), y.raw_data(), gx.raw_data(), g));
  REQUIRE(be.conv2d_backward_filter(float32, x.raw_data(), y.raw_data(), gW.raw_data(), g));
  REQUIRE(be.conv2d_forward(float32, x.raw_data(), W.raw_data(), nullptr, y2.raw_data(), g));
  be.synchronize();
  CHECK(cuda::memory_pool(0).used_bytes() == used);
  CHECK(dzt::vals(y) == dzt::vals(y2));  // the same algorithm twice: the same bits
  cuda::set_max_workspace_size(old);
}

TEST_CASE("cudnn conv: on a stream of its own (the handle and the workspace follow the current stream)") {
  if (skip_without_cudnn()) return;
  random::seed(5);
  cuda::Stream s(true);
  {
    cuda::StreamGuard guard(s);
    check_geometry(geometries()[5], float32, true, 1e-4, 1e-4);  // copies to the host synchronise s
  }
  s.synchronize();
  CHECK(s.done());
}

// Milliseconds per call of the three passes and their GFLOP/s (2 * n * oc * oh * ow * c *
// kh * kw each), float32, for the small CNN of W2 (batch 100) and one larger layer. Printed
// for tools/gpu-check.sh; asserts only that cuDNN took every call.
TEST_CASE("cudnn conv: timings") {
  if (skip_without_cudnn()) return;
  struct Layer {
    const char* name;
    ConvGeom g;
  };
  const Layer layers[] = {{"W2 conv1", geom(100, 1, 28, 28, 16, 3, 3, 1, 1, 1, 1)},
                          {"W2 conv2", geom(100, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1)},
                          {"3x3 64->64 at 56x56, batch 32", geom(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1)}};
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  const int reps = 20;
  for (const Layer& l : layers) {
    const ConvGeom& g = l.g;
    Tensor x = random::randn(Shape{g.n, g.c, g.h, g.w}, float32, gpu);
    Tensor W = random::randn(Shape{g.oc, g.c, g.kh, g.kw}, float32, gpu);
    Tensor b = random::randn(Shape{g.oc}, float32, gpu);
    Tensor y = Tensor::empty(Shape{g.n, g.oc, g.oh, g.ow}, float32, gpu);
    Tensor gx = Tensor::empty(x.shape(), float32, gpu), gW = Tensor::empty(W.shape(), float32, gpu);
    double flops = 2.0 * g.n * g.oc * g.oh * g.ow * g.c * g.kh * g.kw;
    std::string line = std::string(l.name) + " " + str(g) + ":";
    for (int pass = 0; pass < 3; ++pass) {
      auto call = [&] {
        if (pass == 0) return be.conv2d_forward(float32, x.raw_data(), W.raw_data(), b.raw_data(), y.raw_data(), g);
        if (pass == 1) return be.conv2d_backward_data(float32, W.raw_data(), y.raw_data(), gx.raw_data(), g);
        return be.conv2d_backward_filter(float32, x.raw_data(), y.raw_data(), gW.raw_data(), g);
      };
      REQUIRE(call());  // the first call chooses the algorithm
      cuda::Event start, end;
      start.record();
      bool all = true;
      for (int i = 0; i < reps; ++i) all = call() && all;
      end.record();
      end.synchronize();
      CHECK(all);
      double ms = start.elapsed_time(end) / reps;
      char buf[128];
      std::snprintf(buf, sizeof buf, " %s %.4f ms (%.0f GFLOP/s)",
                    pass == 0 ? "forward" : pass == 1 ? "backward data" : "backward filter", ms,
                    flops / (ms * 1e-3) / 1e9);
      line += buf;
    }
    MESSAGE("cudnn timing: " << line);
  }
}

// --- through dezero::F: the GPU (cuDNN) against the CPU backend, values and gradients ----
namespace {

struct FCase {
  Shape x, W;
  Pair stride, pad;
};

// loss = sum(f(x, W, b) * gy) on `dev`; returns y, gx, gW, gb on the host.
std::vector<Tensor> run_f(bool deconv, const FCase& c, const Tensor& x0, const Tensor& W0, const Tensor& b0,
                          const Tensor& gy0, Device dev, std::optional<Pair> outsize = std::nullopt) {
  Variable x(x0.to(dev)), W(W0.to(dev)), b(b0.to(dev));
  Variable y = deconv ? F::deconv2d(x, W, b, c.stride, c.pad, outsize) : F::conv2d(x, W, b, c.stride, c.pad);
  Variable loss = F::sum(y * Variable(gy0.to(dev)));
  loss.backward();
  return {y.data().to_cpu(), x.grad().data().to_cpu(), W.grad().data().to_cpu(), b.grad().data().to_cpu()};
}

void check_f(bool deconv, const FCase& c, DType dt, double rtol, double atol,
             std::optional<Pair> outsize = std::nullopt) {
  CAPTURE(deconv);
  CAPTURE(dtype_name(dt));
  Tensor x = random::randn(c.x, dt), W = random::randn(c.W, dt);
  Tensor b = random::randn(Shape{deconv ? c.W[1] : c.W[0]}, dt);
  Variable probe = deconv ? F::deconv2d(Variable(x), Variable(W), Variable(b), c.stride, c.pad, outsize)
                          : F::conv2d(Variable(x), Variable(W), Variable(b), c.stride, c.pad);
  Tensor gy = random::randn(probe.shape(), dt);
  std::vector<Tensor> cpu = run_f(deconv, c, x, W, b, gy, Device::cpu(), outsize);
  std::vector<Tensor> gpu = run_f(deconv, c, x, W, b, gy, Device::cuda(0), outsize);
  const char* what[] = {"y", "gx", "gW", "gb"};
  for (int i = 0; i < 4; ++i) {
    CAPTURE(what[i]);
    CHECK(cpu[i].shape() == gpu[i].shape());
    CHECK(dzt::allclose(gpu[i], cpu[i], rtol, atol));
  }
}

}  // namespace

TEST_CASE("cudnn conv: F::conv2d and F::deconv2d on the GPU match the CPU, values and gradients") {
  if (skip_without_cudnn()) return;
  random::seed(6);
  const FCase convs[] = {
      {Shape{2, 3, 7, 7}, Shape{4, 3, 3, 3}, 1, 1},
      {Shape{1, 2, 5, 6}, Shape{3, 2, 2, 3}, Pair{2, 1}, Pair{0, 1}},
      {Shape{3, 4, 8, 8}, Shape{5, 4, 1, 1}, 1, 0},
      {Shape{2, 2, 9, 7}, Shape{3, 2, 3, 3}, 2, Pair{1, 0}},
  };
  for (const FCase& c : convs) {
    check_f(false, c, float64, 1e-9, 1e-9);
    check_f(false, c, float32, 1e-4, 1e-4);
  }
  // deconv2d: W (C, OC, KH, KW); its forward is cuDNN's backward data
  const FCase deconvs[] = {
      {Shape{2, 4, 5, 5}, Shape{4, 3, 3, 3}, 2, 1},
      {Shape{1, 3, 4, 6}, Shape{3, 2, 2, 3}, Pair{1, 2}, Pair{0, 1}},
  };
  for (const FCase& c : deconvs) {
    check_f(true, c, float64, 1e-9, 1e-9);
    check_f(true, c, float32, 1e-4, 1e-4);
  }
  check_f(true, deconvs[0], float64, 1e-9, 1e-9, Pair{10, 10});  // outsize 1 larger than the formula's 9
}
