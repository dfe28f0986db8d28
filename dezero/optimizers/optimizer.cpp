// dezero/optimizers/optimizer.cpp - the Optimizer base class (DeZero optimizers.py,
// step 46): its target, the hooks list, update() and the per-parameter state, with
// save_state / load_state for that state.
//
// update() gathers the target's parameters that have a gradient, runs the hooks on
// them (a WeightDecay that is the only hook fused into the update where that gives the
// same bits: update_many_decayed), then hands the parameters still holding a gradient,
// all together, to the rule's update_many (one multi-tensor kernel per device and dtype for the rules of
// rules.cpp; update_one per parameter for a user's rule) with their state tensors
// (created on first use, moved or recreated when the parameter moved or changed). The
// slots of the state are cached by position, so a step makes no hash lookup and no
// allocation once the parameters are known. A gradient wider than the weights is
// applied to a widened copy that is rounded back once, as NumPy's `W -= lr * g` does;
// a narrower one is cast to the weights' dtype first; both one parameter at a time.
// The rules themselves are in rules.cpp, the hooks in hooks.cpp; nothing here uses
// more of the tensor level than tensor.hpp.
#include "dezero/optimizers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dezero/npz.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::optimizers {

// The class name without namespaces: snapshots of before it wrote the demangled name with them,
// and the reader compares without (training/snapshot.cpp).
std::string Optimizer::name() const { return detail::type_name_without_namespaces(typeid(*this)); }

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
  if (!target) detail::fail<ValueError>("Optimizer::setup", "the target layer is null");
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
  if (!hook) detail::fail<ValueError>("Optimizer::add_hook", "the hook is empty");
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
  cache_.clear();  // its Slot pointers went with the map
  t_ = 0;
}

void Optimizer::gather(std::vector<Parameter>& out) const {
  out.clear();
  if (!has_target_) detail::fail<ValueError>("Optimizer", "no target; hint: call setup(model) before update()");
  if (target_ && target_alive_.expired())
    detail::fail<ValueError>("Optimizer", "the model given to setup(model) has been destroyed; hint: a model passed "
                             "by reference must outlive its optimizer (setup(std::shared_ptr) keeps it alive)");
  if (target_) target_->collect_params(out);
  else out.insert(out.end(), fixed_params_.begin(), fixed_params_.end());
}

namespace {
// Whether a slot's weak owner is this very node (the same control block: no atomic
// operation, and a node that died cannot be confused with a new one at its address).
bool same_owner(const std::weak_ptr<VariableNode>& w, const std::shared_ptr<VariableNode>& s) {
  return !w.owner_before(s) && !s.owner_before(w);
}
}  // namespace

// The slot of a parameter's node, created (without state yet) at its first update and
// recreated if another node has taken the address of a dead one.
Optimizer::Slot& Optimizer::slot_for(const Parameter& p) {
  const VariableNode* key = p.node().get();
  auto it = slots_.find(key);
  if (it == slots_.end() || !same_owner(it->second.owner, p.node())) {
    Slot s;
    s.owner = p.node();
    it = slots_.insert_or_assign(key, std::move(s)).first;
  }
  return it->second;
}

// The state of a parameter: created with zeros on its device at its first update,
// moved when the parameter has moved, recreated if its shape or dtype changed.
void Optimizer::sync_state(Slot& slot, const Tensor& data, std::size_t n) {
  if (slot.state.size() != n) {
    slot.state.clear();
    for (std::size_t k = 0; k < n; ++k) slot.state.push_back(zeros_like(data));
  }
  for (auto& s : slot.state) {
    if (s.shape() != data.shape() || s.dtype() != data.dtype()) s = zeros_like(data);
    else if (s.device() != data.device()) s = s.to(data.device());
  }
}

// A gradient of another dtype than the weights, one parameter at a time.
void Optimizer::update_mixed(Tensor& w, const Tensor& g, std::vector<Tensor>& state) {
  if (promote_types(w.dtype(), g.dtype()) == g.dtype()) {
    // A wider gradient (float64 data through float32 weights): NumPy's
    // `W -= lr * g` computes in float64 and rounds the result once, so update
    // a float64 copy of the weights (and state) and round it back.
    Tensor wide = w.astype(g.dtype());
    std::vector<Tensor> wide_state;
    for (const Tensor& s : state) wide_state.push_back(s.astype(g.dtype()));
    update_one(wide, g, wide_state);
    copyto(w, wide);
    for (std::size_t k = 0; k < state.size(); ++k) copyto(state[k], wide_state[k]);
  } else {
    update_one(w, g.astype(w.dtype()), state);
  }
}

