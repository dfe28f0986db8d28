// dezero/plan/plan_impl.hpp - what the two halves of dezero::compile share: plan.cpp (the public
// API, running a plan, the checks) and lower.cpp (recording a graph into values and ops, and
// lowering them to oneDNN primitives or replays). Internal to plan/.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/cpu/onednn_program.hpp"
#include "dezero/plan.hpp"

namespace dezero {

namespace detail::plan {

// One value of the recorded run: an input, a leaf (a constant to the plan) or an op's output.
struct Val {
  Shape shape;
  DType dtype = float32;
  Device device = Device::cpu();
  int input = -1;       // the call's input it is, or -1
  bool constant = false;
  Tensor data;          // a constant's tensor (the recorded one; copied where a replayed op reads it)
  Variable live;        // a training step's parameter: read at every call
  int producer = -1;    // the op that makes it, or -1
  std::vector<int> consumers;
  bool output = false;  // one of the plan's outputs
  int dnn = -1;         // the program's value holding it, or -1
  int ext_in = -1;      // the program's external value reading it in, or -1
  bool exported = false;
};

// Records the graph between `xs` and `ys` into `plan` and lowers it: the oneDNN program where it
// can (options, CPU, float32), replays elsewhere. `params` (a training step's): the only leaves
// it may read, read live, and everything replayed. `who` names the caller in errors.
void build_plan(Plan::Impl& plan, const CompileOptions& options, const VariableList& xs, const VariableList& ys,
                const std::vector<Parameter>* params, const char* who);

// One op of a kernel program (kernels.cpp): one backend call on the buffers of values x[] -> y.
struct Kernel {
  enum Kind { Unary, Binary, Gemm, GemmBias, Reduce, Mse } kind = Unary;
  std::string name;  // the Function's
  Backend* be = nullptr;
  DType dt = float32;
  int x[3] = {-1, -1, -1};
  int y = -1;
  UnaryOp uop = UnaryOp::Neg;
  BinaryOp bop = BinaryOp::Add;
  Strided sa, sb, so;                                   // Binary: the views
  bool ta = false, tb = false;                          // Gemm
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;   // Gemm, GemmBias
  std::int64_t outer = 1, r = 1, inner = 1;             // Reduce
  std::int64_t count = 0;                               // Unary, Mse: elements
  double scale = 0.0;                                   // Unary: the constant (alpha); Mse: the divisor
};

// A plan whose every op is a Kernel: the values' buffers planned once, the ops run in order.
struct KernelProgram {
  std::vector<Kernel> kernels;
  std::vector<void*> ptr;       // value -> its buffer (inputs, parameters and outputs bound per call)
  std::vector<Tensor> buffers;  // the values no call returns
  std::vector<int> params;      // the values read from a training step's parameters
  // The outputs of one call on inputs `xs` (checked by the caller).
  VariableList run(const Plan::Impl& plan, const VariableList& xs);
};

// The plan's summary (Plan::summary()): one line per step, oneDNN primitives, kernels or replays (plan.cpp).
void summarize(Plan::Impl& plan);

// The plan's steps as a KernelProgram when every one is a kernel that gives the recorded output
// bit for bit; nullptr otherwise. Before the recorded graph is released.
std::unique_ptr<KernelProgram> lower_kernels(Plan::Impl& plan);

}  // namespace detail::plan

// The compiled plan: its values, its steps, the oneDNN program and what run() needs.
struct Plan::Impl {
  struct Step {
    bool program = false;
    // a replayed Function
    std::shared_ptr<Function> fn;
    std::vector<int> in, out;
    // a run of the program's steps, with the external values bound around it
    std::size_t first = 0, last = 0;
    std::vector<std::pair<int, int>> imports, exports;  // (external, value)
  };
  std::vector<detail::plan::Val> vals;
  std::vector<Step> steps;
  std::vector<int> inputs, outputs;
  std::vector<Shape> in_shapes;
  std::unordered_map<int, Tensor> buffers;  // value -> the plan's Tensor for an export that is no output
  std::unique_ptr<detail::cpu::OnednnProgram> prog;
  std::unique_ptr<detail::plan::KernelProgram> kernels;  // every op a kernel: run instead of the steps
  Stats stats;
  std::string summary;
  bool train = false;  // Config::train while recording
  std::vector<Tensor> work;    // the values of a call, slot by slot
  std::vector<int> constants;  // the constant values' slots
  mutable std::mutex mu;

  VariableList run(const VariableList& xs);
  void check_inputs(const VariableList& xs) const;
};

}  // namespace dezero
