// dezero/tensor/linalg.cpp - matrix products: matmul and dot (tensor.hpp), and
// matmul_t (tensor/fused.hpp), the 2-D product with transpose flags and a bias that
// F::matmul and F::linear (functions/linalg.cpp) use, forward and backward, instead
// of transposing copies.
//
// Both promote the operands to one dtype and make one Backend::gemm call with
// alpha 1 and leading dimensions of the contiguous operands; matmul turns 1-D
// operands into a row / a column and runs a batch of matrices (broadcast batch axes
// materialised unless an operand is a single matrix, which gets batch stride 0).
// matmul_t with a bias (n,) makes one call to the backend's NnKernels::gemm_bias (a
// fused pass on the host, the bias copied and gemm with beta 1 elsewhere); another bias
// is broadcast into y and accumulated into (beta 1). Under autocast, matmul_lowp calls
// LowpKernels::gemm, which rounds the operands itself where no 16-bit kernel exists.
#include "dezero/tensor.hpp"

#include <cstdio>
#include <mutex>
#include <string>

#include "dezero/cpu.hpp"
#include "dezero/env.hpp"
#include "dezero/onednn.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/matmul.hpp"
#include "dezero/tensor/strided.hpp"

namespace dezero {

using detail::backend_of;

// --- matmul: np.matmul / np.dot --------------------------------------------------------
// a0: (..., m, k) or (k,), b0: (..., k, n) or (k,) -> (batch..., m, n), the 1-D axes dropped.
Tensor matmul(const Tensor& a0, const Tensor& b0) {
  detail::check_same_device("matmul", a0, b0);
  if (a0.ndim() == 0 || b0.ndim() == 0)
    detail::fail<ShapeError>("matmul", "operands must be at least 1-d, got shapes ", a0.shape(), " and ", b0.shape(),
                             "; hint: use * for scalars");
  DType dt = promote_types(a0.dtype(), b0.dtype());
  // bfloat16 / float16: the float32 product of the (exactly widened) values, rounded once.
  if (is_half(dt)) return detail::half_result(matmul(detail::half_operand(a0, dt), detail::half_operand(b0, dt)), dt);
  Tensor a = a0.dtype() == dt ? a0 : a0.astype(dt);
  Tensor b = b0.dtype() == dt ? b0 : b0.astype(dt);
  bool a1 = a.ndim() == 1, b1 = b.ndim() == 1;
  if (a1) a = a.reshape(Shape{1, a.shape()[0]});
  if (b1) b = b.reshape(Shape{b.shape()[0], 1});
  std::int64_t m = a.shape()[a.ndim() - 2], k = a.shape()[a.ndim() - 1];
  std::int64_t k2 = b.shape()[b.ndim() - 2], n = b.shape()[b.ndim() - 1];
  if (k != k2)
    detail::fail<ShapeError>("matmul", "shapes ", a0.shape(), " and ", b0.shape(), " are not aligned: ",
                             std::to_string(k), " (dim ", std::to_string(a0.ndim() - 1), ") != ", std::to_string(k2),
                             " (dim ", std::to_string(b1 ? 0 : b0.ndim() - 2), ")");
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  std::int64_t nb = batch.numel();
  // Materialise broadcast batches unless an operand is a single matrix (stride 0).
  std::int64_t sa = m * k, sb = k * n;
  if (ba != batch) {
    if (ba.numel() == 1) sa = 0;
    else { Shape t = batch; t.push_back(m); t.push_back(k); a = broadcast_to(a, t); }
  }
  if (bb != batch) {
    if (bb.numel() == 1) sb = 0;
    else { Shape t = batch; t.push_back(k); t.push_back(n); b = broadcast_to(b, t); }
  }
  Shape out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(n);
  Tensor y = Tensor::empty(out, dt, a.device());
  if (y.size() == 0) return y;
  if (k == 0) { y.fill_(0); return y; }
  if (sb == 0 && sa != 0 && nb > 1) {
    // One matrix b for every batch of a (a Linear on (..., m, k) values, PyTorch's attention on
    // (seq, batch, dim)): the batches of a are rows of one (nb m, k) matrix, so it is one GEMM
    // instead of nb small ones (at m = 1, nb matrix-vector products).
    backend_of(a).gemm(dt, false, false, nb * m, n, k, 1.0, a.raw_data(), k, 0, b.raw_data(), n, 0, 0.0,
                       y.raw_data(), n, 0, 1);
    return y;
  }
  backend_of(a).gemm(dt, false, false, m, n, k, 1.0, a.raw_data(), k, sa, b.raw_data(), n, sb, 0.0, y.raw_data(), n,
                     m * n, nb);
  return y;
}
Tensor dot(const Tensor& a, const Tensor& b) { return matmul(a, b); }

}  // namespace dezero

