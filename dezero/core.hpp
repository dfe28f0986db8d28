/// \file
/// Define-by-run autograd: Variable, Function, Parameter, Config.
///
/// DeZero core.py in C++. A Variable is a handle (shared_ptr) to a node that holds
/// a Tensor, its gradient (itself a Variable, so gradients can be differentiated
/// again: steps 33-36) and the Function that created it. A Function keeps its
/// inputs strongly and its outputs weakly (step 17), so a graph is freed as soon
/// as the last Variable that reaches it goes away, without reference cycles.
///
/// Beyond DeZero: a Function computes gradients only for inputs that need one
/// (Function::needs_input_grad). A leaf that nobody but the graph holds - a Tensor
/// passed where a Variable is expected, such as a batch of training images - can
/// never have its gradient read, so none is computed for it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "dezero/tensor.hpp"
#include "dezero/small_vector.hpp"

namespace dezero {

class Function;
struct VariableNode;
/// \cond INTERNAL
namespace detail {
template <class Fn, std::size_t K>
class GraphBlock;
// The creator of a node as a shared_ptr (aliasing the node's own block when it is inside one).
std::shared_ptr<Function> creator_of(const std::shared_ptr<VariableNode>& node);
bool has_creator(const VariableNode& node);
// Whether the node has grad-ready hooks (its kHooked flag).
bool has_grad_ready_hooks(const VariableNode& node);
// A name without its namespaces ("dezero::optimizers::Adam" -> "Adam"; template arguments kept
// whole), and a C++ type's name so (the demangler's spelling): the default of Function::name()
// and Optimizer::name().
std::string without_namespaces(const std::string& name);
std::string type_name_without_namespaces(const std::type_info& type);
}  // namespace detail
/// \endcond

// --- Config (step 18) ---------------------------------------------------------
/// DeZero's Config (step 18): the switches that change what the functions do.
///
/// The flags are thread_local: each thread records graphs or not on its own. Set them for
/// a scope with using_config(), no_grad() or test_mode().
struct Config {
  // initial-exec: read on every op; libdezero is loaded with the program (or has room in
  // the static TLS block when opened later), so no __tls_get_addr call per read.
  [[gnu::tls_model("initial-exec")]] static thread_local bool enable_backprop;  ///< Record graphs (true by default; false under no_grad()).
  [[gnu::tls_model("initial-exec")]] static thread_local bool train;            ///< Dropout / batch_norm behaviour: training (true) or test (false).
  /// Mixed precision: the type float32 products are computed in (bfloat16 or float16 under
  /// autocast(); float32, the default, when none is set).
  [[gnu::tls_model("initial-exec")]] static thread_local DType autocast;
};

/// RAII guard: sets a Config flag and restores it when it goes out of scope.
class ConfigGuard {
 public:
  /// Sets the flag `name`, "enable_backprop" or "train", to `value`: a ValueError for another name.
  ConfigGuard(const std::string& name, bool value);
  /// Restores the flag's previous value.
  ~ConfigGuard();
  /// Takes over the guard: the moved-from one restores nothing.
  ConfigGuard(ConfigGuard&& o) noexcept;
  /// Not copyable or assignable: one guard restores its flag once.
  ///@{
  ConfigGuard(const ConfigGuard&) = delete;
  ConfigGuard& operator=(const ConfigGuard&) = delete;
  ConfigGuard& operator=(ConfigGuard&&) = delete;
  ///@}

 private:
  bool* flag_;
  bool old_;
};
/// Sets a Config flag until the returned guard goes out of scope (DeZero's using_config).
///
/// `auto g = dezero::using_config("enable_backprop", false);`  names: "enable_backprop",
/// "train"; a ValueError for another name.
[[nodiscard]] ConfigGuard using_config(const std::string& name, bool value);
/// Turns backprop off until the returned guard goes out of scope (step 18): no graph is recorded.
///
/// `auto g = dezero::no_grad();` is using_config("enable_backprop", false).
[[nodiscard]] ConfigGuard no_grad();
/// Turns Config::train off until the returned guard goes out of scope (step 54).
///
/// `auto g = dezero::test_mode();` is using_config("train", false): dropout passes its input
/// through and batch_norm uses its running statistics.
[[nodiscard]] ConfigGuard test_mode();

// --- Mixed precision (Chainer's mixed16, PyTorch's autocast) ----------------------
/// RAII guard of autocast(): restores the previous autocast type when it goes out of scope.
class AutocastGuard {
 public:
  /// Sets Config::autocast to `dtype` (see autocast()).
  explicit AutocastGuard(DType dtype);
  /// Restores the previous type.
  ~AutocastGuard();
  /// Takes over the guard: the moved-from one restores nothing.
  AutocastGuard(AutocastGuard&& o) noexcept;
  /// Not copyable or assignable: one guard restores once.
  ///@{
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  AutocastGuard& operator=(AutocastGuard&&) = delete;
  ///@}

