// dezero/tensor/matmul.hpp - the 2-D products with transpose flags of tensor/linalg.cpp
// (internal, not installed; the layers above the tensor reach it through tensor/fused.hpp).
// Each entry validates shapes, dtypes and devices, then calls the backend; no autograd here.
#pragma once

#include <cstdint>
#include <optional>

#include "dezero/pair.hpp"
#include "dezero/tensor.hpp"

namespace dezero::detail {

// The type autocast's products compute in on `device`: `requested` (bfloat16 or float16), or
// float32 on a host without such products (cpu_supports_bf16() / cpu_supports_fp16() false: AVX2,
// plain AVX-512), where rounding the operands would cost float32 time and more; with
// DEZERO_AUTOCAST_EMULATE=1 there the operands are rounded anyway (bfloat16 hardware's values).
// One line on stderr, once per process and type, says which. Anything else passes through.
DType autocast_compute(DType requested, const Device& device);

// --- matmul with transpose flags -------------------------------------------------------
// 2-D matmul with transpose flags: op(a) @ op(b), op = transpose when the flag is set.
// If bias is defined, y = op(a) @ op(b) + bias (bias broadcast over rows).
// a: (m, k), or (k, m) when ta; b: (k, n), or (n, k) when tb; bias: (n,) or broadcastable to (m, n).
// compute: bfloat16 or float16 (autocast) makes a float32 product round a and b to that type
// and sum in float32 (the backend's LowpKernels::gemm, whose default rounds copies for the
// float32 gemm); float32, the default, and every other dtype: no rounding.
Tensor matmul_t(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias = Tensor(),
                DType compute = DType::Float32);
// The mixed-precision product itself, float32 y whatever the operands: a and b 2-d, each
// float32 (rounded to `compute` here) or already of type `compute` (bfloat16 / float16: a
// copy rounded once and used twice, as F::linear keeps its forward's for its backward).
Tensor matmul_lowp(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias, DType compute);

}  // namespace dezero::detail
