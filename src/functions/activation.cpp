// functions/activation.cpp - sigmoid, relu (DeZero functions.py §3.5).
#include "dezero/functions.hpp"
#include "dezero/functions_nn.hpp"

namespace dezero {
namespace {

class Sigmoid : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::sigmoid(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    Variable y = output(0);
    if (!y.defined()) y = F::sigmoid(input(0));
    return {gys[0] * y * F::rsub(y, 1.0)};
  }
};

class ReLU : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {dezero::relu(xs[0])}; }
  VariableList backward(const VariableList& gys) override {
    return {gys[0] * Variable(greater(input(0).data(), 0.0))};
  }
};

}  // namespace

namespace F {
Variable sigmoid(const Variable& x) { return (*std::make_shared<Sigmoid>())(x); }
Variable relu(const Variable& x) { return (*std::make_shared<ReLU>())(x); }
}  // namespace F
}  // namespace dezero
