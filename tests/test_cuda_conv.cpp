// tests/test_cuda_conv.cpp - the GPU convolution path through cuDNN (gpu/cudnn_conv.cpp).
//
// Everywhere: the algorithm choice as host code (detail/conv_algo.hpp: the cache key, the
// workspace and math-mode rule, what follows a run-time failure, the version check, the
// geometries cuDNN takes, the 16-byte alignment rule on an offset view), the TF32 switch,
// and in a CUDA build that the cuDNN found by the build loads, is 8.x or later, and says
// why it is not used when it is not. With a GPU: the backend's three entry points against
// a direct convolution in double on the host, on several geometries (a depthwise and a
// grouped one among them: cudnnSetConvolutionGroupCount), float32 and float64,
// with TF32 allowed and with no workspace, a deconvolution's geometry, the cases cuDNN
// declines, a call that fails at run time (the retry and what the cache keeps), offset
// views, the pool getting every workspace back, a stream of its own, the timings
// gpu-check prints, and F::conv2d / F::deconv2d on the GPU (cuDNN) against the CPU
// backend, with gradients.
//
// float32 tolerances scale with the reduction: a sum of K products rounds to about
// u sqrt(K) times the products' norm (u = 2^-24), whatever the order of summation; TF32
// (10-bit operands) adds about 2^-11 times that norm, which the FMA bound rejects.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dezero/dezero.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#include "support/cudnn.hpp"
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

// g with `groups` channel groups: W (oc, c/groups, kh, kw).
ConvGeom grouped(ConvGeom g, std::int64_t groups) {
  g.groups = groups;
  return g;
}

