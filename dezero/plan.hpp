/// \file
/// dezero::compile: a model's inference for fixed input shapes, recorded once and replayed
/// without a graph (issue 47's plan; PyTorch's torch.jit.trace + freeze, ONNX Runtime's
/// session with its graph optimisations); dezero::compile_step: a training step the same way
/// (StepPlan, below).
///
/// \code{.cpp}
///   dezero::Plan plan = dezero::compile(model, {x});   // one recorded run, in test mode
///   dezero::Variable y = plan(x2);                     // x2 has x's shape and dtype
///   std::cout << plan.summary();                       // what each step runs
/// \endcode
///
/// compile() runs the model once on the example inputs in test mode (Config::train false:
/// dropout passes through, batch norm uses its running statistics) with the graph recorded,
/// then turns the recorded Functions into steps:
///   - a BatchNorm after a convolution is folded into its weights and bias
///     (W' = W gamma / sqrt(var + eps), b' = (b - mean) gamma / sqrt(var + eps) + beta);
///   - on the CPU in float32, with oneDNN, the convolutions, poolings, additions, concatenations,
///     batch norms and element-wise activations run as one program of oneDNN primitives: weights
///     reordered once, activations kept in oneDNN's blocked formats from one primitive to the next,
///     the activations and the residual addition after a convolution fused into it (post-ops), and
///     the activations' memory planned once (values whose lives do not overlap share bytes);
///   - every other Function is replayed by calling its forward() on the tensors;
///   - a plan whose every op is one of a small network's (Linear, 2-D MatMul, Add, Sub, Mul, Div,
///     Neg, Exp, Tanh, Sigmoid, SumTo, MeanSquaredError) on the CPU in float32 or float64, without
///     autocast, runs as a kernel program: each op one backend call on buffers planned once, no
///     Tensor made but the outputs (stats().kernels, "kernel" lines in summary()). compile checks
///     each kernel against the recorded run, bit for bit, and replays Functions where one differs.
///
/// Results: where every step replays its own Function (CompileOptions::onednn false, or no
/// oneDNN, or a GPU, or another dtype) a plan computes exactly what the model computes, bit for
/// bit. Folding and fusing change the order of the float32 operations, so a planned result
/// differs from the unplanned one by float32 rounding (tests/test_plan.cpp bounds it: 1e-5
/// relative to the output's scale on ResNet-like and MobileNet-like networks).
///
/// What a plan cannot follow: whatever the model computes from its inputs' values outside the
/// graph (a tensor made on the host from an input's data, a hyperparameter or a branch taken from
/// it) would be replayed as recorded. compile() therefore records the model a second time, on
/// other values of the same shapes, and refuses (NotImplementedError) a run that records other
/// Functions, other hyperparameters or other constants; and a Function that keeps an input's
/// values as a constant of its own (EmbedID's ids). Shapes may steer the model freely: they are
/// fixed.
///
/// What a plan keeps: it copies the parameters, constants and running statistics it reads when
/// it is compiled (folded and reordered for oneDNN, or as tensors for the replayed Functions; a
/// replayed test-mode BatchNorm is the plan's own, on copies of its layer's statistics), so
/// compile again after changing the weights. A plan holds
/// the Functions it replays (not the recorded graph: compile() releases it, with the example
/// run's intermediate tensors) and its own memory; it runs one call at a time (a mutex: threads
/// calling one plan wait for each other). It is made for the thread count of the moment it is
/// compiled.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/models.hpp"
#include "dezero/optimizers.hpp"

namespace dezero {

/// What compile() may do; all on by default.
struct CompileOptions {
  /// Fold a test-mode BatchNorm that only a convolution feeds into that convolution.
  bool fold_batch_norm = true;
  /// Fuse element-wise activations and a residual addition into the convolution before them.
  bool fuse = true;
  /// Run what it can as a oneDNN program (CPU, float32, a build with oneDNN); false replays every
  /// Function, which gives the unplanned results bit for bit.
  bool onednn = true;
};

/// A compiled model: call it like the model, with inputs of the example's shapes and dtypes.
class Plan {
 public:
  /// An empty plan (calling it is a ValueError); compile() makes real ones.
  Plan();
  ~Plan();
  /// Plans are moved or shared (a copy refers to the same compiled steps and memory).
  ///@{
  Plan(const Plan&);
  Plan& operator=(const Plan&);
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  ///@}

  /// Runs the plan: one output per recorded output, each a new Variable without a graph. An input
  /// of another count, shape, dtype or device than the example's is an Error naming it.
  ///@{
  VariableList operator()(const VariableList& xs) const;
  Variable operator()(const Variable& x) const;
  ///@}

  /// The example inputs' shapes (what a call must give).
  const std::vector<Shape>& input_shapes() const;

