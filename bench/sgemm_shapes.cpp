// bench/sgemm_shapes.cpp - single-threaded float32 GEMM, shape by shape: our blocked kernel
// (detail::sgemm), the library's pick for the shape (detail::cpu::gemm on one thread: sgemm_small,
// sgemm or Eigen, as cpu/gemm.cpp chooses), Eigen (mapped as cpu/gemm.cpp maps it), oneDNN's
// dnnl_sgemm and OpenBLAS's cblas_sgemm. oneDNN and OpenBLAS are loaded with dlopen (libdnnl.so.2,
// libopenblas.so.0) and left out when absent; both are told to use one thread (OpenBLAS's kernels
// follow OPENBLAS_CORETYPE, e.g. SkylakeX, when set). The products: the MLP 784-100-10's inference
// products at batch 100 and 1, one MNIST MLP training step's (batch 100, 784-1000-1000-10), 1000^3,
// and a grid of M, N in {10, 100, 512} and K in {100, 784, 4096}; then W3's tiny products against
// detail::sgemm_small. All candidates of a shape are interleaved, round by round, and the median of
// each is reported (the machine is shared and noisy): GFLOP/s, "best" = the fastest library and
// pick / best. (--grid 0 drops the grid; --shapes M,K,N,... times only those NN products.)
//   sgemm_shapes [--reps N] [--ms MILLISECONDS_PER_SAMPLE] [--grid 0|1] [--shapes M,K,N[,M,K,N...]]
#include <dlfcn.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/kernels.hpp"

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

// --- the other libraries, when this machine has them ------------------------------------------
// dnnl_sgemm (row-major, like ours) and cblas_sgemm, by dlopen: the bench needs neither to build.
using DnnlSgemm = int (*)(char, char, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t,
                          const float*, std::int64_t, float, float*, std::int64_t);
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
DnnlSgemm dnnl_sgemm = nullptr;
CblasSgemm cblas_sgemm = nullptr;

