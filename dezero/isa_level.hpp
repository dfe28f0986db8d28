// dezero/isa_level.hpp - internal: the instruction-set level of this CPU, and the one in use.
//
// Read once from CPUID (and the OS's saved register state, XGETBV), capped by DEZERO_CPU_ISA
// when that is set. The bottom layer asks it for the 16-bit converters (half.cpp); the host
// backend (cpu/isa.hpp) picks its copy of the kernels by it and passes the cap on to oneDNN.
#pragma once

namespace dezero::detail {

// sse2: x86-64; avx2: x86-64-v3 (AVX2, FMA, F16C, BMI); avx512: x86-64-v4 (AVX-512 F/BW/DQ/VL/CD);
// avx512_bf16 and amx: avx512 plus the 16-bit products oneDNN uses.
enum class IsaLevel : int { sse2 = 0, avx2 = 1, avx512 = 2, avx512_bf16 = 3, amx = 4 };

// "sse2", "avx2", "avx512", "avx512_bf16", "amx".
const char* isa_name(IsaLevel level);
// The highest level this CPU (and its OS) runs.
IsaLevel cpu_best_isa();
// The level in use: cpu_best_isa(), or lower when DEZERO_CPU_ISA caps it (a name above what the
// CPU runs is taken as the CPU's best, with a line on stderr; an unknown name is a ValueError).
IsaLevel isa_in_use();
// DEZERO_CPU_ISA's value when it capped the level, else "".
const char* isa_cap();
// The CPU's name (CPUID's brand string).
const char* cpu_model();

}  // namespace dezero::detail