  /// Counts of what compile() made.
  struct Stats {
    std::size_t recorded = 0;  ///< Functions recorded by the example run
    std::size_t folded = 0;    ///< BatchNorms folded into convolutions
    std::size_t fused = 0;     ///< activations and additions fused into the op before them
    std::size_t onednn = 0;    ///< ops run by oneDNN (a convolution with its fused ops counts once), reorders excluded
    std::size_t reorders = 0;  ///< oneDNN reorders left (formats changing between steps, in and out)
    std::size_t replayed = 0;  ///< Functions replayed in order (by forward(), or as kernels: see `kernels`)
    std::size_t kernels = 0;   ///< of those, the ops run as one backend call each on planned buffers
    std::size_t arena_bytes = 0;   ///< the planned memory of oneDNN's activations
    std::size_t weight_bytes = 0;  ///< the weights copied into oneDNN's formats
  };
  /// What compile() made of the recorded run.
  Stats stats() const;
  /// One line per step, in order: the oneDNN primitives with their formats and the replayed
  /// Functions by name.
  std::string summary() const;

  /// \cond INTERNAL
  struct Impl;
  /// \endcond

 private:
  explicit Plan(std::shared_ptr<Impl> impl);
  friend Plan compile(const std::function<VariableList(const VariableList&)>& fn, const VariableList& example_inputs,
                      const CompileOptions& options);
  std::shared_ptr<Impl> impl_;
};

/// A training step recorded once and replayed on new inputs of the same shapes: forward, backward
/// and the optimizer's update, without building or walking a graph (the CPU twin of a CUDA graph
/// capture). Made by compile_step().
///
/// compile_step() runs `loss_fn` once on the example inputs and its backward with create_graph,
/// so that the gradient computations are recorded too, then clears the gradients it made (the
/// recording updates nothing). Each call then replays every recorded Function's forward() in
/// order, on the parameters' current data, gives each parameter its gradient (its grad(), as
/// loss.backward() would), runs optimizer.update() and returns the loss. The forward Functions
/// are an unplanned step's, and the backward is the same arithmetic in the same order (a small
/// network's step runs as a kernel program, see compile()), so the
/// losses and weights are the unplanned step's bit for bit (tests/test_plan.cpp: 20 steps of a
/// W3 MLP, 8 of a CNN with Adam). One exception: a train-mode batch norm's recorded backward is
/// its form on Variables, whose float32 rounding differs from the fused kernel of an ordinary
/// backward (within 1e-5 relative over 8 steps).
///
/// What it refuses (NotImplementedError at compile_step): a graph that reads a tensor that is
/// neither an input nor a parameter of the model (a value computed while recording would be
/// replayed stale), and a Function whose forward draws random numbers (Dropout: the replay would
/// draw a new mask that its recorded backward does not see). It holds the model and the
/// optimizer by reference: both must outlive it.
class StepPlan {
 public:
  /// An empty plan (calling it is a ValueError).
  StepPlan();
  ~StepPlan();
  /// A copy shares the recorded step.
  ///@{
  StepPlan(const StepPlan&);
  StepPlan& operator=(const StepPlan&);
  StepPlan(StepPlan&&) noexcept;
  StepPlan& operator=(StepPlan&&) noexcept;
  ///@}
  /// One step on `xs` (the example's count, shapes, dtypes and devices): the loss, a new Variable
  /// without a graph.
  Variable operator()(const VariableList& xs) const;
  /// What compile_step() recorded (recorded and replayed count the forward and backward Functions).
  Plan::Stats stats() const;
  /// One line per replayed Function.
  std::string summary() const;

  /// \cond INTERNAL
  struct Impl;
  /// \endcond

 private:
  explicit StepPlan(std::shared_ptr<Impl> impl);
  friend StepPlan compile_step(Model& model, const std::function<Variable(const VariableList&)>& loss_fn,
                               optimizers::Optimizer& optimizer, const VariableList& example_inputs);
  std::shared_ptr<Impl> impl_;
};

/// Records one training step of `model`: `loss_fn(example_inputs)` must return the loss (any
/// shape; its gradient seed is ones, as backward()'s), computed from the inputs and the model's
/// parameters. The optimizer must have been set up on the model.
///
/// \code{.cpp}
///   dezero::StepPlan step = dezero::compile_step(model, [&](const VariableList& b) {
///     return F::mean_squared_error(model(b[0]), b[1]);
///   }, optimizer, {x, t});
///   for (...) Variable loss = step({x_i, t_i});   // forward, backward, update
/// \endcode
StepPlan compile_step(Model& model, const std::function<Variable(const VariableList&)>& loss_fn,
                      optimizers::Optimizer& optimizer, const VariableList& example_inputs);

/// Records `model` on `example_inputs` (in test mode) and compiles the run into a Plan.
///
/// An example input without data, a forward that returns nothing, or an output that does not
/// depend on the inputs through a recorded graph (a forward run under no_grad()) is a ValueError.
Plan compile(Model& model, const VariableList& example_inputs, const CompileOptions& options = CompileOptions());
/// The same for any function of Variables (a lambda calling several models, a graph of F::).
Plan compile(const std::function<VariableList(const VariableList&)>& fn, const VariableList& example_inputs,
             const CompileOptions& options = CompileOptions());

}  // namespace dezero
