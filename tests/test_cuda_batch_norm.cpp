// tests/test_cuda_batch_norm.cpp - batch normalisation through cuDNN
// (gpu/cudnn_batch_norm.cpp) against the CUDA backend's own kernels (gpu/batch_norm.cu)
// and the CPU (cpu/batch_norm.cpp), with DeZero's semantics (functions/normalization.hpp).
//
// Everywhere: which cases cuDNN takes (detail/conv_algo.hpp's batch_norm_fits_cudnn: m >= 2
// because cuDNN's running variance is the unbiased m / (m - 1) one, eps at least
// CUDNN_BN_MIN_EPSILON) and the running averages' factor 1 - decay. In a CUDA build where
// cuDNN loads (no GPU needed): the descriptors it would use, x as (n, c, hw, 1) and the
// parameters' derived (1, c, 1, 1) of x's type, and the entry points in libcudnn. With a
// GPU: the three paths on float32 and float64, 2-d and 4-d, train and test mode, with the
// running statistics over several steps; the cases cuDNN declines; L::BatchNorm keeping its
// avg_mean / avg_var tensors; an offset view; double backprop; the timings gpu-check prints.
//
// float32 is compared by the max-norm relative error max |a - b| / max |b| (as
// test_resnet_xcheck.cpp): cuDNN and the CPU sum in different orders and precisions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <dezero/dezero.hpp>
#include <limits>
#include <string>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#include "dezero/tensor/fused.hpp"  // detail::set_conv_library_path
#include "support/cudnn.hpp"
#include "support/test_util.hpp"

#ifdef DEZERO_WITH_CUDA
#include <dlfcn.h>

#include "dezero/gpu/libs.hpp"
#endif

using namespace dezero;

namespace {

namespace cd = cuda::detail;

// max |a - b| / max(max |b|, 1e-3); infinity for a NaN or different sizes.
double rel_err(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.to_cpu().to_vector<double>(), bv = b.to_cpu().to_vector<double>();
  if (av.size() != bv.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(av[i] - bv[i]));
    scale = std::max(scale, std::abs(bv[i]));
    if (std::isnan(av[i]) != std::isnan(bv[i])) return std::numeric_limits<double>::infinity();
  }
  return std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff / std::max(scale, 1e-3);
}

struct Restore {
  ~Restore() { detail::set_conv_library_path(true); }
};

}  // namespace

// --- host code: no GPU needed ------------------------------------------------------------------
TEST_CASE("cudnn batch norm: the cases cuDNN computes as DeZero does") {
  const double min_eps = 0.0;  // cuDNN 9's CUDNN_BN_MIN_EPSILON
  CHECK(cd::batch_norm_fits_cudnn(float32, 8, 3, 16, 2e-5, min_eps));
  CHECK(cd::batch_norm_fits_cudnn(float64, 16, 5, 1, 2e-5, min_eps));  // (N, C): per channel over N
  CHECK(cd::batch_norm_fits_cudnn(float32, 2, 3, 1, 2e-5, min_eps));   // m = 2: unbiased is m / (m - 1) = 2
  CHECK(cd::batch_norm_fits_cudnn(float32, 1, 3, 4, 2e-5, min_eps));   // m = n hw = 4
  // m = 1: DeZero's running variance uses m / max(m - 1, 1) = 1, cuDNN's m / (m - 1) is NaN
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float32, 1, 3, 1, 2e-5, min_eps));
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float64, 1, 64, 1, 2e-5, min_eps));
  // eps: positive, finite, at least cuDNN's minimum (1e-5 in old headers)
  CHECK(cd::batch_norm_fits_cudnn(float32, 8, 3, 16, 1e-5, 1e-5));
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float32, 8, 3, 16, 5e-6, 1e-5));
  CHECK(cd::batch_norm_fits_cudnn(float32, 8, 3, 16, 5e-6, 0.0));
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float32, 8, 3, 16, 0.0, 0.0));
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float32, 8, 3, 16, std::numeric_limits<double>::infinity(), 0.0));
  // dtypes and sizes
  CHECK_FALSE(cd::batch_norm_fits_cudnn(int32, 8, 3, 16, 2e-5, min_eps));
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float32, 0, 3, 16, 2e-5, min_eps));
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float32, 8, 0, 16, 2e-5, min_eps));
  CHECK_FALSE(cd::batch_norm_fits_cudnn(float32, 1 << 16, 1 << 10, 1 << 10, 2e-5, min_eps));  // 2^36 elements
  CHECK(cd::batch_norm_fits_cudnn(float32, 1 << 10, 1 << 10, (1 << 11) - 1, 2e-5, min_eps));  // just under 2^31
  // DeZero's decay against cuDNN's factor: running (1 - f) + batch f = decay running + (1 - decay) batch
  CHECK(cd::cudnn_exponential_average_factor(0.9) == doctest::Approx(0.1));
  CHECK(cd::cudnn_exponential_average_factor(1.0) == 0.0);
  CHECK(cd::cudnn_exponential_average_factor(0.0) == 1.0);
}