std::string str(const ConvGeom& g) {
  return "x (" + std::to_string(g.n) + ", " + std::to_string(g.c) + ", " + std::to_string(g.h) + ", " +
         std::to_string(g.w) + ") W (" + std::to_string(g.oc) + ", " + std::to_string(g.c / g.groups) + ", " +
         std::to_string(g.kh) + ", " + std::to_string(g.kw) + ") stride (" + std::to_string(g.sh) + ", " +
         std::to_string(g.sw) + ") pad (" + std::to_string(g.ph) + ", " + std::to_string(g.pw) + ")" +
         (g.groups != 1 ? " groups " + std::to_string(g.groups) : std::string());
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
  vary([](cd::ConvAlgoKey& k) { k.g.compute = bfloat16; });
  vary([](cd::ConvAlgoKey& k) { k.g.groups = 2; });
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

TEST_CASE("cudnn conv: after a run-time failure the fallback is tried, after the fallback im2col") {
  using M = cd::ConvMath;
  const int fb = 0;  // the pass's workspace-free algorithm (cuDNN's IMPLICIT_GEMM / ALGO_0 are 0)
  cd::ConvAlgoChoice pick{5, M::fma, 1u << 20, false};
  cd::ConvAlgoChoice next = cd::conv_algo_after_failure(pick, float32, false, fb);
  CHECK(next.algo == fb);
  CHECK(next.fallback);
  CHECK(next.math == M::fma);
  CHECK(next.workspace == 0);
  CHECK(cd::conv_algo_after_failure(pick, float64, false, fb).math == M::default_math);
  CHECK(cd::conv_algo_after_failure(pick, float32, true, fb).math == M::default_math);  // TF32 allowed
  // the fallback itself failed: nothing is left (im2col)
  CHECK(cd::conv_algo_after_failure(next, float32, false, fb).algo == -1);
  // a heuristic pick that was the fallback with the same math: im2col at once; with another math, the fallback
  CHECK(cd::conv_algo_after_failure({fb, M::fma, 0, false}, float32, false, fb).algo == -1);
  CHECK(cd::conv_algo_after_failure({fb, M::tensor_op, 0, false}, float64, false, fb).algo == fb);
  CHECK(cd::conv_algo_after_failure(cd::ConvAlgoChoice{}, float32, false, fb).algo == -1);
}

TEST_CASE("cudnn alignment: 16 bytes; an offset view such as x[1:] of an (n, 1, 5, 5) float32 tensor is not") {
  CHECK(cd::kCudnnAlignment == 16);
  CHECK(cd::cudnn_aligned(nullptr));  // no bias
  alignas(64) static unsigned char buf[128];
  CHECK(cd::cudnn_aligned(buf));
  CHECK(cd::cudnn_aligned(buf + 16));
  CHECK(cd::cudnn_aligned(buf + 64));
  for (int off : {1, 4, 8, 12, 100}) {
    CAPTURE(off);
    CHECK_FALSE(cd::cudnn_aligned(buf + off));
  }
  // a real view: 1 * 5 * 5 float32 = 100 bytes into the storage, which the allocator aligns
  Tensor x = random::randn(Shape{3, 1, 5, 5}, float32);
  Tensor v = x[Slice(1, std::nullopt)];
  CHECK(v.shape() == Shape{2, 1, 5, 5});
  CHECK(static_cast<const char*>(v.raw_data()) - static_cast<const char*>(x.raw_data()) == 100);
  CHECK(cd::cudnn_aligned(x.raw_data()));
  CHECK_FALSE(cd::cudnn_aligned(v.raw_data()));
  // float64 (n, 2, 1, 1): 16 bytes per image, so x[1:] is aligned and goes to cuDNN as it is
  Tensor d = random::randn(Shape{3, 2, 1, 1}, float64);
  CHECK(cd::cudnn_aligned(d[Slice(1, std::nullopt)].raw_data()));
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
  // groups (cudnnSetConvolutionGroupCount) must divide both channel counts
  CHECK(cd::conv_geometry_fits_cudnn(grouped(geom(2, 6, 7, 7, 4, 3, 3, 1, 1, 1, 1), 2)));
  CHECK(cd::conv_geometry_fits_cudnn(grouped(geom(2, 6, 7, 7, 6, 3, 3, 1, 1, 1, 1), 6)));  // depthwise
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(grouped(geom(2, 6, 7, 7, 4, 3, 3), 4)));         // 6 % 4
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(grouped(geom(2, 6, 7, 7, 4, 3, 3), 3)));         // 4 % 3
  CHECK_FALSE(cd::conv_geometry_fits_cudnn(grouped(geom(2, 6, 7, 7, 6, 3, 3), 0)));
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
#include "dezero/gpu/libs.hpp"

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
  const bool off = env != nullptr && std::string(env) == "0";
  // why cuDNN is not used, "" when it is; with a GPU this makes the device's handle first
  const std::string why = cd::cudnn_unavailable_reason();
  if (!why.empty()) MESSAGE("cuDNN unavailable: " << why);
  CHECK(cd::cudnn_enabled() == why.empty());
  if (off) {
    CHECK(why == "DEZERO_CUDNN=0 in the environment");
  } else if (!cuda::is_available()) {
    CHECK(why.empty());  // descriptors need no GPU, and no handle is made without one
  }
}
#endif

