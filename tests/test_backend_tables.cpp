// tests/test_backend_tables.cpp - the backend's optional kernel tables (backend/backend.hpp).
//
// A device's table entry and the table's default (backend/tables.cpp, written once over the
// required core) must compute the same thing: a device without the kernel runs the default, and
// a device with one hands the default the cases it does not take. So each device's table is run
// against a default table built on the same core, on the same operands: the one-pass products
// with a bias, the squared error and its gradient, the 16-bit product and the multi-tensor update.
// The library table may decline; the others never do, and the caller makes one call.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <dezero/dezero.hpp>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/tensor/conv.hpp"
#include "support/test_util.hpp"

using namespace dezero;
using detail::Backend;

namespace {

Tensor on(const Tensor& t, DType dt, const Device& dev) { return t.astype(dt).to(dev); }

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to_cpu(), hb = b.to_cpu();
  return ha.shape() == hb.shape() && ha.dtype() == hb.dtype() &&
         std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

}  // namespace

TEST_CASE("backend tables: gemm_bias, the device's entry against the default over the core") {
  dzt::on_each_device([](Device dev) {
    Backend& be = detail::backend_for(dev);
    detail::NnKernels fallback(be);
    // (m, n, k): the host's small kernel, its blocked sgemm, and a single row
    const std::int64_t sizes[][3] = {{5, 7, 3}, {64, 40, 96}, {1, 10, 2}};
    for (DType dt : {float32, float64})
      for (const auto& s : sizes)
        for (int flags = 0; flags < 4; ++flags) {
          const bool ta = flags & 1, tb = flags & 2;
          const std::int64_t m = s[0], n = s[1], k = s[2];
          CAPTURE(std::string(dtype_name(dt)));
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(flags);
          Tensor a = on(dzt::filled(ta ? Shape{k, m} : Shape{m, k}, 1 + flags), dt, dev);
          Tensor b = on(dzt::filled(tb ? Shape{n, k} : Shape{k, n}, 5), dt, dev);
          Tensor bias = on(dzt::filled(Shape{n}, 9), dt, dev);
          Tensor got = Tensor::empty(Shape{m, n}, dt, dev), want = Tensor::empty(Shape{m, n}, dt, dev);
          be.nn().gemm_bias(dt, ta, tb, m, n, k, a.raw_data(), a.shape()[1], b.raw_data(), b.shape()[1],
                            bias.raw_data(), got.raw_data(), n);
          fallback.gemm_bias(dt, ta, tb, m, n, k, a.raw_data(), a.shape()[1], b.raw_data(), b.shape()[1],
                             bias.raw_data(), want.raw_data(), n);
          CHECK(dzt::allclose(got, want, dt == float32 ? 1e-5 : 1e-12, dt == float32 ? 1e-6 : 1e-13));
          // and both are what the Tensor layer's product gives: op(a) op(b) + bias
          Tensor ref = matmul(ta ? a.transpose() : a, tb ? b.transpose() : b) + bias;
          CHECK(dzt::allclose(got, ref, dt == float32 ? 1e-5 : 1e-12, dt == float32 ? 1e-6 : 1e-13));
        }
  });
}

TEST_CASE("backend tables: the squared error and its gradient, the device's entry against the default") {
  dzt::on_each_device([](Device dev) {
    Backend& be = detail::backend_for(dev);
    detail::NnKernels fallback(be);
    for (DType dt : {float32, float64})
      for (std::int64_t rows : {1, 7, 100}) {
        CAPTURE(std::string(dtype_name(dt)));
        CAPTURE(rows);
        const std::int64_t n = rows * 3;
        Tensor x0 = on(dzt::filled(Shape{rows, 3}, 11), dt, dev), x1 = on(dzt::filled(Shape{rows, 3}, 12), dt, dev);
        Tensor gy = on(dzt::filled(Shape{}, 13), dt, dev);
        Tensor l1 = Tensor::empty(Shape{}, dt, dev), l2 = Tensor::empty(Shape{}, dt, dev);
        be.nn().mse_forward(dt, x0.raw_data(), x1.raw_data(), l1.raw_data(), n, static_cast<double>(rows));
        fallback.mse_forward(dt, x0.raw_data(), x1.raw_data(), l2.raw_data(), n, static_cast<double>(rows));
        // the total: the same value, its sum perhaps in another order (the host's one pass)
        CHECK(dzt::allclose(l1, l2, dt == float32 ? 1e-6 : 1e-14, 0));
        // the default is the unfused expression, Tensor by Tensor, bit for bit
        CHECK(same_bits(l2, sum((x0 - x1) * (x0 - x1)) / static_cast<double>(rows)));
        Tensor g1 = Tensor::empty(x0.shape(), dt, dev), g2 = Tensor::empty(x0.shape(), dt, dev);
        const double scale = 2.0 / static_cast<double>(rows);
        be.nn().mse_backward(dt, x0.raw_data(), x1.raw_data(), gy.raw_data(), g1.raw_data(), n, scale);
        fallback.mse_backward(dt, x0.raw_data(), x1.raw_data(), gy.raw_data(), g2.raw_data(), n, scale);
        CHECK(same_bits(g1, g2));  // element by element: the same bits
        CHECK(same_bits(g2, gy * (x0 - x1) * scale));
      }
  });
}