 private:
  DType old_;
  bool active_ = true;
};
/// Mixed precision until the returned guard goes out of scope: `auto g = dezero::autocast(dezero::bfloat16);`
///
/// While it lives, on this thread, the float32 products run with their operands rounded to
/// `dtype` (bfloat16 or float16) and their sums in float32: `F::linear`, `F::matmul` (2-d),
/// `F::conv2d`, `F::deconv2d` and their backward. Their inputs, outputs and gradients stay float32 tensors, so parameters keep
/// float32 master values and every other op (activations, softmax, losses, reductions, batch
/// norm statistics, the optimizers' updates) runs in float32 as before. A function remembers
/// the type it was called under, and its backward computes in the same type wherever backward
/// runs. float64 products are not affected. `autocast(dezero::float32)` turns it off inside.
/// Where the CPU has no product of the type (cpu_supports_bf16() false: AVX2 or plain AVX-512),
/// the products run in float32, unrounded (one line on stderr says so, once): never slower than
/// float32. DEZERO_AUTOCAST_EMULATE=1 rounds their operands there anyway (the float32 GEMM rounds
/// linear's and matmul's as it packs them; convolutions round theirs in a pass first).
/// A DtypeError for any other dtype.
[[nodiscard]] AutocastGuard autocast(DType dtype);

// --- BackwardOptions: DeZero's backward(retain_grad=..., create_graph=...) ----------
/// The keywords of DeZero's backward(retain_grad=..., create_graph=...), for Variable::backward.
///
/// y.backward({.create_graph = true}) in C++20; in C++17 set the field:
/// `dezero::BackwardOptions opts;  opts.create_graph = true;  y.backward(opts);`
struct BackwardOptions {
  bool retain_grad = false;   ///< Keep the gradients of every variable, not only the leaves'.
  bool create_graph = false;  ///< Record the backward pass, so gradients can be differentiated again.
};

// --- Variable -------------------------------------------------------------------
}  // namespace dezero

#include "dezero/core/node_handle.hpp"  // detail::NodeHandle, the reference count inside a Variable

namespace dezero {

class Variable;

// --- grad-ready hooks (beyond DeZero) ---------------------------------------------------
/// A hook that backward() calls once a leaf's gradient for the pass is final
/// (Variable::register_post_accumulate_grad_hook); it receives the leaf, whose grad() is that gradient.
using GradReadyHook = std::function<void(const Variable&)>;

/// What Variable::register_post_accumulate_grad_hook returns: remove() unregisters the hook.
///
/// A plain value (copies name the same hook), not a guard: dropping it keeps the hook, which
/// then lives as long as the variable's node. remove() is idempotent, and does nothing once
/// the variable's node is gone or for a default-constructed handle.
class HookHandle {
 public:
  /// A handle that names no hook.
  HookHandle() = default;
  /// Unregisters the hook: no backward() calls it afterwards (not even the one running now).
  void remove();
  /// Whether the hook is still registered (false after remove() or once its variable is gone).
  bool registered() const;

 private:
  friend class Variable;
  explicit HookHandle(std::uint64_t id) : id_(id) {}
  std::uint64_t id_ = 0;
};

/// A variable of the define-by-run graph, DeZero's Variable: a handle to a node that holds
/// a Tensor, its gradient and the Function that created it.
///
/// Copies are handles to the same node (is_same()); a Tensor converts to a Variable
/// implicitly, so every function of dezero::F takes either. An empty Variable() holds no
/// node: using it (its shape, an operation on it, backward()) is a ValueError that says why
/// it is empty.
class Variable {
 public:
  /// An empty Variable: holds no data (defined() == false).
  Variable() = default;
  /// A leaf holding `data`, with an optional name; implicit: Tensors are accepted wherever
  /// Variables are.
  Variable(Tensor data, std::string name = "");  // NOLINT implicit: Tensors are accepted wherever Variables are

