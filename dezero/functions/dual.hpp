// dezero/functions/dual.hpp - one backward body for two kinds of value (internal to
// functions/).
//
// A backward pass records a graph only with create_graph (step 33). Without one, a
// backward written with Variables still pays for a graph node per operation: a
// VariableNode for each result, a Function call for each operator. The hot
// Functions (matmul, linear, sigmoid, relu, mean_squared_error) therefore write
// their gradient once, as a template over the value type V, and DualFunction runs
// it on Variables while a graph is recorded and on the Tensors inside them when
// none is: the same operations in the same order, so the two give the same bits.
//
//   class Sigmoid : public detail::DualFunction<Sigmoid> {
//     ...
//     template <class V> GradList<V> grads(const V& gy) const {
//       return {sigmoid_grad(gy, as<V>(y_))};
//     }
//   };
//
// The body uses what both types spell alike (+ - * / with values and doubles,
// shape()) and the overloads below for the rest.
#pragma once

#include "dezero/core.hpp"
#include "dezero/functions/activation.hpp"
#include "dezero/functions/reduce.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero::detail {

// A Variable seen as V: itself, or the Tensor it holds.
template <class V>
const V& as(const Variable& v);
template <>
inline const Variable& as<Variable>(const Variable& v) { return v; }
template <>
inline const Tensor& as<Tensor>(const Variable& v) { return v.data(); }

// One gradient per input; an undefined V (Variable() or Tensor()) for an input that
// needs none.
template <class V>
using GradList = SmallVector<V, 3>;

template <class Derived>
class DualFunction : public Function {
 public:
  VariableList backward(const VariableList& gys) final {
    const Derived& self = static_cast<const Derived&>(*this);
    if (Config::enable_backprop) return self.template grads<Variable>(gys[0]);
    GradList<Tensor> g = self.template grads<Tensor>(gys[0].data());
    VariableList out(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i].defined()) out[i] = Variable(std::move(g[i]));
    return out;
  }
};

// --- the operations whose spelling differs between Tensor and Variable ------------------
// sum_to (step 40): Tensor's is dezero::sum_to, Variable's is the SumTo Function.
inline Tensor sum_to(const Tensor& x, const Shape& shape) { return dezero::sum_to(x, shape); }
inline Variable sum_to(const Variable& x, const Shape& shape) { return F::sum_to(x, shape); }

// op(a) @ op(b) for 2-d operands, op = transpose where the flag is set: one GEMM on
// Tensors, a MatMul node on Variables (functions/linalg.cpp).
// compute: the type the product is computed in (Config::autocast when the forward ran).
inline Tensor mm(const Tensor& a, const Tensor& b, bool ta, bool tb, DType compute = DType::Float32) {
  return matmul_t(a, b, ta, tb, Tensor(), compute);
}
Variable mm(const Variable& a, const Variable& b, bool ta, bool tb, DType compute = DType::Float32);

// The sigmoid's backward gy * y * (1 - y): one fused kernel on Tensors (tensor/fused.hpp),
// the same expression in Functions on Variables.
inline Variable sigmoid_grad(const Variable& gy, const Variable& y) { return gy * y * (1.0 - y); }
// mean_squared_error's gradient before sum_to, gy * (x0 - x1) * (2 / N) with N the
// difference's first axis: one kernel on Tensors where the backend has one (tensor/fused.hpp),
// the same expression in Functions on Variables.
inline Tensor mse_grad(const Tensor& gy, const Tensor& x0, const Tensor& x1) {
  return mean_squared_error_grad(gy, x0, x1);
}
inline Variable mse_grad(const Variable& gy, const Variable& x0, const Variable& x1) {
  Variable diff = x0 - x1;
  return gy * diff * (2.0 / static_cast<double>(diff.shape()[0]));
}
// The relu's backward gy * (x > 0). The mask is a Function of x (relu_mask, activation.cpp), so
// that a recorded backward (create_graph) recomputes it from x, as dezero::compile_step replays it.
Variable relu_mask(const Variable& x);
inline Variable relu_grad(const Variable& gy, const Variable& x) { return gy * relu_mask(x); }

}  // namespace dezero::detail