// Whether two of params_ share memory (one parameter listed twice, two parameters over
// one storage): then update() keeps the old order, one parameter at a time, since the
// multi-tensor kernels update all their parameters concurrently. Recomputed only when
// a parameter's node or data changed; sorts byte ranges, so O(n log n).
bool Optimizer::params_overlap() {
  ranges_.clear();
  for (const auto& p : params_) {
    const Tensor& d = p.node()->data;
    if (!d.defined() || d.nbytes() == 0) continue;
    const auto b = reinterpret_cast<std::uintptr_t>(d.raw_data());
    ranges_.emplace_back(b, b + d.nbytes());
  }
  std::sort(ranges_.begin(), ranges_.end());
  for (std::size_t i = 1; i < ranges_.size(); ++i)
    if (ranges_[i].first < ranges_[i - 1].second) return true;
  return false;
}

void Optimizer::update_many(const UpdateItem* items, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) update_one(*items[i].param, *items[i].grad, *items[i].state);
}
bool Optimizer::update_many_decayed(const UpdateItem*, std::size_t, double) { return false; }

// --- loss scaling (Chainer's Optimizer.loss_scaling; issue 31) -------------------------
Optimizer& Optimizer::loss_scaling(std::int64_t interval, std::optional<double> scale) & {
  if (interval < 1)
    detail::fail<ValueError>("loss_scaling", "interval must be at least 1, got ", std::to_string(interval));
  if (scale && !(*scale > 0 && std::isfinite(*scale)))
    detail::fail<ValueError>("loss_scaling", "scale must be a positive finite number, got ", std::to_string(*scale),
                             "; hint: leave it out for a dynamic scale");
  scale_interval_ = interval;
  scale_dynamic_ = !scale;
  loss_scale_ = scale ? *scale : 65536.0;
  good_steps_ = 0;
  return *this;
}

void Optimizer::backward(Variable loss, const BackwardOptions& options) {
  if (scale_interval_ > 0) {
    if (loss.size() != 1)
      detail::fail<ValueError>("Optimizer::backward", "the loss must have one element to be scaled, got shape ",
                               loss.shape(), "; hint: reduce it first (F::sum, F::mean_squared_error, ...)");
    loss.set_grad(Variable(full(loss.shape(), loss_scale_, loss.dtype(), loss.data().device())));
    scaled_grads_ = true;
  }
  loss.backward(options);
}

// With loss scaling on: false (skip the step) when a gradient is not finite, else the
// gradients divided by the scale; the scale adjusted either way.
bool Optimizer::unscale_or_skip() {
  if (!scaled_grads_)
    detail::fail<ValueError>("Optimizer::update", "loss scaling is on, but the gradients were not computed by "
                             "optimizer.backward(loss); hint: call optimizer.backward(loss) instead of "
                             "loss.backward()");
  scaled_grads_ = false;
  // (g * 0).sum() is 0 unless g holds an inf or a NaN; the sums are added on their device
  // (float64) and read once, so a GPU waits for one value per step, not one per parameter.
  Tensor nonfinite;
  for (const auto& p : params_) {
    const Tensor& g = p.node()->grad->data;
    if (!is_floating(g.dtype())) continue;
    Tensor s = (g * 0).sum().astype(float64);
    nonfinite = !nonfinite.defined() ? s : s.device() == nonfinite.device() ? nonfinite + s
                                                                            : nonfinite + s.to(nonfinite.device());
  }
  const bool finite = !nonfinite.defined() || std::isfinite(nonfinite.item<double>());
  if (!finite) {
    if (scale_dynamic_) loss_scale_ = std::max(1.0, loss_scale_ / 2);
    good_steps_ = 0;
    return false;
  }
  if (loss_scale_ != 1.0)
    for (auto& p : params_) {
      Tensor& g = p.node()->grad->data;
      g = g * (1.0 / loss_scale_);  // a new tensor: a gradient may be shared
    }
  if (scale_dynamic_ && ++good_steps_ >= scale_interval_) {
    loss_scale_ *= 2;
    good_steps_ = 0;
  }
  return true;
}

