// tensor_nn.cpp - validation + dispatch for the fused neural-network kernels
// (softmax, leaky relu, softmax cross entropy). The math lives in the backends.
#include "dezero/tensor/fused.hpp"

#include <string>

#include "dezero/tensor/strided.hpp"

namespace dezero::detail {

namespace {
Tensor float_input(const char* op, const Tensor& x) {
  check_defined(op, x);
  return is_integer(x.dtype()) ? x.astype(float64) : x;
}
}  // namespace

// --- softmax / log_softmax ---------------------------------------------------------
Tensor softmax(const Tensor& x0, int axis, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  Tensor x = float_input(op, x0);
  if (x.ndim() == 0) throw ShapeError(std::string(op) + ": expected at least a 1-d array, got a 0-d array");
  int a = normalize_axis(op, axis, x.ndim());
  std::int64_t outer = 1, inner = 1, c = x.shape()[a];
  for (int i = 0; i < a; ++i) outer *= x.shape()[i];
  for (int i = a + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (y.size()) backend_of(x).softmax(x.dtype(), x.raw_data(), y.raw_data(), outer, c, inner, log);
  return y;
}

// --- leaky relu ----------------------------------------------------------------------
namespace {
Tensor leaky(UnaryOp opc, const char* op, const Tensor& x0, double slope) {
  Tensor x = float_input(op, x0);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (y.size()) backend_of(x).unary(opc, x.dtype(), x.raw_data(), y.raw_data(), y.size(), slope);
  return y;
}
}  // namespace
Tensor leaky_relu(const Tensor& x, double slope) { return leaky(UnaryOp::LeakyRelu, "leaky_relu", x, slope); }
Tensor leaky_relu_mask(const Tensor& x, double slope) { return leaky(UnaryOp::LeakyMask, "leaky_relu", x, slope); }

// --- sigmoid and relu backward (steps 43 and 47's networks) -----------------------------
namespace {
// gy (op) y element by element when both have the same shape and dtype; else nothing.
Tensor fused_grad(BinaryOp op, const char* name, const Tensor& gy, const Tensor& y) {
  check_defined(name, gy);
  check_defined(name, y);
  if (gy.shape() != y.shape() || gy.dtype() != y.dtype()) return Tensor();
  check_same_device(name, gy, y);
  Tensor gx = Tensor::empty(y.shape(), y.dtype(), y.device());
  if (gx.size()) {
    Strided s = make_contiguous(Shape{y.size()});  // one flat run: the contiguous fast path
    backend_of(y).binary(op, y.dtype(), gy.raw_data(), s, y.raw_data(), s, gx.raw_data(), s);
  }
  return gx;
}
}  // namespace

Tensor sigmoid_grad(const Tensor& gy, const Tensor& y) {
  Tensor gx = fused_grad(BinaryOp::SigmoidGrad, "sigmoid_grad", gy, y);
  return gx.defined() ? gx : gy * y * (1.0 - y);
}

Tensor relu_grad(const Tensor& gy, const Tensor& x) {
  Tensor gx = fused_grad(BinaryOp::ReluGrad, "relu_grad", gy, x);
  return gx.defined() ? gx : gy * greater(x, 0.0);
}

// --- softmax cross entropy -------------------------------------------------------------
namespace {
void check_logits(const char* op, const Tensor& x) {
  check_defined(op, x);
  if (!is_floating(x.dtype()))
    throw DtypeError(std::string(op) + ": logits must be float32 or float64, got " + describe(x) +
                     "; hint: x.astype(dezero::float32)");
  if (x.ndim() != 2)
    throw ShapeError(std::string(op) + ": logits must be 2-d (N, C), got " + describe(x) +
                     "; hint: reshape to (N, C) first");
  if (x.shape()[1] == 0) throw ShapeError(std::string(op) + ": logits " + describe(x) + " have no classes");
}
}  // namespace

Tensor sce_labels(const char* op, const Tensor& x, const Tensor& t) {
  check_logits(op, x);
  check_defined(op, t);
  check_same_device(op, x, t);
  if (!is_integer(t.dtype()))
    throw DtypeError(std::string(op) + ": labels must be int32 or int64 class ids, got " + describe(t) +
                     "; hint: t.astype(dezero::int64)");
  const std::int64_t n = x.shape()[0], c = x.shape()[1];
  if (t.size() != n)
    throw ShapeError(std::string(op) + ": logits " + describe(x) + " need " + std::to_string(n) +
                     " labels, got " + describe(t));
  Tensor t64 = (t.dtype() == int64 ? t : t.astype(int64)).reshape(Shape{n});
  if (t64.device().is_cpu()) {
    const std::int64_t* p = t64.data<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i)
      if (p[i] < 0 || p[i] >= c)
        throw IndexError(std::string(op) + ": label " + std::to_string(p[i]) + " at position " + std::to_string(i) +
                         " is out of range for " + std::to_string(c) + " classes (logits " + describe(x) +
                         "); hint: labels must be in [0, " + std::to_string(c) + ")");
  }
  return t64;
}

Tensor softmax_cross_entropy(const Tensor& x, const Tensor& t) {
  Tensor loss = Tensor::empty(Shape{}, x.dtype(), x.device());
  backend_of(x).softmax_cross_entropy(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(t.raw_data()),
                                      loss.raw_data(), x.shape()[0], x.shape()[1]);
  return loss;
}

Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy0) {
  const char* op = "softmax_cross_entropy_grad";
  check_defined(op, gy0);
  check_same_device(op, x, gy0);
  if (gy0.size() != 1)
    throw ShapeError(std::string(op) + ": the loss gradient must have one element, got " + describe(gy0));
  Tensor gy = gy0.dtype() == x.dtype() ? gy0 : gy0.astype(x.dtype());
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (gx.size())
    backend_of(x).softmax_cross_entropy_grad(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(t.raw_data()),
                                             gy.raw_data(), gx.raw_data(), x.shape()[0], x.shape()[1]);
  return gx;
}

}  // namespace dezero::detail