// --- with a GPU: the backend's entry points against a direct convolution ---------------------
namespace {

// y (n, oc, oh, ow) = x * W + b, in double on the host (b may be empty); norm[i] is the
// 2-norm of the terms summed into y[i] (the products and the bias), for the float32 bounds.
std::vector<double> ref_forward(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& W,
                                const std::vector<double>& b, std::vector<double>* norm = nullptr) {
  std::vector<double> y(g.n * g.oc * g.oh * g.ow, 0.0);
  if (norm) norm->assign(y.size(), 0.0);
  const std::int64_t cg = g.c / g.groups, ocg = g.oc / g.groups;  // filter o sees channels (o / ocg) cg ...
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.oc; ++o)
      for (std::int64_t i = 0; i < g.oh; ++i)
        for (std::int64_t j = 0; j < g.ow; ++j) {
          double acc = b.empty() ? 0.0 : b[o];
          double sq = acc * acc;
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t p = 0; p < g.kh; ++p)
              for (std::int64_t q = 0; q < g.kw; ++q) {
                std::int64_t r = i * g.sh + p - g.ph, s = j * g.sw + q - g.pw;
                if (r < 0 || r >= g.h || s < 0 || s >= g.w) continue;
                const std::int64_t xc = o / ocg * cg + c;
                double t = x[((n * g.c + xc) * g.h + r) * g.w + s] * W[((o * cg + c) * g.kh + p) * g.kw + q];
                acc += t;
                sq += t * t;
              }
          std::int64_t at = ((n * g.oc + o) * g.oh + i) * g.ow + j;
          y[at] = acc;
          if (norm) (*norm)[at] = std::sqrt(sq);
        }
  return y;
}

// gx (n, c, h, w) from gy and W; gW (oc, c/groups, kh, kw) from x and gy; and the 2-norms of their terms.
void ref_backward(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& W,
                  const std::vector<double>& gy, std::vector<double>& gx, std::vector<double>& gW,
                  std::vector<double>* gx_norm = nullptr, std::vector<double>* gW_norm = nullptr) {
  const std::int64_t cg = g.c / g.groups, ocg = g.oc / g.groups;
  gx.assign(g.n * g.c * g.h * g.w, 0.0);
  gW.assign(g.oc * cg * g.kh * g.kw, 0.0);
  std::vector<double> sx(gx.size(), 0.0), sw(gW.size(), 0.0);
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t o = 0; o < g.oc; ++o)
      for (std::int64_t i = 0; i < g.oh; ++i)
        for (std::int64_t j = 0; j < g.ow; ++j) {
          double d = gy[((n * g.oc + o) * g.oh + i) * g.ow + j];
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t p = 0; p < g.kh; ++p)
              for (std::int64_t q = 0; q < g.kw; ++q) {
                std::int64_t r = i * g.sh + p - g.ph, s = j * g.sw + q - g.pw;
                if (r < 0 || r >= g.h || s < 0 || s >= g.w) continue;
                std::int64_t xi = ((n * g.c + o / ocg * cg + c) * g.h + r) * g.w + s,
                             wi = ((o * cg + c) * g.kh + p) * g.kw + q;
                double tx = d * W[wi], tw = d * x[xi];
                gx[xi] += tx;
                gW[wi] += tw;
                sx[xi] += tx * tx;
                sw[wi] += tw * tw;
              }
        }
  for (double& v : sx) v = std::sqrt(v);
  for (double& v : sw) v = std::sqrt(v);
  if (gx_norm) *gx_norm = std::move(sx);
  if (gW_norm) *gW_norm = std::move(sw);
}

// How a float32 result is compared with the reference.
enum class Precision { fp64, fp32, tf32 };

// A float32 sum of at most k products whose 2-norm is at most `scale` (the largest over the
// array, so that FFT and Winograd algorithms, which mix a tile's values, are covered too)
// is within c u sqrt(k) scale of the exact sum, u = 2^-24, whatever the order of the
// additions (the rounding errors add up like a random walk: about u sqrt(k / 2) scale for
// one accumulator, less for a tree); c = 32 leaves room for Winograd's transforms. TF32
// rounds each operand to 10 bits first: about 0.8 * 2^-11 scale more, allowed 8 * 2^-11
// (10 sigma). TF32 under the FMA bound is 6x (k = 6272) to 50x (k = 9) over it.
double float32_bound(double scale, std::int64_t k, bool tf32) {
  const double u = std::ldexp(1.0, -24), u_tf32 = std::ldexp(1.0, -11);
  return (32.0 * u * std::max(std::sqrt(static_cast<double>(k)), 4.0) + (tf32 ? 8.0 * u_tf32 : 0.0)) * scale;
}

