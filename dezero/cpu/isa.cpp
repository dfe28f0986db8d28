// dezero/cpu/isa.cpp - which copy of the host kernels runs (isa.hpp): CPUID, DEZERO_CPU_ISA,
// the host backend's one instance, the baseline's forwarding entry points, and cpu_info().
//
// A level is taken only when the CPU has every instruction its -march implies and the OS saves
// the registers (XGETBV): x86-64-v3 is AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT and MOVBE with
// the YMM state; x86-64-v4 adds AVX-512 F, BW, CD, DQ and VL with the ZMM and mask state.
#include "dezero/cpu/isa.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
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

namespace {

#if DEZERO_ISA_X86
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};
Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = Regs{};
  return r;
}
bool bit(unsigned v, int i) { return (v >> i) & 1u; }
unsigned long long xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
#endif

IsaLevel detect() {
#if DEZERO_ISA_X86
  const unsigned max_leaf = cpuid(0).a;
  const Regs l1 = cpuid(1);
  const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
  const Regs l7s1 = max_leaf >= 7 ? cpuid(7, 1) : Regs{};
  const Regs e1 = cpuid(0x80000001u);
  const bool osxsave = bit(l1.c, 27);
  const unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;
  const bool v3 = ymm_state && bit(l1.c, 28) /*AVX*/ && bit(l1.c, 12) /*FMA*/ && bit(l1.c, 29) /*F16C*/ &&
                  bit(l1.c, 22) /*MOVBE*/ && bit(l7.b, 5) /*AVX2*/ && bit(l7.b, 3) /*BMI1*/ &&
                  bit(l7.b, 8) /*BMI2*/ && bit(e1.c, 5) /*LZCNT*/;
  if (!v3) return IsaLevel::sse2;
  const bool v4 = zmm_state && bit(l7.b, 16) /*F*/ && bit(l7.b, 17) /*DQ*/ && bit(l7.b, 28) /*CD*/ &&
                  bit(l7.b, 30) /*BW*/ && bit(l7.b, 31) /*VL*/;
  if (!v4) return IsaLevel::avx2;
  const bool amx = bit(l7.d, 24) /*AMX-TILE*/ && bit(l7.d, 22) /*AMX-BF16*/ && (xcr0 & 0x60000) == 0x60000;
  if (amx) return IsaLevel::amx;
  if (bit(l7s1.a, 5) /*AVX512-BF16*/) return IsaLevel::avx512_bf16;
  return IsaLevel::avx512;
#else
  return IsaLevel::sse2;
#endif
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// DEZERO_CPU_ISA's level; false when unset. Unknown names throw.
bool parse_cap(IsaLevel* out) {
  const char* v = env_value("DEZERO_CPU_ISA");
  if (!v) return false;
  const std::string s = lower(v);
  if (s == "sse2" || s == "baseline" || s == "x86-64") *out = IsaLevel::sse2;
  else if (s == "avx2" || s == "x86-64-v3") *out = IsaLevel::avx2;
  else if (s == "avx512" || s == "x86-64-v4") *out = IsaLevel::avx512;
  else if (s == "avx512_bf16") *out = IsaLevel::avx512_bf16;
  else if (s == "amx") *out = IsaLevel::amx;
  else
    throw ValueError(std::string("DEZERO_CPU_ISA='") + v +
                     "': not an instruction-set level; hint: one of sse2, avx2, avx512, avx512_bf16, amx, or unset "
                     "it for the best level this CPU runs");
  return true;
}

struct Choice {
  IsaLevel level;
  std::string cap;  // DEZERO_CPU_ISA when it lowered the level
};

const Choice& choice() {
  static const Choice c = [] {
    const IsaLevel best = cpu_best_isa();
    IsaLevel cap = best;
    Choice ch{best, ""};
    if (parse_cap(&cap)) {
      if (static_cast<int>(cap) > static_cast<int>(best)) {
        std::fprintf(stderr, "dezero: DEZERO_CPU_ISA=%s is above what this CPU runs; using %s\n",
                     env_value("DEZERO_CPU_ISA"), isa_name(best));
      } else if (cap != best) {
        ch.level = cap;
        ch.cap = env_value("DEZERO_CPU_ISA");
        onednn_cap_isa(static_cast<int>(cap));  // before oneDNN's first primitive
      }
    }
    return ch;
  }();
  return c;
}

}  // namespace

const char* isa_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::sse2: return "sse2";
    case IsaLevel::avx2: return "avx2";
    case IsaLevel::avx512: return "avx512";
    case IsaLevel::avx512_bf16: return "avx512_bf16";
    case IsaLevel::amx: return "amx";
  }
  return "?";
}

IsaLevel cpu_best_isa() {
  static const IsaLevel best = detect();
  return best;
}

IsaLevel cpu_isa() { return choice().level; }
const char* cpu_isa_cap() { return choice().cap.c_str(); }

const char* cpu_model() {
  static const std::string model = [] {
    std::string s;
#if DEZERO_ISA_X86
    if (cpuid(0x80000000u).a >= 0x80000004u) {
      char buf[49] = {};
      for (unsigned i = 0; i < 3; ++i) {
        const Regs r = cpuid(0x80000002u + i);
        std::memcpy(buf + 16 * i, &r, 16);
      }
      s = buf;
    }
#endif
    const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
    return b == std::string::npos ? std::string("unknown CPU") : s.substr(b, e - b + 1);
  }();
  return model.c_str();
}

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
    const bool off = v && (std::strcmp(v, "0") == 0 || lower(v) == "off");
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
