// dezero/layers/layer.cpp - L::Layer: the registry of parameters and sub-layers, calls,
// device moves and weight files (DeZero layers.py, Layer).
#include <map>

#include "dezero/cuda.hpp"
#include "dezero/layers/layer.hpp"
#include "dezero/npz.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::L {

Layer::~Layer() = default;

// --- calls -------------------------------------------------------------------------------------
VariableList Layer::operator()(const VariableList& xs) {
  VariableList ys = forward_multi(xs);
  if (!Config::enable_backprop) return ys;  // nothing shared is written: see inputs()
  inputs_.clear();
  outputs_.clear();
  for (const auto& x : xs) inputs_.push_back(x.node());
  for (const auto& y : ys) outputs_.push_back(y.node());
  return ys;
}

Variable Layer::operator()(const Variable& x) {
  VariableList ys = (*this)(VariableList{x});
  if (ys.size() != 1)
    detail::fail<ValueError>("Layer", "forward returned ", ys.size(),
                             " outputs; hint: call the layer with a VariableList to get all of them");
  return ys[0];
}

Variable Layer::operator()(const Variable& a, const Variable& b) {
  VariableList ys = (*this)(VariableList{a, b});
  if (ys.size() != 1)
    detail::fail<ValueError>("Layer", "forward returned ", ys.size(),
                             " outputs; hint: call the layer with a VariableList to get all of them");
  return ys[0];
}

Variable Layer::predict(const Variable& x) {
  auto ng = no_grad();
  auto tm = test_mode();
  return (*this)(x);
}

VariableList Layer::predict(const VariableList& xs) {
  auto ng = no_grad();
  auto tm = test_mode();
  return (*this)(xs);
}

Variable Layer::forward(const Variable&) {
  detail::fail<NotImplementedError>("Layer", "this layer does not define forward(x); hint: override "
                                    "forward(const Variable&) or, for several inputs or outputs, "
                                    "forward_multi(const VariableList&)");
}

VariableList Layer::forward_multi(const VariableList& xs) {
  if (xs.size() != 1)
    detail::fail<ValueError>("Layer", "called with ", xs.size(),
                             " inputs but the layer only defines forward(x); hint: override forward_multi");
  return {forward(xs[0])};
}

namespace {
VariableList alive(const std::vector<std::weak_ptr<VariableNode>>& nodes) {
  VariableList out;
  for (const auto& w : nodes) {
    auto n = w.lock();
    out.push_back(n ? Variable(n) : Variable());
  }
  return out;
}
}  // namespace
VariableList Layer::inputs() const { return alive(inputs_); }
VariableList Layer::outputs() const { return alive(outputs_); }

// --- registry ------------------------------------------------------------------------------------
void Layer::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos)
    detail::fail<ValueError>("Layer", "bad name '", name, "'; hint: names are non-empty and contain no '/'");
  for (const auto& e : entries_)
    if (e.name == name) detail::fail<ValueError>("Layer", "the name '", name, "' is already registered");
}

Parameter Layer::register_parameter(const std::string& name, Parameter p) {
  check_new_name(name);
  if (!p.defined()) p = Parameter(Tensor(), name);  // a lazy parameter still needs a node to share
  if (p.name().empty()) p.set_name(name);
  entries_.push_back(Entry{name, p, nullptr});
  return p;
}

void Layer::add_layer_entry(const std::string& name, std::shared_ptr<Layer> layer) {
  check_new_name(name);
  if (!layer) detail::fail<ValueError>("Layer", "register_layer('", name, "') got a null layer");
  if (layer.get() == this) detail::fail<ValueError>("Layer", "a layer cannot contain itself ('", name, "')");
  entries_.push_back(Entry{name, Parameter(), std::move(layer)});
}

void Layer::collect_params(std::vector<Parameter>& out) const {
  for (const auto& e : entries_) {
    if (e.layer) e.layer->collect_params(out);
    else out.push_back(e.param);
  }
}

std::vector<Parameter> Layer::params() const {
  std::vector<Parameter> out;
  collect_params(out);
  return out;
}

