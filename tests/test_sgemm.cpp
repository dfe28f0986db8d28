// tests/test_sgemm.cpp - the host AVX-512 float32 GEMMs (dezero/cpu/sgemm.cpp, and the
// tiny-product one in dezero/cpu/gemm_small.cpp) against a naive double-accumulating
// reference: all transpose combinations, beta 0 (C full of NaN, never read) / 1 /
// other, alpha != 1, edge tiles, padded leading dimensions (the padding must stay
// untouched), several cache blocks, and the MNIST MLP shapes; then bit-for-bit checks of the
// bias row, the edge panels, the in-place operands, the last columns run as dot products and the
// backend's gemm_bias.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <dezero/dezero.hpp>
#include <limits>
#include <vector>

#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/kernels.hpp"

using dezero::detail::cpu::sgemm;

namespace {

struct Lcg {
  std::uint64_t s;
  float next() {  // uniform in [-1, 1)
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return float((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f;
  }
};

enum class Kernel { Blocked, Small };

// Runs sgemm (or sgemm_small) on padded buffers and checks every element of C (and
// that the padding is untouched).
void check(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, float beta,
           std::int64_t pad, Kernel kernel = Kernel::Blocked) {
  CAPTURE(ta);
  CAPTURE(tb);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(alpha);
  CAPTURE(beta);
  CAPTURE(pad);
  const std::int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  const std::int64_t lda = ac + pad, ldb = bc + 2 * pad, ldc = n + pad;
  Lcg g{std::uint64_t(m * 1000003 + n * 1009 + k * 7 + pad)};
  std::vector<float> a(ar * lda), b(br * ldb), c(m * ldc);
  for (float& x : a) x = g.next();
  for (float& x : b) x = g.next();
  const float sentinel = 12345.0f, nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) c[i * ldc + j] = j >= n ? sentinel : beta == 0.0f ? nan : g.next();
  const std::vector<float> c0 = c;
  if (kernel == Kernel::Small) {
    REQUIRE(dezero::detail::cpu::sgemm_small(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc));
  } else {
    sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  }
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0, abs_sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[p * lda + i] : a[i * lda + p];
        const double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += x * y;
        abs_sum += std::fabs(x * y);
      }
      double want = double(alpha) * sum, scale = std::fabs(alpha) * abs_sum;
      if (beta != 0.0f) {
        want += double(beta) * c0[i * ldc + j];
        scale += std::fabs(beta * c0[i * ldc + j]);
      }
      const double got = c[i * ldc + j];
      // float32 rounding grows ~sqrt(k) in practice, k eps at worst; 1e-5 of the absolute sum
      // is well above both for k <= 1000 and far below one missing or doubled product.
      if (!(std::fabs(got - want) <= 1e-5 * scale + 1e-6) && bad++ < 3)
        FAIL_CHECK("C[" << i << ", " << j << "] = " << got << ", want " << want);
    }
    for (std::int64_t j = n; j < ldc; ++j)
      if (c[i * ldc + j] != sentinel && bad++ < 3) FAIL_CHECK("padding C[" << i << ", " << j << "] was written");
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("sgemm: all transposes, edge sizes, alpha/beta, padded leading dimensions") {
  if (!dezero::detail::cpu::sgemm_available()) {
    MESSAGE("skipped: this build has no AVX-512 sgemm");
    return;
  }
  const std::int64_t sizes[] = {1, 7, 17, 33, 100};
  const float alphas[] = {1.0f, 0.75f, -2.0f};
  const float betas[] = {0.0f, 1.0f, -0.5f};
  const std::int64_t pads[] = {0, 3, 16};
  int variant = 0;
  for (int t = 0; t < 4; ++t)
    for (std::int64_t m : sizes)
      for (std::int64_t n : sizes)
        for (std::int64_t k : sizes) {
          ++variant;
          check(t & 1, t & 2, m, n, k, alphas[variant % 3], betas[(variant / 3) % 3], pads[(variant / 9) % 3]);
        }
}

TEST_CASE("sgemm: sizes across cache blocks (257, k > KC, n > NC, m > MC)") {
  if (!dezero::detail::cpu::sgemm_available()) return;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    check(ta, tb, 257, 257, 33, 1.0f, 0.0f, 0);
    check(ta, tb, 33, 257, 257, 0.5f, 1.0f, 5);
    check(ta, tb, 257, 17, 257, 1.0f, -0.5f, 16);
    check(ta, tb, 7, 600, 530, -1.0f, 0.0f, 1);  // two NC blocks, three KC blocks
    check(ta, tb, 1100, 40, 20, 1.0f, 1.0f, 0);  // two MC blocks
  }
}

