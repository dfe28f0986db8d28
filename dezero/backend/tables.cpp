// dezero/backend/tables.cpp - the optional tables' defaults, written once over the required
// core (backend.hpp). A device without a faster form of an entry runs these; a device with
// one hands them the cases its kernel does not take. Each composes the core's primitives in
// the order of the unfused expression that the entry replaces (tensor/linalg.cpp's matmul_t,
// tensor/fused.cpp's mean_squared_error), so this default and the unfused Tensor expression
// give the same bits; a fused kernel gives the same values (backend.hpp says where its sums
// may run in another order).
#include <cstddef>

#include "dezero/backend/backend.hpp"

namespace dezero::detail {
namespace {

// Scratch memory on the core's device for the life of one default.
class Scratch {
 public:
  Scratch(Backend& be, DType dt, std::int64_t n)
      : be_(be), nbytes_(static_cast<std::size_t>(n) * dtype_size(dt)), p_(be.allocate(nbytes_)) {}
  ~Scratch() { be_.deallocate(p_, nbytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return p_; }

 private:
  Backend& be_;
  std::size_t nbytes_;
  void* p_;
};

// One flat run of n elements; stride 0 repeats a single element along it.
Strided run(std::int64_t n, std::int64_t stride = 1) {
  Strided s;
  s.ndim = 1;
  s.shape[0] = n;
  s.strides[0] = stride;
  return s;
}

// C's m rows of n, row stride ldc, each set to (or, accumulate, increased by) the row `bias`.
void bias_rows(Backend& be, DType dt, std::int64_t m, std::int64_t n, const void* bias, void* c, std::int64_t ldc,
               bool accumulate) {
  Strided src, dst;
  src.ndim = dst.ndim = 2;
  src.shape[0] = dst.shape[0] = m;
  src.shape[1] = dst.shape[1] = n;
  src.strides[0] = 0;
  src.strides[1] = 1;
  dst.strides[0] = ldc;
  dst.strides[1] = 1;
  be.copy_strided(dt, bias, src, c, dst, accumulate);
}

}  // namespace

// --- NnKernels ------------------------------------------------------------------------------
// matmul_t's unfused form: broadcast_to(bias, (m, n)).copy(), then C = op(A) op(B) + 1 * C.
void NnKernels::gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                          std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c,
                          std::int64_t ldc) {
  bias_rows(core_, dt, m, n, bias, c, ldc, false);
  if (m > 0 && n > 0 && k > 0) core_.gemm(dt, ta, tb, m, n, k, 1.0, a, lda, 0, b, ldb, 0, 1.0, c, ldc, 0, 1);
}

// sum(squared_difference(x0, x1)) / divisor: the squares, one sum over all n, one division.
void NnKernels::mse_forward(DType dt, const void* x0, const void* x1, void* loss, std::int64_t n, double divisor) {
  Scratch tmp(core_, dt, n + 1);  // the n squares, then their sum
  char* sq = static_cast<char*>(tmp.get());
  void* total = sq + static_cast<std::size_t>(n) * dtype_size(dt);
  const Strided s = run(n);
  core_.binary(BinaryOp::SquaredDiff, dt, x0, s, x1, s, sq, s);
  core_.reduce(ReduceOp::Sum, dt, sq, total, 1, n, 1);
  core_.unary(UnaryOp::DivScalar, dt, total, loss, 1, divisor);
}

// gy * (x0 - x1) * scale: the difference, the product with the one-element gy, the scaling.
void NnKernels::mse_backward(DType dt, const void* x0, const void* x1, const void* gy, void* gx, std::int64_t n,
                             double scale) {
  Scratch tmp(core_, dt, n);
  const Strided s = run(n);
  core_.binary(BinaryOp::Sub, dt, x0, s, x1, s, gx, s);
  core_.binary(BinaryOp::Mul, dt, gy, run(n, 0), gx, s, tmp.get(), s);
  core_.unary(UnaryOp::MulScalar, dt, tmp.get(), gx, n, scale);
}

// --- LowpKernels ----------------------------------------------------------------------------
// Each operand rounded to `compute` and back into a float32 copy of its stored layout, then
// the float32 product: gemm_bias for a row of bias, gemm with beta = 1 to accumulate.
void LowpKernels::gemm(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                       const Operand& a, const Operand& b, const float* bias, float* c, std::int64_t ldc,
                       bool accumulate) {
  const DType f32 = DType::Float32;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum: the bias, C itself, or zeros
    if (!accumulate) core_.fill(f32, c, (m - 1) * ldc + n, 0.0);
    if (bias) bias_rows(core_, f32, m, n, bias, c, ldc, true);
    return;
  }
  // A stored as (ta ? k : m) rows of ld, B as (tb ? n : k) rows of ld.
  auto stored = [](const Operand& o, std::int64_t rows, std::int64_t cols) { return (rows - 1) * o.ld + cols; };
  const std::int64_t na = ta ? stored(a, k, m) : stored(a, m, k);
  const std::int64_t nb = tb ? stored(b, n, k) : stored(b, k, n);
  Scratch ra(core_, f32, na), rb(core_, f32, nb);
  auto round = [&](const Operand& o, std::int64_t count, void* out) {
    if (o.dtype == compute) {
      core_.cast(compute, o.data, f32, out, count);
      return;
    }
    Scratch half(core_, compute, count);
    core_.cast(f32, o.data, compute, half.get(), count);
    core_.cast(compute, half.get(), f32, out, count);
  };
  round(a, na, ra.get());
  round(b, nb, rb.get());
  if (bias && !accumulate) {
    core_.nn().gemm_bias(f32, ta, tb, m, n, k, ra.get(), a.ld, rb.get(), b.ld, bias, c, ldc);
    return;
  }
  if (bias) bias_rows(core_, f32, m, n, bias, c, ldc, true);
  core_.gemm(f32, ta, tb, m, n, k, 1.0, ra.get(), a.ld, 0, rb.get(), b.ld, 0, accumulate ? 1.0 : 0.0, c, ldc, 0, 1);
}

// --- OptimizerKernels -----------------------------------------------------------------------
void OptimizerKernels::update_multi(UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                                    const UpdateArgs& args) {
  for (std::size_t i = 0; i < n; ++i)
    if (chunks[i].numel > 0)
      core_.optimizer_update(rule, dt, chunks[i].param, chunks[i].grad, chunks[i].s1, chunks[i].s2, chunks[i].numel,
                             args);
}

}  // namespace dezero::detail
