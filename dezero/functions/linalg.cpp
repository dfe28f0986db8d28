// dezero/functions/linalg.cpp - matmul and linear (DeZero functions.py; steps 41, 43).
//
// 2-D products run as one GEMM with transpose flags, forward and backward, so no
// transposed copy of a weight matrix is ever made: for y = op(a) op(b),
//   ga = gy op(b)^T  (or op(b) gy^T when a was transposed)
//   gb = op(a)^T gy  (or gy^T op(a) when b was transposed)
// which are themselves MatMul nodes, so double backprop works. N-d operands are
// batches of matrices (np.matmul) and go through the general path.
//
// Mixed precision (issue 31): MatMul and Linear keep the autocast type they were called
// under (Config::autocast, float32 when none) and compute their backward products in it
// too, wherever backward runs; matmul_t rounds float32 operands to it. With a graph being
// recorded, the forward rounds its two float32 operands once and keeps the rounded copies
// (half the operands' bytes, as PyTorch's autocast keeps its casts) for the backward
// without create_graph, which then rounds only gy, once for both products: the same
// values as rounding each operand again, with 3 roundings per node instead of 6.
#include "dezero/functions/linalg.hpp"

#include <type_traits>

#include "dezero/functions.hpp"
#include "dezero/onednn.hpp"
#include "dezero/functions/dual.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

// The rounded operands a mixed-precision product keeps for its backward: made when the
// product runs under autocast on float32 operands while a graph is recorded. On a CPU without
// the 16-bit product (cpu_supports_bf16() / cpu_supports_fp16() false) the float32 kernels round
// the operands as they pack them (cpu/gemm.cpp): there the float32 operands themselves are kept
// (the graph holds them anyway) and nothing is copied, so autocast costs no pass over memory.
struct RoundedOperands {
  Tensor a, b;
  bool keep(const Tensor& x, const Tensor& y, DType compute) {
    if (!is_half(compute) || !Config::enable_backprop || x.dtype() != DType::Float32 ||
        y.dtype() != DType::Float32 || x.ndim() != 2 || y.ndim() != 2 || x.size() == 0 || y.size() == 0)
      return false;
    const bool rounds_as_it_packs =
        x.device().is_cpu() && !(compute == DType::BFloat16 ? cpu_supports_bf16() : cpu_supports_fp16());
    a = rounds_as_it_packs ? x : x.astype(compute);
    b = rounds_as_it_packs ? y : y.astype(compute);
    return true;
  }
  // gy rounded once for the two products (a float32 gy only; anything else: no reuse); left float32
  // where the kept operands are (the kernels round it).
  bool usable(const Tensor& gy) const { return a.defined() && gy.dtype() == DType::Float32; }
  Tensor rounded(const Tensor& gy, DType compute) const { return a.dtype() == compute ? gy.astype(compute) : gy; }
};

class MatMul : public detail::DualFunction<MatMul> {
 public:
  MatMul(bool ta, bool tb, DType compute) : ta_(ta), tb_(tb), compute_(compute) {}
  TensorList forward(const TensorList& xs) override {
    if (kept_.keep(xs[0], xs[1], compute_) && aligned(xs[0], xs[1]))
      return {detail::matmul_lowp(kept_.a, kept_.b, ta_, tb_, Tensor(), compute_)};
    kept_ = {};
    return {detail::matmul_t(xs[0], xs[1], ta_, tb_, Tensor(), compute_)};
  }
  std::string name() const override { return "MatMul"; }
  // "transpose_a", "transpose_b" 0 / 1: y = op(a) op(b) (absent in the batched N-d MatMul).
  FunctionAttrs attributes() const override {
    return {{"transpose_a", std::int64_t{ta_}}, {"transpose_b", std::int64_t{tb_}}};
  }

