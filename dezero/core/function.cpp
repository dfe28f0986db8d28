// dezero/core/function.cpp - Function (DeZero core.py, steps 2-3, 11-13, 17): its name in graphs,
// apply (forward on Tensors, then the graph links when enable_backprop is on) and which
// inputs need a gradient.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

#include "dezero/core.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

// --- Function -----------------------------------------------------------------------------
Function::~Function() = default;

std::string Function::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string n = (status == 0 && d) ? d : mangled;
  std::free(d);
  auto p = n.rfind("::");
  if (p != std::string::npos) n = n.substr(p + 2);
  return n;
}

VariableList Function::apply(const VariableList& inputs) { return apply(VariableList(inputs)); }

VariableList Function::apply(VariableList&& inputs) {
  TensorList xs;
  xs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].data().defined())
      throw ValueError(name() + ": input " + std::to_string(i) + " holds no data" +
                       detail::empty_cause_text(detail::empty_cause(inputs[i].data())));
    xs.push_back(inputs[i].data());
  }
  TensorList ys = forward(xs);
  VariableList outputs;
  outputs.reserve(ys.size());
  for (auto& y : ys) outputs.emplace_back(std::move(y));
  if (Config::enable_backprop) {
    std::shared_ptr<Function> self = weak_from_this().lock();
    if (!self)
      throw Error(name() + ": a Function must be created with std::make_shared to be part of a graph");
    int gen = 0;
    for (auto& x : inputs) gen = std::max(gen, x.generation());
    generation_ = gen;
    inputs_ = std::move(inputs);
    for (auto& x : inputs_) x.node_.make_graph_ref();
    outputs_.clear();
    outputs_.reserve(outputs.size());
    for (auto& o : outputs) {
      o.node_->creator = self;
      o.node_->generation = gen + 1;
      outputs_.push_back(OutputRef{o.node_.ptr(), o.shape(), o.dtype()});
    }
  }
  return outputs;
}

Variable Function::operator()(const Variable& x) { return std::move(apply(VariableList{x}).at(0)); }
Variable Function::operator()(const Variable& a, const Variable& b) { return std::move(apply(VariableList{a, b}).at(0)); }
Variable Function::operator()(const Variable& a, const Variable& b, const Variable& c) {
  return std::move(apply(VariableList{a, b, c}).at(0));
}

VariableList Function::outputs() const {
  VariableList out;
  for (auto& o : outputs_) out.push_back(Variable(o.node.lock()));
  return out;
}
Variable Function::output(std::size_t i) const { return Variable(outputs_.at(i).node.lock()); }

bool Function::needs_input_grad(std::size_t i) const {
  const auto& n = inputs_.at(i).node();
  if (!n || !n->requires_grad) return false;
  if (n->creator || n->is_parameter) return true;
  // A leaf held only by graphs (e.g. a Tensor passed as input, or a temporary Variable
  // used twice) can never have its gradient read: no Variable outside a graph refers to
  // it (NodeHandle's count). Computing one would waste the work, and under create_graph
  // leave a gradient whose graph leads back to the leaf: a cycle nothing could free.
  return n->handles.load(std::memory_order_acquire) > 0;
}

}  // namespace dezero
