// tests/test_cuda_half.cpp - bfloat16 and float16 on the CUDA backend (issue 31), against the
// CPU: astype's bits, the element-wise, reduction and shape ops on 16-bit GPU tensors,
// autocast's products (CudaLowp::gemm: cublasGemmEx with float32 sums) and
// convolutions (cuDNN's 16-bit descriptors with float32 sums) forward and backward, and loss
// scaling on a GPU model.
//
// Without a GPU the GPU cases print "skipped: no CUDA device"; the host-only checks (the
// cuDNN algorithm key and the version rule for 16-bit convolutions) run everywhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <dezero/dezero.hpp>
#include <limits>
#include <string>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#ifdef DEZERO_WITH_CUDA
#include "dezero/gpu/launchers.hpp"
#endif
#include "dezero/tensor/fused.hpp"
#include "support/test_util.hpp"

using namespace dezero;

namespace {

using dzt::skip_without_gpu;

// The 16-bit patterns of a bfloat16 / float16 tensor (on any device).
std::vector<std::uint16_t> bits(const Tensor& t) {
  std::vector<std::uint16_t> out;
  Tensor h = t.to_cpu();
  if (h.dtype() == bfloat16) {
    for (bfloat16_t v : h.to_vector<bfloat16_t>()) out.push_back(v.bits);
  } else {
    for (float16_t v : h.to_vector<float16_t>()) out.push_back(v.bits);
  }
  return out;
}

// The patterns agree, or both are NaN (a NaN's payload and sign are not part of the contract).
bool same_bits(const std::vector<std::uint16_t>& g, const std::vector<std::uint16_t>& c, DType t) {
  if (g.size() != c.size()) return false;
  const std::uint16_t exp = t == bfloat16 ? 0x7F80 : 0x7C00, man = t == bfloat16 ? 0x007F : 0x03FF;
  auto nan = [&](std::uint16_t b) { return (b & exp) == exp && (b & man) != 0; };
  for (std::size_t i = 0; i < c.size(); ++i)
    if (g[i] != c[i] && !(nan(g[i]) && nan(c[i]))) return false;
  return true;
}

// Values that exercise the rounding: ties, subnormals of both types, float16's overflow edge,
// infinities, NaN, signed zero and plain numbers that neither type holds exactly.
std::vector<float> awkward_values() {
  std::vector<float> v = {0.1f, -2.5f, 65504.0f, 65519.0f, 65520.0f, -1e6f, 1e-7f, 3e-8f, 6e-8f, 1.0f + 0x1p-8f,
                          1.0f + 0x1p-8f + 0x1p-20f, 1.0f + 0x1p-11f, 1e-40f, -0.0f, 0.0f, 3.3895e38f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  std::uint64_t s = 12345;
  for (int i = 0; i < 45; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(std::ldexp(float((s >> 40) & 0xFFFFFF) / float(1 << 24) - 0.5f, int((s >> 20) % 40) - 20));
  }
  return v;
}

// One unit in the last place of the type, relative: 2^-7 (bfloat16), 2^-10 (float16).
double ulp(DType t) { return t == bfloat16 ? 0x1p-7 : 0x1p-10; }

// A 16-bit GPU result against the CPU's: the same up to one rounding of the type (the float32
// kernels of the two devices may differ in the last float32 bit, which can move a result
// across a rounding boundary), NaN where the CPU has NaN.
bool close_half(const Tensor& gpu, const Tensor& cpu, std::string& where) {
  if (gpu.dtype() != cpu.dtype() || gpu.shape() != cpu.shape()) {
    where = "dtype/shape differ";
    return false;
  }
  const auto g = gpu.to_cpu().astype(float64).to_vector<double>(), c = cpu.astype(float64).to_vector<double>();
  for (std::size_t i = 0; i < c.size(); ++i) {
    const bool ok = std::isnan(c[i]) ? std::isnan(g[i]) : (g[i] == c[i] || std::abs(g[i] - c[i]) <= ulp(cpu.dtype()) * std::abs(c[i]));
    if (!ok) {
      where = "element " + std::to_string(i) + ": gpu " + std::to_string(g[i]) + ", cpu " + std::to_string(c[i]);
      return false;
    }
  }
  return true;
}

// max |a - b| over max |b| (float32 tensors; a may be on the GPU).
double rel_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_cpu().astype(float64).to_vector<double>(), y = b.to_cpu().astype(float64).to_vector<double>();
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < y.size(); ++i) {
    worst = std::max(worst, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return worst / scale;
}

// x = (1 + 3/4 ulp, -1): rounded to the type, 1 + ulp and -1, whose sum is ulp exactly; summed
// unrounded (or in TF32) it is 3/4 ulp, which both types hold. A product of x with (1, 1) tells
// whether the operands were rounded to the type.
std::vector<float> rounding_probe(DType t) { return {float(1.0 + 0.75 * ulp(t)), -1.0f}; }

}  // namespace

// --- host-only: the algorithm key and the support rule -------------------------------------------
TEST_CASE("cuda half: the cuDNN algorithm key tells compute types apart; which cuDNN and GPU take 16-bit convolutions") {
  namespace cd = cuda::detail;
  cd::ConvAlgoKey a;
  a.g.n = a.g.c = a.g.oc = 2;
  a.g.h = a.g.w = 5;
  a.g.kh = a.g.kw = 3;
  a.g.oh = a.g.ow = 3;
  cd::ConvAlgoKey b = a;
  CHECK(a == b);
  CHECK(cd::ConvAlgoKeyHash{}(a) == cd::ConvAlgoKeyHash{}(b));
  b.g.compute = bfloat16;
  CHECK(a != b);
  CHECK(cd::ConvAlgoKeyHash{}(a) != cd::ConvAlgoKeyHash{}(b));
  cd::ConvAlgoKey c = b;
  c.g.compute = float16;
  CHECK(b != c);
  // tensor cores for the 16-bit descriptors, never "allow conversion"
  CHECK(cd::requested_conv_math(bfloat16, false) == cd::ConvMath::tensor_op);
  CHECK(cd::requested_conv_math(float16, false) == cd::ConvMath::tensor_op);
  CHECK(cd::requested_conv_math(float32, false) == cd::ConvMath::fma);
  CHECK_FALSE(cd::conv_math_allowed(cd::ConvMath::tensor_op_allow_conversion, float16, false));
  CHECK(cd::conv_math_allowed(cd::ConvMath::tensor_op, bfloat16, false));
  // float16: cuDNN 8+; bfloat16: cuDNN 8.1+ on sm_80+
  CHECK(cd::cudnn_half_conv_supported(float16, 8000, 7));
  CHECK_FALSE(cd::cudnn_half_conv_supported(float16, 7605, 7));
  CHECK(cd::cudnn_half_conv_supported(bfloat16, 8100, 8));
  CHECK(cd::cudnn_half_conv_supported(bfloat16, 91900, 9));
  CHECK_FALSE(cd::cudnn_half_conv_supported(bfloat16, 8005, 8));
  CHECK_FALSE(cd::cudnn_half_conv_supported(bfloat16, 91900, 7));
  CHECK_FALSE(cd::cudnn_half_conv_supported(float32, 91900, 9));
}

// --- conversions and the float32 route ------------------------------------------------------------
TEST_CASE("cuda half: astype to and from bfloat16 / float16 on the GPU gives the CPU's bits") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  Tensor x = array(awkward_values());
  for (DType t : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(t)));
    for (DType from : {float32, float64}) {
      CAPTURE(std::string(dtype_name(from)));
      Tensor src = x.astype(from);
      CHECK(same_bits(bits(src.to(gpu).astype(t)), bits(src.astype(t)), t));
    }
    Tensor ints = array(std::vector<std::int64_t>{0, 1, -7, 255, 257, 65519, 65521, 1 << 24, (1LL << 40) + 1});
    CHECK(bits(ints.to(gpu).astype(t)) == bits(ints.astype(t)));
    CHECK(bits(ints.astype(int32).to(gpu).astype(t)) == bits(ints.astype(int32).astype(t)));
    // back: widening is exact, so float32 / float64 agree bit for bit (NaN compared as NaN)
    Tensor h = x.astype(t), hd = h.to(gpu);
    for (DType to : {float32, float64}) {
      const auto g = hd.astype(to).to_cpu().astype(float64).to_vector<double>();
      const auto c = h.astype(to).astype(float64).to_vector<double>();
      for (std::size_t i = 0; i < c.size(); ++i) CHECK((std::isnan(c[i]) ? std::isnan(g[i]) : g[i] == c[i]));
    }
    // between the two 16-bit types
    const DType other = t == bfloat16 ? float16 : bfloat16;
    CHECK(same_bits(bits(hd.astype(other)), bits(h.astype(other)), other));
    // to the integers (finite values only: C++ leaves inf and NaN undefined there)
    Tensor fin = (dzt::filled(Shape{40}, 3) * 300.0).astype(t);
    CHECK(fin.to(gpu).astype(int64).to_cpu().to_vector<std::int64_t>() == fin.astype(int64).to_vector<std::int64_t>());
    CHECK(fin.to(gpu).astype(int32).to_cpu().to_vector<std::int32_t>() == fin.astype(int32).to_vector<std::int32_t>());
  }
}