#ifdef DEZERO_WITH_CUDA
// No GPU needed: descriptors only (cudnnDeriveBNTensorDescriptor, read back).
TEST_CASE("cudnn batch norm: x as (n, c, hw, 1) and the derived (1, c, 1, 1) parameters of x's type") {
  if (cd::cudnn_version() == 0) {
    MESSAGE("skipped: cuDNN does not load here");
    cd::CudnnTensorShape x, p;
    CHECK_FALSE(cd::cudnn_batch_norm_descriptors(float32, 2, 3, 4, x, p));
    return;
  }
  MESSAGE("CUDNN_BN_MIN_EPSILON " << cd::cudnn_bn_min_epsilon());
  CHECK(cd::cudnn_bn_min_epsilon() <= 2e-5);  // DeZero's default eps goes to cuDNN
  struct Case {
    DType dt;
    std::int64_t n, c, hw;
  };
  const Case cases[] = {{float32, 8, 3, 16}, {float64, 5, 4, 1}, {float32, 2, 64, 784}, {float64, 16, 2048, 49}};
  for (const Case& k : cases) {
    CAPTURE(dtype_name(k.dt));
    CAPTURE(k.n);
    CAPTURE(k.c);
    CAPTURE(k.hw);
    cd::CudnnTensorShape x, p;
    REQUIRE(cd::cudnn_batch_norm_descriptors(k.dt, k.n, k.c, k.hw, x, p));
    CHECK(x.dims[0] == k.n);
    CHECK(x.dims[1] == k.c);
    CHECK(x.dims[2] == k.hw);
    CHECK(x.dims[3] == 1);
    CHECK(x.strides[0] == k.c * k.hw);  // NCHW, contiguous: DeZero's layout
    CHECK(x.strides[1] == k.hw);
    CHECK(x.strides[2] == 1);
    CHECK(x.dtype_known);
    CHECK(x.dtype == k.dt);
    CHECK(p.dims[0] == 1);  // SPATIAL: one value per channel
    CHECK(p.dims[1] == k.c);
    CHECK(p.dims[2] == 1);
    CHECK(p.dims[3] == 1);
    CHECK(p.strides[1] == 1);
    CHECK(p.dtype_known);
    CHECK(p.dtype == k.dt);  // float for float32 data, double for float64: the running statistics' dtype
  }
}

TEST_CASE("cudnn batch norm: libcudnn exports the batch normalisation entry points dezero calls") {
  std::string path;
  try {
    path = cd::load_gpu_library("cudnn");
  } catch (const DeviceError& e) {
    MESSAGE("skipped: cuDNN does not load here: " << e.what());
    return;
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h != nullptr);
  for (const char* name : {"cudnnDeriveBNTensorDescriptor", "cudnnBatchNormalizationForwardTraining",
                           "cudnnBatchNormalizationForwardInference", "cudnnBatchNormalizationBackward",
                           "cudnnGetTensor4dDescriptor", "cudnnGetPooling2dDescriptor"}) {
    CAPTURE(name);
    CHECK(dlsym(h, name) != nullptr);
  }
  CHECK(cd::check_library_entry_points("cudnn").empty());  // and every other one forwarded
  dlclose(h);
}
#endif

// --- with a GPU -------------------------------------------------------------------------------
namespace {

// One step of F::batch_norm on `dev` (library path on or off): y, gx, ggamma, gbeta of
// sum(y * W), and the running statistics, updated in place (train).
struct Step {
  Tensor y, gx, ggamma, gbeta;
};
Step bn_step(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& W, Tensor& rm, Tensor& rv,
             Device dev, bool library, double eps = 2e-5) {
  detail::set_conv_library_path(library);
  Variable xv(x.to(dev)), g(gamma.to(dev)), b(beta.to(dev));
  Variable y = F::batch_norm(xv, g, b, rm, rv, 0.9, eps);
  F::sum(y * Variable(W.to(dev))).backward();
  detail::set_conv_library_path(true);
  return {y.data().to_cpu(), xv.grad().data().to_cpu(), g.grad().data().to_cpu(), b.grad().data().to_cpu()};
}

}  // namespace