TEST_CASE("sgemm: alpha == 0 only scales C") {
  if (!dezero::detail::cpu::sgemm_available()) return;
  check(false, false, 9, 40, 5, 0.0f, 0.0f, 2);
  check(false, true, 9, 40, 5, 0.0f, -0.5f, 2);
}

TEST_CASE("sgemm: the MNIST MLP training-step shapes (batch 100)") {
  if (!dezero::detail::cpu::sgemm_available()) return;
  check(false, false, 100, 1000, 784, 1.0f, 0.0f, 0);   // x W1
  check(false, false, 100, 1000, 1000, 1.0f, 0.0f, 0);  // h W2
  check(false, false, 100, 10, 1000, 1.0f, 0.0f, 0);    // h W3
  check(false, true, 100, 784, 1000, 1.0f, 0.0f, 0);    // gy W1^T
  check(false, true, 100, 1000, 10, 1.0f, 0.0f, 0);     // gy W3^T
  check(true, false, 784, 1000, 100, 1.0f, 1.0f, 0);    // x^T gy, accumulated
  check(true, false, 1000, 10, 100, 1.0f, 0.0f, 0);     // h^T gy (W3)
}

// The tiny-product kernel: depths 1-8 (op(B) rows held in registers), 1-4 rows deeper
// (rows_together: odd depths, two column chunks), single output columns (16 rows at a
// time, full and partial blocks, a strided column of C when padded), transposed operands.
TEST_CASE("sgemm_small: transposes, single columns, alpha/beta, padded leading dimensions") {
  if (!dezero::detail::cpu::sgemm_available()) {
    MESSAGE("skipped: this build has no AVX-512 sgemm");
    return;
  }
  struct Shape3 { std::int64_t m, n, k; };
  const float alphas[] = {1.0f, 0.75f, -2.0f};
  const float betas[] = {0.0f, 1.0f, -0.5f};
  const std::int64_t pads[] = {0, 3, 16};
  int variant = 0;
  for (Shape3 s : {Shape3{100, 10, 2}, Shape3{100, 1, 10}, Shape3{100, 10, 1}, Shape3{10, 1, 100}, Shape3{2, 10, 100},
                   Shape3{33, 1, 16}, Shape3{40, 1, 17}, Shape3{16, 1, 40}, Shape3{1, 1, 1}, Shape3{17, 20, 8},
                   Shape3{9, 33, 5}, Shape3{12, 7, 3}, Shape3{8, 16, 9}, Shape3{1, 18, 12}, Shape3{3, 20, 9},
                   Shape3{4, 5, 33}, Shape3{1, 10, 100}, Shape3{1, 1, 100}})
    for (int t = 0; t < 4; ++t)
      for (int v = 0; v < 3; ++v) {
        const bool ta = t & 1, tb = t & 2;
        if (tb && s.n > 1 && s.m < 8) continue;  // declined by design: packing B would not pay
        ++variant;
        check(ta, tb, s.m, s.n, s.k, alphas[variant % 3], betas[(variant / 3) % 3], pads[v], Kernel::Small);
      }
}

// A product with k = 1 (an outer product: the step-43 network's (100, 1) x (1, 10) and its
// backward (100, 1) x (10, 1)^T) rounds each element once, so every path of sgemm_small must
// give exactly what a loop from 0 gives, bit for bit: s = 0 + a * b (+ bias). That includes
// +0 for a zero or underflowing negative product (a loop's 0 + -0), which a fused
// multiply-add into +0 alone would leave as -0.
TEST_CASE("sgemm_small: k = 1 products equal a loop from 0 bit for bit, signed zeros included") {
  if (!dezero::detail::cpu::sgemm_available()) {
    MESSAGE("skipped: this build has no AVX-512 sgemm");
    return;
  }
  const float tiny = 1e-30f;  // tiny * -tiny underflows to -0
  for (std::int64_t m : {1, 7, 16, 100})
    for (std::int64_t n : {1, 10, 17})
      for (int t = 0; t < 4; ++t)
        for (bool with_bias : {false, true}) {
          const bool ta = t & 1, tb = t & 2;
          if (tb && n > 1 && m < 8) continue;  // declined by design
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(with_bias);
          Lcg g{std::uint64_t(m * 31 + n)};
          // k = 1: A is (m, 1) or its transpose (1, m), B (1, n) or (n, 1); the same floats either way.
          std::vector<float> a(m), b(n), bias(n), c(m * n, std::numeric_limits<float>::quiet_NaN());
          for (std::int64_t i = 0; i < m; ++i) a[i] = i % 5 == 0 ? 0.f : i % 5 == 1 ? -tiny : g.next();
          for (std::int64_t j = 0; j < n; ++j) {
            b[j] = j % 3 == 0 ? -0.f : j % 3 == 1 ? tiny : g.next();
            bias[j] = j % 2 ? g.next() : -0.f;
          }
          REQUIRE(dezero::detail::cpu::sgemm_small(ta, tb, m, n, 1, 1.f, a.data(), ta ? m : 1, b.data(), tb ? 1 : n, 0.f,
                                              c.data(), n, with_bias ? bias.data() : nullptr));
          std::int64_t bad = 0;
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              volatile float prod = a[i] * b[j];  // rounded on its own, never contracted into an fma
              float want = 0.f;
              want = want + prod;
              if (with_bias) want = want + bias[j];
              if (std::memcmp(&want, &c[i * n + j], sizeof(float)) != 0 && bad++ < 3)
                FAIL_CHECK("C[" << i << ", " << j << "] = " << c[i * n + j] << ", want " << want);
            }
          CHECK(bad == 0);
        }
}