TEST_CASE("cuda half: element-wise, reduction and shape ops on 16-bit GPU tensors equal the CPU's") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  for (DType t : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(t)));
    Tensor a = (dzt::filled(Shape{6, 35}, 1) * 3.0).astype(t), b = dzt::filled(Shape{1, 35}, 2).astype(t);
    Tensor ad = a.to(gpu), bd = b.to(gpu);
    std::string at;
    auto same = [&](const char* what, const Tensor& g, const Tensor& c) {
      CAPTURE(what);
      CHECK(g.device() == gpu);
      CHECK_MESSAGE(close_half(g, c, at), at);
    };
    auto exact = [&](const char* what, const Tensor& g, const Tensor& c) {
      CAPTURE(what);
      CHECK(g.dtype() == c.dtype());
      CHECK(bits(g) == bits(c));
    };
    // one float32 operation, rounded once: the same bits on both devices
    exact("a + b", ad + bd, a + b);
    exact("a * b", ad * bd, a * b);
    exact("a - 2", ad - 2.0, a - 2.0);
    exact("maximum", maximum(ad, bd), maximum(a, b));
    exact("abs", abs(ad), abs(a));
    exact("-a", -ad, -a);
    exact("clip", clip(ad, -1.0, 1.5), clip(a, -1.0, 1.5));
    exact("where", where(greater(ad, 0.0), ad, bd * 2.0), where(greater(a, 0.0), a, b * 2.0));
    CHECK(greater(ad, bd).to_cpu().astype(float64).to_vector<double>() ==
          greater(a, b).astype(float64).to_vector<double>());
    // transcendental functions and divisions: up to a rounding of the type
    same("a / b", ad / bd, a / b);
    same("exp", exp(ad), exp(a));
    same("tanh", tanh(ad), tanh(a));
    same("log", log(abs(ad) + 0.5), log(abs(a) + 0.5));
    same("sqrt", sqrt(abs(ad)), sqrt(abs(a)));
    // reductions: float32 sums in either order, rounded once
    same("sum", ad.sum(), a.sum());
    same("sum axis 0", ad.sum(Axes{0}), a.sum(Axes{0}));
    same("sum axis 1 keepdims", ad.sum(Axes{1}, true), a.sum(Axes{1}, true));
    same("mean", ad.mean(Axes{1}), a.mean(Axes{1}));
    exact("max", ad.max(Axes{1}), a.max(Axes{1}));
    CHECK(ad.argmax(1).to_cpu().to_vector<std::int64_t>() == a.argmax(1).to_vector<std::int64_t>());
    same("sum_to", sum_to(ad, Shape{1, 35}), sum_to(a, Shape{1, 35}));
    same("softmax", F::softmax(Variable(ad)).data(), F::softmax(Variable(a)).data());
    exact("relu", F::relu(Variable(ad)).data(), F::relu(Variable(a)).data());
    same("leaky_relu", F::leaky_relu(Variable(ad)).data(), F::leaky_relu(Variable(a)).data());
    same("sigmoid", F::sigmoid(Variable(ad)).data(), F::sigmoid(Variable(a)).data());
    Tensor labels = array(std::vector<std::int64_t>{0, 34, 7, 7, 1, 20});
    Variable xg(ad), xc(a);
    Variable lg = F::softmax_cross_entropy(xg, Variable(labels.to(gpu)));
    Variable lc = F::softmax_cross_entropy(xc, Variable(labels));
    same("softmax_cross_entropy", lg.data(), lc.data());
    lg.backward();
    lc.backward();
    same("softmax_cross_entropy's gradient", xg.grad().data(), xc.grad().data());
    // moves: the 2-byte elements unchanged
    exact("transpose", ad.transpose(), a.transpose());
    exact("reshape", ad.reshape({35, 6}), a.reshape({35, 6}));
    exact("concatenate", concatenate({ad, bd}, 0), concatenate({a, b}, 0));
    exact("stack", stack({ad, ad}, 1), stack({a, a}, 1));
    exact("broadcast_to", broadcast_to(bd, Shape{4, 35}), broadcast_to(b, Shape{4, 35}));
    exact("slice", ad[Indices{Slice(1, 5), Slice(2, 30, 3)}], a[Indices{Slice(1, 5), Slice(2, 30, 3)}]);
    Tensor idx = array(std::vector<std::int64_t>{5, 0, 3, 3});
    exact("take", take(ad, idx.to(gpu)), take(a, idx));
    exact("copy", ad.transpose().copy(), a.transpose().copy());
    exact("full", full({7}, 0.1, t, gpu), full({7}, 0.1, t));
    Tensor ig = ad.copy(), ic = a.copy();
    ig += 1.0;
    ig *= 3.0;
    ig -= bd;
    ic += 1.0;
    ic *= 3.0;
    ic -= b;
    exact("in place", ig, ic);
    // a gradient through a slice and a broadcast: scatter_add and sum_to in float32, rounded once
    Variable va(ad), vc(a);
    Variable ya = F::sum(F::get_item(va, Indices{Slice(1, 5)}) * Variable(bd));
    Variable yc = F::sum(F::get_item(vc, Indices{Slice(1, 5)}) * Variable(b));
    ya.backward();
    yc.backward();
    same("gradient", va.grad().data(), vc.grad().data());
  }
}

