// bench/libtorch/torch_common.hpp - what the LibTorch twins of W1-W3 share: timing,
// --flag lookups, the thread count and a line saying which BLAS core computes.
//
// The twins mirror bench/w1_mlp_epoch.cpp, w2_cnn.cpp and w3_overhead.cpp (same model,
// DeZero's initialisation, batch, data, steps and printed lines) so that the comparison
// is C++ against C++. Threads: OMP_NUM_THREADS when set, else 2, passed to
// torch::set_num_threads. Run them with the OPENBLAS_CORETYPE that suits the CPU (SkylakeX
// with AVX-512, Haswell with AVX2 only: bench/cpu_isa.py chooses, as compare_libtorch.py does)
// so that OpenBLAS (Debian's libopenblas0-openmp behind libblas.so.3) uses its best kernels.
#pragma once

#include <dlfcn.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
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

// The CPU's name, from /proc/cpuinfo.
inline std::string cpu_model() {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  char line[512];
  std::string name = "unknown CPU";
  while (f && std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "model name", 10) == 0) {
      const char* c = std::strchr(line, ':');
      name = c ? std::string(c + 2) : name;
      if (!name.empty() && name.back() == '\n') name.pop_back();
      break;
    }
  if (f) std::fclose(f);
  return name;
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
  const char* aten = std::getenv("ATEN_CPU_CAPABILITY");
  std::cout << workload << " LibTorch " << TORCH_VERSION << ": " << torch::get_num_threads() << " threads, BLAS "
            << (corename ? std::string("OpenBLAS core ") + corename() : std::string("not OpenBLAS"))
            << " (OPENBLAS_CORETYPE=" << (coretype ? coretype : "unset")
            << ", ATEN_CPU_CAPABILITY=" << (aten ? aten : "unset") << "), CPU " << cpu_model() << "\n";
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