TEST_CASE("sgemm: float32 matmul through the backend matches float64 (threaded slabs)") {
  using namespace dezero;
  random::seed(3);
  Tensor a = random::randn({100, 784}), b = random::randn({784, 1000});
  Tensor want = matmul(a, b);
  Tensor got = matmul(a.astype(float32), b.astype(float32)).astype(float64);
  Tensor err = max(abs(got - want));
  CHECK(err.item<double>() < 1e-3);
}

// --- bits: the bias row, the edge panels and the in-place (unpacked) operands (issue 36) ----------
namespace {

std::vector<float> lcg_vector(std::size_t n, std::uint64_t seed) {
  Lcg g{seed};
  std::vector<float> v(n);
  for (float& x : v) x = g.next();
  return v;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("sgemm: a bias row gives the bits of C filled with the bias and beta = 1") {
  if (!dezero::detail::cpu::sgemm_available()) return;
  struct S {
    std::int64_t m, n, k;
  } shapes[] = {{100, 100, 784}, {37, 45, 300}, {9, 33, 17}, {100, 1000, 100}};
  for (const S& s : shapes)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
      CAPTURE(t);
      const auto a = lcg_vector(s.m * s.k, 1), b = lcg_vector(s.k * s.n, 2), bias = lcg_vector(s.n, 3);
      const std::int64_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n;
      std::vector<float> fused(s.m * s.n, std::numeric_limits<float>::quiet_NaN()), filled(s.m * s.n);
      for (std::int64_t i = 0; i < s.m; ++i) std::copy(bias.begin(), bias.end(), filled.begin() + i * s.n);
      sgemm(ta, tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, fused.data(), s.n, bias.data());
      sgemm(ta, tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, filled.data(), s.n);
      CHECK(same_bits(fused, filled));
    }
}

// Each element of C is one chain of FMAs over the depth (and the same depth blocks) whatever
// panel it falls in and whether the operands were packed: C's top-left 100 x 112 of a 112 x 128
// product is the 100 x 112 product bit for bit (n = 112 ends on a three-vector panel, 32, 32, 48;
// m = 100 is split into 8 panels of 12-13 rows, 112 into 8 of 14), and NN (operands read in place)
// gives the bits of TN, NT and TT (packed) on transposed copies. (n = 100 would run its last 4
// columns as dot products, in another order: the next test case.)
TEST_CASE("sgemm: edge panels and in-place operands do not change the bits") {
  if (!dezero::detail::cpu::sgemm_available()) return;
  const std::int64_t M = 112, N = 128, K = 784, m = 100, n = 112;
  const auto a = lcg_vector(M * K, 4), b = lcg_vector(K * N, 5);
  std::vector<float> big(M * N), small(m * N, 0.0f);
  sgemm(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, big.data(), N);
  sgemm(false, false, m, n, K, 1.0f, a.data(), K, b.data(), N, 0.0f, small.data(), N);
  std::vector<float> big_part(m * N, 0.0f);
  for (std::int64_t i = 0; i < m; ++i) std::copy(big.begin() + i * N, big.begin() + i * N + n, big_part.begin() + i * N);
  CHECK(same_bits(small, big_part));

  std::vector<float> at(K * M), bt(N * K);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t p = 0; p < K; ++p) at[p * M + i] = a[i * K + p];
  for (std::int64_t p = 0; p < K; ++p)
    for (std::int64_t j = 0; j < N; ++j) bt[j * K + p] = b[p * N + j];
  for (int t = 1; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    CAPTURE(t);
    std::vector<float> c(M * N);
    sgemm(ta, tb, M, N, K, 1.0f, ta ? at.data() : a.data(), ta ? M : K, tb ? bt.data() : b.data(), tb ? K : N, 0.0f,
          c.data(), N);
    CHECK(same_bits(c, big));
  }
  // A short, wide NN product (m <= 32, n up to 512 read in place; n = 300: nine full panels and
  // a 12-column remainder joined to the last) against TN (packed) on a transposed A.
  const std::int64_t m2 = 20, n2 = 300, k2 = 300;
  const auto a2 = lcg_vector(m2 * k2, 9), b2 = lcg_vector(k2 * n2, 10);
  std::vector<float> a2t(k2 * m2), nn(m2 * n2), tn(m2 * n2);
  for (std::int64_t i = 0; i < m2; ++i)
    for (std::int64_t p = 0; p < k2; ++p) a2t[p * m2 + i] = a2[i * k2 + p];
  sgemm(false, false, m2, n2, k2, 1.0f, a2.data(), k2, b2.data(), n2, 0.0f, nn.data(), n2);
  sgemm(true, false, m2, n2, k2, 1.0f, a2t.data(), m2, b2.data(), n2, 0.0f, tn.data(), n2);
  CHECK(same_bits(nn, tn));
}