// got against want: |got - want| <= 1e-10 (1 + |want|) for float64, else the float32 bound
// of the array; false with `where` naming the worst element and the bound.
bool close_to(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& norm,
              std::int64_t k, Precision p, std::string& where) {
  if (p == Precision::fp64) return dzt::close_vectors(got, want, 1e-10, 1e-10, where);
  if (got.size() != want.size()) {
    where = "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
    return false;
  }
  const double bound = float32_bound(*std::max_element(norm.begin(), norm.end()), k, p == Precision::tf32);
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double d = std::abs(got[i] - want[i]);
    if (!(d <= worst)) worst = d, at = i;  // a NaN is the worst
  }
  if (worst <= bound) return true;
  where = "element " + std::to_string(at) + ": " + std::to_string(got[at]) + " != " + std::to_string(want[at]) +
          " (error " + std::to_string(worst) + " > bound " + std::to_string(bound) + " for k = " + std::to_string(k) +
          ")";
  return false;
}

// Runs the three passes on cuda:0 for g (cuDNN must take each) and compares them with the
// host's direct convolution.
void check_geometry(const ConvGeom& g, DType dt, bool bias, Precision p) {
  CAPTURE(str(g));
  CAPTURE(dtype_name(dt));
  CAPTURE(bias);
  INFO("cuDNN's last run-time failure: ", cd::cudnn_conv_last_failure());
  Device gpu = Device::cuda(0);
  Tensor x = random::randn(Shape{g.n, g.c, g.h, g.w}, dt);
  Tensor W = random::randn(Shape{g.oc, g.c / g.groups, g.kh, g.kw}, dt);
  Tensor b = random::randn(Shape{g.oc}, dt);
  Tensor gy = random::randn(Shape{g.n, g.oc, g.oh, g.ow}, dt);
  Tensor xd = x.to(gpu), Wd = W.to(gpu), bd = b.to(gpu), gyd = gy.to(gpu);
  Tensor y = Tensor::empty(Shape{g.n, g.oc, g.oh, g.ow}, dt, gpu);
  Tensor gx = Tensor::empty(x.shape(), dt, gpu), gW = Tensor::empty(W.shape(), dt, gpu);
  detail::Backend& be = detail::backend_for(gpu);
  REQUIRE(be.library()->conv2d_forward(dt, xd.raw_data(), Wd.raw_data(), bias ? bd.raw_data() : nullptr, y.raw_data(), g));
  REQUIRE(be.library()->conv2d_backward_data(dt, Wd.raw_data(), gyd.raw_data(), gx.raw_data(), g));
  REQUIRE(be.library()->conv2d_backward_filter(dt, xd.raw_data(), gyd.raw_data(), gW.raw_data(), g));
  std::vector<double> hx = dzt::vals(x), hW = dzt::vals(W), hgy = dzt::vals(gy), rgx, rgW, ny, ngx, ngW;
  std::vector<double> ry = ref_forward(g, hx, hW, bias ? dzt::vals(b) : std::vector<double>{}, &ny);
  ref_backward(g, hx, hW, hgy, rgx, rgW, &ngx, &ngW);
  // the most terms an element sums: c/groups kh kw (+ the bias), oc/groups kh kw, n oh ow
  const std::int64_t k_fwd = g.c / g.groups * g.kh * g.kw + 1, k_data = g.oc / g.groups * g.kh * g.kw,
                     k_filter = g.n * g.oh * g.ow;
  std::string where;
  CHECK_MESSAGE(close_to(dzt::vals(y), ry, ny, k_fwd, p, where), "forward: " << where);
  CHECK_MESSAGE(close_to(dzt::vals(gx), rgx, ngx, k_data, p, where), "backward data: " << where);
  CHECK_MESSAGE(close_to(dzt::vals(gW), rgW, ngW, k_filter, p, where), "backward filter: " << where);
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
      grouped(geom(2, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1), 32),  // depthwise (cudnnSetConvolutionGroupCount)
      grouped(geom(2, 6, 9, 7, 4, 3, 3, 2, 1, 1, 0), 2),       // grouped, 3 channels and 2 filters per group
  };
  return gs;
}

