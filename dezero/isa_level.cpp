// dezero/isa_level.cpp - the instruction-set level (isa_level.hpp): CPUID, XGETBV, DEZERO_CPU_ISA.
//
// A level is taken only when the CPU has every instruction its -march implies and the OS saves
// the registers (XGETBV): x86-64-v3 is AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT and MOVBE with
// the YMM state; x86-64-v4 adds AVX-512 F, BW, CD, DQ and VL with the ZMM and mask state.
#include "dezero/isa_level.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define DEZERO_ISA_X86 1
#endif

#include "dezero/env.hpp"
#include "dezero/error.hpp"

namespace dezero::detail {

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

IsaLevel isa_in_use() { return choice().level; }
const char* isa_cap() { return choice().cap.c_str(); }

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

}  // namespace dezero::detail