  /// Whether this handle refers to a node (false for Variable()).
  bool defined() const { return node_ != nullptr; }
  /// The tensor it holds: an undefined Tensor for an empty Variable().
  const Tensor& data() const;  // inline, after VariableNode
  /// data(), or a ValueError naming op for an empty Variable().
  const Tensor& defined_data(const char* op) const;
  /// Replaces the data (an empty Variable() gets a node first); creator and gradient stay.
  void set_data(Tensor data);
  /// The gradient that backward() left, itself a Variable.
  ///
  /// An empty Variable when there is none; using it is an error that says why there
  /// is none (a non-leaf without retain_grad, no backward reached it, backprop off).
  Variable grad() const;
  /// Whether a gradient is stored (grad() is not empty).
  bool has_grad() const;
  /// Sets the gradient, DeZero's `x.grad = g`: a ValueError on an empty Variable().
  ///
  /// backward() starts from it instead of ones, and it must have the variable's shape (a
  /// ShapeError there otherwise).
  void set_grad(const Variable& g);
  /// Forgets the gradient (step 14): backward() adds to a gradient that is already there.
  void cleargrad();
  /// The name shown in graphs and printing ("" when none).
  const std::string& name() const;
  /// Sets the name (an empty Variable() gets a node first).
  void set_name(std::string name);
  /// The Function that made this variable; nullptr for a leaf.
  std::shared_ptr<Function> creator() const;
  /// Makes `f` this variable's creator, one generation after it (steps 7, 16).
  ///
  /// A ValueError on an empty Variable().
  void set_creator(const std::shared_ptr<Function>& f);
  /// The generation: 0 for a leaf, its creator's plus 1 otherwise (step 16's backward order).
  int generation() const;
  /// Whether a gradient is computed for this variable: true by default, false for Variable().
  bool requires_grad() const;
  /// Sets requires_grad(); with false no gradient is ever computed for this variable.
  ///
  /// A ValueError on an empty Variable().
  void set_requires_grad(bool r);
  /// Whether this is a Parameter.
  bool is_parameter() const;

  /// The data's shape, ndim, size and dtype, as the Tensor's.
  ///
  /// On an empty Variable() these throw ValueError, as every other use of one does
  /// (len() of a 0-d variable is a ShapeError).
  ///@{
  const Shape& shape() const { return defined_data("shape").shape(); }
  int ndim() const { return defined_data("ndim").ndim(); }
  std::int64_t size() const { return defined_data("size").size(); }
  DType dtype() const { return defined_data("dtype").dtype(); }
  ///@}
  /// The data's device: the CPU for an empty Variable() (no error, unlike shape()).
  Device device() const { return data().device(); }
  /// The length of the first axis, as Python's len(): a ValueError for an empty Variable(),
  /// a ShapeError for a 0-d one.
  std::int64_t len() const { return defined_data("len").len(); }

  /// Step 7-8: back-propagate from this variable, filling the gradients of the variables
  /// it depends on.
  ///
  /// With retain_grad=false only the
  /// leaves keep their gradients; create_graph=true records the backward pass
  /// itself so that gradients can be differentiated again (step 33). The options
  /// form names them: backward({.create_graph = true}); the positional form is
  /// backward(retain_grad, create_graph), so backward(true) is retain_grad.
  ///
  /// The first gradient is ones of this variable's shape unless set_grad() gave one.
  /// Gradients add up over calls: cleargrad() first to start again. A ValueError for an
  /// empty variable or for a Function::backward that returns the wrong number of
  /// gradients; a ShapeError for a gradient whose shape is not its variable's.
  ///@{
  void backward(bool retain_grad = false, bool create_graph = false);
  void backward(const BackwardOptions& options) { backward(options.retain_grad, options.create_graph); }
  ///@}
  /// Calls `hook` during every backward() that reaches this leaf, as soon as its gradient for
  /// that pass is final (PyTorch's register_post_accumulate_grad_hook; the grad-ready signal
  /// that data-parallel training uses to reduce gradients while backward still runs).
  ///
  /// A gradient is final once every Function of the pass that takes this leaf as an input
  /// has run its backward and added its share: the hooks of a network's parameters run in
  /// the reverse order of their use (an MLP's last layer first), on the thread that runs
  /// backward(), each once per pass, before backward() returns. `hook(v)` sees the leaf:
  /// v.grad() is its final gradient (what it held before the pass plus every share of this
  /// pass; with create_graph it carries its graph). A leaf that the pass does not reach (no
  /// Function on the way from the output uses it, or none returns a gradient for it) is not
  /// called. Several hooks run in the order they were registered. A hook registered while a
  /// backward() runs (from inside a hook) is called from the next backward() on; one
  /// removed while it runs is not called again.
  ///
  /// A hook that throws stops backward(): the exception propagates out of it. The leaves
  /// whose hooks ran have their final gradients, the others partial ones or none (clear
  /// them with cleargrad(), or a model's cleargrads(), before the next pass); without retain_grad,
  /// the intermediate variables lose theirs, as after any backward(), so the graph can be
  /// walked again.
  ///
  /// The hooks live with the variable's node (every handle to it shares them); register
  /// them while no other thread runs a backward through it. Only while some hook is
  /// registered, on any variable, does backward() first count the uses of each leaf (one
  /// walk over the graph, PyTorch's dependency count); otherwise it costs nothing.
  ///
  /// A ValueError for an empty Variable(), an empty `hook`, a variable that is not a leaf
  /// (it has a creator: its gradient is not kept) or one that does not require grad.
  HookHandle register_post_accumulate_grad_hook(GradReadyHook hook);
  /// Forgets the creator: this variable becomes a leaf.
  void unchain();
  /// Cuts the graph above every variable this one depends on (truncated BPTT, step 59).
  void unchain_backward();