void Optimizer::update() {
  gather(all_);
  params_.clear();
  for (auto& p : all_)  // moved, not copied: all_ is only this step's scratch
    if (p.has_grad() && p.data().defined()) params_.push_back(std::move(p));
  skipped_ = false;
  if (scale_interval_ > 0 && !unscale_or_skip()) {
    skipped_ = true;
    return;
  }
  ++t_;  // before the hooks, as DeZero's Adam does
  // A WeightDecay that is the only hook may be fused into the rule's kernel (issue 36):
  // its gradients are made their own now, its addition waits for the update below.
  const WeightDecay* decay = hooks_.size() == 1 ? hooks_.front().target<WeightDecay>() : nullptr;
  if (decay) decay->own_gradients(params_);
  else
    for (auto& hook : hooks_) hook(params_);

  // The cache, position by position in params_ as the hooks left it: a node or data
  // not seen there last step drops the entry's slot and has overlaps looked for again.
  bool changed = cache_.size() != params_.size();
  if (changed) cache_.assign(params_.size(), Cached{});
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const VariableNode* node = params_[k].node().get();
    const Tensor& d = node->data;
    const void* data = d.defined() ? d.raw_data() : nullptr;
    const std::size_t bytes = d.defined() ? d.nbytes() : 0;
    Cached& c = cache_[k];
    if (c.node != node || c.data != data || c.bytes != bytes) {
      c.node = node;
      c.data = data;
      c.bytes = bytes;
      c.slot = nullptr;
      changed = true;
    }
  }
  if (changed) overlap_ = params_overlap();
  if (nstate_ < 0) nstate_ = static_cast<int>(state_names().size());  // once: state_names() allocates

  // Fused only where that is the hook's exact result: every parameter goes through
  // update_many (no overlap, no gradient of another dtype) and the rule has the kernel.
  // Otherwise the hook runs here, before any parameter is updated, as it would have.
  bool fuse = decay != nullptr && !overlap_;
  for (std::size_t k = 0; fuse && k < params_.size(); ++k)
    fuse = params_[k].node()->grad->data.dtype() == params_[k].node()->data.dtype();
  if (decay && !fuse) (*decay)(params_);

  // Each parameter still holding a gradient (frozen ones have none) gets its slot (a
  // hash lookup only on a cache miss) and its state as its data is now.
  items_.clear();
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const Parameter& p = params_[k];
    if (!p.has_grad()) continue;  // frozen by a hook
    Cached& c = cache_[k];
    if (!c.slot || !same_owner(c.slot->owner, p.node())) c.slot = &slot_for(p);
    Tensor& w = p.node()->data;
    sync_state(*c.slot, w, static_cast<std::size_t>(nstate_));
    const Tensor& g = p.node()->grad->data;
    if (overlap_) {  // one at a time, in order
      if (g.dtype() == w.dtype()) update_one(w, g, c.slot->state);
      else update_mixed(w, g, c.slot->state);
    } else if (g.dtype() == w.dtype()) {
      items_.push_back(UpdateItem{&w, &g, &c.slot->state});
    } else {
      update_mixed(w, g, c.slot->state);  // disjoint from the others: order does not matter
    }
  }
  if (items_.empty()) return;
  if (fuse && update_many_decayed(items_.data(), items_.size(), decay->rate)) return;
  if (fuse) (*decay)(params_);  // declined: the hook, then the plain update (the gradients are already their own)
  update_many(items_.data(), items_.size());
}

// --- state files -----------------------------------------------------------------------
utils::NamedTensors Optimizer::state_dict() const {
  std::vector<Parameter> ps;
  gather(ps);
  utils::NamedTensors out;
  out.emplace_back("t", array(t_, int64));
  if (scale_interval_ > 0) {  // loss scaling: the scale and the good steps counted toward its growth
    out.emplace_back("loss_scale", array(loss_scale_, float64));
    out.emplace_back("loss_scale_good_steps", array(good_steps_, int64));
  }
  const auto names = state_names();
  for (std::size_t i = 0; i < ps.size(); ++i) {
    auto it = slots_.find(ps[i].node().get());
    if (it == slots_.end() || it->second.owner.lock() != ps[i].node()) continue;
    for (std::size_t k = 0; k < names.size(); ++k)
      out.emplace_back("p" + std::to_string(i) + "/" + names[k], it->second.state[k]);
  }
  return out;
}

