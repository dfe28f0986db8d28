/// \file
/// The namespace dezero::optimizers: SGD, MomentumSGD, AdaGrad, AdaDelta,
/// Adam and the hooks WeightDecay, ClipGrad, FreezeParam (DeZero optimizers.py, step 46).
///
/// ```cpp
/// optimizers::SGD optimizer(0.2);
/// optimizer.setup(model);                 // a Layer / Model (kept by reference) or a list of Parameters
/// optimizer.add_hook(optimizers::WeightDecay(1e-4));
/// ... loss.backward(); optimizer.update();
/// ```
///
/// or, in DeZero's one line (`optimizer = optimizers.SGD(lr).setup(model)`):
///
/// ```cpp
/// auto optimizer = optimizers::SGD(0.2).setup(model);   // an SGD, set up, by value
/// ```
///
/// setup() and add_hook() on a named optimizer return a reference to it; on a
/// temporary they return the optimizer itself by value (target, hooks and state
/// moved into it), so the one-line form owns what it needs. Binding a reference to
/// that temporary's result (`auto& o = SGD(lr).setup(model);`, which would dangle)
/// does not compile.
///
/// update() takes the parameters that have a gradient, runs the hooks on them in
/// order, then updates those still holding a gradient (FreezeParam clears them) in
/// place, all at once: one multi-tensor kernel per device and dtype (PyTorch's
/// "foreach" step), not one kernel per parameter. State (momentum, Adam's m and v)
/// is kept per parameter node, created with zeros on the parameter's device at its
/// first update, and follows the parameter if it later moves to another device.
/// After the first update() a step allocates no tensor memory (hooks excepted:
/// ClipGrad computes norms). save_state / load_state write and read that state
/// (.npz) so that a training run can resume exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/layers.hpp"
#include "dezero/npz.hpp"

/// dezero::optimizers: the optimizers (DeZero's dezero.optimizers, step 46).
///
/// The update rules SGD, MomentumSGD, AdaGrad, AdaDelta and Adam (each a
/// TypedOptimizer over the base Optimizer) and the hooks WeightDecay, ClipGrad and
/// FreezeParam that Optimizer::add_hook takes.
namespace dezero::optimizers {

/// A hook sees (and may change) the parameters about to be updated.
///
/// Optimizer::update calls each hook, in the order added, with the parameters that
/// have a gradient; a hook may change their gradients or clear them (cleargrad()) to
/// skip the update.
using Hook = std::function<void(std::vector<Parameter>& params)>;

// --- Optimizer -----------------------------------------------------------------------------------
/// The base of every optimizer (DeZero's Optimizer, step 46): a target, hooks, update() and per-parameter state.
///
/// A rule derives from TypedOptimizer (which derives from this) and overrides
/// update_one() and, when it keeps state, state_names(). Optimizers are not copyable;
/// only the rules' one-line setup() moves them.
class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Sets the target: a layer kept by reference, a shared layer (kept alive), or a fixed list of parameters.
  ///
  /// A layer kept by reference must outlive the optimizer (update() says so if it did
  /// not); its parameters are read at every update(), so lazily created ones are
  /// included once they have data. Returns *this. The update rules below (SGD, Adam, ...)
  /// return their own type instead, and themselves by value when called on a temporary
  /// (TypedOptimizer). A null std::shared_ptr is a ValueError. Setting up again
  /// replaces the target and keeps the state of the parameters it shares.
  ///@{
  Optimizer& setup(L::Layer& target) &;
  Optimizer& setup(const std::shared_ptr<L::Layer>& target) &;
  Optimizer& setup(std::vector<Parameter> params) &;
  ///@}

  /// One step: updates every parameter of the target that has a gradient.
  ///
  /// Takes the parameters that have a gradient (and data), counts the step in t(),
  /// runs the hooks on them in order, then updates those still holding a gradient
  /// (FreezeParam clears them) in place: all whose gradient has the weights' dtype
  /// together through update_many() (the rules here: one multi-tensor kernel per
  /// device and dtype), the others one at a time through update_one(). A gradient of
  /// another dtype is applied as NumPy's `W -= lr * g` would: a wider one (float64)
  /// through a widened copy rounded back once, a narrower one cast first. Parameters
  /// that share memory (one parameter listed twice) are updated one at a time, in order,
  /// as before. Throws ValueError when setup() was never called or the layer it was
  /// given has been destroyed.
  void update();
  /// Appends a hook, run by update() in the order added, and returns `*this`.
  ///
  /// An empty hook is a ValueError. The rules' add_hook (TypedOptimizer) returns the
  /// rule's own type, and the rule itself by value when called on a temporary.
  Optimizer& add_hook(Hook hook) &;
  /// Removes every hook.
  void clear_hooks();

