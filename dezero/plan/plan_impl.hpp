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
  Stats stats;
  std::string summary;
  bool train = false;  // Config::train while recording
  std::vector<Tensor> work;    // the values of a call, slot by slot
  std::vector<int> constants;  // the constant values' slots
  mutable std::mutex mu;

  VariableList run(const VariableList& xs);
};

}  // namespace dezero