// --- autocast: linear and matmul on the GPU ----------------------------------------------------------
TEST_CASE("cuda half: under autocast, F::linear / F::matmul forward and backward on the GPU equal the CPU's") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  for (DType t : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(t)));
    Tensor x0 = dzt::filled(Shape{24, 70}, 11), W0 = dzt::filled(Shape{70, 18}, 12), b0 = dzt::filled(Shape{18}, 13);
    Tensor gy = dzt::filled(Shape{24, 18}, 14);
    struct Run {
      Tensor y, gx, gW, gb;
    };
    auto run = [&](Device dev, DType compute) {
      Variable x(x0.to(dev)), W(W0.to(dev)), b(b0.to(dev));
      Variable y;
      {
        auto g = autocast(compute);
        y = F::linear(x, W, b);
        y.set_grad(Variable(gy.to(dev)));
        y.backward();
      }
      return Run{y.data(), x.grad().data(), W.grad().data(), b.grad().data()};
    };
    const Run c = run(Device::cpu(), t), g = run(gpu, t);
    CHECK(g.y.device() == gpu);
    CHECK(g.y.dtype() == float32);
    CHECK(g.gW.dtype() == float32);
    // the same rounded operands, float32 sums in another order
    CHECK(rel_diff(g.y, c.y) < 1e-5);
    CHECK(rel_diff(g.gx, c.gx) < 1e-5);
    CHECK(rel_diff(g.gW, c.gW) < 1e-5);
    CHECK(rel_diff(g.gb, c.gb) < 1e-6);
    // and the rounding happened: float32 on unrounded operands is further off
    const Run f = run(gpu, float32);
    CHECK(rel_diff(f.y, c.y) > 1e-4);
    // F::matmul without a bias
    Variable y;
    {
      auto guard = autocast(t);
      y = F::matmul(Variable(x0.to(gpu)), Variable(W0.to(gpu)));
    }
    Tensor yc;
    {
      auto guard = autocast(t);
      yc = F::matmul(Variable(x0), Variable(W0)).data();
    }
    CHECK(rel_diff(y.data(), yc) < 1e-5);
  }
}

