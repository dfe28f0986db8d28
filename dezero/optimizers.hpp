// dezero/optimizers.hpp - dezero::optimizers: SGD, MomentumSGD, AdaGrad, AdaDelta,
// Adam and the hooks WeightDecay, ClipGrad, FreezeParam (DeZero optimizers.py, step 46).
//
//   optimizers::SGD optimizer(0.2);
//   optimizer.setup(model);                 // a Layer / Model (kept by reference) or a list of Parameters
//   optimizer.add_hook(optimizers::WeightDecay(1e-4));
//   ... loss.backward(); optimizer.update();
//
// or, in DeZero's one line (`optimizer = optimizers.SGD(lr).setup(model)`):
//
//   auto optimizer = optimizers::SGD(0.2).setup(model);   // an SGD, set up, by value
//
// setup() and add_hook() on a named optimizer return a reference to it; on a
// temporary they return the optimizer itself by value (target, hooks and state
// moved into it), so the one-line form owns what it needs. Binding a reference to
// that temporary's result (`auto& o = SGD(lr).setup(model);`, which would dangle)
// does not compile.
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
#include <utility>
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

  // The target: a layer kept by reference (it must outlive the optimizer; update()
  // says so if it did not), a shared layer (kept alive), or a fixed list of
  // parameters. Returns *this. The update rules below (SGD, Adam, ...) return their
  // own type instead, and themselves by value when called on a temporary.
  Optimizer& setup(L::Layer& target) &;
  Optimizer& setup(const std::shared_ptr<L::Layer>& target) &;
  Optimizer& setup(std::vector<Parameter> params) &;

  void update();
  Optimizer& add_hook(Hook hook) &;
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
  // Moving hands over the target, the hooks and the state (the one-line setup()).
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;
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
  std::weak_ptr<const void> target_alive_;  // expires when *target_ is destroyed
  std::shared_ptr<L::Layer> owned_target_;
  std::vector<Parameter> fixed_params_;
  bool has_target_ = false;
  std::vector<Hook> hooks_;
  std::unordered_map<const VariableNode*, Slot> slots_;
  std::vector<Parameter> all_, params_;  // reused by update(): no allocation per step
  std::int64_t t_ = 0;
};

// --- TypedOptimizer: setup() and add_hook() that return the rule's own type -----------------------
// The base of every update rule below (and of a user's own rule that wants DeZero's
// one-line form): `class MyRule : public optimizers::TypedOptimizer<MyRule>`.
template <class Self>
class TypedOptimizer : public Optimizer {
 public:
  // On a named optimizer: set it up in place and return it.
  Self& setup(L::Layer& target) & { return done(Optimizer::setup(target)); }
  Self& setup(const std::shared_ptr<L::Layer>& target) & { return done(Optimizer::setup(target)); }
  Self& setup(std::vector<Parameter> params) & { return done(Optimizer::setup(std::move(params))); }
  Self& add_hook(Hook hook) & { return done(Optimizer::add_hook(std::move(hook))); }
  // On a temporary (`auto optimizer = SGD(lr).setup(model);`): the optimizer itself,
  // moved out by value, so nothing refers to the temporary once the line ends.
  Self setup(L::Layer& target) && { return moved(Optimizer::setup(target)); }
  Self setup(const std::shared_ptr<L::Layer>& target) && { return moved(Optimizer::setup(target)); }
  Self setup(std::vector<Parameter> params) && { return moved(Optimizer::setup(std::move(params))); }
  Self add_hook(Hook hook) && { return moved(Optimizer::add_hook(std::move(hook))); }

 protected:
  TypedOptimizer() = default;

 private:
  static Self& done(Optimizer& o) { return static_cast<Self&>(o); }
  static Self moved(Optimizer& o) { return std::move(static_cast<Self&>(o)); }
};

// --- update rules -------------------------------------------------------------------------------
// W -= lr * g
class SGD : public TypedOptimizer<SGD> {
 public:
  explicit SGD(double lr_ = 0.01) : lr(lr_) {}
  double lr;

 protected:
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// v = momentum * v - lr * g; W += v
class MomentumSGD : public TypedOptimizer<MomentumSGD> {
 public:
  explicit MomentumSGD(double lr_ = 0.01, double momentum_ = 0.9) : lr(lr_), momentum(momentum_) {}
  double lr, momentum;

 protected:
  std::vector<std::string> state_names() const override { return {"v"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// h += g * g; W -= lr * g / (sqrt(h) + eps)
class AdaGrad : public TypedOptimizer<AdaGrad> {
 public:
  explicit AdaGrad(double lr_ = 0.001, double eps_ = 1e-8) : lr(lr_), eps(eps_) {}
  double lr, eps;

 protected:
  std::vector<std::string> state_names() const override { return {"h"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// msg = rho msg + (1-rho) g^2; dx = sqrt((msdx+eps)/(msg+eps)) g; msdx = rho msdx + (1-rho) dx^2; W -= dx
class AdaDelta : public TypedOptimizer<AdaDelta> {
 public:
  explicit AdaDelta(double rho_ = 0.95, double eps_ = 1e-6) : rho(rho_), eps(eps_) {}
  double rho, eps;

 protected:
  std::vector<std::string> state_names() const override { return {"msg", "msdx"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
};

// m += (1-b1)(g-m); v += (1-b2)(g^2-v); W -= lr() m / (sqrt(v) + eps),
// lr() = alpha sqrt(1 - b2^t) / (1 - b1^t) with t counted per update() call.
class Adam : public TypedOptimizer<Adam> {
 public:
  explicit Adam(double alpha_ = 0.001, double beta1_ = 0.9, double beta2_ = 0.999, double eps_ = 1e-8)
      : alpha(alpha_), beta1(beta1_), beta2(beta2_), eps(eps_) {}
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
  explicit WeightDecay(double rate_) : rate(rate_) {}
  void operator()(std::vector<Parameter>& params) const;
  double rate;
};

// Scales every gradient by max_norm / (norm + 1e-6) when that is below 1, where
// norm is the L2 norm of all the gradients together.
class ClipGrad {
 public:
  explicit ClipGrad(double max_norm_) : max_norm(max_norm_) {}
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