TEST_CASE("cuda batch norm: cuDNN == batch_norm.cu == the CPU, train and test, over several steps") {
  if (dzt::skip_without_gpu()) return;
  Restore restore;
  Device gpu = Device::cuda(0);
  for (DType dt : {float64, float32}) {
    const double tol = dt == float64 ? 1e-10 : 1e-4;
    for (const Shape& s : {Shape{16, 5}, Shape{5, 3}, Shape{4, 6, 5, 7}, Shape{8, 32, 14, 14}, Shape{3, 4, 1, 1}}) {
      for (bool train : {true, false}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(s.str());
        CAPTURE(train);
        auto mode = using_config("train", train);
        random::seed(31);
        const std::int64_t c = s[1];
        Tensor gamma = random::randn({c}, float64).astype(dt), beta = random::randn({c}, float64).astype(dt);
        Tensor rm0 = (random::randn({c}, float64) + 3.0).astype(dt);
        Tensor rv0 = (abs(random::randn({c}, float64)) + 0.5).astype(dt);
        // running statistics per path: CPU, GPU library (cuDNN), GPU batch_norm.cu
        Tensor rm[3] = {rm0.copy(), rm0.to(gpu), rm0.to(gpu)}, rv[3] = {rv0.copy(), rv0.to(gpu), rv0.to(gpu)};
        for (int step = 0; step < 3; ++step) {
          CAPTURE(step);
          Tensor x = (random::randn(s, float64) * 2.0 + 3.0).astype(dt);
          Tensor W = random::randn(s, float64).astype(dt);
          Step r[3] = {bn_step(x, gamma, beta, W, rm[0], rv[0], Device::cpu(), true),
                       bn_step(x, gamma, beta, W, rm[1], rv[1], gpu, true),
                       bn_step(x, gamma, beta, W, rm[2], rv[2], gpu, false)};
          for (int p = 1; p < 3; ++p) {
            CAPTURE(p);  // 1: the library path (cuDNN where it takes the case), 2: batch_norm.cu
            CHECK(rel_err(r[p].y, r[0].y) <= tol);
            CHECK(rel_err(r[p].gx, r[0].gx) <= tol);
            CHECK(rel_err(r[p].ggamma, r[0].ggamma) <= tol);
            CHECK(rel_err(r[p].gbeta, r[0].gbeta) <= tol);
            CHECK(rel_err(rm[p], rm[0]) <= tol);
            CHECK(rel_err(rv[p], rv[0]) <= tol);
            CHECK(rm[p].device() == gpu);
            CHECK(rm[p].dtype() == dt);
          }
        }
        if (!train) {  // test mode only reads them
          CHECK(utils::array_equal(rm[1].to_cpu(), rm0));
          CHECK(utils::array_equal(rv[1].to_cpu(), rv0));
        }
      }
    }
  }
}