namespace {
// gpu::gemm_lowp, the CUDA backend's 16-bit product (cublasGemmEx), on row-major operands
// without transposes; false where cuBLAS declines (the table then rounds and runs float32).
bool cublas_lowp(const Device& gpu, DType compute, std::int64_t m, std::int64_t n, std::int64_t k, const Tensor& a,
                 const Tensor& b, const Tensor* bias, Tensor& c, bool accumulate) {
#ifdef DEZERO_WITH_CUDA
  return detail::gpu::gemm_lowp(gpu.index(), compute, false, false, m, n, k, a.raw_data(), a.dtype(), k,
                                b.raw_data(), b.dtype(), n, bias ? static_cast<const float*>(bias->raw_data()) : nullptr,
                                static_cast<float*>(c.raw_data()), n, accumulate);
#else
  (void)gpu, (void)compute, (void)m, (void)n, (void)k, (void)a, (void)b, (void)bias, (void)c, (void)accumulate;
  return false;
#endif
}
}  // namespace

TEST_CASE("cuda half: matmul_t's mixed-precision product on the GPU, every transpose, row and broadcast bias") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  for (DType t : {bfloat16, float16}) {
    for (int flags = 0; flags < 4; ++flags) {
      const bool ta = flags & 1, tb = flags & 2;
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(flags);
      const std::int64_t m = 37, n = 45, k = 70;
      Tensor a = dzt::filled(ta ? Shape{k, m} : Shape{m, k}, 1 + flags), b = dzt::filled(tb ? Shape{n, k} : Shape{k, n}, 7);
      Tensor row = dzt::filled(Shape{n}, 3), col = dzt::filled(Shape{m, 1}, 5);
      Tensor ad = a.to(gpu), bd = b.to(gpu);
      CHECK(rel_diff(detail::matmul_t(ad, bd, ta, tb, row.to(gpu), t), detail::matmul_t(a, b, ta, tb, row, t)) < 1e-5);
      CHECK(rel_diff(detail::matmul_t(ad, bd, ta, tb, col.to(gpu), t), detail::matmul_t(a, b, ta, tb, col, t)) < 1e-5);
      CHECK(rel_diff(detail::matmul_t(ad, bd, ta, tb, Tensor(), t), detail::matmul_t(a, b, ta, tb, Tensor(), t)) < 1e-5);
    }
    // cuBLAS runs it (its launcher answers true, so the table's rounding default does not),
    // C += A B + bias, then the same through the backend's table.
    const std::int64_t m = 5, n = 9, k = 16;
    Tensor a = dzt::filled(Shape{m, k}, 31).to(gpu), b = dzt::filled(Shape{k, n}, 32).to(gpu), bias = dzt::filled(Shape{n}, 33).to(gpu);
    Tensor c0 = dzt::filled(Shape{m, n}, 34);
    Tensor want = detail::matmul_t(a.to_cpu().astype(t).astype(float32), b.to_cpu().astype(t).astype(float32), false,
                                   false, bias.to_cpu()) + c0;
    Tensor c = c0.copy().to(gpu);
    REQUIRE(cublas_lowp(gpu, t, m, n, k, a, b, &bias, c, true));
    CHECK(rel_diff(c, want) < 1e-5);
    Tensor c2 = c0.copy().to(gpu);
    detail::backend_for(gpu).lowp().gemm(t, false, false, m, n, k, {a.raw_data(), float32, k},
                                         {b.raw_data(), float32, n}, static_cast<const float*>(bias.raw_data()),
                                         static_cast<float*>(c2.raw_data()), n, true);
    CHECK(rel_diff(c2, want) < 1e-5);
    // the operands were rounded (to the type, not TF32's 10 bits): (1 + 3/4 ulp) - 1 = ulp
    Tensor pa = array(rounding_probe(t), Shape{1, 2}).to(gpu), pb = ones({2, 1}, float32, gpu);
    Tensor pc = Tensor::empty(Shape{1, 1}, float32, gpu);
    REQUIRE(cublas_lowp(gpu, t, 1, 1, 2, pa, pb, nullptr, pc, false));
    CHECK(pc.to_cpu().item<double>() == ulp(t));
    // an operand already in the type (F::linear's kept copies) is read as it is: the same product
    Tensor a16 = a.astype(t), c16 = Tensor::empty(Shape{m, n}, float32, gpu);
    REQUIRE(cublas_lowp(gpu, t, m, n, k, a16, b, nullptr, c16, false));
    CHECK(rel_diff(c16, detail::matmul_t(a.to_cpu(), b.to_cpu(), false, false, Tensor(), t)) < 1e-5);
    // float32 asks for no rounding: not this kernel's case
    CHECK_FALSE(cublas_lowp(gpu, float32, m, n, k, a, b, nullptr, c, false));
  }
}

