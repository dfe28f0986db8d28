// dezero/layers/layer.hpp - L::Layer, the base of every layer (DeZero layers.py, steps
// 44-45, 53): a registry of named parameters and sub-layers in registration order, and
// L::LayerRef, the handle register_layer returns.
//
// params(), cleargrads(), to_gpu() and the weight files walk the registry depth first
// in that order (DeZero used a Python set, so its order changed from run to run).
// Parameters are handles: the member `W` and the registry share one node, so lazy
// initialisation fills the registered parameter. Change a parameter's values with
// W.set_data(...); rebinding the member (W = Parameter(...)) after registration would
// detach it from the registry.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dezero/core.hpp"

namespace dezero::L {

template <class T>
class LayerRef;

// --- Layer ---------------------------------------------------------------------------------
class Layer {
 public:
  Layer() = default;
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Calls forward_multi (which defaults to forward for one input).
  Variable operator()(const Variable& x);
  Variable operator()(const Variable& a, const Variable& b);
  VariableList operator()(const VariableList& xs);

  // Override forward for the usual one-input, one-output layer; override
  // forward_multi for any other number of inputs or outputs.
  virtual Variable forward(const Variable& x);
  virtual VariableList forward_multi(const VariableList& xs);

  // The inputs / outputs of the last call made while backprop was on that are still
  // alive (DeZero keeps weak references; examples/grad_cam reads outputs()). Calls
  // under no_grad() record nothing, so that an initialised model can serve several
  // inference threads at once (README, "Threads").
  VariableList inputs() const;
  VariableList outputs() const;

  // Every parameter of this layer and its sub-layers, depth first in registration
  // order (including lazily created ones that have no data yet).
  std::vector<Parameter> params() const;
  void collect_params(std::vector<Parameter>& out) const;  // appends (no allocation once out has room)
  // The same with DeZero's weight-file keys: "W", "l0/b", "res2/a/bn1/avg_mean".
  std::vector<std::pair<std::string, Parameter>> named_params() const;
  void cleargrads();

  // Move every parameter's data and gradient. to_gpu() without a CUDA device is a
  // DeviceError and moves nothing.
  void to_cpu();
  void to_gpu(int id = 0);
  void to(Device device);

  // Step 53: weights as an .npz file with DeZero's keys (np.savez_compressed layout
  // by default). Saving copies to the host; the model stays on its device. The file
  // is written to path + ".tmp" and renamed into place. Loading checks the whole file
  // first - every key present, no extra key, same shape and dtype - and changes
  // nothing when it throws; arrays go to each parameter's current device. A lazy
  // parameter with no data yet takes the file's array as it is.
  void save_weights(const std::string& path, bool compressed = true) const;
  void load_weights(const std::string& path);

  // A token that expires when this layer is destroyed, for whoever keeps a Layer& (an
  // optimizer set up on it reports a destroyed model instead of reading freed memory).
  std::weak_ptr<const void> lifetime() const { return alive_; }

  // The registry, in order: (name, parameter) or (name, sub-layer).
  struct Entry {
    std::string name;
    Parameter param;               // defined() when this entry is a parameter
    std::shared_ptr<Layer> layer;  // non-null when this entry is a sub-layer
  };
  const std::vector<Entry>& entries() const { return entries_; }
  // A parameter or sub-layer by key ("W", "l1/W", "l1"); ValueError when absent.
  Parameter param(const std::string& key) const;
  std::shared_ptr<Layer> layer(const std::string& key) const;

 protected:
  // Registers and returns the parameter (the same handle); an empty name or '/' in it,
  // or a name used twice, is a ValueError. A parameter without a name takes `name`.
  Parameter register_parameter(const std::string& name, Parameter p);
  // Registers a sub-layer and returns it as a LayerRef, which converts to the
  // std::shared_ptr<T> a member may be declared as.
  template <class T>
  LayerRef<T> register_layer(const std::string& name, std::shared_ptr<T> layer) {
    add_layer_entry(name, layer);
    return LayerRef<T>(std::move(layer));
  }
  // For layers whose parameters take their shapes from the first input (Linear's
  // in_size, Conv2d's channels, BatchNorm's statistics): runs init() unless ready()
  // says the parameters are there, once, under a lock, so that threads sharing one
  // model for inference can make its first calls at the same time. After that it is
  // one atomic load.
  template <class Ready, class Init>
  void lazy_init(const Ready& ready, const Init& init) {
    if (initialized_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(init_mutex_);
    if (!ready()) init();
    initialized_.store(true, std::memory_order_release);
  }

 private:
  void add_layer_entry(const std::string& name, std::shared_ptr<Layer> layer);
  void check_new_name(const std::string& name) const;
  void flatten(const std::string& prefix, std::vector<std::pair<std::string, Parameter>>& out) const;

  std::vector<Entry> entries_;
  std::vector<std::weak_ptr<VariableNode>> inputs_, outputs_;
  std::shared_ptr<const int> alive_ = std::make_shared<const int>(0);
  std::atomic<bool> initialized_{false};
  std::mutex init_mutex_;
};

// --- LayerRef ----------------------------------------------------------------------------------
// A shared_ptr to a layer that can be called like the layer itself: l1(x) instead of
// (*l1)(x) (LibTorch's ModuleHolder does the same). It is a std::shared_ptr<T>, so a
// member declared as std::shared_ptr<L::Linear> takes one unchanged.
template <class T>
class LayerRef : public std::shared_ptr<T> {
 public:
  LayerRef() = default;
  LayerRef(std::shared_ptr<T> p) : std::shared_ptr<T>(std::move(p)) {}  // NOLINT implicit
  template <class U, std::enable_if_t<std::is_convertible_v<U*, T*>, int> = 0>
  LayerRef(std::shared_ptr<U> p) : std::shared_ptr<T>(std::move(p)) {}  // NOLINT implicit

  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    if (!this->get()) throw ValueError("LayerRef: calling an empty layer handle; hint: assign it from register_layer");
    return (*this->get())(std::forward<Args>(args)...);
  }
};

}  // namespace dezero::L
