// dezero/cpu/isa.hpp - internal: which copy of the host kernels runs (isa.cpp).
//
// The kernel files (dezero/CMakeLists.txt: DEZERO_CPU_ISA_SOURCES: the backend, element-wise,
// reductions, GEMM, convolution and pooling loops, the optimizers) are compiled once per
// instruction-set level, each copy in its own namespace (backend/isa_namespace.hpp):
//   sse2    x86-64 (every 64-bit x86 CPU)     isa_sse2    Eigen for float32 products
//   avx2    x86-64-v3 (AVX2, FMA, F16C, BMI)  isa_avx2    our AVX2 sgemm / gemm_small
//   avx512  x86-64-v4 (AVX-512 F/BW/DQ/VL/CD)  isa_avx512  our AVX-512 sgemm / gemm_small
// and the rest of the library once, for x86-64. At the first use of the host backend the level
// is read from CPUID (and the OS's saved register state, XGETBV), capped by DEZERO_CPU_ISA when
// that is set, and that level's copy makes the backend: every primitive is then one virtual
// call into code built for this CPU, as before. avx512_bf16 and amx run the avx512 copy; they
// matter to oneDNN (bfloat16 products and convolutions), which picks its own kernels: the cap is
// passed on to it (dnnl::set_max_cpu_isa) before its first primitive.
#pragma once

#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/cpu/gemm.hpp"
#include "dezero/isa_level.hpp"

namespace dezero::detail::cpu {

// The level query itself is in the bottom layer (isa_level.hpp), for the 16-bit converters too.
using ::dezero::detail::cpu_best_isa;
using ::dezero::detail::cpu_model;
using ::dezero::detail::isa_name;
using ::dezero::detail::IsaLevel;

// The level in use (isa_in_use()); the first call caps oneDNN too.
IsaLevel cpu_isa();
// DEZERO_CPU_ISA's value when it capped the level, else "".
const char* cpu_isa_cap();

// What one copy of the kernels offers the rest of the library: its backend, and the entry
// points that tests and benchmarks call directly (gemm.hpp, kernels.hpp; the baseline's
// cpu::sgemm, cpu::gemm, ... forward to the copy in use).
struct KernelTable {
  IsaLevel level;            // the level it was compiled for (sse2, avx2 or avx512)
  const char* gemm_kernels;  // e.g. "AVX-512 sgemm (14 x 32 tiles) + gemm_small"
  Backend* (*make_backend)();
  bool (*sgemm_available)();
  void (*sgemm)(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                const float* bias, Round round);
  bool (*sgemm_small)(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                      std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                      const float* bias);
  void (*gemm)(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
               std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b,
               double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch);
  bool (*gemm_bias)(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                    std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c, std::int64_t ldc);
  bool (*gemm_lowp)(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                    DType a_dt, std::int64_t lda, const void* b, DType b_dt, std::int64_t ldb, const float* bias,
                    float* c, std::int64_t ldc, bool accumulate);
  bool (*conv2d_forward)(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g);
  bool (*conv2d_backward_data)(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g);
  bool (*conv2d_backward_filter)(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g);
};

// One line on stderr, once per process and type, the first time a product under autocast(compute)
// runs on the float32 kernels with rounded operands because this CPU has no 16-bit product.
void note_lowp_emulated(DType compute);

// The copy for cpu_isa().
const KernelTable& kernel_table();
// The copy for `level` (avx512_bf16 and amx: the avx512 one); nullptr when this CPU cannot run
// it or the build has no such copy (a build for another architecture has one, "sse2").
const KernelTable* kernel_table_for(IsaLevel level);

// Each copy's table (cpu_backend.cpp), by the name of its namespace.
const KernelTable& kernel_table_isa_sse2();
const KernelTable& kernel_table_isa_avx2();
const KernelTable& kernel_table_isa_avx512();

}  // namespace dezero::detail::cpu