TEST_CASE("cudnn batch norm: cuDNN takes the forwards and the train backward, with DeZero's running statistics") {
  if (dzt::skip_without_cudnn()) return;
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  for (DType dt : {float64, float32}) {
    for (const Shape& s : {Shape{16, 5}, Shape{4, 6, 5, 7}}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(s.str());
      random::seed(32);
      const std::int64_t n = s[0], c = s[1], hw = s.ndim() == 4 ? s[2] * s[3] : 1;
      const double m = static_cast<double>(n * hw), decay = 0.9, eps = 2e-5;
      Tensor x = (random::randn(s, float64) * 2.0 + 3.0).astype(dt), gy = random::randn(s, float64).astype(dt);
      Tensor gamma = random::randn({c}, float64).astype(dt), beta = random::randn({c}, float64).astype(dt);
      Tensor rm0 = random::randn({c}, float64).astype(dt), rv0 = (abs(random::randn({c}, float64)) + 0.5).astype(dt);
      Tensor xd = x.to(gpu), gyd = gy.to(gpu), gd = gamma.to(gpu), bd = beta.to(gpu);
      Tensor rm = rm0.to(gpu), rv = rv0.to(gpu);
      Tensor y = Tensor::empty(s, dt, gpu), sm = Tensor::empty({c}, dt, gpu), inv = Tensor::empty({c}, dt, gpu);
      REQUIRE(be.library()->batch_norm_forward(dt, xd.raw_data(), gd.raw_data(), bd.raw_data(), y.raw_data(),
                                            sm.raw_data(), inv.raw_data(), rm.raw_data(), rv.raw_data(), n, c, hw,
                                            decay, eps, true));
      // DeZero's formulas in float64 on the host
      Axes axes = s.ndim() == 2 ? Axes{0} : Axes{0, 2, 3};
      Tensor x64 = x.astype(float64);
      Tensor mu = dezero::mean(x64, axes), var = dezero::mean(square(x64 - dezero::mean(x64, axes, true)), axes);
      const double tol = dt == float64 ? 1e-10 : 1e-5;
      CHECK(rel_err(sm, mu) <= tol);
      CHECK(rel_err(inv, 1.0 / sqrt(var + eps)) <= tol);
      CHECK(rel_err(rm, rm0.astype(float64) * decay + mu * (1 - decay)) <= tol);
      // the unbiased m / (m - 1) variance in the running average (the biased one would be 1 / m off)
      CHECK(rel_err(rv, rv0.astype(float64) * decay + var * ((1 - decay) * m / (m - 1))) <= tol);
      CHECK(rel_err(rv, rv0.astype(float64) * decay + var * (1 - decay)) > 10 * tol);
      // the train backward through cuDNN, with and without gx
      Tensor gx = Tensor::empty(s, dt, gpu), gg = Tensor::empty({c}, dt, gpu), gb = Tensor::empty({c}, dt, gpu);
      REQUIRE(be.library()->batch_norm_backward(dt, xd.raw_data(), gyd.raw_data(), gd.raw_data(), sm.raw_data(),
                                             inv.raw_data(), gx.raw_data(), gg.raw_data(), gb.raw_data(), n, c, hw,
                                             eps, true));
      Tensor gx2 = Tensor::empty(s, dt, gpu), gg2 = Tensor::empty({c}, dt, gpu), gb2 = Tensor::empty({c}, dt, gpu);
      be.batch_norm_backward(dt, xd.raw_data(), gyd.raw_data(), gd.raw_data(), sm.raw_data(), inv.raw_data(),
                             gx2.raw_data(), gg2.raw_data(), gb2.raw_data(), n, c, hw, true);
      CHECK(rel_err(gx, gx2) <= 10 * tol);
      CHECK(rel_err(gg, gg2) <= 10 * tol);
      CHECK(rel_err(gb, gb2) <= 10 * tol);
      REQUIRE(be.library()->batch_norm_backward(dt, xd.raw_data(), gyd.raw_data(), gd.raw_data(), sm.raw_data(),
                                             inv.raw_data(), nullptr, gg.raw_data(), gb.raw_data(), n, c, hw, eps,
                                             true));
      CHECK(rel_err(gg, gg2) <= 10 * tol);
      // test mode: cuDNN's inference forward, mean and inv_std from the running statistics
      Tensor yt = Tensor::empty(s, dt, gpu);
      REQUIRE(be.library()->batch_norm_forward(dt, xd.raw_data(), gd.raw_data(), bd.raw_data(), yt.raw_data(),
                                            sm.raw_data(), inv.raw_data(), rm.raw_data(), rv.raw_data(), n, c, hw,
                                            decay, eps, false));
      CHECK(rel_err(sm, rm) == 0.0);
      CHECK(rel_err(inv, 1.0 / sqrt(rv.astype(float64) + eps)) <= tol);
      // the test-mode backward is not cuDNN's: declined, untouched
      Tensor keep = full({c}, 7.0, dt, gpu);
      CHECK_FALSE(be.library()->batch_norm_backward(dt, xd.raw_data(), gyd.raw_data(), gd.raw_data(), sm.raw_data(),
                                                 inv.raw_data(), gx.raw_data(), keep.raw_data(), gb.raw_data(), n, c,
                                                 hw, eps, false));
      CHECK(keep.astype(float64).sum().item<double>() == 7.0 * static_cast<double>(c));
    }
  }
}

