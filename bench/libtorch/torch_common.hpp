// bench/libtorch/torch_common.hpp - what the LibTorch twins of W1-W3 share: timing,
// --flag lookups, the thread count and a line saying which BLAS core computes.
//
// The twins mirror bench/w1_mlp_epoch.cpp, w2_cnn.cpp and w3_overhead.cpp (same model,
// DeZero's initialisation, batch, data, steps and printed lines) so that the comparison
// is C++ against C++. Threads: OMP_NUM_THREADS when set, else 2, passed to
// torch::set_num_threads. Run them with OPENBLAS_CORETYPE=SkylakeX so that OpenBLAS
// (Debian's libopenblas0-openmp behind libblas.so.3) uses its AVX-512 kernels.
#pragma once

#include <dlfcn.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace tbench {

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

inline std::string arg(int argc, char** argv, const char* name, const char* def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return def;
}

// torch::set_num_threads(OMP_NUM_THREADS or 2); prints the threads and the BLAS core
// (openblas_get_corename, looked up in the process: NULL when the BLAS is not OpenBLAS).
inline void setup(const char* workload) {
  const char* env = std::getenv("OMP_NUM_THREADS");
  int threads = env && *env ? std::atoi(env) : 2;
  torch::set_num_threads(threads);
  using corename_fn = char* (*)();
  auto corename = reinterpret_cast<corename_fn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::cout << workload << " LibTorch " << TORCH_VERSION << ": " << torch::get_num_threads() << " threads, BLAS "
            << (corename ? std::string("OpenBLAS core ") + corename() : std::string("not OpenBLAS"))
            << " (OPENBLAS_CORETYPE=" << (coretype ? coretype : "unset") << ")\n";
}

// DeZero's initialisation, as our layers do it: W = randn * sqrt(1 / fan_in), b = 0.
// (PyTorch's default is a Kaiming-uniform; the timings do not depend on it, the
// losses printed next to ours are closer with the same scheme.)
inline void dezero_init(torch::Tensor& w, torch::Tensor& b, std::int64_t fan_in) {
  torch::NoGradGuard g;
  w.copy_(torch::randn(w.sizes()) * std::sqrt(1.0 / static_cast<double>(fan_in)));
  if (b.defined()) b.zero_();
}

}  // namespace tbench
