/// \file
/// L::Layer, the base of every layer (DeZero layers.py, steps
/// 44-45, 53): a registry of named parameters and sub-layers in registration order, and
/// L::LayerRef, the handle register_layer returns.
///
/// params(), cleargrads(), to_gpu() and the weight files walk the registry depth first
/// in that order (DeZero used a Python set, so its order changed from run to run).
/// Parameters are handles: the member `W` and the registry share one node, so lazy
/// initialisation fills the registered parameter. Change a parameter's values with
/// `W.set_data(...)`; rebinding the member (`W = Parameter(...)`) after registration would
/// detach it from the registry.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dezero/core.hpp"

/// dezero::L: the layers, objects that own Parameters (DeZero's dezero.layers).
///
/// L::Layer is the base class (a registry of parameters and sub-layers); L::Linear,
/// L::Conv2d, L::Deconv2d, L::EmbedID, L::BatchNorm, L::RNN and L::LSTM are DeZero's
/// layers; L::LayerRef is the callable handle that Layer::register_layer returns.
/// `dezero/layers.hpp` includes them all.
namespace dezero::L {

template <class T>
class LayerRef;

// --- Layer ---------------------------------------------------------------------------------
/// The base of every layer (DeZero's Layer, steps 44-45, 53): a registry of named
/// parameters and sub-layers in registration order.
///
/// A layer overrides forward() (one input, one output) or forward_multi() (any other
/// number) and registers its parameters and sub-layers in its constructor with
/// register_parameter() and register_layer(). params(), cleargrads(), to_gpu() and the
/// weight files walk the registry depth first in that order. Layers are not copyable;
/// share them with std::shared_ptr (or L::LayerRef).
class Layer {
 public:
  Layer() = default;
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  /// Calls the layer: runs forward_multi (which defaults to forward for one input).
  ///
  /// While backprop is on, the call records its inputs and outputs (see inputs()).
  /// The one- and two-Variable forms return the single output: a forward that returns
  /// another number of outputs is a ValueError (call with a VariableList to get them all).
  /// Whatever forward throws (ShapeError, DtypeError, ...) passes through.
  ///@{
  Variable operator()(const Variable& x);
  Variable operator()(const Variable& a, const Variable& b);
  VariableList operator()(const VariableList& xs);
  ///@}

  /// Inference in one call: the layer called under no_grad() and test_mode() for this call
  /// only, on this thread (Keras's predict, PyTorch's eval() + inference_mode()).
  ///
  /// No graph is recorded and dropout passes its input through; batch normalisation uses its
  /// running statistics. The flags are per thread, so a worker thread that calls `model(x)`
  /// without setting them runs with backprop on and, in a model with dropout, applies
  /// dropout; predict() cannot forget them. The flags are restored when it returns or throws.
  /// The forms and errors are those of operator().
  ///@{
  Variable predict(const Variable& x);
  VariableList predict(const VariableList& xs);
  ///@}

  /// The computation of a one-input, one-output layer: override it for the usual layer.
  ///
  /// Override forward for the usual one-input, one-output layer; override
  /// forward_multi for any other number of inputs or outputs. The base version throws
  /// NotImplementedError.
  virtual Variable forward(const Variable& x);
  /// The computation of a layer with any number of inputs or outputs.
  ///
  /// The base version calls forward(xs[0]) and returns its result as a one-element
  /// list; with other than one input it is a ValueError.
  virtual VariableList forward_multi(const VariableList& xs);

  /// The inputs / outputs of the last call made while backprop was on that are still alive.
  ///
  /// DeZero keeps weak references; examples/grad_cam reads outputs(). A Variable that
  /// has been freed since comes back empty. Calls under no_grad() record nothing, so
  /// that an initialised model can serve several inference threads at once (README,
  /// "Threads").
  ///@{
  VariableList inputs() const;
  VariableList outputs() const;
  ///@}

  /// Every parameter of this layer and its sub-layers, depth first in registration order.
  ///
  /// Including lazily created ones that have no data yet (`p.data().defined()` is false
  /// until the first call).
  std::vector<Parameter> params() const;
  /// Appends params() to `out` (no allocation once out has room).
  void collect_params(std::vector<Parameter>& out) const;
  /// Every parameter with DeZero's weight-file key: "W", "l0/b", "res2/a/bn1/avg_mean".
  ///
  /// The same list and order as params(); a sub-layer's keys are prefixed with its
  /// name and a '/'.
  std::vector<std::pair<std::string, Parameter>> named_params() const;
  /// Clears the gradient of every parameter (DeZero's cleargrads), before the next backward.
  void cleargrads();

  /// Moves every parameter's data and gradient to the host, to CUDA device `id`, or to `device`.
  ///
  /// to_gpu() (or to() a CUDA device) without a CUDA device is a DeviceError and moves
  /// nothing. Everything is copied before anything is swapped in, so a failure (out of
  /// memory) changes nothing. A lazy parameter with no data yet is created on the
  /// device of the first input instead.
  ///@{
  void to_cpu();
  void to_gpu(int id = 0);
  void to(Device device);
  ///@}

