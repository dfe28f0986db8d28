// functions/linalg.cpp - matmul and linear (DeZero functions.py §3.4; steps 41, 43).
//
// 2-D products run as one GEMM with transpose flags, forward and backward, so no
// transposed copy of a weight matrix is ever made: for y = op(a) op(b),
//   ga = gy op(b)^T  (or op(b) gy^T when a was transposed)
//   gb = op(a)^T gy  (or gy^T op(a) when b was transposed)
// which are themselves MatMul nodes, so double backprop works. N-d operands are
// batches of matrices (np.matmul) and go through the general path.
#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

class MatMul : public Function {
 public:
  MatMul(bool ta, bool tb) : ta_(ta), tb_(tb) {}
  TensorList forward(const TensorList& xs) override { return {detail::matmul_t(xs[0], xs[1], ta_, tb_)}; }
  VariableList backward(const VariableList& gys) override;
  std::string name() const override { return "MatMul"; }

 private:
  bool ta_, tb_;
};

Variable mm(const Variable& a, const Variable& b, bool ta, bool tb) {
  return (*std::make_shared<MatMul>(ta, tb))(a, b);
}

VariableList MatMul::backward(const VariableList& gys) {
  const Variable& gy = gys[0];
  const Variable& a = input(0);
  const Variable& b = input(1);
  Variable ga, gb;
  if (!Config::enable_backprop) {  // no graph to record: the same products on Tensors
    const Tensor &g = gy.data(), &ad = a.data(), &bd = b.data();
    if (needs_input_grad(0))
      ga = Variable(ta_ ? detail::matmul_t(bd, g, tb_, true) : detail::matmul_t(g, bd, false, !tb_));
    if (needs_input_grad(1))
      gb = Variable(tb_ ? detail::matmul_t(g, ad, true, ta_) : detail::matmul_t(ad, g, !ta_, false));
    return {ga, gb};
  }
  if (needs_input_grad(0)) ga = ta_ ? mm(b, gy, tb_, true) : mm(gy, b, false, !tb_);
  if (needs_input_grad(1)) gb = tb_ ? mm(gy, a, true, ta_) : mm(a, gy, !ta_, false);
  return {ga, gb};
}

// y = x W + b in one node: GEMM onto the broadcast bias.
class Linear : public Function {
 public:
  TensorList forward(const TensorList& xs) override {
    return {detail::matmul_t(xs[0], xs[1], false, false, xs.size() > 2 ? xs[2] : Tensor())};
  }
  VariableList backward(const VariableList& gys) override {
    const Variable& gy = gys[0];
    VariableList g(inputs().size());
    if (!Config::enable_backprop) {  // no graph to record: the same products on Tensors
      const Tensor& t = gy.data();
      if (needs_input_grad(0)) g[0] = Variable(detail::matmul_t(t, input(1).data(), false, true));
      if (needs_input_grad(1)) g[1] = Variable(detail::matmul_t(input(0).data(), t, true, false));
      if (inputs().size() > 2 && needs_input_grad(2)) g[2] = Variable(sum_to(t, input(2).shape()));
      return g;
    }
    if (needs_input_grad(0)) g[0] = mm(gy, input(1), false, true);
    if (needs_input_grad(1)) g[1] = mm(input(0), gy, true, false);
    if (inputs().size() > 2 && needs_input_grad(2)) g[2] = F::sum_to(gy, input(2).shape());
    return g;
  }
};

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
    if (needs_input_grad(1)) gb = F::sum_to(F::matmul(swap_last(input(0)), gy), input(1).shape());
    return {ga, gb};
  }
  std::string name() const override { return "MatMul"; }
};

void check_matmul(const char* op, const Variable& x, const Variable& W) {
  detail::check_same_device(op, x.data(), W.data());
  if (x.ndim() == 0 || W.ndim() == 0)
    throw ShapeError(std::string(op) + ": operands must be at least 1-d, got shapes " + x.shape().str() + " and " +
                     W.shape().str());
}

}  // namespace

namespace F {

Variable matmul(const Variable& x, const Variable& W) {
  check_matmul("matmul", x, W);
  if (x.ndim() == 2 && W.ndim() == 2) return mm(x, W, false, false);
  if (x.ndim() == 1 || W.ndim() == 1) {  // np.dot's 1-d rules through 2-d products
    Variable a = x.ndim() == 1 ? reshape(x, Shape{1, x.shape()[0]}) : x;
    Variable b = W.ndim() == 1 ? reshape(W, Shape{W.shape()[0], 1}) : W;
    Variable y = matmul(a, b);
    Shape out(y.shape().begin(), y.shape().end());
    if (x.ndim() == 1) out.erase(out.end() - 2);
    if (W.ndim() == 1) out.erase(out.end() - 1);
    return reshape(y, out);
  }
  return (*std::make_shared<BatchedMatMul>())(x, W);
}

Variable linear(const Variable& x, const Variable& W, const Variable& b) {
  check_matmul("linear", x, W);
  if (x.ndim() != 2 || W.ndim() != 2)
    throw ShapeError("linear: expected x (N, in) and W (in, out), got " + x.shape().str() + " and " + W.shape().str());
  if (x.shape()[1] != W.shape()[0])
    throw ShapeError("linear: shapes " + x.shape().str() + " and " + W.shape().str() + " are not aligned: " +
                     std::to_string(x.shape()[1]) + " != " + std::to_string(W.shape()[0]) +
                     "; hint: W is (in_size, out_size) as in DeZero");
  auto f = std::make_shared<Linear>();
  if (b.defined() && b.data().defined()) {
    broadcast_shapes(b.shape(), Shape{x.shape()[0], W.shape()[1]}, "linear");
    return f->apply({x, W, b})[0];
  }
  return f->apply({x, W})[0];
}

}  // namespace F
}  // namespace dezero