  std::int64_t t() const { return t_; }  ///< The number of update() calls that stepped (Adam's t).

  /// Loss scaling for float16 mixed precision (Chainer's `Optimizer.loss_scaling`): turns it on and returns `*this`.
  ///
  /// Small gradients underflow to zero in float16 products (autocast(dezero::float16)); a loss
  /// multiplied by a large scale keeps them in range. With loss scaling on, compute the
  /// gradients with `optimizer.backward(loss)` (loss.backward() with loss_scale() as its first
  /// gradient); update() then checks every gradient: if one holds an inf or a NaN it skips
  /// the step (no hook, no update, t() unchanged; last_step_skipped() says so) and, with a
  /// dynamic scale, halves the scale (not below 1); otherwise it divides the gradients by the
  /// scale before the hooks and the update, and a dynamic scale doubles after `interval`
  /// steps in a row without one. `scale`: a fixed scale (> 0); none: dynamic, from 65536
  /// (2^16). update() after a plain loss.backward() is a ValueError while it is on (the
  /// gradients would be taken as scaled). The scale and its count of good steps are part
  /// of the state (state_dict(), save_state()). ValueError: interval < 1, scale <= 0 or
  /// not finite.
  Optimizer& loss_scaling(std::int64_t interval = 1000, std::optional<double> scale = std::nullopt) &;
  /// The loss scale backward() applies: 1 while loss scaling is off.
  double loss_scale() const { return loss_scale_; }
  /// Whether the last update() skipped its step on a non-finite gradient (loss scaling only).
  bool last_step_skipped() const { return skipped_; }
  /// loss.backward(options) with the first gradient loss_scale() (a loss of one element) so
  /// that every gradient comes out scaled; update() divides them back. Without loss scaling,
  /// the same as loss.backward(options). A ValueError for a loss of more than one element.
  void backward(Variable loss, const BackwardOptions& options = {});

  /// The layer given to setup(model), or nullptr when the target is a parameter list. Throws
  /// ValueError without a target, or when that layer has been destroyed (as update() does).
  L::Layer* target() const;
  /// The parameters update() looks at, in its order: the target layer's params() (lazy ones
  /// without data included) or the list given to setup(). Throws as target() does.
  std::vector<Parameter> target_params() const;
  void reset_state();                     ///< Forgets every state tensor and t (back to 0).

  /// Writes the state to an .npz file, so that a training run can resume exactly.
  ///
  /// State file: "t" (int64) and `"p<i>/<name>"` for the i-th parameter of the target
  /// (in params() order) with each of its state tensors (`"p0/m"`, `"p0/v"` for Adam); a
  /// parameter not updated yet has no entries. ValueError when there is no target (as
  /// update()), IOError when the file cannot be written.
  void save_state(const std::string& path) const;
  /// Reads a state file written by save_state into this optimizer, for the same target.
  ///
  /// load_state checks the whole file against the target (keys, shapes, dtypes)
  /// before changing anything; tensors go to each parameter's device. IOError for a
  /// missing or corrupt file; ValueError for no "t", an array that matches no
  /// parameter, a parameter with only some of its state tensors or with no data yet;
  /// ShapeError / DtypeError for a tensor unlike its parameter.
  void load_state(const std::string& path);
  /// The state save_state writes, as named tensors in memory (PyTorch's `state_dict()`):
  /// "t" and `"p<i>/<name>"`, the tensors shared with the optimizer (not copies).
  utils::NamedTensors state_dict() const;
  /// Takes a state as state_dict() gives it (load_state reads the file, then calls this), with
  /// the same checks, all made before anything changes: on an error the optimizer is as it was.
  /// `where` starts the error messages (e.g. "load_state: 'adam.npz'").
  void load_state_dict(const utils::NamedTensors& state, const std::string& where = "load_state_dict");