  // Methods that forward to dezero::F (step 38-41).
  /// F::reshape(*this, shape): the same elements in `shape`, one extent may be -1.
  Variable reshape(const Shape& shape) const;
  /// F::transpose(*this): the axes reversed.
  Variable transpose() const;
  /// F::transpose(*this, axes): the axes permuted, axis i of the result is axis `axes[i]`.
  Variable transpose(const std::vector<int>& axes) const;
  /// F::transpose(*this), NumPy's x.T: the axes reversed.
  Variable T() const;
  /// F::sum(*this, axes, keepdims): the sum over `axes` (all by default).
  Variable sum(const Axes& axes = Axes(), bool keepdims = false) const;
  /// F::max(*this, axes, keepdims): the largest element over `axes`.
  Variable max(const Axes& axes = Axes(), bool keepdims = false) const;
  /// F::min(*this, axes, keepdims): the smallest element over `axes`.
  Variable min(const Axes& axes = Axes(), bool keepdims = false) const;
  /// F::pow(*this, c): this variable to the power `c`, element-wise.
  Variable pow(double c) const;
  /// F::matmul(*this, W): the matrix product.
  Variable matmul(const Variable& W) const;
  /// F::matmul(*this, W), DeZero's x.dot(W).
  Variable dot(const Variable& W) const;
  /// F::get_item(*this, indices): NumPy's x[...], differentiable (see dezero::get_item).
  ///@{
  Variable operator[](const Index& index) const;
  Variable operator[](const Indices& indices) const;
  ///@}

  /// Move the data (and the gradient) to a device in place; identity is kept.
  ///
  /// Nothing happens on an empty Variable(); a DeviceError for a CUDA device that this
  /// build or machine does not have.
  ///@{
  void to_cpu();
  void to_gpu(int id = 0);
  void to(Device device);
  ///@}

  /// Two handles to the same node: whether `o` refers to this variable's node.
  bool is_same(const Variable& o) const { return node_ == o.node_; }
  /// The node behind the handle (nullptr for Variable()), for tools that walk the graph.
  const std::shared_ptr<VariableNode>& node() const { return node_.ptr(); }
  /// A handle to an existing node (Function::output() makes them).
  explicit Variable(std::shared_ptr<VariableNode> node) : node_(std::move(node)) {}

  /// DeZero's printing of a variable: its data's str() inside `variable(...)`.
  ///
  /// For example `variable([1. 2.])`, or `variable(None)` when empty.
  std::string str() const;

