// dezero/optimizers/rules.cpp - the five update rules of optimizers.hpp: SGD,
// MomentumSGD, AdaGrad, AdaDelta and Adam (DeZero optimizers.py, step 46).
//
// Each update_one(w, g, s) is one in-place call of tensor/fused.hpp (one fused
// backend kernel per parameter, no allocation); each update_many(items, n), which
// Optimizer::update uses, is one multi-tensor call for all of a step's parameters
// (one kernel per device and dtype), with the same bits. Optimizer::update
// (optimizer.cpp) has already given w, g and every s[k] the parameter's shape, dtype
// and device. Adam's bias-corrected step size (bias_corrected_lr()) is computed on the host, once per
// call; the formulas are next to each class in optimizers.hpp. update_many_decayed is
// update_many with WeightDecay's addition fused into the same kernel, where the device has
// that kernel (the host).
#include "dezero/optimizers.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

#include "dezero/tensor/fused.hpp"

namespace dezero::optimizers {

namespace {
// A step's items as tensor/fused.hpp's list (state[0] and state[1] as s1 and s2), in a
// list kept per thread and reused: no allocation once it has grown.
const detail::ParamUpdate* as_updates(const Optimizer::UpdateItem* items, std::size_t n) {
  [[gnu::tls_model("initial-exec")]] thread_local std::vector<detail::ParamUpdate> out;
  out.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<Tensor>& s = *items[i].state;
    out[i].param = items[i].param;
    out[i].grad = items[i].grad;
    out[i].s1 = s.size() > 0 ? &s[0] : nullptr;
    out[i].s2 = s.size() > 1 ? &s[1] : nullptr;
  }
  return out.data();
}
}  // namespace

// --- SGD and MomentumSGD ---------------------------------------------------------------
void SGD::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>&) { detail::sgd_update_(w, g, lr); }
void SGD::update_many(const UpdateItem* items, std::size_t n) {
  detail::sgd_update_multi_(as_updates(items, n), n, lr);
}
bool SGD::update_many_decayed(const UpdateItem* items, std::size_t n, double rate) {
  const auto* u = as_updates(items, n);
  if (!detail::fuses_weight_decay(u, n)) return false;
  detail::sgd_update_multi_(u, n, lr, rate);
  return true;
}

void MomentumSGD::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::momentum_sgd_update_(w, g, s[0], lr, momentum);
}
void MomentumSGD::update_many(const UpdateItem* items, std::size_t n) {
  detail::momentum_sgd_update_multi_(as_updates(items, n), n, lr, momentum);
}
bool MomentumSGD::update_many_decayed(const UpdateItem* items, std::size_t n, double rate) {
  const auto* u = as_updates(items, n);
  if (!detail::fuses_weight_decay(u, n)) return false;
  detail::momentum_sgd_update_multi_(u, n, lr, momentum, rate);
  return true;
}

// --- AdaGrad and AdaDelta --------------------------------------------------------------
void AdaGrad::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adagrad_update_(w, g, s[0], lr, eps);
}
void AdaGrad::update_many(const UpdateItem* items, std::size_t n) {
  detail::adagrad_update_multi_(as_updates(items, n), n, lr, eps);
}
bool AdaGrad::update_many_decayed(const UpdateItem* items, std::size_t n, double rate) {
  const auto* u = as_updates(items, n);
  if (!detail::fuses_weight_decay(u, n)) return false;
  detail::adagrad_update_multi_(u, n, lr, eps, rate);
  return true;
}

void AdaDelta::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adadelta_update_(w, g, s[0], s[1], rho, eps);
}
void AdaDelta::update_many(const UpdateItem* items, std::size_t n) {
  detail::adadelta_update_multi_(as_updates(items, n), n, rho, eps);
}
bool AdaDelta::update_many_decayed(const UpdateItem* items, std::size_t n, double rate) {
  const auto* u = as_updates(items, n);
  if (!detail::fuses_weight_decay(u, n)) return false;
  detail::adadelta_update_multi_(u, n, rho, eps, rate);
  return true;
}

// --- Adam ------------------------------------------------------------------------------
double Adam::bias_corrected_lr() const {
  if (this->t() == 0)
    throw ValueError("Adam::bias_corrected_lr: there is no bias-corrected step before the first update() (t = 0 "
                     "gives 0 / 0); hint: the learning rate is `alpha` (" + std::to_string(alpha) + ")");
  const double t = static_cast<double>(this->t());
  return alpha * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t));
}

void Adam::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adam_update_(w, g, s[0], s[1], bias_corrected_lr(), beta1, beta2, eps);
}
void Adam::update_many(const UpdateItem* items, std::size_t n) {
  detail::adam_update_multi_(as_updates(items, n), n, bias_corrected_lr(), beta1, beta2, eps);
}
bool Adam::update_many_decayed(const UpdateItem* items, std::size_t n, double rate) {
  const auto* u = as_updates(items, n);
  if (!detail::fuses_weight_decay(u, n)) return false;
  detail::adam_update_multi_(u, n, bias_corrected_lr(), beta1, beta2, eps, rate);
  return true;
}

}  // namespace dezero::optimizers
