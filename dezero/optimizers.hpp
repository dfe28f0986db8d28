// dezero/optimizers.hpp - dezero::optimizers: SGD, MomentumSGD, AdaGrad, AdaDelta,
// Adam and the hooks WeightDecay, ClipGrad, FreezeParam (DeZero optimizers.py, step 46).
//
//   optimizers::SGD optimizer(0.2);
//   optimizer.setup(model);                 // a Layer / Model (kept by reference) or a list of Parameters
//   optimizer.add_hook(optimizers::WeightDecay(1e-4));
//   ... loss.backward(); optimizer.update();
//
// update() takes the parameters that have a gradient, runs the hooks on them in
// order, then updates each one still holding a gradient (FreezeParam clears them)
// in place with one fused kernel per parameter. State (momentum, Adam's m and v)
// is kept per parameter node, created with zeros on the parameter's device at its
// first update, and follows the parameter if it later moves to another device.
// After the first update() a step allocates no tensor memory (hooks excepted:
// ClipGrad computes norms). save_state / load_state write and read that state
// (.npz) so that a training run can resume exactly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/layers.hpp"

namespace dezero::optimizers {

// A hook sees (and may change) the parameters about to be updated.
using Hook = std::function<void(std::vector<Parameter>& params)>;

// --- Optimizer -----------------------------------------------------------------------------------
class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The target: a layer kept by reference (it must outlive the optimizer), a shared
  // layer (kept alive), or a fixed list of parameters. Returns *this.
  Optimizer& setup(L::Layer& target);
  Optimizer& setup(const std::shared_ptr<L::Layer>& target);
  Optimizer& setup(std::vector<Parameter> params);

  void update();
  Optimizer& add_hook(Hook hook);
  void clear_hooks();

  std::int64_t t() const { return t_; }  // number of update() calls (Adam's t)
  void reset_state();                     // forget every state tensor and t

  // State file: "t" (int64) and "p<i>/<name>" for the i-th parameter of the target
  // (in params() order) with each of its state tensors (e.g. "p0/m", "p0/v").
  // load_state checks the whole file against the target (keys, shapes, dtypes)
  // before changing anything; tensors go to each parameter's device.
  void save_state(const std::string& path) const;
  void load_state(const std::string& path);

 protected:
  Optimizer() = default;
  // Names of the per-parameter state tensors (none for SGD).
  virtual std::vector<std::string> state_names() const { return {}; }
  // Updates one parameter's data in place. grad has param's shape, dtype and device
  // (a gradient of another dtype - float64 data through float32 weights - is cast
  // first); state holds state_names().size() tensors like param.
  virtual void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) = 0;

 private:
  struct Slot {
    std::weak_ptr<VariableNode> owner;
    std::vector<Tensor> state;
  };
  void gather(std::vector<Parameter>& out) const;
  std::vector<Tensor>& state_for(const Parameter& p);

  L::Layer* target_ = nullptr;
  std::shared_ptr<L::Layer> owned_target_;
  std::vector<Parameter> fixed_params_;
  bool has_target_ = false;
  std::vector<Hook> hooks_;
  std::unordered_map<const VariableNode*, Slot> slots_;
  std::vector<Parameter> all_, params_;  // reused by update(): no allocation per step
  std::int64_t t_ = 0;
};

// --- update rules -------------------------------------------------------------------------------
// W -= lr * g
class SGD : public Optimizer {
 public:
  explicit SGD(double lr = 0.01) : lr(lr) {}
  double lr;

 protected:
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// v = momentum * v - lr * g; W += v
class MomentumSGD : public Optimizer {
 public:
  explicit MomentumSGD(double lr = 0.01, double momentum = 0.9) : lr(lr), momentum(momentum) {}
  double lr, momentum;

 protected:
  std::vector<std::string> state_names() const override { return {"v"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// h += g * g; W -= lr * g / (sqrt(h) + eps)
class AdaGrad : public Optimizer {
 public:
  explicit AdaGrad(double lr = 0.001, double eps = 1e-8) : lr(lr), eps(eps) {}
  double lr, eps;

 protected:
  std::vector<std::string> state_names() const override { return {"h"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// msg = rho msg + (1-rho) g^2; dx = sqrt((msdx+eps)/(msg+eps)) g; msdx = rho msdx + (1-rho) dx^2; W -= dx
class AdaDelta : public Optimizer {
 public:
  explicit AdaDelta(double rho = 0.95, double eps = 1e-6) : rho(rho), eps(eps) {}
  double rho, eps;

 protected:
  std::vector<std::string> state_names() const override { return {"msg", "msdx"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// m += (1-b1)(g-m); v += (1-b2)(g^2-v); W -= lr() m / (sqrt(v) + eps),
// lr() = alpha sqrt(1 - b2^t) / (1 - b1^t) with t counted per update() call.
class Adam : public Optimizer {
 public:
  explicit Adam(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8)
      : alpha(alpha), beta1(beta1), beta2(beta2), eps(eps) {}
  double alpha, beta1, beta2, eps;
  double lr() const;

 protected:
  std::vector<std::string> state_names() const override { return {"m", "v"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// --- hooks --------------------------------------------------------------------------------------
// grad += rate * W in place: the same as adding rate/2 * sum(W^2) to the loss.
class WeightDecay {
 public:
  explicit WeightDecay(double rate) : rate(rate) {}
  void operator()(std::vector<Parameter>& params) const;
  double rate;
};

// Scales every gradient by max_norm / (norm + 1e-6) when that is below 1, where
// norm is the L2 norm of all the gradients together.
class ClipGrad {
 public:
  explicit ClipGrad(double max_norm) : max_norm(max_norm) {}
  void operator()(std::vector<Parameter>& params) const;
  double max_norm;
};

// Clears the gradients of the given layers' (or parameters') parameters, so the
// optimizer skips them (DeZero crashed here instead).
class FreezeParam {
 public:
  template <class... Ts>
  explicit FreezeParam(const Ts&... targets) {
    (add(targets), ...);
  }
  void add(const L::Layer& layer);
  void add(const Parameter& param);
  template <class T>
  void add(const std::shared_ptr<T>& layer) {
    add(static_cast<const L::Layer&>(*layer));
  }
  void operator()(std::vector<Parameter>& params) const;

 private:
  std::vector<Parameter> frozen_;  // keeps the nodes alive, so their addresses stay theirs
  std::unordered_set<const VariableNode*> nodes_;
};

}  // namespace dezero::optimizers