using dzt::skip_without_cudnn;  // support/cudnn.hpp: says why cuDNN is not used, where it is not

}  // namespace

TEST_CASE("cudnn conv: forward, backward data and backward filter match a direct convolution (float64)") {
  if (skip_without_cudnn()) return;
  random::seed(0);
  for (const ConvGeom& g : geometries())
    for (bool bias : {true, false}) check_geometry(g, float64, bias, Precision::fp64);
}

TEST_CASE("cudnn conv: float32 matches to float32 precision (no TF32 by default)") {
  if (skip_without_cudnn()) return;
  REQUIRE_FALSE(cuda::get_allow_tf32());
  random::seed(1);
  // sums of up to 6272 products: float32 rounding (also through Winograd or FFT algorithms)
  // stays within float32_bound; TF32 (10-bit operands) would not
  for (const ConvGeom& g : geometries()) check_geometry(g, float32, true, Precision::fp32);
}

TEST_CASE("cudnn conv: TF32 allowed still computes the convolution (to TF32 precision)") {
  if (skip_without_cudnn()) return;
  cuda::set_allow_tf32(true);
  random::seed(2);
  try {
    for (const ConvGeom& g : geometries()) check_geometry(g, float32, true, Precision::tf32);
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
    for (const ConvGeom& g : geometries()) check_geometry(g, float64, true, Precision::fp64);
    check_geometry(geometries()[5], float32, true, Precision::fp32);
  } catch (...) {
    cuda::set_max_workspace_size(old);
    throw;
  }
  cuda::set_max_workspace_size(old);
  // and a large limit (algorithms that want workspace may be picked)
  cuda::set_max_workspace_size(std::size_t(256) << 20);
  check_geometry(geometries()[5], float32, true, Precision::fp32);
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
    check_geometry(g, float64, false, Precision::fp64);
  }
}

TEST_CASE("cudnn conv: other dtypes and geometries cuDNN cannot express are declined, untouched") {
  if (dzt::skip_without_gpu()) return;
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  ConvGeom g = geom(1, 2, 5, 5, 3, 3, 3);
  Tensor x = ones(Shape{1, 2, 5, 5}, int64, gpu), W = ones(Shape{3, 2, 3, 3}, int64, gpu);
  Tensor y = full(Shape{1, 3, 3, 3}, 7.0, int64, gpu);
  CHECK_FALSE(be.library()->conv2d_forward(int64, x.raw_data(), W.raw_data(), nullptr, y.raw_data(), g));
  CHECK(y.sum().item<std::int64_t>() == 7 * 27);
  ConvGeom bad = g;
  bad.oh = 4;  // not (5 - 3) / 1 + 1
  Tensor xf = ones(Shape{1, 2, 5, 5}, float32, gpu), Wf = ones(Shape{3, 2, 3, 3}, float32, gpu);
  Tensor yf = full(Shape{1, 3, 4, 3}, 7.0, float32, gpu);
  CHECK_FALSE(be.library()->conv2d_forward(float32, xf.raw_data(), Wf.raw_data(), nullptr, yf.raw_data(), bad));
  CHECK(yf.sum().item<float>() == 7.0f * 36);
  CHECK_FALSE(be.library()->conv2d_backward_data(int32, Wf.raw_data(), yf.raw_data(), xf.raw_data(), g));
  CHECK_FALSE(be.library()->conv2d_backward_filter(int32, xf.raw_data(), yf.raw_data(), Wf.raw_data(), g));
}

