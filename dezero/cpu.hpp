/// \file
/// What the host backend runs on this machine: dezero::cpu_info().
///
/// \code{.cpp}
///   std::cout << dezero::cpu_info().summary() << "\n";
///   // CPU: AMD EPYC 9R45; kernels avx512 (best avx512_bf16); float32 GEMM: AVX-512 sgemm ...; 2 threads (...)
/// \endcode
///
/// One build runs on every x86-64 CPU. The host kernels (GEMM, element-wise loops, reductions,
/// convolution and pooling loops, the optimizers' updates) are compiled for three
/// instruction-set levels, x86-64 (SSE2), x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512), and
/// the highest level this CPU runs is chosen once, at the first use of the host backend. The
/// rest of the library is built for x86-64, so it runs everywhere. `DEZERO_CPU_ISA` in the
/// environment caps the level: `sse2`, `avx2`, `avx512`, `avx512_bf16` or `amx` (the last two
/// differ only in the bfloat16 kernels oneDNN may use). The cap also applies to oneDNN.
/// Results are the same bits run after run at one level and thread count; two levels may
/// differ in the last bits of float32 sums (their kernels add in different orders).
#pragma once

#include <string>

namespace dezero {

/// The host backend's instruction-set level, kernels and threads (see the file's comment).
struct CpuInfo {
  std::string model;      ///< the CPU's name (CPUID's brand string)
  std::string isa;        ///< the level the kernels run at: "sse2", "avx2", "avx512", "avx512_bf16" or "amx"
  std::string best_isa;   ///< the highest level this CPU runs
  std::string isa_cap;    ///< DEZERO_CPU_ISA's value when it lowered the level, else ""
  std::string gemm;       ///< the float32 GEMM kernels of that level ("AVX2 sgemm (6 x 16 tiles) + gemm_small")
  std::string onednn;     ///< "oneDNN 2.6 (convolutions; bfloat16 products)", "off (DEZERO_ONEDNN=0)" or "not built"
  bool bf16 = false;      ///< autocast(bfloat16) products run on bfloat16 kernels (cpu_supports_bf16()); else in float32
  int threads = 1;        ///< the threads a large operation uses
  std::string threads_from;  ///< where that count comes from ("affinity mask (2 CPUs)", "OMP_NUM_THREADS=2", ...)
  /// One line with all of the above, for a program's log (every benchmark prints it).
  std::string summary() const;
};

/// The host backend's level, kernels and threads. The first call chooses the level (the same
/// choice the first tensor operation would make); a DEZERO_CPU_ISA that names no level is a
/// dezero::ValueError.
CpuInfo cpu_info();

}  // namespace dezero
