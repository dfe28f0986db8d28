// dezero/functions/nn.cpp - accuracy, dropout, embed_id (DeZero functions.py;
// steps 50, 54 and the EmbedID layer).
#include "dezero/functions/nn.hpp"

#include <algorithm>
#include <string>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {
namespace {

// --- embed_id ------------------------------------------------------------------------------
class EmbedIDGrad;

// y = W[ids]; the ids are a constant of the function, not an input. Each id must be a
// row of W, in [0, V) (IndexError naming embed_id otherwise, on both devices).
class EmbedID : public Function {
 public:
  std::string name() const override { return "EmbedID"; }
  explicit EmbedID(Tensor ids) : ids_(std::move(ids)) {}
  TensorList forward(const TensorList& xs) override {
    return {detail::take_rows("embed_id", xs[0], ids_, "embed_id's ids (rows of W)")};
  }
  VariableList backward(const VariableList& gys) override;
  // "ids": the row indices (the function's input is W alone).
  FunctionAttrs attributes() const override { return {{"ids", ids_}}; }

 private:
  Tensor ids_;
};

// gW = zeros(W.shape) with gy's rows added at ids (repeated ids accumulate).
class EmbedIDGrad : public Function {
 public:
  std::string name() const override { return "EmbedIDGrad"; }
  EmbedIDGrad(Tensor ids, Shape w_shape) : ids_(std::move(ids)), w_shape_(std::move(w_shape)) {}
  TensorList forward(const TensorList& xs) override { return {scatter_add(xs[0], w_shape_, Indices{Index(ids_)})}; }
  VariableList backward(const VariableList& ggs) override { return {F::embed_id(Variable(ids_), ggs[0])}; }

 private:
  Tensor ids_;
  Shape w_shape_;
};

VariableList EmbedID::backward(const VariableList& gys) {
  return {call<EmbedIDGrad>(detail::in(gys[0]), ids_, input(0).shape())};
}

}  // namespace

namespace F {

// --- accuracy (step 50) ----------------------------------------------------------------------
Variable accuracy(const Variable& y, const Variable& t) {
  const Tensor &yd = y.data(), &td = t.data();
  if (yd.ndim() < 2)
    detail::fail<ShapeError>("accuracy", "y must have a class axis 1, e.g. (N, C), got ", yd);
  Tensor pred = yd.argmax(1);
  if (pred.size() != td.size())
    detail::fail<ShapeError>("accuracy", std::to_string(pred.size()), " predictions from y ", yd, " but labels ", td);
  Tensor hit = equal(pred.reshape(td.shape()), td);
  return Variable(dezero::mean(hit.astype(float64)));
}

// --- dropout (step 54) -----------------------------------------------------------------------
Variable dropout(const Variable& x, double dropout_ratio, random::Generator gen) {
  if (!Config::train) return x;
  if (!(dropout_ratio >= 0.0 && dropout_ratio < 1.0))
    detail::fail<ValueError>("dropout", "dropout_ratio must be in [0, 1), got ", std::to_string(dropout_ratio));
  DType dt = is_floating(x.dtype()) ? x.dtype() : float64;
  Tensor keep = greater(gen.rand(x.shape(), dt, x.device()), dropout_ratio);
  return x * Variable(keep / (1.0 - dropout_ratio));
}

// --- embed_id -----------------------------------------------------------------------------------
Variable embed_id(const Variable& x, const Variable& W) {
  const Tensor &ids = x.data(), &w = W.data();
  if (!is_integer(ids.dtype()))
    detail::fail<DtypeError>("embed_id", "ids must be int32 or int64, got ", ids, "; hint: x.astype(dezero::int64)");
  if (w.ndim() < 1) detail::fail<ShapeError>("embed_id", "W must be at least 1-d (V, D), got ", w);
  detail::check_same_device("embed_id", w, ids);
  return call<EmbedID>(detail::in(W), ids);
}

}  // namespace F
}  // namespace dezero