  /// One parameter of a step as update_many() gets it: its data (updated in place), its
  /// gradient (same shape, dtype and device) and its state_names().size() state tensors.
  struct UpdateItem {
    Tensor* param;               ///< The parameter's data, updated in place.
    const Tensor* grad;          ///< Its gradient: the data's shape, dtype and device.
    std::vector<Tensor>* state;  ///< Its state tensors, like the data, changed in place.
  };

  /// The optimizer's stable name, which training::Snapshot writes and checks on resume: DeZero's
  /// class names for the library's ("SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam"); for a
  /// rule of your own its C++ class name without namespaces ("SignSGD" for `my::SignSGD`).
  /// Override it to keep your snapshots readable after the class is renamed or moved.
  virtual std::string name() const;

 protected:
  /// An optimizer with no target; only derived rules construct one.
  Optimizer() = default;
  /// Moving hands over the target, the hooks and the state (the one-line setup()).
  ///@{
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;
  ///@}
  /// Names of the per-parameter state tensors (none for SGD).
  ///
  /// They name the keys of the state file and fix how many tensors update_one() gets.
  virtual std::vector<std::string> state_names() const { return {}; }
  /// Updates one parameter's data in place: the rule itself.
  ///
  /// Updates one parameter's data (`param`) in place. grad has param's shape, dtype and device
  /// (a gradient of another dtype - float64 data through float32 weights - is cast
  /// first); state holds state_names().size() tensors like param, zeros at the first
  /// update, to be changed in place.
  virtual void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) = 0;
  /// Updates the `n` parameters of a step at once: the rule for many parameters.
  ///
  /// update() passes, in parameter order, every parameter whose gradient has its dtype,
  /// each as update_one() would get it; no two share memory. The default calls
  /// update_one() for each in turn, so a rule of one's own needs only update_one(). The
  /// rules here override it with one multi-tensor kernel per device and dtype
  /// (tensor/fused.hpp), which gives the same bits.
  virtual void update_many(const UpdateItem* items, std::size_t n);
  /// update_many() with WeightDecay(rate) fused into the same pass, or false with nothing done.
  ///
  /// update() calls it instead of the hook and update_many() when a WeightDecay is the
  /// only hook, no two parameters share memory and every gradient has its weights' dtype:
  /// then each gradient must become grad + rate * W, bit for bit as the hook makes it
  /// (and stay so after the step), and the rule runs on it. The default declines (false),
  /// and so do the rules here on a device without the fused kernel (CUDA); update() then
  /// runs the hook and update_many() as usual.
  virtual bool update_many_decayed(const UpdateItem* items, std::size_t n, double rate);

 private:
  struct Slot {
    std::weak_ptr<VariableNode> owner;
    std::vector<Tensor> state;
  };
  // What update() knew of params_[k] at its last step, so that the next one finds the
  // state without a hash lookup: the node and data (address, bytes) it saw, and the
  // node's slot (null until it had a gradient). slots_ entries are never erased one by
  // one, so a Slot* stays valid until reset_state() / load_state() clear the cache with
  // the map.
  struct Cached {
    const VariableNode* node = nullptr;
    const void* data = nullptr;
    std::size_t bytes = 0;
    Slot* slot = nullptr;
  };
  void gather(std::vector<Parameter>& out) const;
  Slot& slot_for(const Parameter& p);
  void sync_state(Slot& slot, const Tensor& data, std::size_t nstate);
  void update_mixed(Tensor& w, const Tensor& g, std::vector<Tensor>& state);
  bool params_overlap();

  L::Layer* target_ = nullptr;
  std::weak_ptr<const void> target_alive_;  // expires when *target_ is destroyed
  std::shared_ptr<L::Layer> owned_target_;
  std::vector<Parameter> fixed_params_;
  bool has_target_ = false;
  std::vector<Hook> hooks_;
  std::unordered_map<const VariableNode*, Slot> slots_;
  // reused by update(), so that a step allocates nothing once they have grown
  std::vector<Parameter> all_, params_;
  std::vector<Cached> cache_;        // by position in params_ (after the hooks)
  std::vector<UpdateItem> items_;    // the step's update_many() list
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges_;  // params_overlap()'s scratch
  bool overlap_ = false;             // params_ share memory: update one at a time, in order
  int nstate_ = -1;                  // state_names().size(), once known
  std::int64_t t_ = 0;
  // loss scaling: off (interval 0), dynamic, or a fixed scale
  std::int64_t scale_interval_ = 0, good_steps_ = 0;
  bool scale_dynamic_ = false, scaled_grads_ = false, skipped_ = false;
  double loss_scale_ = 1.0;
  bool unscale_or_skip();
};