// The last n mod 16 columns of a narrow in-place product (16 <= n <= 128, n mod 16 of 1-8, m >= 10,
// k >= 128) run as dot products along the depth (sgemm.cpp, dot_columns): against the float64
// reference with alpha, beta 0 / 1 / other, padded leading dimensions and depths that end on a
// partial vector; the fused bias gives the bits of C filled with the bias and beta = 1; and the
// other columns keep the bits of the vector panels (the product cut to n - n mod 16 columns, which
// has none). All 15 remainders, those that stay on the vector panels (9-15) included.
TEST_CASE("sgemm: the last few columns as dot products") {
  if (!dezero::detail::cpu::sgemm_available()) return;
  for (std::int64_t r = 1; r <= 15; ++r) {
    const std::int64_t n = (r % 2 ? 96 : 16) + r, m = r % 3 ? 23 : 10, k = r % 2 ? 131 : 785;
    check(false, false, m, n, k, r % 2 ? 1.0f : 0.75f, r % 3 == 0 ? 0.0f : r % 3 == 1 ? 1.0f : -0.5f, r % 4);
    CAPTURE(r);
    const auto a = lcg_vector(m * k, 11), b = lcg_vector(k * n, 12), bias = lcg_vector(n, 13);
    std::vector<float> fused(m * n, std::numeric_limits<float>::quiet_NaN()), filled(m * n), plain(m * n);
    for (std::int64_t i = 0; i < m; ++i) std::copy(bias.begin(), bias.end(), filled.begin() + i * n);
    sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, fused.data(), n, bias.data());
    sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 1.0f, filled.data(), n);
    CHECK(same_bits(fused, filled));
    const std::int64_t nv = n - r;  // the vector panels' columns, alone
    std::vector<float> cut(m * n, 0.0f), part(m * n, 0.0f);
    sgemm(false, false, m, nv, k, 1.0f, a.data(), k, b.data(), n, 0.0f, cut.data(), n);
    sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, plain.data(), n);
    for (std::int64_t i = 0; i < m; ++i) std::copy(plain.begin() + i * n, plain.begin() + i * n + nv, part.begin() + i * n);
    CHECK(same_bits(cut, part));
  }
  check(false, false, 100, 100, 784, 1.0f, 0.0f, 0);  // the MLP's first layer at batch 100
  check(false, false, 100, 20, 4096, -1.0f, 1.0f, 3);  // 16 + 4 columns, a deep product
}

// The backend's gemm_bias (what F::linear runs) against the unfused path it replaces (the bias
// broadcast into C, then C += op(A) op(B)): the same bits. (100, 784) x (784, 1000) is cut into
// per-thread slabs when the machine has more than one core.
TEST_CASE("gemm_bias: the bits of the broadcast bias and an accumulating gemm") {
  struct S {
    std::int64_t m, n, k;
  } shapes[] = {{100, 100, 784}, {100, 10, 100}, {100, 1000, 784}, {3, 40, 50}};
  for (const S& s : shapes) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    const auto a = lcg_vector(s.m * s.k, 6), b = lcg_vector(s.k * s.n, 7), bias = lcg_vector(s.n, 8);
    std::vector<float> fused(s.m * s.n), filled(s.m * s.n);
    for (std::int64_t i = 0; i < s.m; ++i) std::copy(bias.begin(), bias.end(), filled.begin() + i * s.n);
    dezero::detail::cpu::gemm(dezero::DType::Float32, false, false, s.m, s.n, s.k, 1.0, a.data(), s.k, 0, b.data(),
                              s.n, 0, 1.0, filled.data(), s.n, 0, 1);
    if (dezero::detail::cpu::gemm_bias(dezero::DType::Float32, false, false, s.m, s.n, s.k, a.data(), s.k, b.data(),
                                       s.n, bias.data(), fused.data(), s.n))
      CHECK(same_bits(fused, filled));
  }
}