TEST_CASE("cudnn batch norm: m = 1 and unaligned outputs are declined, untouched; F::batch_norm still right") {
  if (dzt::skip_without_cudnn()) return;
  Restore restore;
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  Tensor x = random::randn({1, 3}, float32, gpu), g = ones({3}, float32, gpu), b = zeros({3}, float32, gpu);
  Tensor rm = zeros({3}, float32, gpu), rv = ones({3}, float32, gpu);
  Tensor y = full({1, 3}, 7.0, float32, gpu), mean = full({3}, 7.0, float32, gpu), inv = full({3}, 7.0, float32, gpu);
  CHECK_FALSE(be.library()->batch_norm_forward(float32, x.raw_data(), g.raw_data(), b.raw_data(), y.raw_data(),
                                            mean.raw_data(), inv.raw_data(), rm.raw_data(), rv.raw_data(), 1, 3, 1,
                                            0.9, 2e-5, true));
  CHECK(y.sum().item<float>() == 21.0f);
  CHECK(rv.sum().item<float>() == 3.0f);
  // an unaligned output (4 bytes into its buffer)
  Tensor x4 = random::randn({4, 3}, float32, gpu), big = full({13}, 7.0, float32, gpu);
  void* out = static_cast<char*>(big.raw_data()) + 4;
  CHECK_FALSE(be.library()->batch_norm_forward(float32, x4.raw_data(), g.raw_data(), b.raw_data(), out,
                                            mean.raw_data(), inv.raw_data(), rm.raw_data(), rv.raw_data(), 4, 3, 1,
                                            0.9, 2e-5, true));
  CHECK(big.sum().item<float>() == 7.0f * 13);
  // F::batch_norm of m = 1 (batch_norm.cu): DeZero's running variance decays towards 0
  for (const Shape& s : {Shape{1, 3}, Shape{1, 3, 1, 1}}) {
    CAPTURE(s.str());
    random::seed(33);
    Tensor xs = random::randn(s, float32), gm = random::randn({3}, float32), bt = random::randn({3}, float32);
    Tensor W = random::randn(s, float32);
    Tensor rmc = zeros({3}, float32), rvc = ones({3}, float32), rmg = rmc.to(gpu), rvg = rvc.to(gpu);
    Step a = bn_step(xs, gm, bt, W, rmc, rvc, Device::cpu(), true);
    Step d = bn_step(xs, gm, bt, W, rmg, rvg, gpu, true);
    CHECK(rel_err(d.y, a.y) <= 1e-5);
    CHECK(rel_err(rvg, rvc) <= 1e-6);
    CHECK(rel_err(rvg, full({3}, 0.9, float32)) <= 1e-6);
  }
}

TEST_CASE("cuda batch norm: L::BatchNorm keeps its avg_mean / avg_var tensors; offset views; double backprop") {
  if (dzt::skip_without_gpu()) return;
  Restore restore;
  Device gpu = Device::cuda(0);
  random::seed(34);
  Tensor x = (random::randn({8, 3, 4, 4}, float32) * 3.0 + 5.0);
  L::BatchNorm cpu_bn, gpu_bn;
  cpu_bn(Variable(x));
  gpu_bn(Variable(x.to(gpu)));  // the parameters are made on x's device
  const void* m_storage = gpu_bn.avg_mean.data().raw_data();
  const void* v_storage = gpu_bn.avg_var.data().raw_data();
  for (int i = 0; i < 5; ++i) {
    cpu_bn(Variable(x));
    gpu_bn(Variable(x.to(gpu)));
  }
  CHECK(gpu_bn.avg_mean.data().raw_data() == m_storage);  // updated in place, the same tensors
  CHECK(gpu_bn.avg_var.data().raw_data() == v_storage);
  CHECK(rel_err(gpu_bn.avg_mean.data(), cpu_bn.avg_mean.data()) <= 1e-5);
  CHECK(rel_err(gpu_bn.avg_var.data(), cpu_bn.avg_var.data()) <= 1e-5);
  {
    auto test_mode = using_config("train", false);
    CHECK(rel_err(gpu_bn(Variable(x.to(gpu))).data(), cpu_bn(Variable(x)).data()) <= 1e-5);
  }
  // an offset view (x[1:] of (5, 3, 1, 1) float32: 12 bytes in), copied for cuDNN
  Tensor base = random::randn({5, 3, 1, 1}, float32);
  Tensor view = base.to(gpu)[Slice(1, std::nullopt)];
  CHECK_FALSE(cd::cudnn_aligned(view.raw_data()));
  Tensor gm = random::randn({3}, float32), bt = random::randn({3}, float32), W = random::randn({4, 3, 1, 1}, float32);
  Tensor rmc = zeros({3}, float32), rvc = ones({3}, float32), rmg = rmc.to(gpu), rvg = rvc.to(gpu);
  Step a = bn_step(base[Slice(1, std::nullopt)].copy(), gm, bt, W, rmc, rvc, Device::cpu(), true);
  detail::set_conv_library_path(true);
  Variable xv(view), gv(gm.to(gpu)), bv(bt.to(gpu));
  Variable yv = F::batch_norm(xv, gv, bv, rmg, rvg);
  F::sum(yv * Variable(W.to(gpu))).backward();
  CHECK(rel_err(yv.data(), a.y) <= 1e-5);
  CHECK(rel_err(xv.grad().data(), a.gx) <= 1e-4);
  CHECK(rel_err(rvg, rvc) <= 1e-5);
  // double backprop: the backward with create_graph is the composite of Functions on every device
  Tensor x2 = random::randn({6, 2, 3, 3}, float64), g2 = random::randn({2}, float64), b2 = random::randn({2}, float64);
  Tensor r = random::randn({6, 2, 3, 3}, float64);
  std::vector<Tensor> got[2];
  for (int d = 0; d < 2; ++d) {
    Device dev = d == 0 ? Device::cpu() : gpu;
    Tensor rm2 = zeros({2}, float64, dev), rv2 = ones({2}, float64, dev);
    Variable xa(x2.to(dev)), ga(g2.to(dev)), ba(b2.to(dev));
    Variable y = F::batch_norm(xa, ga, ba, rm2, rv2);
    F::sum(y * y * y * Variable(r.to(dev))).backward(false, true);
    Variable gx = xa.grad();
    xa.cleargrad();
    F::sum(gx * gx).backward();
    got[d] = {y.data().to_cpu(), gx.data().to_cpu(), xa.grad().data().to_cpu()};
  }
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(rel_err(got[1][i], got[0][i]) <= 1e-9);
  }
}