namespace {
// The key with_cudnn caches cuda:0's choice for g under (the settings as they are now).
cd::ConvAlgoKey key_of(cd::ConvPass pass, DType dt, const ConvGeom& g) {
  cd::ConvAlgoKey k;
  k.pass = pass;
  k.device = 0;
  k.dtype = dt;
  k.allow_tf32 = cuda::get_allow_tf32();
  k.workspace_limit = cuda::get_max_workspace_size();
  k.g = g;
  return k;
}
}  // namespace

TEST_CASE("cudnn conv: a call that fails at run time retries with the fallback, then im2col, as the cache says") {
  if (skip_without_cudnn()) return;
  struct Reset {
    ~Reset() { cd::cudnn_conv_fail_next_calls(0); }
  } reset;
  random::seed(9);
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  // a geometry of its own (the cache lives as long as the process)
  const ConvGeom g = geom(2, 3, 11, 9, 5, 3, 2, 1, 2, 1, 0);
  Tensor x = random::randn(Shape{g.n, g.c, g.h, g.w}, float64), W = random::randn(Shape{g.oc, g.c, g.kh, g.kw}, float64);
  Tensor xd = x.to(gpu), Wd = W.to(gpu);
  const std::vector<double> ry = ref_forward(g, dzt::vals(x), dzt::vals(W), {});
  auto forward = [&](bool& took) {
    Tensor y = full(Shape{g.n, g.oc, g.oh, g.ow}, 7.0, float64, gpu);
    took = be.library()->conv2d_forward(float64, xd.raw_data(), Wd.raw_data(), nullptr, y.raw_data(), g);
    return dzt::vals(y);
  };
  const cd::ConvAlgoKey key = key_of(cd::ConvPass::forward, float64, g);
  bool took = false;
  std::string where;
  std::vector<double> y = forward(took);  // the first call chooses
  REQUIRE(took);
  CHECK(dzt::close_vectors(y, ry, 1e-10, 1e-10, where));
  cd::ConvAlgoChoice first, now;
  REQUIRE(cd::cudnn_conv_cached_choice(key, first));
  REQUIRE(first.algo >= 0);
  MESSAGE("cudnn retry: the heuristics chose algorithm " << first.algo << (first.fallback ? " (the fallback)" : ""));
  // One failure: a heuristic pick gives way to the fallback, which computes the result and is
  // cached; the fallback itself (or a pick that was the fallback) gives way to im2col.
  bool pick_is_fallback = first.fallback || cd::conv_algo_after_failure(first, float64, false, 0).algo < 0;
  cd::cudnn_conv_fail_next_calls(1);
  y = forward(took);
  INFO("cuDNN's last run-time failure: ", cd::cudnn_conv_last_failure());
  CHECK(dzt::has(cd::cudnn_conv_last_failure(), "injected"));
  REQUIRE(cd::cudnn_conv_cached_choice(key, now));
  if (!pick_is_fallback) {
    CHECK(took);
    CHECK(now.fallback);
    CHECK(now.workspace == 0);
    CHECK(dzt::close_vectors(y, ry, 1e-10, 1e-10, where));
    CHECK(dzt::has(cd::cudnn_conv_last_failure(), "worked"));
    cd::cudnn_conv_fail_next_calls(1);  // now the fallback fails too
    y = forward(took);
    REQUIRE(cd::cudnn_conv_cached_choice(key, now));
  }
  CHECK_FALSE(took);  // declined: the caller's im2col path computes it
  CHECK(now.algo == -1);
  CHECK(dzt::has(cd::cudnn_conv_last_failure(), "declined"));
  // remembered: declined at once from now on, and F::conv2d still gives the convolution
  y = forward(took);
  CHECK_FALSE(took);
  Variable yf = F::conv2d(Variable(xd), Variable(Wd), Variable(), Pair(int(g.sh), int(g.sw)), Pair(int(g.ph), int(g.pw)));
  CHECK(dzt::close_vectors(dzt::vals(yf), ry, 1e-10, 1e-10, where));
  // the other passes of this geometry were not touched
  CHECK_FALSE(cd::cudnn_conv_cached_choice(key_of(cd::ConvPass::backward_data, float64, g), now));
}

