// bench/bench_common.hpp - command-line and timing helpers shared by the benchmarks.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dezero/dezero.hpp>
#include <string>

namespace bench {

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// --device cpu|cuda (default cpu), --flag VALUE lookups.
inline std::string arg(int argc, char** argv, const char* name, const char* def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return def;
}

inline dezero::Device device_arg(int argc, char** argv) {
  std::string d = arg(argc, argv, "--device", "cpu");
  if (d == "cuda") return dezero::Device::cuda(0);
  if (d != "cpu") throw dezero::ValueError("--device must be cpu or cuda, got " + d);
  return dezero::Device::cpu();
}

}  // namespace bench