  // y = op(a) op(b): ga = gy op(b)^T (op(b) gy^T when a was transposed),
  // gb = op(a)^T gy (gy^T op(a) when b was transposed).
  template <class V>
  detail::GradList<V> grads(const V& gy) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      if (kept_.usable(gy)) {  // the forward's rounded operands, gy rounded once
        Tensor g16 = kept_.rounded(gy, compute_), ga, gb;
        if (needs_input_grad(0))
          ga = ta_ ? detail::matmul_lowp(kept_.b, g16, tb_, true, Tensor(), compute_)
                   : detail::matmul_lowp(g16, kept_.b, false, !tb_, Tensor(), compute_);
        if (needs_input_grad(1))
          gb = tb_ ? detail::matmul_lowp(g16, kept_.a, true, ta_, Tensor(), compute_)
                   : detail::matmul_lowp(kept_.a, g16, !ta_, false, Tensor(), compute_);
        return {ga, gb};
      }
    }
    const V& a = detail::as<V>(input(0));
    const V& b = detail::as<V>(input(1));
    V ga, gb;
    if (needs_input_grad(0)) ga = ta_ ? detail::mm(b, gy, tb_, true, compute_) : detail::mm(gy, b, false, !tb_, compute_);
    if (needs_input_grad(1)) gb = tb_ ? detail::mm(gy, a, true, ta_, compute_) : detail::mm(a, gy, !ta_, false, compute_);
    return {ga, gb};
  }

 private:
  bool aligned(const Tensor& a, const Tensor& b) const {
    return (ta_ ? a.shape()[0] : a.shape()[1]) == (tb_ ? b.shape()[1] : b.shape()[0]);
  }
  bool ta_, tb_;
  DType compute_;
  RoundedOperands kept_;
};

// y = x W + b in one node: GEMM onto the broadcast bias.
// x: (N, in), W: (in, out), b: (out,) or anything that broadcasts to (N, out).
class Linear : public detail::DualFunction<Linear> {
 public:
  std::string name() const override { return "Linear"; }
  explicit Linear(DType compute) : compute_(compute) {}
  TensorList forward(const TensorList& xs) override {
    const Tensor bias = xs.size() > 2 ? xs[2] : Tensor();
    if (kept_.keep(xs[0], xs[1], compute_)) return {detail::matmul_lowp(kept_.a, kept_.b, false, false, bias, compute_)};
    return {detail::matmul_t(xs[0], xs[1], false, false, bias, compute_)};
  }
  template <class V>
  detail::GradList<V> grads(const V& gy) const {
    detail::GradList<V> g(inputs().size());
    if constexpr (std::is_same_v<V, Tensor>) {
      if (kept_.usable(gy)) {  // the forward's rounded x and W, gy rounded once
        Tensor g16 = kept_.rounded(gy, compute_);
        if (needs_input_grad(0)) g[0] = detail::matmul_lowp(g16, kept_.b, false, true, Tensor(), compute_);
        if (needs_input_grad(1)) g[1] = detail::matmul_lowp(kept_.a, g16, true, false, Tensor(), compute_);
        if (inputs().size() > 2 && needs_input_grad(2)) g[2] = detail::sum_to(gy, input(2).shape());
        return g;
      }
    }
    if (needs_input_grad(0)) g[0] = detail::mm(gy, detail::as<V>(input(1)), false, true, compute_);
    if (needs_input_grad(1)) g[1] = detail::mm(detail::as<V>(input(0)), gy, true, false, compute_);
    if (inputs().size() > 2 && needs_input_grad(2)) g[2] = detail::sum_to(gy, input(2).shape());
    return g;
  }

 private:
  DType compute_;
  RoundedOperands kept_;
};

}  // namespace

Variable detail::mm(const Variable& a, const Variable& b, bool ta, bool tb, DType compute) {
  return call<MatMul>(detail::in(a, b), ta, tb, compute);
}

namespace {

// Batched (N-d) matmul: gradients through swapped last axes, summed over broadcast batches.
class BatchedMatMul : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::matmul(xs[0], xs[1])}; }
  VariableList backward(const VariableList& gys) override {
    auto swap_last = [](const Variable& v) {
      std::vector<int> axes(v.ndim());
      for (int i = 0; i < v.ndim(); ++i) axes[i] = i;
      std::swap(axes[v.ndim() - 1], axes[v.ndim() - 2]);
      return F::transpose(v, axes);
    };
    const Variable& gy = gys[0];
    Variable ga, gb;
    if (needs_input_grad(0)) ga = F::sum_to(F::matmul(gy, swap_last(input(1))), input(0).shape());
    if (needs_input_grad(1)) {
      const Variable& a = input(0);
      if (input(1).ndim() == 2 && a.ndim() > 2) {
        // one W for every batch of a: gW (k, n) = sum_i a_i^T gy_i = a (B m, k)^T gy (B m, n), one
        // 2-d product instead of B products and a sum over them
        const std::int64_t k = a.shape()[a.ndim() - 1], n = gy.shape()[gy.ndim() - 1];
        gb = F::matmul(F::transpose(F::reshape(a, Shape{-1, k})), F::reshape(gy, Shape{-1, n}));
      } else {
        gb = F::sum_to(F::matmul(swap_last(a), gy), input(1).shape());
      }
    }
    return {ga, gb};
  }
  std::string name() const override { return "MatMul"; }
};