// --- TypedOptimizer: setup() and add_hook() that return the rule's own type -----------------------
/// The base of every update rule: setup() and add_hook() that return the rule's own type.
///
/// The base of every update rule below (and of a user's own rule that wants DeZero's
/// one-line form): `class MyRule : public optimizers::TypedOptimizer<MyRule>` (CRTP:
/// `Self` is the rule). Each of setup() and add_hook() comes twice:
/// - on a named optimizer (an lvalue, the `&` overloads) it works in place and returns
///   `Self&`, so calls chain: `optimizer.setup(model).add_hook(optimizers::WeightDecay(1e-4));`
/// - on a temporary (an rvalue, the `&&` overloads) it returns the optimizer itself as
///   a `Self` by value, so `auto optimizer = optimizers::SGD(0.2).setup(model);` is an SGD
///   that owns its target, hooks and state. `auto& o = SGD(lr).setup(model);` does not
///   compile, as it would dangle.
///
/// A rule of one's own:
/// ```cpp
/// class SignSGD : public optimizers::TypedOptimizer<SignSGD> {
///  public:
///   explicit SignSGD(double lr_ = 0.01) : lr(lr_) {}
///   double lr;
///  protected:
///   void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>&) override {
///     param -= sign(grad) * lr;
///   }
/// };
/// ```
template <class Self>
class TypedOptimizer : public Optimizer {
 public:
  // One comment per member, not a member group: Doxygen gives a group's comment only to
  // the first member in TypedOptimizer<SGD> and the other instances.

  /// On a named optimizer: sets it up on a layer kept by reference, in place, and returns it.
  ///
  /// As Optimizer::setup: the layer must outlive the optimizer (update() says so if it
  /// did not). Returns `*this` as a `Self&`, so calls chain:
  /// `optimizer.setup(model).add_hook(optimizers::WeightDecay(1e-4));`.
  Self& setup(L::Layer& target) & { return done(Optimizer::setup(target)); }
  /// On a named optimizer: sets it up on a shared layer (kept alive), in place, and returns it; null is a ValueError.
  Self& setup(const std::shared_ptr<L::Layer>& target) & { return done(Optimizer::setup(target)); }
  /// On a named optimizer: sets it up on a fixed list of parameters, in place, and returns it.
  Self& setup(std::vector<Parameter> params) & { return done(Optimizer::setup(std::move(params))); }
  /// On a named optimizer: appends a hook, in place, and returns it; an empty hook is a ValueError.
  Self& add_hook(Hook hook) & { return done(Optimizer::add_hook(std::move(hook))); }

  /// On a temporary: sets it up on a layer kept by reference and returns the optimizer itself, by value.
  ///
  /// On a temporary (`auto optimizer = SGD(lr).setup(model);`): the optimizer itself,
  /// moved out by value (target, hooks and state), so nothing refers to the temporary
  /// once the line ends. The layer must outlive the returned optimizer. Chains too:
  /// `auto o = optimizers::Adam().setup(model).add_hook(optimizers::ClipGrad(1.0));`.
  Self setup(L::Layer& target) && { return moved(Optimizer::setup(target)); }
  /// On a temporary: sets it up on a shared layer (kept alive) and returns the optimizer itself, by value.
  ///
  /// A null pointer is a ValueError.
  Self setup(const std::shared_ptr<L::Layer>& target) && { return moved(Optimizer::setup(target)); }
  /// On a temporary: sets it up on a fixed list of parameters and returns the optimizer itself, by value.
  Self setup(std::vector<Parameter> params) && { return moved(Optimizer::setup(std::move(params))); }
  /// On a temporary: appends a hook and returns the optimizer itself, by value; an empty hook is a ValueError.
  Self add_hook(Hook hook) && { return moved(Optimizer::add_hook(std::move(hook))); }

 protected:
  /// Only the derived rule constructs its base.
  TypedOptimizer() = default;

 private:
  static Self& done(Optimizer& o) { return static_cast<Self&>(o); }
  static Self moved(Optimizer& o) { return std::move(static_cast<Self&>(o)); }
};