void Optimizer::save_state(const std::string& path) const { utils::save_npz(path, state_dict(), false); }

void Optimizer::load_state(const std::string& path) {
  load_state_dict(utils::detail::load_npz_as("load_state", path), "load_state: '" + path + "'");
}

void Optimizer::load_state_dict(const utils::NamedTensors& state, const std::string& where) {
  std::map<std::string, Tensor> arrays;
  for (const auto& [k, v] : state)
    if (!arrays.emplace(k, v).second) throw ValueError(where + " has the array '" + k + "' twice");
  std::vector<Parameter> ps;
  gather(ps);
  auto t_it = arrays.find("t");
  if (t_it == arrays.end()) throw ValueError(where + " has no array 't'; hint: is it an optimizer state file?");
  if (t_it->second.size() != 1 || !is_integer(t_it->second.dtype()))
    detail::fail<ValueError>(where.c_str(), "'t' must be one integer, got ", t_it->second.shape(), " ",
                             t_it->second.dtype());
  const std::int64_t t = t_it->second.astype(int64).item<std::int64_t>();
  if (t < 0) detail::fail<ValueError>(where.c_str(), "'t' is ", t, ", a step count cannot be negative");
  arrays.erase(t_it);
  // Loss scaling's two entries, checked like "t"; kept only when loss scaling is on here.
  double scale = loss_scale_;
  std::int64_t good = good_steps_;
  auto s_it = arrays.find("loss_scale"), g_it = arrays.find("loss_scale_good_steps");
  if ((s_it == arrays.end()) != (g_it == arrays.end()))
    throw ValueError(where + " has only one of 'loss_scale' and 'loss_scale_good_steps'");
  if (s_it != arrays.end()) {
    if (s_it->second.size() != 1 || !is_floating(s_it->second.dtype()) || g_it->second.size() != 1 ||
        !is_integer(g_it->second.dtype()))
      detail::fail<ValueError>(where.c_str(), "'loss_scale' must be one float and 'loss_scale_good_steps' one integer");
    scale = s_it->second.astype(float64).item<double>();
    good = g_it->second.astype(int64).item<std::int64_t>();
    if (!(scale > 0 && std::isfinite(scale)) || good < 0)
      throw ValueError(where + ": loss scale " + std::to_string(scale) + " / good steps " + std::to_string(good) +
                       " out of range");
    arrays.erase(s_it);
    arrays.erase(g_it);
  }

  const auto names = state_names();
  std::unordered_map<const VariableNode*, Slot> slots;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const std::string prefix = "p" + std::to_string(i) + "/";
    std::size_t present = 0;
    for (const auto& n : names) present += arrays.count(prefix + n);
    if (present == 0) continue;
    if (present != names.size())
      detail::fail<ValueError>(where.c_str(), "parameter ", i, " has only some of its state tensors");
    const Tensor& data = ps[i].data();
    if (!data.defined())
      detail::fail<ValueError>(where.c_str(), "parameter ", i, " has no data yet; hint: run a forward pass first");
    Slot s;
    s.owner = ps[i].node();
    for (const auto& n : names) {
      auto it = arrays.find(prefix + n);
      if (it->second.shape() != data.shape())
        detail::fail<ShapeError>(where.c_str(), "'", it->first, "' has shape ", it->second.shape(),
                                 " but parameter ", i, " has shape ", data.shape());
      if (it->second.dtype() != data.dtype())
        detail::fail<DtypeError>(where.c_str(), "'", it->first, "' is ", it->second.dtype(), " but parameter ", i,
                                 " is ", data.dtype());
      s.state.push_back(it->second.to(data.device()));
      arrays.erase(it);
    }
    slots.emplace(ps[i].node().get(), std::move(s));
  }
  if (!arrays.empty())
    throw ValueError(where + " has an array '" + arrays.begin()->first + "' that matches no parameter of the target");
  slots_ = std::move(slots);
  cache_.clear();  // its Slot pointers went with the old map
  t_ = t;
  if (scale_interval_ > 0) {
    loss_scale_ = scale;
    good_steps_ = good;
  }
}

}  // namespace dezero::optimizers