// Microseconds per call, float32, of ResNet50's stem batch normalisation at batch 8
// ((8, 64, 112, 112)) and a late one ((8, 2048, 7, 7)): cuDNN against batch_norm.cu, train
// forward and backward. Printed for tools/gpu-check.sh.
TEST_CASE("cudnn batch norm: timings") {
  if (dzt::skip_without_cudnn()) return;
  Device gpu = Device::cuda(0);
  detail::Backend& be = detail::backend_for(gpu);
  auto time_us = [](auto&& call) { return dzt::gpu_time_us(20, call); };
  for (const Shape& s : {Shape{8, 64, 112, 112}, Shape{8, 2048, 7, 7}}) {
    const std::int64_t n = s[0], c = s[1], hw = s[2] * s[3];
    Tensor x = random::randn(s, float32, gpu), gy = random::randn(s, float32, gpu), y = Tensor::empty(s, float32, gpu);
    Tensor gx = Tensor::empty(s, float32, gpu), g = ones({c}, float32, gpu), b = zeros({c}, float32, gpu);
    Tensor rm = zeros({c}, float32, gpu), rv = ones({c}, float32, gpu), mean = Tensor::empty({c}, float32, gpu);
    Tensor inv = Tensor::empty({c}, float32, gpu), gg = Tensor::empty({c}, float32, gpu), gb = Tensor::empty({c}, float32, gpu);
    bool took = true;
    double lib_f = time_us([&] {
      took = be.library()->batch_norm_forward(float32, x.raw_data(), g.raw_data(), b.raw_data(), y.raw_data(),
                                           mean.raw_data(), inv.raw_data(), rm.raw_data(), rv.raw_data(), n, c, hw,
                                           0.9, 2e-5, true) && took;
    });
    double lib_b = time_us([&] {
      took = be.library()->batch_norm_backward(float32, x.raw_data(), gy.raw_data(), g.raw_data(), mean.raw_data(),
                                            inv.raw_data(), gx.raw_data(), gg.raw_data(), gb.raw_data(), n, c, hw,
                                            2e-5, true) && took;
    });
    double own_f = time_us([&] {
      be.batch_norm_forward(float32, x.raw_data(), g.raw_data(), b.raw_data(), y.raw_data(), mean.raw_data(),
                            inv.raw_data(), rm.raw_data(), rv.raw_data(), n, c, hw, 0.9, 2e-5, true);
    });
    double own_b = time_us([&] {
      be.batch_norm_backward(float32, x.raw_data(), gy.raw_data(), g.raw_data(), mean.raw_data(), inv.raw_data(),
                             gx.raw_data(), gg.raw_data(), gb.raw_data(), n, c, hw, true);
    });
    CHECK(took);
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "batch norm %s float32 train: cuDNN forward %.1f us backward %.1f us; batch_norm.cu forward %.1f us "
                  "backward %.1f us",
                  s.str().c_str(), lib_f, lib_b, own_f, own_b);
    MESSAGE("cudnn timing: " << buf);
  }
}
