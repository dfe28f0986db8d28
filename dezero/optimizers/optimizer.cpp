// dezero/optimizers/optimizer.cpp - the Optimizer base class (DeZero optimizers.py,
// step 46): its target, the hooks list, update() and the per-parameter state, with
// save_state / load_state for that state.
//
// update() gathers the target's parameters that have a gradient, runs the hooks on
// them, then hands each parameter still holding a gradient to the rule's update_one
// with its state tensors (created on first use, moved or recreated when the
// parameter moved or changed). A gradient wider than the weights is applied to a
// widened copy that is rounded back once, as NumPy's `W -= lr * g` does; a narrower
// one is cast to the weights' dtype first. The rules themselves are in rules.cpp,
// the hooks in hooks.cpp; nothing here uses more of the tensor level than tensor.hpp.
#include "dezero/optimizers.hpp"

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dezero/npz.hpp"

namespace dezero::optimizers {

// --- Optimizer: target and hooks -------------------------------------------------------
Optimizer::~Optimizer() = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

Optimizer& Optimizer::setup(L::Layer& target) & {
  target_ = &target;
  target_alive_ = target.lifetime();
  owned_target_.reset();
  fixed_params_.clear();
  has_target_ = true;
  return *this;
}
Optimizer& Optimizer::setup(const std::shared_ptr<L::Layer>& target) & {
  if (!target) throw ValueError("Optimizer::setup: the target layer is null");
  setup(*target);
  owned_target_ = target;
  return *this;
}
Optimizer& Optimizer::setup(std::vector<Parameter> params) & {
  target_ = nullptr;
  target_alive_.reset();
  owned_target_.reset();
  fixed_params_ = std::move(params);
  has_target_ = true;
  return *this;
}

Optimizer& Optimizer::add_hook(Hook hook) & {
  if (!hook) throw ValueError("Optimizer::add_hook: the hook is empty");
  hooks_.push_back(std::move(hook));
  return *this;
}
void Optimizer::clear_hooks() { hooks_.clear(); }

L::Layer* Optimizer::target() const {
  std::vector<Parameter> none;
  if (!has_target_ || target_) gather(none);  // the errors of update(): no target, a destroyed model
  return target_;
}
std::vector<Parameter> Optimizer::target_params() const {
  std::vector<Parameter> ps;
  gather(ps);
  return ps;
}

// --- update() and the per-parameter state ----------------------------------------------
void Optimizer::reset_state() {
  slots_.clear();
  t_ = 0;
}

void Optimizer::gather(std::vector<Parameter>& out) const {
  out.clear();
  if (!has_target_) throw ValueError("Optimizer: no target; hint: call setup(model) before update()");
  if (target_ && target_alive_.expired())
    throw ValueError("Optimizer: the model given to setup(model) has been destroyed; hint: a model passed by "
                     "reference must outlive its optimizer (setup(std::shared_ptr) keeps it alive)");
  if (target_) target_->collect_params(out);
  else out.insert(out.end(), fixed_params_.begin(), fixed_params_.end());
}

// The state of a parameter: created with zeros on its device at its first update,
// moved when the parameter has moved, recreated if its node or shape changed.
std::vector<Tensor>& Optimizer::state_for(const Parameter& p) {
  const VariableNode* key = p.node().get();
  auto it = slots_.find(key);
  if (it == slots_.end() || it->second.owner.lock().get() != key) {
    Slot s;
    s.owner = p.node();
    for (std::size_t k = 0, n = state_names().size(); k < n; ++k) s.state.push_back(zeros_like(p.data()));
    it = slots_.insert_or_assign(key, std::move(s)).first;
  }
  auto& state = it->second.state;
  for (auto& s : state) {
    if (s.shape() != p.data().shape() || s.dtype() != p.data().dtype()) s = zeros_like(p.data());
    else if (s.device() != p.data().device()) s = s.to(p.data().device());
  }
  return state;
}

void Optimizer::update() {
  gather(all_);
  params_.clear();
  for (const auto& p : all_)
    if (p.has_grad() && p.data().defined()) params_.push_back(p);
  ++t_;  // before the hooks, as DeZero's Adam does
  for (auto& hook : hooks_) hook(params_);
  for (auto& p : params_) {
    if (!p.has_grad()) continue;  // frozen by a hook
    const Tensor& g = p.node()->grad->data;
    Tensor& w = p.node()->data;
    if (g.dtype() == w.dtype()) {
      update_one(w, g, state_for(p));
    } else if (promote_types(w.dtype(), g.dtype()) == g.dtype()) {
      // A wider gradient (float64 data through float32 weights): NumPy's
      // `W -= lr * g` computes in float64 and rounds the result once, so update
      // a float64 copy of the weights (and state) and round it back.
      std::vector<Tensor>& state = state_for(p);
      Tensor wide = w.astype(g.dtype());
      std::vector<Tensor> wide_state;
      for (const Tensor& s : state) wide_state.push_back(s.astype(g.dtype()));
      update_one(wide, g, wide_state);
      copyto(w, wide);
      for (std::size_t k = 0; k < state.size(); ++k) copyto(state[k], wide_state[k]);
    } else {
      update_one(w, g.astype(w.dtype()), state_for(p));
    }
  }
}

// --- state files -----------------------------------------------------------------------
void Optimizer::save_state(const std::string& path) const {
  std::vector<Parameter> ps;
  gather(ps);
  utils::NamedTensors out;
  out.emplace_back("t", array(t_, int64));
  const auto names = state_names();
  for (std::size_t i = 0; i < ps.size(); ++i) {
    auto it = slots_.find(ps[i].node().get());
    if (it == slots_.end() || it->second.owner.lock() != ps[i].node()) continue;
    for (std::size_t k = 0; k < names.size(); ++k)
      out.emplace_back("p" + std::to_string(i) + "/" + names[k], it->second.state[k]);
  }
  utils::save_npz(path, out, false);
}

void Optimizer::load_state(const std::string& path) {
  utils::NamedTensors file = utils::load_npz(path);
  std::map<std::string, Tensor> arrays(file.begin(), file.end());
  const std::string where = "load_state: '" + path + "'";
  std::vector<Parameter> ps;
  gather(ps);
  auto t_it = arrays.find("t");
  if (t_it == arrays.end()) throw ValueError(where + " has no array 't'; hint: is it an optimizer state file?");
  if (t_it->second.size() != 1 || !is_integer(t_it->second.dtype()))
    throw ValueError(where + ": 't' must be one integer, got " + t_it->second.shape().str() + " " +
                     dtype_name(t_it->second.dtype()));
  const std::int64_t t = t_it->second.astype(int64).item<std::int64_t>();
  arrays.erase(t_it);

  const auto names = state_names();
  std::unordered_map<const VariableNode*, Slot> slots;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const std::string prefix = "p" + std::to_string(i) + "/";
    std::size_t present = 0;
    for (const auto& n : names) present += arrays.count(prefix + n);
    if (present == 0) continue;
    if (present != names.size())
      throw ValueError(where + ": parameter " + std::to_string(i) + " has only some of its state tensors");
    const Tensor& data = ps[i].data();
    if (!data.defined())
      throw ValueError(where + ": parameter " + std::to_string(i) + " has no data yet; hint: run a forward pass first");
    Slot s;
    s.owner = ps[i].node();
    for (const auto& n : names) {
      auto it = arrays.find(prefix + n);
      if (it->second.shape() != data.shape())
        throw ShapeError(where + ": '" + it->first + "' has shape " + it->second.shape().str() +
                         " but parameter " + std::to_string(i) + " has shape " + data.shape().str());
      if (it->second.dtype() != data.dtype())
        throw DtypeError(where + ": '" + it->first + "' is " + dtype_name(it->second.dtype()) + " but parameter " +
                         std::to_string(i) + " is " + dtype_name(data.dtype()));
      s.state.push_back(it->second.to(data.device()));
      arrays.erase(it);
    }
    slots.emplace(ps[i].node().get(), std::move(s));
  }
  if (!arrays.empty())
    throw ValueError(where + " has an array '" + arrays.begin()->first + "' that matches no parameter of the target");
  slots_ = std::move(slots);
  t_ = t;
}

}  // namespace dezero::optimizers