// --- autocast: convolutions ----------------------------------------------------------------------------
// F::conv2d under autocast, GPU against CPU. Both devices run the same tensor/conv.cpp: either
// both round the operands (autocast's convolution path) or neither does. The GPU's cuDNN path
// rounds its output to the 16-bit type once more, so the tolerance is a rounding of the type
// relative to the largest value, plus float32's sums.
TEST_CASE("cuda half: under autocast, F::conv2d forward and backward on the GPU equal the CPU's") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  for (DType t : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(t)));
    Tensor x0 = dzt::filled(Shape{2, 3, 9, 9}, 21), W0 = dzt::filled(Shape{4, 3, 3, 3}, 22), b0 = dzt::filled(Shape{4}, 23);
    Tensor gy = dzt::filled(Shape{2, 4, 5, 5}, 24);
    struct Run {
      Tensor y, gx, gW, gb;
    };
    auto run = [&](Device dev) {
      Variable x(x0.to(dev)), W(W0.to(dev)), b(b0.to(dev));
      auto g = autocast(t);
      Variable y = F::conv2d(x, W, b, 2, 1);
      y.set_grad(Variable(gy.to(dev)));
      y.backward();
      return Run{y.data(), x.grad().data(), W.grad().data(), b.grad().data()};
    };
    const Run c = run(Device::cpu()), g = run(gpu);
    CHECK(g.y.dtype() == float32);
    CHECK(g.y.shape() == c.y.shape());
    const double tol = ulp(t) / 2 + 1e-5;
    CHECK(rel_diff(g.y, c.y) < tol);
    CHECK(rel_diff(g.gx, c.gx) < tol);
    CHECK(rel_diff(g.gW, c.gW) < tol);
    CHECK(rel_diff(g.gb, c.gb) < 1e-5);
  }
}