 protected:
  /// \cond INTERNAL
  friend class Function;
  static void unchain_node(VariableNode& n);
  detail::NodeHandle node_;
  /// \endcond
};

/// Writes `v.str()` to `os`, as Python's print(x).
std::ostream& operator<<(std::ostream& os, const Variable& v);

/// VariableList{a, b} moves its temporaries in (a Variable copy counts two references).
template <>
struct small_vector_forwards_braced<Variable, void> : std::true_type {};

/// A Variable that layers register and optimizers update (step 44).
class Parameter : public Variable {
 public:
  /// An empty Parameter (no data).
  Parameter() = default;
  /// A parameter holding `data`, with an optional name (explicit, unlike Variable's).
  explicit Parameter(Tensor data, std::string name = "");
};

/// A list of Variables: a small vector (small_vector.hpp), std::vector's interface, three
/// elements inside.
using VariableList = SmallVector<Variable, 3>;
/// A list of Tensors: a small vector (small_vector.hpp), std::vector's interface, three
/// elements inside.
using TensorList = SmallVector<Tensor, 3>;

/// A read-only view of consecutive Variables: a Function's inputs (Function::inputs()).
///
/// size(), [], at(), iterators and range-for as a `const VariableList&`; converts to a
/// VariableList (a copy of the handles). Valid while the Function keeps its inputs.
class VariableSpan {
 public:
  /// The iterator types: pointers to const Variables.
  ///@{
  using value_type = Variable;
  using const_iterator = const Variable*;
  using iterator = const Variable*;
  ///@}
  /// An empty view.
  VariableSpan() = default;
  /// The `n` Variables from `p` on.
  VariableSpan(const Variable* p, std::size_t n) : p_(p), n_(n) {}
  /// The number of Variables.
  std::size_t size() const { return n_; }
  /// Whether there are none.
  bool empty() const { return n_ == 0; }
  /// Iterators over the Variables.
  ///@{
  const Variable* begin() const { return p_; }
  const Variable* end() const { return p_ + n_; }
  ///@}
  /// Variable `i`, unchecked.
  const Variable& operator[](std::size_t i) const { return p_[i]; }
  /// Variable `i`: std::out_of_range past the last.
  const Variable& at(std::size_t i) const;
  /// A copy of the handles, as a VariableList.
  operator VariableList() const { return VariableList(begin(), end()); }  // NOLINT implicit

 private:
  const Variable* p_ = nullptr;
  std::size_t n_ = 0;
};

// --- Function attributes (for tools that read a recorded graph) ---------------------------
/// One hyperparameter of a Function: an integer, a real, a list of integers or reals, a string
/// or a tensor (an index array).
using FunctionAttr = std::variant<std::int64_t, double, std::vector<std::int64_t>, std::vector<double>,
                                  std::string, Tensor>;
/// A Function's hyperparameters by name, in a fixed order (Function::attributes()).
using FunctionAttrs = std::vector<std::pair<std::string, FunctionAttr>>;

// --- Function -------------------------------------------------------------------
/// The base of every differentiable function, DeZero's Function: forward() on Tensors,
/// backward() on Variables.
///
/// Subclass it: forward() works on Tensors, backward() on Variables (so that the
/// backward pass can itself be differentiated). Call it with dezero::call (below);
/// a Function object is used once: calling the same object again while an output of its
/// first call is alive is a dezero::Error (it remembers one call's inputs; DeZero would
/// silently give the first output a wrong gradient).
///
/// ```cpp
/// class Square : public dezero::Function {                       // step 2
///   dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
///   dezero::VariableList backward(const dezero::VariableList& gys) override {
///     return {2.0 * input(0) * gys[0]};
///   }
/// };
/// Variable y = dezero::call<Square>({x});
/// ```
///
/// The book's spelling, a shared instance called directly, works too:
///
/// ```cpp
/// Variable y = (*std::make_shared<Square>())(x);
/// ```
///
/// Memory: dezero::call records a Function of one output in one block of the small-object
/// pool together with that output's node and its inputs (a graph node costs one
/// allocation: bench/op_profile.cpp). The output's node lives as long as the Function;
/// a Function that outlives its outputs (a shared_ptr kept from creator()) keeps their
/// node, as DeZero's weak outputs would not.
class Function : public std::enable_shared_from_this<Function> {
 public:
  /// Destroys the function, and with it its references to its inputs.
  virtual ~Function();
  /// Computes the outputs' data from the inputs' data (xs[i] is input i's tensor); override it.
  virtual TensorList forward(const TensorList& xs) = 0;
  /// Computes the inputs' gradients from the outputs'; override it.
  ///
  /// gys[i] is the gradient of output i (zeros if that output got none). Return one
  /// gradient per input, or an empty Variable for an input that needs none.
  /// Variable::backward runs it with backprop off unless create_graph asked for a graph, and
  /// throws a ValueError for a wrong number of gradients, a ShapeError for a gradient whose
  /// shape is not its input's.
  virtual VariableList backward(const VariableList& gys) = 0;
  /// The name shown in graphs and errors; defaults to the class name (without namespaces).
  virtual std::string name() const;
  /// The hyperparameters forward() uses besides its inputs, by name: Conv2d's "stride" and
  /// "pad", Sum's "axes" and "keepdims", AddConst's "c". Empty by default. Tools that turn a
  /// recorded graph into another form read them (onnx::export_model); a user's Function may
  /// override it to describe itself.
  virtual FunctionAttrs attributes() const;

