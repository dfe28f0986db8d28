// dezero/layers.hpp - dezero::L, layers: objects that own Parameters (DeZero layers.py,
// steps 44-45, 58-60).
//
// A Layer registers its parameters and sub-layers by name, in order; params(),
// cleargrads(), to_gpu() and the weight files walk them depth first in that
// order (DeZero used a Python set, so its order changed from run to run).
// Parameters are handles: the member `W` and the registry share one node, so
// lazy initialisation fills the registered parameter. Change a parameter's
// values with W.set_data(...); rebinding the member (W = Parameter(...)) after
// registration would detach it from the registry.
//
//   class TwoLayerNet : public dezero::Model {            // step 45
//    public:
//     TwoLayerNet(int hidden, int out) {
//       l1 = register_layer("l1", std::make_shared<L::Linear>(hidden));
//       l2 = register_layer("l2", std::make_shared<L::Linear>(out));
//     }
//     Variable forward(const Variable& x) override { return (*l2)(F::sigmoid((*l1)(x))); }
//     std::shared_ptr<L::Linear> l1, l2;
//   };
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dezero/core.hpp"

namespace dezero::L {

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

  // The inputs / outputs of the last call that are still alive (DeZero keeps
  // weak references; examples/grad_cam reads outputs()).
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
  template <class T>
  std::shared_ptr<T> register_layer(const std::string& name, std::shared_ptr<T> layer) {
    add_layer_entry(name, layer);
    return layer;
  }

 private:
  void add_layer_entry(const std::string& name, std::shared_ptr<Layer> layer);
  void check_new_name(const std::string& name) const;
  void flatten(const std::string& prefix, std::vector<std::pair<std::string, Parameter>>& out) const;

  std::vector<Entry> entries_;
  std::vector<std::weak_ptr<VariableNode>> inputs_, outputs_;
};

// --- Linear (step 44) --------------------------------------------------------------------------
// y = x @ W + b. x: (N, in_size), W: (in_size, out_size), b: (out_size,).
// W = randn(in, out) * sqrt(1/in) drawn on the host from dezero::random (so seeds
// reproduce DeZero's numbers), created on the first call from x.shape[1] when
// in_size is 0, on x's device; b = zeros.
class Linear : public Layer {
 public:
  explicit Linear(std::int64_t out_size, bool nobias = false, DType dtype = float32, std::int64_t in_size = 0);
  Variable forward(const Variable& x) override;

  std::int64_t in_size, out_size;
  DType dtype;
  Parameter W;
  Parameter b;  // no node (defined() == false) with nobias

 private:
  void init_W(Device device);
};

// --- EmbedID ------------------------------------------------------------------------------------
// y = W[ids]. W: (in_size, out_size) = randn. ids: integer tensor of any shape.
// (DeZero keeps W float64; here it is `dtype`, float32 by default like Linear.)
class EmbedID : public Layer {
 public:
  EmbedID(std::int64_t in_size, std::int64_t out_size, DType dtype = float32);
  Variable forward(const Variable& ids) override;
  Parameter W;
};

// --- BatchNorm ----------------------------------------------------------------------------------
// x: (N, C) or (N, C, H, W). Parameters avg_mean, avg_var (running statistics,
// never given a gradient), gamma, beta; created on the first call with C = x.shape[1],
// x's dtype and device. Train mode normalises with the batch statistics and updates
// the running ones (decay 0.9, eps 2e-5); test mode uses the running ones.
class BatchNorm : public Layer {
 public:
  BatchNorm();
  Variable forward(const Variable& x) override;
  Parameter avg_mean, avg_var, gamma, beta;
};

// --- RNN (step 59) ------------------------------------------------------------------------------
// h = tanh(x2h(x) + h2h(h)); the first step after reset_state() has no h2h term.
// h2h's weight is (hidden_size, hidden_size) (DeZero built it from in_size: a bug).
class RNN : public Layer {
 public:
  explicit RNN(std::int64_t hidden_size, std::int64_t in_size = 0);
  Variable forward(const Variable& x) override;
  void reset_state();

  std::shared_ptr<Linear> x2h, h2h;
  Variable h;  // the hidden state (empty after reset_state)
};

// --- LSTM (step 60) -----------------------------------------------------------------------------
// f, i, o = sigmoid(x2* (x) + h2* (h)), u = tanh(x2u(x) + h2u(h)); c = f*c + i*u; h = o*tanh(c).
class LSTM : public Layer {
 public:
  explicit LSTM(std::int64_t hidden_size, std::int64_t in_size = 0);
  Variable forward(const Variable& x) override;
  void reset_state();

  std::shared_ptr<Linear> x2f, x2i, x2o, x2u, h2f, h2i, h2o, h2u;
  Variable h, c;
};

}  // namespace dezero::L