void check_matmul(const char* op, const Variable& x, const Variable& W) {
  detail::check_same_device(op, x.data(), W.data());
  if (x.ndim() == 0 || W.ndim() == 0)
    detail::fail<ShapeError>(op, "operands must be at least 1-d, got shapes ", x.shape(), " and ", W.shape());
}

}  // namespace

namespace F {

Variable matmul(const Variable& x, const Variable& W) {
  check_matmul("matmul", x, W);
  if (x.ndim() == 2 && W.ndim() == 2) return detail::mm(x, W, false, false, detail::autocast_compute(Config::autocast, x.device()));
  if (x.ndim() == 1 || W.ndim() == 1) {  // np.dot's 1-d rules through 2-d products
    Variable a = x.ndim() == 1 ? reshape(x, Shape{1, x.shape()[0]}) : x;
    Variable b = W.ndim() == 1 ? reshape(W, Shape{W.shape()[0], 1}) : W;
    Variable y = matmul(a, b);
    Shape out(y.shape().begin(), y.shape().end());
    if (x.ndim() == 1) out.erase(out.end() - 2);
    if (W.ndim() == 1) out.erase(out.end() - 1);
    return reshape(y, out);
  }
  return call<BatchedMatMul>(detail::in(x, W));
}

Variable matmul(const Variable& x, const Variable& W, Transposed t) {
  check_matmul("matmul", x, W);
  if (x.ndim() != 2 || W.ndim() != 2)
    detail::fail<ShapeError>("matmul", "a transposed product takes 2-d operands, got ", x.shape(), " and ", W.shape(),
                             "; hint: F::transpose for N-d ones");
  if (t != Transposed::none && t != Transposed::x && t != Transposed::W && t != Transposed::both)
    detail::fail<ValueError>("matmul", "Transposed ", std::to_string(static_cast<int>(t)),
                             " is not one of none, x, W, both");
  const bool ta = t == Transposed::x || t == Transposed::both, tb = t == Transposed::W || t == Transposed::both;
  const std::int64_t k = ta ? x.shape()[0] : x.shape()[1], k2 = tb ? W.shape()[1] : W.shape()[0];
  if (k != k2)
    detail::fail<ShapeError>("matmul", "shapes ", x.shape(), (ta ? "^T" : ""), " and ", W.shape(), (tb ? "^T" : ""),
                             " are not aligned: ", std::to_string(k), " != ", std::to_string(k2));
  return detail::mm(x, W, ta, tb, detail::autocast_compute(Config::autocast, x.device()));
}

Variable linear(const Variable& x, const Variable& W, const Variable& b) {
  check_matmul("linear", x, W);
  if (x.ndim() != 2 || W.ndim() != 2)
    detail::fail<ShapeError>("linear", "expected x (N, in) and W (in, out), got ", x.shape(), " and ", W.shape());
  if (x.shape()[1] != W.shape()[0])
    detail::fail<ShapeError>("linear", "shapes ", x.shape(), " and ", W.shape(), " are not aligned: ",
                             std::to_string(x.shape()[1]), " != ", std::to_string(W.shape()[0]),
                             "; hint: W is (in_size, out_size) as in DeZero");
  if (b.defined() && b.data().defined()) {
    broadcast_shapes(b.shape(), Shape{x.shape()[0], W.shape()[1]}, "linear");
    return call<Linear>(detail::in(x, W, b), detail::autocast_compute(Config::autocast, x.device()));
  }
  return call<Linear>(detail::in(x, W), detail::autocast_compute(Config::autocast, x.device()));
}

}  // namespace F
}  // namespace dezero