  /// Runs forward() on the inputs' data and, while backprop is on, links the outputs to
  /// this function (step 11); returns the outputs.
  ///
  /// The `&&` form keeps the list as the graph's inputs. A ValueError for an input that holds
  /// no data; an Error when a graph is recorded and the function is not owned by a
  /// std::shared_ptr (dezero::call makes it so), or was recorded by dezero::call already.
  ///@{
  VariableList apply(const VariableList& inputs);
  VariableList apply(VariableList&& inputs);
  ///@}
  /// apply() on one, two or three inputs, returning the first output: the book's `f(x)`.
  ///@{
  Variable operator()(const Variable& x);
  Variable operator()(const Variable& a, const Variable& b);
  Variable operator()(const Variable& a, const Variable& b, const Variable& c);
  ///@}

  /// The inputs the graph keeps (set by apply() while backprop is on; none after unchain()
  /// of the function's output).
  VariableSpan inputs() const;
  /// Input `i`, for backward(): std::out_of_range past the last.
  const Variable& input(std::size_t i) const { return inputs().at(i); }
  /// The outputs still alive (others are empty Variables).
  VariableList outputs() const;
  /// Output `i`, or an empty Variable once it is gone: std::out_of_range past the last.
  Variable output(std::size_t i) const;
  /// The largest generation of the inputs (step 16): backward() runs later functions first.
  int generation() const { return generation_; }
  /// Whether the gradient of input i is wanted (it requires grad). Backward
  /// implementations skip the work for inputs that do not.
  bool needs_input_grad(std::size_t i) const;

  /// \cond INTERNAL
  // dezero::call's paths. record_in_block (detail::record) runs forward and links the one
  // output into the block's node, or falls back to separate output nodes for several
  // outputs; apply_without_graph runs forward only. The inputs are n pointers, read, not kept.
  VariableList record_in_block(const Variable* const* in, std::size_t n, std::shared_ptr<VariableNode>&& block_node);
  VariableList apply_without_graph(const Variable* const* in, std::size_t n);
  /// \endcond

 protected:
  /// \cond INTERNAL
  Function() = default;
  // A Function in a graph block (detail::GraphBlock): its inline input slots.
  void set_block_slots(void* slots, std::size_t n) noexcept {
    in_ = slots;
    n_slots_ = static_cast<std::uint8_t>(n);
    flags_ |= kBlock;
  }
  // Releases the inputs held in the block's slots (the block's destructor).
  void release_block_inputs() noexcept;
  /// \endcond

 private:
  friend class Variable;
  friend struct VariableNode;
  // Outputs recorded outside a block are held weakly (step 17); the shape and dtype make
  // zeros for a missing gradient.
  struct OutputRef {
    std::weak_ptr<VariableNode> node;
    Shape shape;
    DType dtype = float32;
  };
  // The inputs and outputs of a Function recorded outside a block.
  struct Ext {
    VariableList inputs;  // graph references (they do not count as handles)
    SmallVector<OutputRef, 1> outputs;
  };
  enum : std::uint8_t { kBlock = 1, kExt = 2, kEmbeddedOut = 4, kQueued = 8 };
  // The block's own node (detail::GraphBlock overrides it), and the type named by name().
  virtual VariableNode* block_node() noexcept { return nullptr; }
  virtual const std::type_info& fn_type() const { return typeid(*this); }
  Variable* input_slots() const { return static_cast<Variable*>(in_); }
  Ext* ext() const { return static_cast<Ext*>(in_); }
  void link_inputs(const Variable* const* in, std::size_t n, bool in_slots);
  void release_inputs() noexcept;
  TensorList run_forward(const Variable* const* in, std::size_t n);
  VariableList link_separate_outputs(const Variable* const* in, std::size_t n, TensorList&& ys,
                                     const std::shared_ptr<Function>& self);
  std::size_t n_outputs() const;

  void* in_ = nullptr;            // the block's input slots (kBlock, no kExt) or an Ext (kExt)
  std::int32_t generation_ = 0;
  std::uint16_t n_inputs_ = 0;    // inputs in the slots
  std::uint8_t flags_ = 0;
  std::uint8_t n_slots_ = 0;
};

/// The node behind a Variable. Public so that tools (graphs, optimizers) can walk it.
///
/// 80 bytes: a graph holds one per recorded op, inside the Function's block. The creator,
/// generation and name are reached through the members below.
struct VariableNode {
  Tensor data;                         ///< The tensor, Variable::data().
  std::shared_ptr<VariableNode> grad;  ///< The gradient's node, or nullptr: Variable::grad().
  std::atomic<int> handles{0};         ///< Variables outside the graph that refer to this node.