void load_libraries() {
  if (void* h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL))
    dnnl_sgemm = reinterpret_cast<DnnlSgemm>(dlsym(h, "dnnl_sgemm"));
  if (void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL)) {
    cblas_sgemm = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    if (auto set = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"))) set(1);
  }
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
  omp_set_num_threads(1);  // the library's pick and oneDNN run on the calling thread
  const int reps = std::stoi(bench::arg(argc, argv, "--reps", "9"));
  const double sample_s = std::stod(bench::arg(argc, argv, "--ms", "20")) / 1000.0;
  const bool grid = bench::arg(argc, argv, "--grid", "1") != "0";
  if (!dezero::detail::cpu::sgemm_available()) {
    std::printf("sgemm_shapes: the kernels at this level have no sgemm of their own (Eigen)\n");
    bench::print_cpu();
    return 0;
  }
  load_libraries();
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  std::printf("oneDNN dnnl_sgemm: %s; OpenBLAS cblas_sgemm: %s (OPENBLAS_CORETYPE=%s); 1 thread\n",
              dnnl_sgemm ? "libdnnl.so.2" : "absent", cblas_sgemm ? "libopenblas.so.0" : "absent",
              core ? core : "unset");
  std::vector<Shape> shapes = {
      {"MLP b100 L1", false, false, 100, 784, 100}, {"MLP b100 L2", false, false, 100, 100, 10},
      {"MLP b1 L1", false, false, 1, 784, 100},     {"MLP b1 L2", false, false, 1, 100, 10},
      {"fwd x W1", false, false, 100, 784, 1000},  {"fwd h W2", false, false, 100, 1000, 1000},
      {"fwd h W3", false, false, 100, 1000, 10},   {"gy W1^T", false, true, 100, 1000, 784},
      {"gy W2^T", false, true, 100, 1000, 1000},   {"gy W3^T", false, true, 100, 10, 1000},
      {"x^T gy (W1)", true, false, 784, 100, 1000}, {"h^T gy (W2)", true, false, 1000, 100, 1000},
      {"h^T gy (W3)", true, false, 1000, 100, 10}, {"1000^3", false, false, 1000, 1000, 1000},
  };
  // --shapes M,K,N[,M,K,N...]: only these NN products (no W3 table).
  const std::string only = bench::arg(argc, argv, "--shapes", "");
  if (!only.empty()) {
    shapes.clear();
    std::vector<std::int64_t> v;
    for (std::size_t pos = 0; pos < only.size();) {
      const std::size_t end = only.find(',', pos);
      v.push_back(std::stoll(only.substr(pos, end == std::string::npos ? std::string::npos : end - pos)));
      pos = end == std::string::npos ? only.size() : end + 1;
    }
    for (std::size_t i = 0; i + 2 < v.size(); i += 3) shapes.push_back({"--shapes", false, false, v[i], v[i + 1], v[i + 2]});
  }
  if (grid && only.empty())
    for (std::int64_t m : {10, 100, 512})
      for (std::int64_t n : {10, 100, 512})
        for (std::int64_t k : {100, 784, 4096}) shapes.push_back({"grid", false, false, m, k, n});

  const char* names[] = {"sgemm", "pick", "Eigen", "oneDNN", "OpenBLAS"};
  std::printf("%-12s %-3s %5s %5s %5s  %8s %8s %8s %8s %8s  %-8s %9s  %s\n", "product", "op", "m", "k", "n",
              names[0], names[1], names[2], names[3], names[4], "best", "pick/best", "max rel diff");
  for (const Shape& s : shapes) {
    const std::int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n, ldc = s.n;
    std::vector<float> a(s.m * s.k), b(s.k * s.n), ref(s.m * s.n), c(s.m * s.n);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 997) / 997.0f - 0.5f;
    const double flops = 2.0 * s.m * s.n * s.k;
    std::vector<std::function<void()>> run(5);
    run[0] = [&] {
      dezero::detail::cpu::sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc);
    };
    run[1] = [&] {
      dezero::detail::cpu::gemm(dezero::DType::Float32, s.ta, s.tb, s.m, s.n, s.k, 1.0, a.data(), lda, 0, b.data(),
                                ldb, 0, 0.0, c.data(), ldc, 0, 1);
    };
    run[2] = [&] { eigen_gemm(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), ldc); };
    if (dnnl_sgemm)
      run[3] = [&] {
        dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                   c.data(), ldc);
      };
    if (cblas_sgemm)
      run[4] = [&] {
        cblas_sgemm(101, s.ta ? 112 : 111, s.tb ? 112 : 111, int(s.m), int(s.n), int(s.k), 1.0f, a.data(), int(lda),
                    b.data(), int(ldb), 0.0f, c.data(), int(ldc));
      };
    // The largest difference of any candidate from Eigen's result, relative to its largest |value|.
    run[2]();
    ref = c;
    double diff = 0, scale = 0;
    for (float v : ref) scale = std::max(scale, double(std::fabs(v)));
    for (auto& f : run) {
      if (!f) continue;
      f();
      for (std::size_t i = 0; i < c.size(); ++i) diff = std::max(diff, double(std::fabs(c[i] - ref[i])));
    }
    const int iters = std::max(1, int(sample_s * 60e9 / flops));
    std::vector<std::vector<double>> g(5);
    for (int r = 0; r < reps; ++r)
      for (std::size_t i = 0; i < run.size(); ++i) {
        if (!run[i]) continue;
        const double t0 = bench::now_s();
        for (int it = 0; it < iters; ++it) run[i]();
        g[i].push_back(flops * iters / (bench::now_s() - t0) / 1e9);
      }
    double med[5] = {0, 0, 0, 0, 0};
    std::size_t best = 0;
    for (std::size_t i = 0; i < 5; ++i) {
      if (g[i].empty()) continue;
      med[i] = median(g[i]);
      if (i != 1 && med[i] > med[best]) best = i;  // "pick" is one of the others, not a library
    }
    std::printf("%-12s %c%c  %5lld %5lld %5lld  %8.1f %8.1f %8.1f %8.1f %8.1f  %-8s %9.2f  %.1e\n", s.what,
                s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', (long long)s.m, (long long)s.k, (long long)s.n, med[0], med[1],
                med[2], med[3], med[4], names[best], med[1] / med[best], diff / std::max(scale, 1e-30));
    std::fflush(stdout);
  }

  if (!only.empty()) {
    bench::print_cpu();
    return 0;
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
      dezero::detail::cpu::sgemm_small(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c2.data(),
                                  ldc, with_bias ? bias.data() : nullptr);
    };
    run_eigen();
    if (!dezero::detail::cpu::sgemm_small(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c2.data(),
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
  bench::print_cpu();
  return 0;
}