// The backend's three passes with ConvGeom::compute set, as tensor/conv.cpp calls them under
// autocast: against the float32 convolution of the rounded operands (the host's fallback),
// within one rounding of the output to the type. Where this cuDNN or GPU has no such
// configuration the backend declines (false) and the case says so.
TEST_CASE("cuda half: CudaBackend's convolutions with a 16-bit compute type match the rounded float32 ones") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  detail::ConvGeom g;
  g.n = 2, g.c = 3, g.h = g.w = 9, g.oc = 8, g.kh = g.kw = 3, g.sh = g.sw = 2, g.ph = g.pw = 1;
  g.oh = g.ow = 5;
  Tensor x = dzt::filled(Shape{g.n, g.c, g.h, g.w}, 41), W = dzt::filled(Shape{g.oc, g.c, g.kh, g.kw}, 42);
  Tensor b = dzt::filled(Shape{g.oc}, 43), gy = dzt::filled(Shape{g.n, g.oc, g.oh, g.ow}, 44);
  Tensor xd = x.to(gpu), Wd = W.to(gpu), bd = b.to(gpu), gyd = gy.to(gpu);
  detail::Backend& be = detail::backend_for(gpu);
  for (DType t : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(t)));
    g.compute = t;
    Tensor y = Tensor::empty(Shape{g.n, g.oc, g.oh, g.ow}, float32, gpu);
    Tensor gx = Tensor::empty(x.shape(), float32, gpu), gW = Tensor::empty(W.shape(), float32, gpu);
    const bool f = be.library()->conv2d_forward(float32, xd.raw_data(), Wd.raw_data(), bd.raw_data(), y.raw_data(), g);
    const bool d = be.library()->conv2d_backward_data(float32, Wd.raw_data(), gyd.raw_data(), gx.raw_data(), g);
    const bool w = be.library()->conv2d_backward_filter(float32, xd.raw_data(), gyd.raw_data(), gW.raw_data(), g);
    MESSAGE("cuDNN with " << std::string(dtype_name(t)) << " compute: forward " << f << ", backward data " << d
                          << ", backward filter " << w << " (false: declined; the caller rounds and runs float32)");
    // cuDNN 8.1+ on sm_80+ (the GPUs the check bundle runs on) has both pseudo-half configurations