  /// The Function that made this node (nullptr for a leaf), without a reference.
  Function* creator_ptr() const;
  /// The generation: 0 for a leaf, the creator's generation plus 1 otherwise.
  int generation() const;
  /// The name, Variable::name() ("" when none).
  const std::string& name() const;
  /// False: never compute a gradient for this variable.
  bool requires_grad() const { return (flags_ & kRequiresGrad) != 0; }
  /// Whether this is a Parameter's node.
  bool is_parameter() const { return (flags_ & kParameter) != 0; }

  /// Not copyable: Variables share a node.
  ///@{
  VariableNode(const VariableNode&) = delete;
  VariableNode& operator=(const VariableNode&) = delete;
  ///@}

 protected:
  /// \cond INTERNAL
  VariableNode() = default;
  ~VariableNode();
  enum : std::uint8_t {
    kRequiresGrad = 1,
    kParameter = 2,
    kEmbedded = 4,   // in its creator's block: the creator is at fn_offset_ before this node
    kUnchained = 8,  // embedded and unchain()ed: no creator
    kOverride = 16,  // embedded, with set_creator()'s creator and generation in a side table
    kNamed = 32,     // the name is in a side table
    kHooked = 64,    // has grad-ready hooks, in a side table (Variable::register_post_accumulate_grad_hook)
  };
  std::uint8_t flags_ = kRequiresGrad;
  std::uint8_t spare_ = 0;
  std::int16_t fn_offset_ = 0;
  /// \endcond

