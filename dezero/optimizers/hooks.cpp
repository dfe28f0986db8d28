// dezero/optimizers/hooks.cpp - the optimizer hooks of optimizers.hpp: WeightDecay,
// ClipGrad and FreezeParam (DeZero optimizers.py, step 46).
//
// A hook runs inside Optimizer::update on the parameters about to be updated. The
// in-place hooks first make the gradient the parameter's own (own_grad below), so
// that a gradient shared with another variable is left alone; WeightDecay adds
// rate * W to all gradients with one multi-tensor kernel (detail::axpy_multi_) where
// the dtypes match; ClipGrad sums the squares of each gradient and reads the sum back
// to the host (so it allocates and waits for the device), then scales every gradient
// in place; FreezeParam only clears gradients.
#include "dezero/optimizers.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "dezero/tensor/fused.hpp"

namespace dezero::optimizers {

// --- a gradient of one's own -----------------------------------------------------------
namespace {
// The gradient tensor of p, made p's own first if another variable shares its node
// or storage (add's backward hands the same gradient to both inputs): an in-place
// hook must not change anyone else's gradient.
Tensor& own_grad(Parameter& p) {
  auto& g = p.node()->grad;
  if (g.use_count() > 1 || g->data.storage().use_count() > 1) {
    std::shared_ptr<VariableNode> fresh = dezero::detail::make_leaf_node();
    fresh->data = g->data.copy();
    g = fresh;
  }
  return g->data;
}
}  // namespace

// --- WeightDecay: grad += rate * W -----------------------------------------------------
// Every gradient first made its own, then all of those of the weights' dtype in one
// multi-tensor call (detail::axpy_multi_), unless one parameter is listed twice (its
// gradient would be decayed twice, concurrently): then one axpy_ each, in order. The
// lists are kept per thread and reused, so a step allocates nothing.
namespace {
struct DecayLists {
  std::vector<Tensor*> ys;
  std::vector<const Tensor*> xs;
  std::vector<const void*> seen;
};
}  // namespace

void WeightDecay::own_gradients(std::vector<Parameter>& params) const {
  for (auto& p : params)
    if (p.has_grad()) own_grad(p);
}

void WeightDecay::operator()(std::vector<Parameter>& params) const {
  [[gnu::tls_model("initial-exec")]] thread_local DecayLists lists;
  auto& [ys, xs, seen] = lists;
  ys.clear();
  xs.clear();
  for (auto& p : params) {
    if (!p.has_grad()) continue;
    Tensor& g = own_grad(p);
    if (g.dtype() == p.data().dtype()) {
      ys.push_back(&g);
      xs.push_back(&p.node()->data);
    } else {
      g += p.data() * rate;
    }
  }
  seen.clear();
  for (const Tensor* y : ys) seen.push_back(y->raw_data());
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) == seen.end()) {
    detail::axpy_multi_(ys.data(), rate, xs.data(), ys.size());
  } else {
    for (std::size_t i = 0; i < ys.size(); ++i) detail::axpy_(*ys[i], rate, *xs[i]);
  }
}

// --- ClipGrad: grad *= max_norm / (norm + 1e-6) when below 1 ---------------------------
void ClipGrad::operator()(std::vector<Parameter>& params) const {
  double total = 0;
  for (auto& p : params)
    if (p.has_grad()) total += sum(square(p.grad().data())).astype(float64).item<double>();
  const double rate = max_norm / (std::sqrt(total) + 1e-6);
  if (rate >= 1) return;
  for (auto& p : params)
    if (p.has_grad()) own_grad(p) *= rate;
}

// --- FreezeParam: no gradient, no update -----------------------------------------------
void FreezeParam::add(const L::Layer& layer) {
  for (auto& p : layer.params()) add(p);
}
void FreezeParam::add(const Parameter& param) {
  if (!param.defined()) throw ValueError("FreezeParam: an empty parameter");
  frozen_.push_back(param);
  nodes_.insert(param.node().get());
}
void FreezeParam::operator()(std::vector<Parameter>& params) const {
  for (auto& p : params)
    if (nodes_.count(p.node().get())) p.cleargrad();
}

}  // namespace dezero::optimizers