#ifdef DEZERO_WITH_CUDA
    const std::string why = cuda::detail::cudnn_unavailable_reason();
    const bool expected = why.empty() && std::stoi("0" + cuda::Device(0).compute_capability()) >= 80 &&
                          cuda::detail::cudnn_version() >= 8100;
#else
    const std::string why = "dezero was built without CUDA";
    const bool expected = false;
#endif
    if (expected) {
      CHECK(f);
      CHECK(d);
      CHECK(w);
    } else {
      MESSAGE("cuDNN not expected to take it here: " << (why.empty() ? std::string("an older GPU or cuDNN") : why));
    }
    // a 1x1 convolution of the rounding probe: the operands were rounded
    detail::ConvGeom p;
    p.n = p.h = p.w = p.oc = p.kh = p.kw = p.oh = p.ow = 1;
    p.c = 2;
    p.compute = t;
    Tensor px = array(rounding_probe(t), Shape{1, 2, 1, 1}).to(gpu), pw = ones({1, 2, 1, 1}, float32, gpu);
    Tensor py = Tensor::empty(Shape{1, 1, 1, 1}, float32, gpu);
    if (be.library()->conv2d_forward(float32, px.raw_data(), pw.raw_data(), nullptr, py.raw_data(), p))
      CHECK(py.to_cpu().item<double>() == ulp(t));
    else
      MESSAGE("the 1x1 probe convolution was declined");
    if (!(f || d || w)) continue;
    // the reference: float32 on the CPU from rounded operands
    auto r = [t](const Tensor& v) { return Variable(v.astype(t).astype(float32)); };
    Variable xr = r(x), Wr = r(W);
    Variable yr = F::conv2d(xr, Wr, Variable(b), 2, 1);
    const double tol = ulp(t) / 2 + 1e-5;
    if (f) CHECK(rel_diff(y, yr.data()) < tol);
    yr.set_grad(r(gy));
    yr.backward();
    if (d) CHECK(rel_diff(gx, xr.grad().data()) < tol);
    if (w) CHECK(rel_diff(gW, Wr.grad().data()) < tol);
  }
}