namespace dezero::detail {

// --- matmul_t: op(a) @ op(b) (+ bias), 2-D ---------------------------------------------
// a0: (m, k), or (k, m) when ta; b0: (k, n), or (n, k) when tb; bias: undefined, or any
// shape that broadcasts to (m, n) -> y: (m, n).
Tensor matmul_t(const Tensor& a0, const Tensor& b0, bool ta, bool tb, const Tensor& bias, DType compute) {
  check_same_device("matmul", a0, b0);
  if (a0.ndim() != 2 || b0.ndim() != 2)
    detail::fail<ShapeError>("matmul", "expected 2-d operands, got ", a0.shape(), " and ", b0.shape());
  DType dt = promote_types(a0.dtype(), b0.dtype());
  if (is_half(dt))  // as matmul: in float32 (under the same autocast type), rounded once
    return half_result(matmul_t(half_operand(a0, dt), half_operand(b0, dt), ta, tb,
                                bias.defined() ? half_operand(bias, dt) : bias, compute),
                       dt);
  Tensor a = a0.dtype() == dt ? a0 : a0.astype(dt);
  Tensor b = b0.dtype() == dt ? b0 : b0.astype(dt);
  std::int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  std::int64_t k2 = tb ? b.shape()[1] : b.shape()[0], n = tb ? b.shape()[0] : b.shape()[1];
  if (k != k2)
    detail::fail<ShapeError>("matmul", "shapes ", a0.shape(), (ta ? "^T" : ""), " and ", b0.shape(), (tb ? "^T" : ""),
                             " are not aligned: ", std::to_string(k), " != ", std::to_string(k2));
  if (dt == DType::Float32 && is_half(compute) && m > 0 && n > 0 && k > 0)  // mixed precision
    return matmul_lowp(a0.dtype() == compute ? a0 : a, b0.dtype() == compute ? b0 : b, ta, tb, bias, compute);
  Tensor y;
  double beta = 0.0;
  if (bias.defined()) {
    check_same_device("linear", a0, bias);
    Tensor bb = bias.dtype() == dt ? bias : bias.astype(dt);
    if (bb.ndim() == 1 && bb.size() == n && k > 0 && m > 0) {  // a row per output feature
      y = Tensor::empty(Shape{m, n}, dt, a.device());
      backend_of(a).nn().gemm_bias(dt, ta, tb, m, n, k, a.raw_data(), a.shape()[1], b.raw_data(), b.shape()[1],
                                   bb.raw_data(), y.raw_data(), n);
      return y;
    }
    y = broadcast_to(bb, Shape{m, n});
    if (y.is_same(bb)) y = y.copy();
    beta = 1.0;
  } else {
    y = Tensor::empty(Shape{m, n}, dt, a.device());
  }
  if (y.size() == 0) return y;
  if (k == 0) {
    if (!bias.defined()) y.fill_(0);
    return y;
  }
  backend_of(a).gemm(dt, ta, tb, m, n, k, 1.0, a.raw_data(), a.shape()[1], 0, b.raw_data(), b.shape()[1], 0, beta,
                     y.raw_data(), n, 0, 1);
  return y;
}

// --- autocast's type on this device -------------------------------------------------------------
namespace {
bool emulate_autocast() {
  static const bool on = [] {
    const char* v = env_value("DEZERO_AUTOCAST_EMULATE");
    return v && std::string(v) == "1";
  }();
  return on;
}
}  // namespace

DType autocast_compute(DType requested, const Device& device) {
  if (!is_half(requested) || !device.is_cpu()) return requested;
  const bool native = requested == DType::BFloat16 ? cpu_supports_bf16() : cpu_supports_fp16();
  if (native) return requested;
  static std::once_flag bf16, fp16;
  std::call_once(requested == DType::BFloat16 ? bf16 : fp16, [&] {
    const CpuInfo info = cpu_info();
    const char* t = dtype_name(requested);
    if (emulate_autocast())
      std::fprintf(stderr,
                   "dezero: autocast(%s): this CPU (%s, kernels %s) has no %s products; DEZERO_AUTOCAST_EMULATE=1: "
                   "their operands are rounded to %s (linear and matmul as the float32 GEMM packs them, "
                   "convolutions in a pass first): %s's values\n",
                   t, info.model.c_str(), info.isa.c_str(), t, t, t);
    else
      std::fprintf(stderr,
                   "dezero: autocast(%s): this CPU (%s, kernels %s) has no %s products; they run in float32 "
                   "here, unrounded: float32's speed and values (DEZERO_AUTOCAST_EMULATE=1 rounds their operands "
                   "to %s, as %s hardware computes)\n",
                   t, info.model.c_str(), info.isa.c_str(), t, t, t);
  });
  return emulate_autocast() ? requested : DType::Float32;
}

// --- matmul_lowp: the autocast product -----------------------------------------------------
// a, b: float32 or already `compute` (bfloat16 / float16), 2-d and aligned (matmul_t checked
// them, or the caller rounded float32 tensors it had checked); y: (m, n) float32.
Tensor matmul_lowp(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias, DType compute) {
  check_same_device("matmul", a, b);
  const DType dt = DType::Float32;
  auto operand_ok = [&](const Tensor& t) {
    return t.ndim() == 2 && (t.dtype() == dt || t.dtype() == compute);
  };
  if (!is_half(compute) || !operand_ok(a) || !operand_ok(b))
    detail::fail<DtypeError>("matmul", "the mixed-precision product takes 2-d float32 or ", compute, " operands, got ",
                             a, " and ", b, "; hint: use matmul_t");
  const std::int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  const std::int64_t n = tb ? b.shape()[0] : b.shape()[1];
  if ((tb ? b.shape()[1] : b.shape()[0]) != k)
    detail::fail<ShapeError>("matmul", "shapes ", a.shape(), (ta ? "^T" : ""), " and ", b.shape(), (tb ? "^T" : ""),
                             " are not aligned");
  Tensor bb = bias.defined() ? (check_same_device("linear", a, bias), bias.dtype() == dt ? bias : bias.astype(dt))
                             : Tensor();
  if (m == 0 || n == 0 || k == 0)  // nothing to round: the float32 product's own rules
    return matmul_t(a.astype(dt), b.astype(dt), ta, tb, bb);
  // The backend's low-precision product, onto a broadcast copy of a bias that is not a row
  // per output feature.
  const bool row = bb.defined() && bb.ndim() == 1 && bb.size() == n;
  Tensor y = bb.defined() && !row ? broadcast_to(bb, Shape{m, n}).copy() : Tensor::empty(Shape{m, n}, dt, a.device());
  backend_of(a).lowp().gemm(compute, ta, tb, m, n, k, {a.raw_data(), a.dtype(), a.shape()[1]},
                            {b.raw_data(), b.dtype(), b.shape()[1]},
                            row ? static_cast<const float*>(bb.raw_data()) : nullptr, static_cast<float*>(y.raw_data()),
                            n, bb.defined() && !row);
  return y;
}

}  // namespace dezero::detail
