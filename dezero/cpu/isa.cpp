// dezero/cpu/isa.cpp - which copy of the host kernels runs (isa.hpp): the level in use
// (isa_level.cpp: CPUID, DEZERO_CPU_ISA) and its cap on oneDNN, the host backend's one instance,
// the baseline's forwarding entry points, and cpu_info().
#include "dezero/cpu/isa.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <strings.h>  // strcasecmp

#if defined(__x86_64__) || defined(__i386__)
#define DEZERO_ISA_X86 1
#endif

#include "dezero/cpu.hpp"
#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/parallel.hpp"
#include "dezero/env.hpp"
#include "dezero/error.hpp"
#include "dezero/onednn.hpp"

namespace dezero::detail::cpu {

// The level in use (isa_level.cpp), and DEZERO_CPU_ISA's cap passed on to oneDNN before its first
// primitive.
IsaLevel cpu_isa() {
  static const IsaLevel level = [] {
    const IsaLevel l = isa_in_use();
    if (l != cpu_best_isa()) onednn_cap_isa(static_cast<int>(l));
    return l;
  }();
  return level;
}
const char* cpu_isa_cap() { return isa_cap(); }

const KernelTable* kernel_table_for(IsaLevel level) {
  if (static_cast<int>(level) > static_cast<int>(cpu_best_isa())) return nullptr;
#if DEZERO_ISA_X86
  switch (level) {
    case IsaLevel::sse2: return &kernel_table_isa_sse2();
    case IsaLevel::avx2: return &kernel_table_isa_avx2();
    default: return &kernel_table_isa_avx512();
  }
#else
  return level == IsaLevel::sse2 ? &kernel_table_isa_sse2() : nullptr;
#endif
}

const KernelTable& kernel_table() {
  static const KernelTable* t = kernel_table_for(cpu_isa());
  return *t;
}

// --- the baseline's entry points: the copy in use -----------------------------------------------
bool sgemm_available() { return kernel_table().sgemm_available(); }
void sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
           std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
           const float* bias, Round round) {
  kernel_table().sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias, round);
}
bool gemm_lowp(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
               DType a_dt, std::int64_t lda, const void* b, DType b_dt, std::int64_t ldb, const float* bias, float* c,
               std::int64_t ldc, bool accumulate) {
  return kernel_table().gemm_lowp(compute, ta, tb, m, n, k, a, a_dt, lda, b, b_dt, ldb, bias, c, ldc, accumulate);
}

void note_lowp_emulated(DType compute) {
  static std::once_flag bf16, fp16;
  std::call_once(compute == DType::BFloat16 ? bf16 : fp16, [&] {
    const char* t = compute == DType::BFloat16 ? "bfloat16" : "float16";
    std::fprintf(stderr,
                 "dezero: autocast(%s): this CPU (%s, kernels %s) has no %s products; they run on the float32 "
                 "kernels with their operands rounded to %s: %s's values, at float32's speed\n",
                 t, cpu_model(), isa_name(cpu_isa()), t, t, t);
  });
}
bool sgemm_small(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                 std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                 const float* bias) {
  return kernel_table().sgemm_small(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
}
void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
          std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b, double beta,
          void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) {
  kernel_table().gemm(dt, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}
bool gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
               std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c, std::int64_t ldc) {
  return kernel_table().gemm_bias(dt, ta, tb, m, n, k, a, lda, b, ldb, bias, c, ldc);
}
bool conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g) {
  return kernel_table().conv2d_forward(dt, x, w, b, y, g);
}
bool conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) {
  return kernel_table().conv2d_backward_data(dt, w, gy, gx, g);
}
bool conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g) {
  return kernel_table().conv2d_backward_filter(dt, x, gy, gw, g);
}

}  // namespace dezero::detail::cpu

namespace dezero::detail {

Backend& cpu_backend() {
  // Never destroyed: tensors in static storage may be freed after main returns.
  static Backend* b = cpu::kernel_table().make_backend();
  return *b;
}

}  // namespace dezero::detail

namespace dezero {

CpuInfo cpu_info() {
  using namespace detail::cpu;
  CpuInfo info;
  info.model = cpu_model();
  info.isa = isa_name(cpu_isa());
  info.best_isa = isa_name(cpu_best_isa());
  info.isa_cap = cpu_isa_cap();
  info.gemm = kernel_table().gemm_kernels;
  if (!is_onednn_available()) {
    info.onednn = "not built or no CPU engine";
  } else {
    const char* v = detail::env_value("DEZERO_ONEDNN");
    const bool off = v && (std::strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0);
    info.onednn = off ? "off (DEZERO_ONEDNN=0)" : "oneDNN (float32 convolutions, bfloat16 products)";
  }
  info.bf16 = cpu_supports_bf16();
  info.threads = max_threads();
  info.threads_from = threads_source();
  return info;
}

std::string CpuInfo::summary() const {
  std::string s = "CPU: " + model + "; kernels " + isa;
  if (!isa_cap.empty()) s += " (capped by DEZERO_CPU_ISA=" + isa_cap + "; best " + best_isa + ")";
  else if (best_isa != isa) s += " (best " + best_isa + ")";
  const char* emulate = detail::env_value("DEZERO_AUTOCAST_EMULATE");
  const bool rounds = emulate && std::strcmp(emulate, "1") == 0;
  s += "; float32 GEMM: " + gemm + "; convolutions: " + onednn + "; autocast(bfloat16): " +
       (bf16 ? "bf16 kernels" : rounds ? "rounded operands on the float32 kernels" : "float32 (no bf16 kernel)") +
       "; " + std::to_string(threads) +
       (threads == 1 ? " thread (" : " threads (") + threads_from + ")";
  return s;
}

}  // namespace dezero