// --- loss scaling on a GPU model -------------------------------------------------------------------
TEST_CASE("cuda half: loss scaling on a GPU model skips a step with an inf gradient and halves the scale") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  Parameter W(dzt::filled(Shape{3, 2}, 51).to(gpu));
  optimizers::SGD opt(0.5);
  opt.setup(std::vector<Parameter>{W}).loss_scaling(2);
  const Tensor w0 = W.data().to_cpu().copy();
  Tensor x = dzt::filled(Shape{2, 3}, 52);
  Tensor bad = x.copy();
  bad.data<float>()[0] = std::numeric_limits<float>::infinity();
  opt.backward(F::sum(F::matmul(Variable(bad.to(gpu)), W)));
  opt.update();
  CHECK(opt.last_step_skipped());
  CHECK(opt.t() == 0);
  CHECK(opt.loss_scale() == 32768.0);
  CHECK(W.data().device() == gpu);
  CHECK(dzt::vals(W.data().to_cpu()) == dzt::vals(w0));
  // two good steps: the update is the unscaled one (x^T 1 per column), and the scale doubles
  for (int step = 0; step < 2; ++step) {
    W.cleargrad();
    opt.backward(F::sum(F::matmul(Variable(x.to(gpu)), W)));
    opt.update();
    CHECK_FALSE(opt.last_step_skipped());
  }
  CHECK(opt.t() == 2);
  CHECK(opt.loss_scale() == 65536.0);
  const auto xs = dzt::vals(x), w = dzt::vals(W.data().to_cpu()), before = dzt::vals(w0);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 2; ++j)
      CHECK(w[i * 2 + j] == doctest::Approx(before[i * 2 + j] - 2 * 0.5 * (xs[i] + xs[3 + i])).epsilon(1e-5));
}

TEST_CASE("cuda half: float16 gradients on the GPU underflow without loss scaling and survive with it") {
  if (skip_without_gpu()) return;
  const Device gpu = Device::cuda(0);
  Variable x(dzt::filled(Shape{4, 8}, 61).to(gpu));
  const Tensor W0 = dzt::filled(Shape{8, 3}, 62);
  // every element of gy is 1e-8, below float16's smallest subnormal: W's float16 gradient is 0
  auto loss_of = [&](const Parameter& W) {
    auto g = autocast(float16);
    return F::sum(F::matmul(x, W)) * 1e-8;
  };
  {
    Parameter W(W0.to(gpu));
    optimizers::SGD opt(0.1);
    opt.setup(std::vector<Parameter>{W});
    opt.backward(loss_of(W));
    for (double v : dzt::vals(W.grad().data().to_cpu())) CHECK(v == 0.0);
  }
  Parameter W(W0.to(gpu));
  optimizers::SGD opt(0.1);
  opt.setup(std::vector<Parameter>{W}).loss_scaling();
  opt.backward(loss_of(W));
  const auto xs = dzt::vals(x.data().to_cpu()), got = dzt::vals(W.grad().data().to_cpu());
  for (std::size_t i = 0; i < 8; ++i) {
    double want = 0, size = 0;
    for (std::size_t b = 0; b < 4; ++b) want += xs[b * 8 + i] * 1e-8, size += std::abs(xs[b * 8 + i]) * 1e-8;
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(got[i * 3 + j] - want * 65536.0) <= size * 65536.0 / 512);
  }
  opt.update();
  CHECK_FALSE(opt.last_step_skipped());
}
