// dezero/optimizers/optimizer.cpp - Optimizer::update, the five update rules (one fused
// backend kernel per parameter, through tensor/fused.hpp) and the hooks (DeZero optimizers.py).
#include "dezero/optimizers.hpp"

#include <cmath>
#include <map>

#include "dezero/npz.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero::optimizers {

// --- Optimizer -----------------------------------------------------------------------------------
Optimizer::~Optimizer() = default;

Optimizer& Optimizer::setup(L::Layer& target) {
  target_ = &target;
  owned_target_.reset();
  fixed_params_.clear();
  has_target_ = true;
  return *this;
}
Optimizer& Optimizer::setup(const std::shared_ptr<L::Layer>& target) {
  if (!target) throw ValueError("Optimizer::setup: the target layer is null");
  setup(*target);
  owned_target_ = target;
  return *this;
}
Optimizer& Optimizer::setup(std::vector<Parameter> params) {
  target_ = nullptr;
  owned_target_.reset();
  fixed_params_ = std::move(params);
  has_target_ = true;
  return *this;
}

Optimizer& Optimizer::add_hook(Hook hook) {
  if (!hook) throw ValueError("Optimizer::add_hook: the hook is empty");
  hooks_.push_back(std::move(hook));
  return *this;
}
void Optimizer::clear_hooks() { hooks_.clear(); }

void Optimizer::reset_state() {
  slots_.clear();
  t_ = 0;
}

void Optimizer::gather(std::vector<Parameter>& out) const {
  out.clear();
  if (!has_target_) throw ValueError("Optimizer: no target; hint: call setup(model) before update()");
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

// --- state files -----------------------------------------------------------------------------------
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

// --- update rules --------------------------------------------------------------------------------
void SGD::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>&) { detail::sgd_update_(w, g, lr); }

void MomentumSGD::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::momentum_sgd_update_(w, g, s[0], lr, momentum);
}

void AdaGrad::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adagrad_update_(w, g, s[0], lr, eps);
}

void AdaDelta::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adadelta_update_(w, g, s[0], s[1], rho, eps);
}

double Adam::lr() const {
  const double t = static_cast<double>(this->t());
  return alpha * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t));
}

void Adam::update_one(Tensor& w, const Tensor& g, std::vector<Tensor>& s) {
  detail::adam_update_(w, g, s[0], s[1], lr(), beta1, beta2, eps);
}

// --- hooks ---------------------------------------------------------------------------------------
namespace {
// The gradient tensor of p, made p's own first if another variable shares its node
// or storage (add's backward hands the same gradient to both inputs): an in-place
// hook must not change anyone else's gradient.
Tensor& own_grad(Parameter& p) {
  auto& g = p.node()->grad;
  if (g.use_count() > 1 || g->data.storage().use_count() > 1) {
    auto fresh = std::make_shared<VariableNode>();
    fresh->data = g->data.copy();
    g = fresh;
  }
  return g->data;
}
}  // namespace

void WeightDecay::operator()(std::vector<Parameter>& params) const {
  for (auto& p : params) {
    if (!p.has_grad()) continue;
    Tensor& g = own_grad(p);
    if (g.dtype() == p.data().dtype()) detail::axpy_(g, rate, p.data());
    else g += p.data() * rate;
  }
}

void ClipGrad::operator()(std::vector<Parameter>& params) const {
  double total = 0;
  for (auto& p : params)
    if (p.has_grad()) total += sum(square(p.grad().data())).astype(float64).item<double>();
  const double rate = max_norm / (std::sqrt(total) + 1e-6);
  if (rate >= 1) return;
  for (auto& p : params)
    if (p.has_grad()) own_grad(p) *= rate;
}

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
