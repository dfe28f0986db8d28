// dezero/core.hpp - define-by-run autograd: Variable, Function, Parameter, Config.
//
// DeZero core.py in C++. A Variable is a handle (shared_ptr) to a node that holds
// a Tensor, its gradient (itself a Variable, so gradients can be differentiated
// again: steps 33-36) and the Function that created it. A Function keeps its
// inputs strongly and its outputs weakly (step 17), so a graph is freed as soon
// as the last Variable that reaches it goes away, without reference cycles.
//
// Beyond DeZero: a Function computes gradients only for inputs that need one
// (Function::needs_input_grad). A leaf that nobody but the graph holds - a Tensor
// passed where a Variable is expected, such as a batch of training images - can
// never have its gradient read, so none is computed for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dezero/tensor.hpp"
#include "dezero/small_vector.hpp"

namespace dezero {

class Function;
struct VariableNode;

// --- Config (step 18) ---------------------------------------------------------
struct Config {
  static thread_local bool enable_backprop;  // record graphs
  static thread_local bool train;            // dropout / batch_norm behaviour
};

// RAII guard: sets a Config flag and restores it when it goes out of scope.
class ConfigGuard {
 public:
  ConfigGuard(const std::string& name, bool value);
  ~ConfigGuard();
  ConfigGuard(ConfigGuard&& o) noexcept;
  ConfigGuard(const ConfigGuard&) = delete;
  ConfigGuard& operator=(const ConfigGuard&) = delete;
  ConfigGuard& operator=(ConfigGuard&&) = delete;

 private:
  bool* flag_;
  bool old_;
};
// auto g = dezero::using_config("enable_backprop", false);  names: "enable_backprop", "train"
[[nodiscard]] ConfigGuard using_config(const std::string& name, bool value);
[[nodiscard]] ConfigGuard no_grad();    // step 18
[[nodiscard]] ConfigGuard test_mode();  // step 54

// --- BackwardOptions: DeZero's backward(retain_grad=..., create_graph=...) ----------
// y.backward({.create_graph = true}) in C++20; in C++17 set the field:
//   dezero::BackwardOptions opts;  opts.create_graph = true;  y.backward(opts);
struct BackwardOptions {
  bool retain_grad = false;   // keep the gradients of every variable, not only the leaves'
  bool create_graph = false;  // record the backward pass, so gradients can be differentiated again
};

// --- Variable -------------------------------------------------------------------
}  // namespace dezero

#include "dezero/core/node_handle.hpp"  // detail::NodeHandle, the reference count inside a Variable

namespace dezero {


class Variable {
 public:
  Variable() = default;  // holds no data
  Variable(Tensor data, std::string name = "");  // NOLINT implicit: Tensors are accepted wherever Variables are

  bool defined() const { return node_ != nullptr; }
  const Tensor& data() const;  // an undefined Tensor for an empty Variable()
  // data(), or a ValueError naming op for an empty Variable().
  const Tensor& defined_data(const char* op) const;
  void set_data(Tensor data);
  // An empty Variable when there is none; using it is an error that says why there
  // is none (a non-leaf without retain_grad, no backward reached it, backprop off).
  Variable grad() const;
  bool has_grad() const;
  void set_grad(const Variable& g);
  void cleargrad();
  const std::string& name() const;
  void set_name(std::string name);
  std::shared_ptr<Function> creator() const;
  void set_creator(const std::shared_ptr<Function>& f);
  int generation() const;
  bool requires_grad() const;
  void set_requires_grad(bool r);
  bool is_parameter() const;

  // On an empty Variable() these throw ValueError, as every other use of one does.
  const Shape& shape() const { return defined_data("shape").shape(); }
  int ndim() const { return defined_data("ndim").ndim(); }
  std::int64_t size() const { return defined_data("size").size(); }
  DType dtype() const { return defined_data("dtype").dtype(); }
  Device device() const { return data().device(); }
  std::int64_t len() const { return defined_data("len").len(); }

  // Step 7-8: back-propagate from this variable. With retain_grad=false only the
  // leaves keep their gradients; create_graph=true records the backward pass
  // itself so that gradients can be differentiated again (step 33). The options
  // form names them: backward({.create_graph = true}); the positional form is
  // backward(retain_grad, create_graph), so backward(true) is retain_grad.
  void backward(bool retain_grad = false, bool create_graph = false);
  void backward(const BackwardOptions& options) { backward(options.retain_grad, options.create_graph); }
  void unchain();            // forget the creator (this variable becomes a leaf)
  void unchain_backward();   // cut the graph above every variable this one depends on (truncated BPTT)

  // Methods that forward to dezero::F (step 38-41).
  Variable reshape(const Shape& shape) const;
  Variable transpose() const;
  Variable transpose(const std::vector<int>& axes) const;
  Variable T() const;
  Variable sum(const Axes& axes = Axes(), bool keepdims = false) const;
  Variable max(const Axes& axes = Axes(), bool keepdims = false) const;
  Variable min(const Axes& axes = Axes(), bool keepdims = false) const;
  Variable pow(double c) const;
  Variable matmul(const Variable& W) const;
  Variable dot(const Variable& W) const;
  Variable operator[](const Index& index) const;
  Variable operator[](const Indices& indices) const;

  // Move the data (and the gradient) to a device in place; identity is kept.
  void to_cpu();
  void to_gpu(int id = 0);
  void to(Device device);

  // Two handles to the same node.
  bool is_same(const Variable& o) const { return node_ == o.node_; }
  const std::shared_ptr<VariableNode>& node() const { return node_.ptr(); }
  explicit Variable(std::shared_ptr<VariableNode> node) : node_(std::move(node)) {}

