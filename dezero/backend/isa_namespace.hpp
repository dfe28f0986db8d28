// dezero/backend/isa_namespace.hpp - internal: the namespace that keeps one instruction-set
// level's copy of the host kernels apart from the others.
//
// The host backend's kernel files (dezero/CMakeLists.txt: DEZERO_CPU_ISA_SOURCES) are compiled
// once per level, each time with that level's -march and DEZERO_CPU_ISA_NS defined to its
// namespace (isa_sse2, isa_avx2, isa_avx512); cpu/isa.cpp picks one copy at run time from
// CPUID. Every function, template and inline helper those files define or include sits in
// DEZERO_ISA_BEGIN ... DEZERO_ISA_END, which there opens `inline namespace isa_avx2 {`: the
// names the code writes stay the same, but each copy's symbols (and its instantiations of
// our templates) are its own, so the linker can never hand one level's code to another.
// Compiled anywhere else (the rest of the library, the CUDA files) the markers are empty.
// tests/check_isa.py disassembles the library and fails on an AVX2 or AVX-512 instruction
// in a function outside these namespaces.
#pragma once

#if defined(DEZERO_CPU_ISA_NS)
#define DEZERO_ISA_BEGIN inline namespace DEZERO_CPU_ISA_NS {
#define DEZERO_ISA_END }
#else
#define DEZERO_ISA_BEGIN
#define DEZERO_ISA_END
#endif
