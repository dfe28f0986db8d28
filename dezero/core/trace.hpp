// dezero/core/trace.hpp - the Functions of a recorded graph in the order they ran: what the tools
// that read a whole graph share (onnx::export_model, dezero::compile). Internal.
#pragma once

#include <memory>
#include <vector>

#include "dezero/core.hpp"

namespace dezero::detail {

// The Functions between `inputs` and `outputs`, and the leaves they read.
struct TracedGraph {
  std::vector<std::shared_ptr<Function>> order;  // topological: a Function after those it reads from
  VariableList leaves;                           // the Variables without a creator, not among inputs, first seen first
};

// A depth-first post-order from the outputs, without recursion (a graph of a million ops does not
// overflow the stack). The walk stops at the inputs' nodes: what made an input is not part of it.
TracedGraph trace_graph(const VariableList& inputs, const VariableList& outputs);

}  // namespace dezero::detail