  std::string str() const;  // "variable([1. 2.])"

 protected:
  friend class Function;
  detail::NodeHandle node_;
};

std::ostream& operator<<(std::ostream& os, const Variable& v);

// A Variable that layers register and optimizers update (step 44).
class Parameter : public Variable {
 public:
  Parameter() = default;
  explicit Parameter(Tensor data, std::string name = "");
};

// Small vectors (small_vector.hpp): std::vector's interface, three elements inside.
using VariableList = SmallVector<Variable, 3>;
using TensorList = SmallVector<Tensor, 3>;

// --- Function -------------------------------------------------------------------
// Subclass it: forward() works on Tensors, backward() on Variables (so that the
// backward pass can itself be differentiated). Call it with dezero::call (below);
// a Function object is used once.
//
//   class Square : public dezero::Function {                       // step 2
//     dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
//     dezero::VariableList backward(const dezero::VariableList& gys) override {
//       return {2.0 * input(0) * gys[0]};
//     }
//   };
//   Variable y = dezero::call<Square>({x});
//
// (The book's spelling, a shared instance called directly, works too:
// `Variable y = (*std::make_shared<Square>())(x);`.)
class Function : public std::enable_shared_from_this<Function> {
 public:
  virtual ~Function();
  virtual TensorList forward(const TensorList& xs) = 0;
  // gys[i] is the gradient of output i (zeros if that output got none). Return one
  // gradient per input, or an empty Variable for an input that needs none.
  virtual VariableList backward(const VariableList& gys) = 0;
  virtual std::string name() const;  // shown in graphs; defaults to the class name

  VariableList apply(const VariableList& inputs);
  VariableList apply(VariableList&& inputs);  // keeps the list as the graph's inputs
  Variable operator()(const Variable& x);
  Variable operator()(const Variable& a, const Variable& b);
  Variable operator()(const Variable& a, const Variable& b, const Variable& c);

  const VariableList& inputs() const { return inputs_; }
  const Variable& input(std::size_t i) const { return inputs_.at(i); }
  VariableList outputs() const;  // the outputs still alive (others are empty Variables)
  Variable output(std::size_t i) const;
  int generation() const { return generation_; }
  // Whether the gradient of input i is wanted (it requires grad). Backward
  // implementations skip the work for inputs that do not.
  bool needs_input_grad(std::size_t i) const;

 private:
  friend class Variable;
  struct OutputRef {  // outputs are held weakly; shape and dtype make zeros for a missing gradient
    std::weak_ptr<VariableNode> node;
    Shape shape;
    DType dtype;
  };
  VariableList inputs_;
  SmallVector<OutputRef, 1> outputs_;
  int generation_ = 0;
  std::uint64_t visit_mark_ = 0;
};

// The node behind a Variable. Public so that tools (graphs, optimizers) can walk it.
struct VariableNode {
  Tensor data;
  std::shared_ptr<VariableNode> grad;
  std::shared_ptr<Function> creator;
  std::string name;
  int generation = 0;
  bool requires_grad = true;  // false: never compute a gradient for this variable
  bool is_parameter = false;
  std::atomic<int> handles{0};  // Variables outside the graph that refer to this node
  ~VariableNode();  // destroys long chains iteratively (no stack overflow)
};

inline void detail::NodeHandle::acquire() {
  if (p_) p_->handles.fetch_add(1, std::memory_order_relaxed);
}
inline void detail::NodeHandle::release() noexcept {
  if (p_ && counted_ && p_->handles.fetch_sub(1, std::memory_order_acq_rel) == 1) on_last_handle(*p_);
}

// --- calling a Function ------------------------------------------------------------
// y = Fn(args...)(inputs), the first output: the one way the library calls its own
// Functions, and the way to call yours. While a graph is recorded the Function is
// made with std::make_shared and becomes y's creator. Without one (under no_grad(),
// or inside a backward pass without create_graph) it lives on the stack for the
// call: no Function object is allocated.
template <class Fn, class... Args>
Variable call(VariableList inputs, Args&&... args) {
  static_assert(std::is_base_of_v<Function, Fn>, "dezero::call: Fn must derive from dezero::Function");
  if (!Config::enable_backprop) {
    Fn f(std::forward<Args>(args)...);
    return std::move(f.apply(std::move(inputs))[0]);
  }
  return std::move(std::make_shared<Fn>(std::forward<Args>(args)...)->apply(std::move(inputs))[0]);
}

// The same, returning every output (Functions with more than one).
template <class Fn, class... Args>
VariableList call_all(VariableList inputs, Args&&... args) {
  static_assert(std::is_base_of_v<Function, Fn>, "dezero::call_all: Fn must derive from dezero::Function");
  if (!Config::enable_backprop) {
    Fn f(std::forward<Args>(args)...);
    return f.apply(std::move(inputs));
  }
  return std::make_shared<Fn>(std::forward<Args>(args)...)->apply(std::move(inputs));
}

// --- operators (step 20-22): Variable, Tensor (converted) or double on either side;
// a double takes the Variable's dtype. ---------------------------------------------
Variable operator+(const Variable& a, const Variable& b);
Variable operator-(const Variable& a, const Variable& b);
Variable operator*(const Variable& a, const Variable& b);
Variable operator/(const Variable& a, const Variable& b);
Variable operator+(const Variable& a, double b);
Variable operator-(const Variable& a, double b);
Variable operator*(const Variable& a, double b);
Variable operator/(const Variable& a, double b);
Variable operator+(double a, const Variable& b);
Variable operator-(double a, const Variable& b);
Variable operator*(double a, const Variable& b);
Variable operator/(double a, const Variable& b);
Variable operator-(const Variable& a);

}  // namespace dezero