 private:
  friend class Variable;
  friend class Parameter;
  friend class Function;
  friend std::shared_ptr<Function> detail::creator_of(const std::shared_ptr<VariableNode>& node);
  friend bool detail::has_creator(const VariableNode& node);
  friend bool detail::has_grad_ready_hooks(const VariableNode& node);
};

/// \cond INTERNAL
namespace detail {
// A node outside any block: a leaf, a gradient, an output of a Function that dezero::call
// did not record (several outputs, or the book's make_shared spelling).
struct LeafNode final : VariableNode {
  LeafNode() = default;
  ~LeafNode();
  std::shared_ptr<Function> creator;
  int generation = 0;
};
std::shared_ptr<VariableNode> make_leaf_node();

// Drops p; when a destructor is already dropping a graph on this thread, p is queued and
// dropped by that outermost call, so that a million-node chain is freed without recursion.
void defer_release(std::shared_ptr<void>&& p) noexcept;

// std::allocate_shared's allocator for graph objects: the small-object pool.
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT implicit, as allocators are
  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= 8, "PoolAllocator: over-aligned types are not pooled");
    return static_cast<T*>(small_alloc(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { small_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const PoolAllocator<U>&) const noexcept {
    return false;
  }
};

// One allocation for a recorded op: the Function Fn, its output's node and K input slots,
// behind one shared_ptr control block. dezero::call makes them (record below).
template <class Fn, std::size_t K>
class GraphBlock final : public Fn, public VariableNode {
 public:
  template <class... Args>
  explicit GraphBlock(Args&&... args) : Fn(std::forward<Args>(args)...) {
    this->set_block_slots(slots_, K);
    fn_offset_ = static_cast<std::int16_t>(reinterpret_cast<char*>(static_cast<VariableNode*>(this)) -
                                           reinterpret_cast<char*>(static_cast<Function*>(this)));
  }
  ~GraphBlock() override { this->release_block_inputs(); }

 private:
  VariableNode* block_node() noexcept override { return this; }
  const std::type_info& fn_type() const override { return typeid(Fn); }
  alignas(Variable) unsigned char slots_[K * sizeof(Variable)];
};

template <class Fn, std::size_t K, class... Args>
VariableList record_block(const Variable* const* in, Args&&... args) {
  using Block = GraphBlock<Fn, K>;
  std::shared_ptr<Block> block = std::allocate_shared<Block>(PoolAllocator<Block>(), std::forward<Args>(args)...);
  Function& f = *block;
  return f.record_in_block(in, K, std::shared_ptr<VariableNode>(std::move(block)));
}

// Records y = Fn(args...)(inputs) in a graph block when Fn can be one (not final, small
// enough to find its node, not over-aligned, 1 to 3 inputs); else through make_shared.
template <class Fn, class... Args>
VariableList record(const Variable* const* in, std::size_t n, Args&&... args) {
  if constexpr (!std::is_final_v<Fn> && sizeof(Fn) < 16384 && alignof(Fn) <= 8) {
    switch (n) {
      case 1: return record_block<Fn, 1>(in, std::forward<Args>(args)...);
      case 2: return record_block<Fn, 2>(in, std::forward<Args>(args)...);
      case 3: return record_block<Fn, 3>(in, std::forward<Args>(args)...);
      default: break;
    }
  }
  VariableList inputs;
  for (std::size_t i = 0; i < n; ++i) inputs.push_back(*in[i]);
  return std::make_shared<Fn>(std::forward<Args>(args)...)->apply(std::move(inputs));
}

// The inputs of the library's own calls, by reference: call<Fn>(detail::in(a, b), args...)
// copies no handle until the graph keeps them (a handle copy is two atomic increments).
// The referenced Variables must outlive the call (temporaries in the same expression do).
template <std::size_t K>
using InputRefs = std::array<const Variable*, K>;
inline InputRefs<1> in(const Variable& a) { return {&a}; }
inline InputRefs<2> in(const Variable& a, const Variable& b) { return {&a, &b}; }
inline InputRefs<3> in(const Variable& a, const Variable& b, const Variable& c) { return {&a, &b, &c}; }
}  // namespace detail

namespace detail {
// The data of an empty Variable: an undefined Tensor that says why it is empty (variable.cpp).
const Tensor& empty_variable_data(EmptyCause cause);
}  // namespace detail
inline const Tensor& Variable::data() const {
  return node_ ? node_->data : detail::empty_variable_data(node_.empty_cause());
}

inline void detail::NodeHandle::acquire() {
  if (p_) count_up(p_->handles);
}
inline void detail::NodeHandle::release() noexcept {
  if (p_ && counted_ && count_down(p_->handles)) on_last_handle(*p_);
}
/// \endcond

/// \cond INTERNAL
template <class Fn, class... Args>
VariableList call_all(VariableList inputs, Args&&... args);
/// \endcond

// --- calling a Function ------------------------------------------------------------
/// y = Fn(args...)(inputs), the first output: the one way the library calls its own
/// Functions, and the way to call yours. While a graph is recorded the Function is
/// allocated with y's node and becomes y's creator. Without one (under no_grad(),
/// or inside a backward pass without create_graph) it lives on the stack for the
/// call: no Function object is allocated.
///
/// `Variable y = dezero::call<Square>({x});` Fn must derive from Function (a compile
/// error otherwise); `args` go to its constructor.
template <class Fn, class... Args>
Variable call(VariableList inputs, Args&&... args) {
  return std::move(call_all<Fn>(std::move(inputs), std::forward<Args>(args)...)[0]);
}

/// The same as call(), returning every output (Functions with more than one).
template <class Fn, class... Args>
VariableList call_all(VariableList inputs, Args&&... args) {
  static_assert(std::is_base_of_v<Function, Fn>, "dezero::call_all: Fn must derive from dezero::Function");
  SmallVector<const Variable*, 3> in;
  for (const Variable& x : inputs) in.push_back(&x);
  if (!Config::enable_backprop) {
    Fn f(std::forward<Args>(args)...);
    return f.apply_without_graph(in.data(), in.size());
  }
  return detail::record<Fn>(in.data(), in.size(), std::forward<Args>(args)...);
}

/// \cond INTERNAL
// call() on inputs by reference (detail::in): the library's own calls.
template <class Fn, std::size_t K, class... Args>
Variable call(const detail::InputRefs<K>& inputs, Args&&... args) {
  static_assert(std::is_base_of_v<Function, Fn>, "dezero::call: Fn must derive from dezero::Function");
  if (!Config::enable_backprop) {
    Fn f(std::forward<Args>(args)...);
    return std::move(f.apply_without_graph(inputs.data(), K)[0]);
  }
  return std::move(detail::record<Fn>(inputs.data(), K, std::forward<Args>(args)...)[0]);
}
/// \endcond

// --- operators (step 20-22): Variable, Tensor (converted) or double on either side;
// a double takes the Variable's dtype. ---------------------------------------------
/// Differentiable element-wise arithmetic (F::add, F::sub, F::mul, F::div), recorded in the graph.
///
/// Variable, Tensor (converted) or double on either side; a double takes the Variable's
/// dtype. Shapes broadcast and dtypes promote as for the Tensor operators (ShapeError,
/// DeviceError the same), and the gradients are summed back to each operand's shape.
///@{
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
///@}
/// Differentiable negation, F::neg: same shape and dtype.
Variable operator-(const Variable& a);

}  // namespace dezero