// --- update rules -------------------------------------------------------------------------------
/// Stochastic gradient descent (DeZero's SGD): `W -= lr * g`.
class SGD : public TypedOptimizer<SGD> {
 public:
  std::string name() const override { return "SGD"; }  ///< "SGD"
  /// An SGD with the learning rate `lr_`; no state.
  explicit SGD(double lr_ = 0.01) : lr(lr_) {}
  double lr;  ///< The learning rate.

 protected:
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
  void update_many(const UpdateItem* items, std::size_t n) override;
  bool update_many_decayed(const UpdateItem* items, std::size_t n, double rate) override;
};

/// SGD with momentum (DeZero's MomentumSGD): `v = momentum * v - lr * g; W += v`.
class MomentumSGD : public TypedOptimizer<MomentumSGD> {
 public:
  std::string name() const override { return "MomentumSGD"; }  ///< "MomentumSGD"
  /// A MomentumSGD with the learning rate `lr_` and the momentum `momentum_`; state "v" per parameter.
  explicit MomentumSGD(double lr_ = 0.01, double momentum_ = 0.9) : lr(lr_), momentum(momentum_) {}
  /// The learning rate and the momentum.
  ///@{
  double lr, momentum;
  ///@}

 protected:
  std::vector<std::string> state_names() const override { return {"v"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
  void update_many(const UpdateItem* items, std::size_t n) override;
  bool update_many_decayed(const UpdateItem* items, std::size_t n, double rate) override;
};

/// AdaGrad (DeZero's AdaGrad): `h += g * g; W -= lr * g / (sqrt(h) + eps)`.
class AdaGrad : public TypedOptimizer<AdaGrad> {
 public:
  std::string name() const override { return "AdaGrad"; }  ///< "AdaGrad"
  /// An AdaGrad with the learning rate `lr_` and `eps_`; state "h" per parameter.
  explicit AdaGrad(double lr_ = 0.001, double eps_ = 1e-8) : lr(lr_), eps(eps_) {}
  /// The learning rate and the term that keeps the division finite.
  ///@{
  double lr, eps;
  ///@}

 protected:
  std::vector<std::string> state_names() const override { return {"h"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
  void update_many(const UpdateItem* items, std::size_t n) override;
  bool update_many_decayed(const UpdateItem* items, std::size_t n, double rate) override;
};

/// AdaDelta (DeZero's AdaDelta), which needs no learning rate.
///
/// `msg = rho msg + (1-rho) g^2; dx = sqrt((msdx+eps)/(msg+eps)) g; msdx = rho msdx + (1-rho) dx^2; W -= dx`
class AdaDelta : public TypedOptimizer<AdaDelta> {
 public:
  std::string name() const override { return "AdaDelta"; }  ///< "AdaDelta"
  /// An AdaDelta with the decay `rho_` and `eps_`; state "msg" and "msdx" per parameter.
  explicit AdaDelta(double rho_ = 0.95, double eps_ = 1e-6) : rho(rho_), eps(eps_) {}
  /// The decay of the running averages and the term that keeps the square roots finite.
  ///@{
  double rho, eps;
  ///@}

 protected:
  std::vector<std::string> state_names() const override { return {"msg", "msdx"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
  void update_many(const UpdateItem* items, std::size_t n) override;
  bool update_many_decayed(const UpdateItem* items, std::size_t n, double rate) override;
};

/// Adam (DeZero's Adam), with the bias-corrected step size bias_corrected_lr().
///
/// `m += (1-b1)(g-m); v += (1-b2)(g^2-v); W -= lr() m / (sqrt(v) + eps)`,
/// `lr() = alpha sqrt(1 - b2^t) / (1 - b1^t)` with t counted per update() call
/// (b1, b2 are beta1, beta2).
class Adam : public TypedOptimizer<Adam> {
 public:
  std::string name() const override { return "Adam"; }  ///< "Adam"
  /// An Adam with the step size `alpha_`, the decays `beta1_`, `beta2_` and `eps_`; state "m" and "v" per parameter.
  explicit Adam(double alpha_ = 0.001, double beta1_ = 0.9, double beta2_ = 0.999, double eps_ = 1e-8)
      : alpha(alpha_), beta1(beta1_), beta2(beta2_), eps(eps_) {}
  /// `alpha` is the learning rate (PyTorch's and Chainer's `lr`; the Adam paper's alpha):
  /// read and set it directly, e.g. `adam.alpha = 1e-4;` between steps.
  double alpha;
  /// The decays of m and v, and the term that keeps the division finite.
  ///@{
  double beta1, beta2, eps;
  ///@}
  /// The step size the last update() used: `alpha sqrt(1 - beta2^t) / (1 - beta1^t)` at the
  /// current t() (DeZero's `Adam.lr`).
  ///
  /// update() counts the step before it updates, so the first update uses t = 1. Before any
  /// update (t = 0) the formula is 0 / 0: a dezero::ValueError (DeZero raises there too).
  double bias_corrected_lr() const;
  /// DeZero's name for bias_corrected_lr(), which is not the learning rate.
  [[deprecated("Adam::lr() is the bias-corrected step (DeZero's Adam.lr), not the learning rate: read or set "
               "`alpha` for the learning rate, or call bias_corrected_lr()")]] double
  lr() const {
    return bias_corrected_lr();
  }

 protected:
  std::vector<std::string> state_names() const override { return {"m", "v"}; }
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override;
  void update_many(const UpdateItem* items, std::size_t n) override;
  bool update_many_decayed(const UpdateItem* items, std::size_t n, double rate) override;
};

// --- hooks --------------------------------------------------------------------------------------
/// The weight-decay hook: `grad += rate * W` in place.
///
/// grad += rate * W in place: the same as adding rate/2 * sum(W^2) to the loss.
/// `optimizer.add_hook(optimizers::WeightDecay(1e-4));`
class WeightDecay {
 public:
  /// A hook that adds `rate_` times the weights to their gradients.
  explicit WeightDecay(double rate_) : rate(rate_) {}
  /// Adds rate * W to the gradient of each parameter in `params`.
  ///
  /// A gradient shared with another variable is copied first, so that only this
  /// parameter's gradient changes.
  void operator()(std::vector<Parameter>& params) const;
  /// The first half of operator(): makes each gradient its parameter's own (copies one
  /// shared with another variable). Optimizer::update calls it when it fuses the addition
  /// into the rule's kernel (Optimizer::update_many_decayed).
  void own_gradients(std::vector<Parameter>& params) const;
  double rate;  ///< The decay rate.
};

/// The gradient-clipping hook: scales the gradients so that their L2 norm is at most max_norm.
///
/// Scales every gradient by max_norm / (norm + 1e-6) when that is below 1, where
/// norm is the L2 norm of all the gradients together.
class ClipGrad {
 public:
  /// A hook that clips the gradients' total L2 norm to `max_norm_`.
  explicit ClipGrad(double max_norm_) : max_norm(max_norm_) {}
  /// Scales the gradients of `params` in place when their norm exceeds max_norm.
  ///
  /// The norm is read back to the host (so it allocates and waits for the device); a
  /// gradient shared with another variable is copied before it is scaled.
  void operator()(std::vector<Parameter>& params) const;
  double max_norm;  ///< The largest L2 norm the gradients keep.
};

/// The hook that freezes parameters: the optimizer skips them.
///
/// Clears the gradients of the given layers' (or parameters') parameters, so the
/// optimizer skips them (DeZero crashed here instead).
/// `optimizer.add_hook(optimizers::FreezeParam(model.l1, model.l2->b));`
class FreezeParam {
 public:
  /// Freezes each of `targets`: layers (an L::Layer, a std::shared_ptr or L::LayerRef to one) and Parameters.
  ///
  /// As add() for each, in order; an empty Parameter is a ValueError.
  template <class... Ts>
  explicit FreezeParam(const Ts&... targets) {
    (add(targets), ...);
  }
  /// Adds to the frozen set every parameter a layer has now (params()), or one parameter.
  ///
  /// An empty Parameter is a ValueError. The hook keeps the frozen parameters' nodes
  /// alive.
  ///@{
  void add(const L::Layer& layer);
  void add(const Parameter& param);
  template <class T>
  void add(const std::shared_ptr<T>& layer) {
    add(static_cast<const L::Layer&>(*layer));
  }
  ///@}
  /// Clears the gradients of the frozen parameters among `params`, so update() skips them.
  void operator()(std::vector<Parameter>& params) const;

 private:
  std::vector<Parameter> frozen_;  // keeps the nodes alive, so their addresses stay theirs
  std::unordered_set<const VariableNode*> nodes_;
};

}  // namespace dezero::optimizers
