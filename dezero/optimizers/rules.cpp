// dezero/optimizers/rules.cpp - the five update rules of optimizers.hpp: SGD,
// MomentumSGD, AdaGrad, AdaDelta and Adam (DeZero optimizers.py, step 46).
//
// Each update_one(w, g, s) is one in-place call of tensor/fused.hpp (one fused
// backend kernel per parameter, no allocation). Optimizer::update (optimizer.cpp)
// has already given w, g and every s[k] the parameter's shape, dtype and device.
// Adam's bias-corrected step size lr() is computed on the host, once per parameter
// and step; the formulas are next to each class in optimizers.hpp.
#include "dezero/optimizers.hpp"

#include <cmath>
#include <vector>

#include "dezero/tensor/fused.hpp"

namespace dezero::optimizers {

// --- SGD and MomentumSGD ---------------------------------------------------------------
void SGD::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>&) { detail::sgd_update_(w, g, lr); }

void MomentumSGD::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::momentum_sgd_update_(w, g, s[0], lr, momentum);
}

// --- AdaGrad and AdaDelta --------------------------------------------------------------
void AdaGrad::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adagrad_update_(w, g, s[0], lr, eps);
}

void AdaDelta::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adadelta_update_(w, g, s[0], s[1], rho, eps);
}

// --- Adam ------------------------------------------------------------------------------
double Adam::lr() const {
  const double t = static_cast<double>(this->t());
  return alpha * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t));
}

void Adam::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adam_update_(w, g, s[0], s[1], lr(), beta1, beta2, eps);
}

}  // namespace dezero::optimizers