TEST_CASE("cudnn conv: offset views (x[1:] of (n, 1, 5, 5) float32, 100 bytes in) are copied; unaligned outputs declined") {
  if (skip_without_cudnn()) return;
  random::seed(10);
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  Tensor x = random::randn(Shape{4, 1, 5, 5}, float32), W = random::randn(Shape{2, 1, 3, 3}, float32);
  Tensor b = random::randn(Shape{2}, float32);
  Tensor xv = x.to(gpu)[Slice(1, std::nullopt)];  // (3, 1, 5, 5), a view into the device storage
  REQUIRE_FALSE(cd::cudnn_aligned(xv.raw_data()));
  // F::conv2d with gradients: x goes to cuDNN's forward and backward filter as an aligned copy
  Variable a(xv), Wa(W.to(gpu)), ba(b.to(gpu));
  Variable ya = F::conv2d(a, Wa, ba, 1, 1);
  F::sum(ya * ya).backward();
  Variable c(x[Slice(1, std::nullopt)].copy()), Wc(W), bc(b);
  Variable yc = F::conv2d(c, Wc, bc, 1, 1);
  F::sum(yc * yc).backward();
  CHECK(dzt::allclose(ya.data().to_cpu(), yc.data(), 1e-5, 1e-5));
  CHECK(dzt::allclose(a.grad().data().to_cpu(), c.grad().data(), 1e-4, 1e-4));
  CHECK(dzt::allclose(Wa.grad().data().to_cpu(), Wc.grad().data(), 1e-4, 1e-4));
  // the backend entry point itself takes the unaligned input
  ConvGeom g = geom(3, 1, 5, 5, 2, 3, 3, 1, 1, 1, 1);
  Tensor y = Tensor::empty(Shape{3, 2, 5, 5}, float32, gpu);
  CHECK(be.library()->conv2d_forward(float32, xv.raw_data(), Wa.data().raw_data(), nullptr, y.raw_data(), g));
  Tensor y_ref = F::conv2d(c, Wc, Variable(), 1, 1).data();
  CHECK(dzt::allclose(y.to_cpu(), y_ref, 1e-5, 1e-5));
  // an output 4 bytes into its buffer: declined, untouched
  Tensor big = full(Shape{3 * 2 * 5 * 5 + 1}, 7.0, float32, gpu);
  void* out = static_cast<char*>(big.raw_data()) + 4;
  CHECK_FALSE(be.library()->conv2d_forward(float32, xv.raw_data(), Wa.data().raw_data(), nullptr, out, g));
  CHECK(big.sum().item<float>() == 7.0f * (3 * 2 * 5 * 5 + 1));
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
  REQUIRE(be.library()->conv2d_forward(float32, x.raw_data(), W.raw_data(), nullptr, y.raw_data(), g));
  REQUIRE(be.library()->conv2d_backward_data(float32, W.raw_data(), y.raw_data(), gx.raw_data(), g));
  REQUIRE(be.library()->conv2d_backward_filter(float32, x.raw_data(), y.raw_data(), gW.raw_data(), g));
  REQUIRE(be.library()->conv2d_forward(float32, x.raw_data(), W.raw_data(), nullptr, y2.raw_data(), g));
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
    check_geometry(geometries()[5], float32, true, Precision::fp32);  // copies to the host synchronise s
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
        if (pass == 0) return be.library()->conv2d_forward(float32, x.raw_data(), W.raw_data(), b.raw_data(), y.raw_data(), g);
        if (pass == 1) return be.library()->conv2d_backward_data(float32, W.raw_data(), y.raw_data(), gx.raw_data(), g);
        return be.library()->conv2d_backward_filter(float32, x.raw_data(), y.raw_data(), gW.raw_data(), g);
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
