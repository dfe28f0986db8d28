// tensor_optim.cpp - validation + dispatch of the fused optimizer updates.
#include "dezero/tensor/optim.hpp"

#include <string>

#include "dezero/tensor/strided.hpp"

namespace dezero::detail {

namespace {
void check_like(const char* op, const char* what, const Tensor& param, const Tensor& t) {
  check_defined(op, t);
  if (t.shape() != param.shape() || t.dtype() != param.dtype() || t.device() != param.device())
    throw ShapeError(std::string(op) + ": " + what + " is " + describe(t) + " but the parameter is " +
                     describe(param) + "; hint: they must match in shape, dtype and device");
}
}  // namespace

void optimizer_update(UpdateRule rule, Tensor& param, const Tensor& grad, Tensor* s1, Tensor* s2,
                      const UpdateArgs& args) {
  const char* op = "optimizer update";
  check_defined(op, param);
  if (!is_floating(param.dtype()))
    throw DtypeError(std::string(op) + ": the parameter is " + describe(param) + "; hint: only float32 and float64 "
                     "parameters can be optimised");
  check_like(op, "the gradient", param, grad);
  if (s1) check_like(op, "the optimizer state", param, *s1);
  if (s2) check_like(op, "the optimizer state", param, *s2);
  if (param.size() == 0) return;
  backend_of(param).optimizer_update(rule, param.dtype(), param.raw_data(), grad.raw_data(),
                                     s1 ? s1->raw_data() : nullptr, s2 ? s2->raw_data() : nullptr, param.size(),
                                     args);
}

void axpy_(Tensor& y, double a, const Tensor& x) {
  // SGD's rule p -= lr * g with p = y, g = x and lr = -a is exactly y += a * x.
  UpdateArgs args;
  args.lr = -a;
  optimizer_update(UpdateRule::SGD, y, x, nullptr, nullptr, args);
}

}  // namespace dezero::detail
