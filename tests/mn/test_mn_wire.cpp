// tests/mn/test_mn_wire.cpp - gradients on a 16-bit wire (CommunicatorOptions::allreduce_grad_dtype,
// dezero/mn/wire.cpp), under mpirun -np 1 and -np 2: the bfloat16 and float16 conversions (every
// 16-bit value round-trips; the rounding cases by hand; against the CPU's F16C instructions where the
// build has them), the mean of rank-dependent gradients equal to the value the rule gives (scale by
// 1 / size, round, add in float32, round, widen), float64 gradients through the wire, allreduce()
// untouched, and pure_nccl's refusal.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "dezero/mn/detail.hpp"

using namespace dezero;
namespace L = dezero::L;
namespace D = dezero::mn::detail;

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST_CASE("mn wire: bfloat16 rounds to nearest even, keeps NaN, and every value round-trips") {
  CHECK(D::float_to_bf16(1.0f) == 0x3F80);
  CHECK(D::float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);      // a tie: to the even 0x3F80
  CHECK(D::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);  // a tie: to the even 0x3F82
  CHECK(D::float_to_bf16(1.0f + std::ldexp(1.0f, -9) * 3) == 0x3F81);  // above the half: up
  CHECK(D::float_to_bf16(-2.0f) == 0xC000);
  CHECK(D::float_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds past the range: inf
  CHECK(D::float_to_bf16(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(std::isnan(D::bf16_to_float(D::float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(D::bf16_to_float(D::float_to_bf16(from_bits(0x7F800001u)))));  // a NaN whose top half is inf's
  int bad = 0;
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = D::bf16_to_float(static_cast<std::uint16_t>(h));
    if (!std::isnan(f) && D::float_to_bf16(f) != h) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("mn wire: float16 rounds to nearest even, subnormals and overflow included") {
  CHECK(D::float_to_f16(1.0f) == 0x3C00);
  CHECK(D::float_to_f16(-2.0f) == 0xC000);
  CHECK(D::float_to_f16(0.1f) == 0x2E66);
  CHECK(D::float_to_f16(65504.0f) == 0x7BFF);
  CHECK(D::float_to_f16(65519.0f) == 0x7BFF);
  CHECK(D::float_to_f16(65520.0f) == 0x7C00);  // halfway to 2^16: rounds to inf
  CHECK(D::float_to_f16(std::ldexp(1.0f, -14)) == 0x0400);
  CHECK(D::float_to_f16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(D::float_to_f16(std::ldexp(1.0f, -25)) == 0x0000);      // a tie: to the even 0
  CHECK(D::float_to_f16(3 * std::ldexp(1.0f, -25)) == 0x0002);  // a tie: to the even 2
  CHECK(D::float_to_f16(-std::ldexp(1.0f, -30)) == 0x8000);
  CHECK(D::float_to_f16(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(std::isnan(D::f16_to_float(D::float_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(D::f16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(D::f16_to_float(0x7BFF) == 65504.0f);
  int bad = 0;
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = D::f16_to_float(static_cast<std::uint16_t>(h));
    if (!std::isnan(f) && D::float_to_f16(f) != h) ++bad;
  }
  CHECK(bad == 0);
#if defined(__F16C__) && (defined(__GNUC__) || defined(__clang__))
  // The CPU's own conversion as the judge, on a million floats of every exponent.
  if (!__builtin_cpu_supports("f16c")) {
    MESSAGE("the F16C comparison is skipped: this CPU has no F16C");
    return;
  }
  std::mt19937 gen(7);
  int differ = 0;
  for (int i = 0; i < 1000000; ++i) {
    const float f = from_bits(gen());
    if (std::isnan(f)) continue;
    const auto hw = static_cast<std::uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
    if (D::float_to_f16(f) != hw || D::f16_to_float(hw) != _cvtsh_ss(hw)) ++differ;
  }
  CHECK(differ == 0);
#else
  MESSAGE("the F16C comparison is skipped: this build does not target a CPU with F16C");
#endif
}

TEST_CASE("mn wire: the library's vector loops (pack16, unpack16) give the scalar conversions' values") {
  std::mt19937 gen(11);
  std::vector<float> src;
  for (int i = 0; i < 4099; ++i) {  // every exponent, and a tail past the 8-wide loop
    float f = from_bits(gen());
    src.push_back(std::isnan(f) ? 1.5f : f);
  }
  for (auto wire : {mn::GradWireDtype::bfloat16, mn::GradWireDtype::float16}) {
    const bool bf = wire == mn::GradWireDtype::bfloat16;
    std::vector<std::uint16_t> packed(src.size());
    std::vector<float> back(src.size());
    D::pack16(wire, src.data(), 0.5f, static_cast<std::int64_t>(src.size()), packed.data());
    D::unpack16(wire, packed.data(), static_cast<std::int64_t>(src.size()), back.data());
    int bad = 0;
    for (std::size_t i = 0; i < src.size(); ++i) {
      const std::uint16_t want = bf ? D::float_to_bf16(src[i] * 0.5f) : D::float_to_f16(src[i] * 0.5f);
      const float wide = bf ? D::bf16_to_float(want) : D::f16_to_float(want);
      if (packed[i] != want || std::memcmp(&back[i], &wide, 4) != 0) ++bad;
    }
    CAPTURE(mn::grad_wire_dtype_name(wire));
    CHECK(bad == 0);
  }
}

TEST_CASE("mn wire: the mean through a 16-bit wire is the rule's value, on naive and flat") {
  for (auto wire : {mn::GradWireDtype::bfloat16, mn::GradWireDtype::float16}) {
    const bool bf = wire == mn::GradWireDtype::bfloat16;
    auto narrow = [&](float f) { return bf ? D::float_to_bf16(f) : D::float_to_f16(f); };
    auto widen = [&](std::uint16_t h) { return bf ? D::bf16_to_float(h) : D::f16_to_float(h); };
    for (const std::string name : {"naive", "flat"}) {
      CAPTURE(name);
      CAPTURE(mn::grad_wire_dtype_name(wire));
      mn::CommunicatorOptions options;
      options.allreduce_grad_dtype = wire;
      auto comm = mn::create_communicator(name, options);
      CHECK(comm->allreduce_grad_dtype() == wire);
      const int n = comm->size(), r = comm->rank();
      // Values no 16-bit type holds exactly, different on each rank: g = 0.1 (r + 1) + 0.001 i.
      L::LinearOptions o32, o64;
      o32.in_size = o64.in_size = 2;
      o32.dtype = float32;
      o64.dtype = float64;
      L::Linear l32(3, o32), l64(3, o64);
      std::vector<float> g(6);
      for (int i = 0; i < 6; ++i) g[static_cast<std::size_t>(i)] = 0.1f * float(r + 1) + 0.001f * float(i);
      Tensor g32 = array(g, Shape{2, 3}, float32);
      l32.W.set_grad(Variable(g32));
      l64.W.set_grad(Variable(g32.astype(float64)));
      comm->multi_node_mean_grad(l32);
      comm->multi_node_mean_grad(l64);
      // The rule for 1 or 2 ranks: one addition of the ranks' rounded, scaled values.
      std::vector<float> want(6);
      for (int i = 0; i < 6; ++i) {
        float sum = 0;
        for (int q = 0; q < n; ++q)
          sum = q == 0 ? widen(narrow((0.1f * float(q + 1) + 0.001f * float(i)) / float(n)))
                       : widen(narrow(sum + widen(narrow((0.1f * float(q + 1) + 0.001f * float(i)) / float(n)))));
        want[static_cast<std::size_t>(i)] = n == 1 ? g[static_cast<std::size_t>(i)] : sum;
      }
      if (n <= 2) {
        Tensor got32 = l32.W.grad().data(), got64 = l64.W.grad().data();
        for (int i = 0; i < 6; ++i) {
          CHECK(got32.data<float>()[i] == want[static_cast<std::size_t>(i)]);
          CHECK(got64.data<double>()[i] == double(want[static_cast<std::size_t>(i)]));
        }
      }
      // And the float32 wire mean it approximates, to the 16-bit type's precision.
      const double tol = bf ? 1.0 / 128 : 1.0 / 1024;
      double exact0 = 0;
      for (int q = 0; q < n; ++q) exact0 += (0.1 * (q + 1)) / n;
      CHECK(std::abs(l32.W.grad().data().data<float>()[0] - exact0) <= tol * exact0);
    }
  }
}

TEST_CASE("mn wire: allreduce() keeps its type (the wire is for gradients), and pure_nccl refuses a 16-bit wire") {
  mn::CommunicatorOptions options;
  options.allreduce_grad_dtype = mn::GradWireDtype::bfloat16;
  auto comm = mn::create_communicator("flat", options);
  Tensor t = comm->allreduce(array(std::vector<std::int64_t>{123456789}, Shape{1}, int64));
  CHECK(t.item<std::int64_t>() == 123456789LL * comm->size());
  CHECK_THROWS_AS(mn::create_communicator("pure_nccl", options), NotImplementedError);
  CHECK(std::string(mn::grad_wire_dtype_name(mn::GradWireDtype::same)) == "same");
  CHECK(mn::grad_wire_dtype_from_name("bfloat16") == mn::GradWireDtype::bfloat16);
  CHECK(mn::grad_wire_dtype_from_name("same") == mn::GradWireDtype::same);
  CHECK_THROWS_AS(mn::grad_wire_dtype_from_name("fp16"), ValueError);
}

TEST_CASE("mn wire: the core's converters (dezero/half.hpp); a float16 NaN keeps the top of its payload") {
  // wire.cpp converts with the core's functions. Its own portable float16 code made every NaN 0x7E00
  // (sign kept) where F16C keeps the payload's top 10 bits; now both paths keep them.
  const float nan = from_bits(0x7FC12345u), neg_nan = from_bits(0xFFA00001u);
  CHECK(D::float_to_f16(nan) == 0x7E09);                       // 0x7E00 | (0x12345 >> 13 & 0x3FF) | quiet
  CHECK(D::float_to_f16(neg_nan) == (0xFE00 | (0x200001 >> 13)));  // a signalling NaN comes back quiet
  CHECK(D::float_to_bf16(nan) == 0x7FC1);
  CHECK(D::float_to_bf16(neg_nan) == 0xFFE0);
  std::vector<float> src{nan, neg_nan, 1.0f, -0.0f};
  std::vector<std::uint16_t> packed(4);
  D::pack16(mn::GradWireDtype::float16, src.data(), 1.0f, 4, packed.data());
  CHECK(packed[0] == 0x7E09);
  CHECK(packed[1] == D::float_to_f16(neg_nan));
  CHECK(packed[2] == 0x3C00);
  CHECK(packed[3] == 0x8000);
  for (int h = 0; h < 65536; ++h) {  // the same bits as the element types' own conversions
    const auto u = static_cast<std::uint16_t>(h);
    const float b = D::bf16_to_float(u), f = D::f16_to_float(u);
    const float b2 = static_cast<float>(bfloat16_t::from_bits(u)), f2 = static_cast<float>(float16_t::from_bits(u));
    if (std::memcmp(&b, &b2, 4) != 0 || std::memcmp(&f, &f2, 4) != 0) {
      CAPTURE(h);
      CHECK(false);
      break;
    }
  }
}

TEST_CASE("mn wire: bfloat16 and float16 tensors: bcast, bcast_data, allreduce and their gradients' mean") {
  // Tensors of the 16-bit dtypes travel as their 16 bits (dtype codes 4 and 5 pass the peer checks);
  // sums add in float32 and round back, gradients travel in their own type whatever the wire option.
  auto comm = mn::create_communicator("flat");
  const int P = comm->size(), rank = comm->rank();
  for (DType dt : {bfloat16, float16}) {
    CAPTURE(dtype_name(dt));
    // bcast: rank 0's tensor, shape and dtype, everywhere.
    Tensor mine = full(Shape{2, 3}, 1.5 + rank, float32).astype(dt);
    Tensor got = comm->bcast(rank == 0 ? mine : Tensor(), 0);
    CHECK(got.dtype() == dt);
    CHECK(utils::array_equal(got.astype(float32), full(Shape{2, 3}, 1.5, float32)));
    // bcast_data of a 16-bit parameter, and of one only rank 0 has data for.
    Parameter w(full(Shape{70000}, 0.25 * (rank + 1), float32).astype(dt));
    Parameter lazy{Tensor()};  // a node without data (a lazy layer's weight before its first pass)
    if (rank == 0) lazy.set_data(full(Shape{3}, 2.0, float32).astype(dt));
    comm->bcast_data({{"lazy", lazy}, {"w", w}});
    CHECK(w.data().dtype() == dt);
    CHECK(utils::array_equal(w.data().astype(float32), full(Shape{70000}, 0.25, float32)));
    REQUIRE(lazy.data().defined());
    CHECK(lazy.data().dtype() == dt);
    CHECK(utils::array_equal(lazy.data().astype(float32), full(Shape{3}, 2.0, float32)));
    // allreduce: the sum in the dtype (exact here), small and over 64 KiB.
    for (std::int64_t n : {5, 70000}) {
      Tensor s = comm->allreduce(full(Shape{n}, 0.5 * (rank + 1), float32).astype(dt));
      CHECK(s.dtype() == dt);
      CHECK(utils::array_equal(s.astype(float32), full(Shape{n}, 0.25 * P * (P + 1), float32)));
    }
    // A 16-bit gradient's mean, also under a bfloat16 wire (float16 gradients stay float16).
    for (auto wire : {mn::GradWireDtype::same, mn::GradWireDtype::bfloat16}) {
      auto c = mn::create_communicator("flat", {wire});
      Parameter p(zeros(Shape{70000}, dt));
      p.set_grad(Variable(full(Shape{70000}, 1.0 + 2.0 * rank, float32).astype(dt)));
      c->multi_node_mean_grad({{"p", p}});
      CHECK(p.grad().data().dtype() == dt);
      CHECK(utils::array_equal(p.grad().data().astype(float32), full(Shape{70000}, static_cast<double>(P), float32)));
    }
  }
}
