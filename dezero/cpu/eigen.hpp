// dezero/cpu/eigen.hpp - internal: Eigen, as the host kernel files include it.
//
// Those files are compiled once per instruction-set level (backend/isa_namespace.hpp), and
// Eigen's templates are instantiated in each copy with the same C++ names: the linker keeps one
// instantiation of each, which could be the AVX-512 one on a CPU without AVX-512. So each copy
// renames Eigen's namespace after its level (dezero_eigen_isa_avx2, ...) before including it:
// every instantiation, and Eigen's own static state (thread count, cache sizes), is then the
// copy's own. Include this instead of <Eigen/Core>, before anything that includes Eigen.
#pragma once

#include "dezero/backend/isa_namespace.hpp"

#if defined(DEZERO_CPU_ISA_NS)
#define DEZERO_EIGEN_CAT2(a, b) a##b
#define DEZERO_EIGEN_CAT(a, b) DEZERO_EIGEN_CAT2(a, b)
#define Eigen DEZERO_EIGEN_CAT(dezero_eigen_, DEZERO_CPU_ISA_NS)
#endif

#include <Eigen/Core>