void Layer::flatten(const std::string& prefix, std::vector<std::pair<std::string, Parameter>>& out) const {
  for (const auto& e : entries_) {
    const std::string key = prefix.empty() ? e.name : prefix + "/" + e.name;
    if (e.layer) e.layer->flatten(key, out);
    else out.emplace_back(key, e.param);
  }
}

std::vector<std::pair<std::string, Parameter>> Layer::named_params() const {
  std::vector<std::pair<std::string, Parameter>> out;
  flatten("", out);
  return out;
}

Parameter Layer::param(const std::string& key) const {
  for (auto& [k, p] : named_params())
    if (k == key) return p;
  detail::fail<ValueError>("Layer", "no parameter '", key, "'");
}

std::shared_ptr<Layer> Layer::layer(const std::string& key) const {
  const auto slash = key.find('/');
  const std::string head = key.substr(0, slash);
  for (const auto& e : entries_) {
    if (e.name != head || !e.layer) continue;
    return slash == std::string::npos ? e.layer : e.layer->layer(key.substr(slash + 1));
  }
  detail::fail<ValueError>("Layer", "no sub-layer '", key, "'");
}

void Layer::cleargrads() {  // walks the tree in place: no list of parameters per step
  for (auto& e : entries_) {
    if (e.layer) e.layer->cleargrads();
    else e.param.cleargrad();
  }
}

// --- devices -------------------------------------------------------------------------------------
void Layer::to(Device device) {
  if (device.is_cuda() && !cuda::is_available())
    detail::fail<DeviceError>("Layer::to_gpu", "no CUDA device is available (", device,
                              "); hint: this build or this machine has no GPU - keep the model on the CPU");
  // Move everything first, then swap in: a failure (out of memory) changes nothing.
  std::vector<Parameter> ps = params();
  std::vector<Tensor> data(ps.size()), grad(ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].data().defined()) data[i] = ps[i].data().to(device);
    if (ps[i].has_grad() && ps[i].grad().data().defined()) grad[i] = ps[i].grad().data().to(device);
  }
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (data[i].defined()) ps[i].node()->data = data[i];
    if (grad[i].defined()) ps[i].node()->grad->data = grad[i];
  }
}
void Layer::to_cpu() { to(Device::cpu()); }
void Layer::to_gpu(int id) { to(Device::cuda(id)); }

// --- weight files (step 53) ----------------------------------------------------------------------
void Layer::save_weights(const std::string& path, bool compressed) const {
  utils::NamedTensors arrays;
  for (auto& [key, p] : named_params()) {
    if (!p.data().defined())
      detail::fail<ValueError>("save_weights", "parameter '", key, "' has no data yet (lazily created); hint: run one "
                       "forward pass before saving");
    arrays.emplace_back(key, p.data());  // save_npz copies device data to the host; the model stays put
  }
  utils::save_npz(path, arrays, compressed);
}

void Layer::load_weights(const std::string& path) {
  utils::NamedTensors file = utils::detail::load_npz_as("load_weights", path);
  std::map<std::string, Tensor> by_key(file.begin(), file.end());
  auto ps = named_params();
  const std::string where = "load_weights: '" + path + "'";

  // Validate everything before touching any parameter.
  std::vector<Tensor> next(ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto& [key, p] = ps[i];
    auto it = by_key.find(key);
    if (it == by_key.end()) throw ValueError(where + " has no array '" + key + "' (the model's parameter)");
    const Tensor& a = it->second;
    if (p.data().defined()) {
      if (a.shape() != p.data().shape())
        detail::fail<ShapeError>(where.c_str(), "'", key, "' has shape ", a.shape(), " but the parameter has shape ",
                                 p.data().shape());
      if (a.dtype() != p.data().dtype())
        detail::fail<DtypeError>(where.c_str(), "'", key, "' is ", a.dtype(), " but the parameter is ",
                                 p.data().dtype());
    }
    by_key.erase(it);
  }
  if (!by_key.empty())
    throw ValueError(where + " has an array '" + by_key.begin()->first + "' that the model has no parameter for");
  std::map<std::string, Tensor> all(file.begin(), file.end());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto& [key, p] = ps[i];
    next[i] = p.data().defined() ? all[key].to(p.data().device()) : all[key];
  }
  for (std::size_t i = 0; i < ps.size(); ++i) ps[i].second.set_data(next[i]);
}

}  // namespace dezero::L