  /// Saves the weights as an .npz file with DeZero's keys (step 53).
  ///
  /// np.savez_compressed layout by default (`compressed = false`: np.savez). Saving
  /// copies to the host; the model stays on its device. The file is written to a new
  /// temporary file next to `path` (`path.<random>.tmp`, created with O_EXCL | O_NOFOLLOW),
  /// then renamed into place, so a reader sees the old file or the new one. The keys are those of named_params(). A
  /// lazy parameter with no data yet is a ValueError (run one forward pass before
  /// saving); a file that cannot be written is an IOError.
  void save_weights(const std::string& path, bool compressed = true) const;
  /// Loads weights saved by save_weights (or by DeZero) into the parameters (step 53).
  ///
  /// Loading checks the whole file first - every key present, no extra key, same shape
  /// and dtype - and changes nothing when it throws; arrays go to each parameter's
  /// current device. A lazy parameter with no data yet takes the file's array as it is.
  /// Throws IOError for a missing or corrupt file, ValueError for a missing or extra
  /// key, ShapeError / DtypeError for an array whose shape / dtype differs from the
  /// parameter's.
  void load_weights(const std::string& path);

  /// A token that expires when this layer is destroyed, for whoever keeps a Layer&.
  ///
  /// An optimizer set up on it reports a destroyed model instead of reading freed
  /// memory: `lifetime().expired()` is true once the layer is gone.
  std::weak_ptr<const void> lifetime() const { return alive_; }

  /// One entry of the registry: (name, parameter) or (name, sub-layer).
  struct Entry {
    std::string name;              ///< The parameter's or sub-layer's name in this layer ("W", "l0").
    Parameter param;               ///< defined() when this entry is a parameter
    std::shared_ptr<Layer> layer;  ///< non-null when this entry is a sub-layer
  };
  /// The registry, in order: (name, parameter) or (name, sub-layer).
  const std::vector<Entry>& entries() const { return entries_; }
  /// A parameter or sub-layer by key ("W", "l1/W", "l1"); ValueError when absent.
  ///@{
  Parameter param(const std::string& key) const;
  std::shared_ptr<Layer> layer(const std::string& key) const;
  ///@}

 protected:
  /// Registers and returns the parameter (the same handle).
  ///
  /// An empty name or '/' in it, or a name used twice, is a ValueError. A parameter
  /// without a name takes `name`; an empty Parameter() is replaced by a lazy one (a
  /// node with no data yet). Keep the returned handle in a member:
  /// `W = register_parameter("W", Parameter(Tensor(), "W"));`.
  Parameter register_parameter(const std::string& name, Parameter p);
  /// Registers a sub-layer and returns it as a LayerRef.
  ///
  /// The LayerRef converts to the std::shared_ptr<T> a member may be declared as. The
  /// sub-layer's parameters get keys prefixed with `name` and a '/'. A bad or repeated
  /// name (as for register_parameter), a null layer or the layer itself is a ValueError.
  template <class T>
  LayerRef<T> register_layer(const std::string& name, std::shared_ptr<T> layer) {
    add_layer_entry(name, layer);
    return LayerRef<T>(std::move(layer));
  }
  /// For layer authors: runs `init()` on the first call unless `ready()` says the parameters are there.
  ///
  /// For layers whose parameters take their shapes from the first input (Linear's
  /// in_size, Conv2d's channels, BatchNorm's statistics): runs init() unless ready()
  /// says the parameters are there, once, under a lock, so that threads sharing one
  /// model for inference can make its first calls at the same time. After that it is
  /// one atomic load. `ready` is a callable returning bool, `init` one returning
  /// nothing; call lazy_init at the top of forward:
  /// `lazy_init([&] { return W.data().defined(); }, [&] { W.set_data(...); });`.
  /// An exception from init() propagates and leaves the layer uninitialised (the next
  /// call tries again).
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
/// A shared_ptr to a layer that can be called like the layer itself: l1(x) instead of (*l1)(x).
///
/// LibTorch's ModuleHolder does the same. It is a `std::shared_ptr<T>`, so a
/// member declared as `std::shared_ptr<L::Linear>` takes one unchanged, and `l1->W`
/// reaches the layer's members.
template <class T>
class LayerRef : public std::shared_ptr<T> {
 public:
  /// An empty handle (calling it is a ValueError); assign it from register_layer.
  LayerRef() = default;
  /// Wraps a shared_ptr to a T, or to a class derived from T (implicit).
  ///@{
  LayerRef(std::shared_ptr<T> p) : std::shared_ptr<T>(std::move(p)) {}  // NOLINT implicit
  template <class U, std::enable_if_t<std::is_convertible_v<U*, T*>, int> = 0>
  LayerRef(std::shared_ptr<U> p) : std::shared_ptr<T>(std::move(p)) {}  // NOLINT implicit
  ///@}

  /// Calls the layer: `l1(x)` is `(*l1)(x)` (Layer::operator()); an empty handle is a ValueError.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    if (!this->get()) throw ValueError("LayerRef: calling an empty layer handle; hint: assign it from register_layer");
    return (*this->get())(std::forward<Args>(args)...);
  }
};

}  // namespace dezero::L