TEST_CASE("backend tables: the 16-bit product, the device's entry against the rounding default") {
  dzt::on_each_device([](Device dev) {
    Backend& be = detail::backend_for(dev);
    detail::LowpKernels fallback(be);
    const std::int64_t m = 9, n = 17, k = 33;
    for (DType t : {bfloat16, float16})
      for (int mode = 0; mode < 3; ++mode) {  // no bias, a row of bias, accumulate into C
        CAPTURE(std::string(dtype_name(t)));
        CAPTURE(mode);
        Tensor a = dzt::filled(Shape{m, k}, 21).to(dev), b = dzt::filled(Shape{k, n}, 22).to(dev);
        Tensor bias = dzt::filled(Shape{n}, 23).to(dev), c0 = dzt::filled(Shape{m, n}, 24);
        Tensor got = c0.copy().to(dev), want = c0.copy().to(dev);
        const float* bp = mode == 1 ? static_cast<const float*>(bias.raw_data()) : nullptr;
        const detail::LowpKernels::Operand oa{a.raw_data(), float32, k}, ob{b.raw_data(), float32, n};
        be.lowp().gemm(t, false, false, m, n, k, oa, ob, bp, static_cast<float*>(got.raw_data()), n, mode == 2);
        fallback.gemm(t, false, false, m, n, k, oa, ob, bp, static_cast<float*>(want.raw_data()), n, mode == 2);
        CHECK(dzt::allclose(got, want, 1e-5, 1e-6));
        // the default is the rounded operands' float32 product
        Tensor ref = matmul(a.astype(t).astype(float32), b.astype(t).astype(float32));
        if (mode == 1) ref = ref + bias;
        if (mode == 2) ref = ref + c0.to(dev);
        CHECK(dzt::allclose(want, ref, 1e-5, 1e-6));
      }
  });
}

TEST_CASE("backend tables: the multi-tensor update equals one update per parameter, bit for bit") {
  dzt::on_each_device([](Device dev) {
    Backend& be = detail::backend_for(dev);
    detail::OptimizerKernels fallback(be);
    detail::UpdateArgs args;
    args.lr = 0.01;
    args.beta1 = 0.9;
    args.beta2 = 0.999;
    args.eps = 1e-8;
    std::vector<Tensor> p1, p2, s1a, s1b, s2a, s2b, grads;
    std::vector<detail::UpdateChunk> c1, c2;
    const std::int64_t sizes[] = {3, 1000, 0, 77};
    for (std::size_t i = 0; i < 4; ++i) {
      const Shape s{sizes[i]};
      p1.push_back(dzt::filled(s, 30 + i).to(dev));
      p2.push_back(p1.back().copy());
      grads.push_back(dzt::filled(s, 40 + i).to(dev));
      s1a.push_back(zeros(s, float32, dev));
      s1b.push_back(zeros(s, float32, dev));
      s2a.push_back(zeros(s, float32, dev));
      s2b.push_back(zeros(s, float32, dev));
    }
    for (std::size_t i = 0; i < 4; ++i) {
      c1.push_back({p1[i].raw_data(), grads[i].raw_data(), s1a[i].raw_data(), s2a[i].raw_data(), sizes[i]});
      c2.push_back({p2[i].raw_data(), grads[i].raw_data(), s1b[i].raw_data(), s2b[i].raw_data(), sizes[i]});
    }
    for (int step = 0; step < 3; ++step) {
      be.optimizer().update_multi(detail::UpdateRule::Adam, float32, c1.data(), c1.size(), args);
      fallback.update_multi(detail::UpdateRule::Adam, float32, c2.data(), c2.size(), args);
    }
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(same_bits(p1[i], p2[i]));
      CHECK(same_bits(s2a[i], s2b[i]));
    }
    CHECK_FALSE(same_bits(p1[1], dzt::filled(Shape{1000}, 31)));  // the update did something
    // the default fuses no weight decay; the host does
    CHECK_FALSE(fallback.fuses_weight_decay());
    CHECK(be.optimizer().fuses_weight_decay() == dev.is_cpu());
  });
}

TEST_CASE("backend tables: the host's library takes float32 convolutions and declines 16-bit data") {
  Backend& be = detail::cpu_backend();
  detail::LibraryKernels* lib = be.library();
  REQUIRE(lib != nullptr);
  detail::ConvGeom g;
  g.n = 1;
  g.c = 2;
  g.h = g.w = 4;
  g.kh = g.kw = 3;
  g.oh = g.ow = 2;
  g.oc = 3;
  Tensor x = dzt::filled(Shape{1, 2, 4, 4}, 51), W = dzt::filled(Shape{3, 2, 3, 3}, 52);
  Tensor y = Tensor::empty(Shape{1, 3, 2, 2}, float32, Device::cpu());
  CHECK(lib->conv2d_forward(float32, x.raw_data(), W.raw_data(), nullptr, y.raw_data(), g));
  detail::set_conv_library_path(false);  // the reference: the batched im2col path on the core
  Tensor ref = detail::conv2d_forward("conv2d", x, W, Tensor(), Pair(1), Pair(0));
  detail::set_conv_library_path(true);
  CHECK(dzt::allclose(y, ref));
  Tensor xh = x.astype(bfloat16), Wh = W.astype(bfloat16), yh = Tensor::empty(y.shape(), bfloat16, Device::cpu());
  CHECK_FALSE(lib->conv2d_forward(bfloat16, xh.raw_data(), Wh.raw_data(), nullptr, yh.raw_data(), g));
  // no pooling or batch normalisation library on the host: declined, the core's kernels run them
  CHECK_FALSE(lib->max_pool_forward(float32, x.raw_data(), y.raw_data(), g));
}
