// bench/sgemm_shapes.cpp - single-threaded float32 GEMM: Eigen (mapped as the CPU
// backend's gemm_one in cpu/gemm.cpp maps it) against detail::sgemm, on the products of one
// MNIST MLP training step (batch 100, 784-1000-1000-10) and 1000^3, then W3's tiny
// products against detail::sgemm_small. Eigen and ours are interleaved and the median
// is reported: the machine is shared and noisy. Prints GFLOP/s for both and sgemm /
// Eigen; for the tiny products ns per call and Eigen / sgemm_small.
//   sgemm_shapes [--reps N] [--ms MILLISECONDS_PER_SAMPLE]
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "dezero/cpu/gemm.hpp"

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
using MutMap = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;

void eigen_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
                const float* b, std::int64_t ldb, float* c, std::int64_t ldc) {
  ConstMap A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstMap B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  MutMap C(c, m, n, Eigen::OuterStride<>(ldc));
  if (!ta && !tb) C.noalias() = A * B;
  else if (ta && !tb) C.noalias() = A.transpose() * B;
  else if (!ta && tb) C.noalias() = A * B.transpose();
  else C.noalias() = A.transpose() * B.transpose();
}

struct Shape {
  const char* what;
  bool ta, tb;
  std::int64_t m, k, n;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Eigen::setNbThreads(1);
  const int reps = std::stoi(bench::arg(argc, argv, "--reps", "9"));
  const double sample_s = std::stod(bench::arg(argc, argv, "--ms", "20")) / 1000.0;
  if (!dezero::detail::sgemm_available()) {
    std::printf("sgemm_shapes: this build has no AVX-512 sgemm\n");
    return 0;
  }
  const Shape shapes[] = {
      {"fwd x W1", false, false, 100, 784, 1000},  {"fwd h W2", false, false, 100, 1000, 1000},
      {"fwd h W3", false, false, 100, 1000, 10},   {"gy W1^T", false, true, 100, 1000, 784},
      {"gy W2^T", false, true, 100, 1000, 1000},   {"gy W3^T", false, true, 100, 10, 1000},
      {"x^T gy (W1)", true, false, 784, 100, 1000}, {"h^T gy (W2)", true, false, 1000, 100, 1000},
      {"h^T gy (W3)", true, false, 1000, 100, 10}, {"1000^3", false, false, 1000, 1000, 1000},
  };
  std::printf("%-12s %-3s %5s %5s %5s  %9s %9s  %6s  %s\n", "product", "op", "m", "k", "n", "Eigen", "sgemm", "ratio",
              "max rel diff");
  for (const Shape& s : shapes) {
    const std::int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n, ldc = s.n;
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c1(s.m * s.n), c2(s.m * s.n);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 997) / 997.0f - 0.5f;
    const double flops = 2.0 * s.m * s.n * s.k;
    auto run_eigen = [&] { eigen_gemm(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c1.data(), ldc); };
    auto run_sgemm = [&] {
      dezero::detail::sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c2.data(), ldc);
    };
    run_eigen();
    run_sgemm();
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < c1.size(); ++i) {
      diff = std::max(diff, double(std::fabs(c1[i] - c2[i])));
      scale = std::max(scale, double(std::fabs(c1[i])));
    }
    const int iters = std::max(1, int(sample_s * 60e9 / flops));
    auto sample = [&](auto&& f) {
      double t0 = bench::now_s();
      for (int i = 0; i < iters; ++i) f();
      return flops * iters / (bench::now_s() - t0) / 1e9;
    };
    std::vector<double> ge, gs;
    for (int r = 0; r < reps; ++r) {
      ge.push_back(sample(run_eigen));
      gs.push_back(sample(run_sgemm));
    }
    const double e = median(ge), g = median(gs);
    std::printf("%-12s %c%c  %5lld %5lld %5lld  %9.1f %9.1f  %6.2f  %.1e\n", s.what, s.ta ? 'T' : 'N', s.tb ? 'T' : 'N',
                (long long)s.m, (long long)s.k, (long long)s.n, e, g, g / e, diff / std::max(scale, 1e-30));
  }

  // W3's products (the step-43 network, 2-10-1 on a batch of 100), which sgemm_small takes:
  // nanoseconds per call, Eigen against sgemm_small (with the bias row where the layer has one).
  const Shape tiny[] = {
      {"fwd x W1 + b", false, false, 100, 2, 10},  {"fwd h W2 + b", false, false, 100, 10, 1},
      {"gy W2^T", false, true, 100, 1, 10},        {"h^T gy (W2)", true, false, 10, 100, 1},
      {"x^T gy (W1)", true, false, 2, 100, 10},
  };
  std::printf("\n%-12s %-3s %5s %5s %5s  %9s %11s  %6s  %s\n", "W3 product", "op", "m", "k", "n", "Eigen ns",
              "sgemm_small", "ratio", "max rel diff");
  for (const Shape& s : tiny) {
    const std::int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n, ldc = s.n;
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c1(s.m * s.n), c2(s.m * s.n), bias(s.n, 0.0f);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 997) / 997.0f - 0.5f;
    const bool with_bias = !s.ta && !s.tb;  // the forward products carry the Linear's bias
    auto run_eigen = [&] {
      eigen_gemm(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c1.data(), ldc);
      if (with_bias) MutMap(c1.data(), s.m, s.n, Eigen::OuterStride<>(ldc)).rowwise() +=
                         Eigen::Map<const Eigen::RowVectorXf>(bias.data(), s.n);
    };
    auto run_small = [&] {
      dezero::detail::sgemm_small(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c2.data(),
                                  ldc, with_bias ? bias.data() : nullptr);
    };
    run_eigen();
    if (!dezero::detail::sgemm_small(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c2.data(),
                                     ldc, with_bias ? bias.data() : nullptr)) {
      std::printf("%-12s declined by sgemm_small\n", s.what);
      continue;
    }
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < c1.size(); ++i) {
      diff = std::max(diff, double(std::fabs(c1[i] - c2[i])));
      scale = std::max(scale, double(std::fabs(c1[i])));
    }
    const int iters = std::max(1, int(sample_s * 1e7));  // a sample of about --ms at 100 ns a call
    auto sample = [&](auto&& f) {
      double t0 = bench::now_s();
      for (int i = 0; i < iters; ++i) f();
      return (bench::now_s() - t0) / iters * 1e9;
    };
    std::vector<double> ge, gs;
    for (int r = 0; r < reps; ++r) {
      ge.push_back(sample(run_eigen));
      gs.push_back(sample(run_small));
    }
    const double e = median(ge), g = median(gs);
    std::printf("%-12s %c%c  %5lld %5lld %5lld  %9.0f %11.0f  %6.2f  %.1e\n", s.what, s.ta ? 'T' : 'N',
                s.tb ? 'T' : 'N', (long long)s.m, (long long)s.k, (long long)s.n, e, g, e / g,
                diff / std::max(scale, 1e-30));
  }
  return 0;
}
