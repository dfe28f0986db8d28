// dezero/core/function.cpp - Function (DeZero core.py, steps 2-3, 11-13, 17): its name in graphs,
// apply (forward on Tensors, then the graph links when enable_backprop is on), the inputs it
// keeps and which of them need a gradient.
//
// Two ways a Function joins a graph:
//   - dezero::call (core.hpp, detail::record): the Function, its one output's node and its
//     inputs share one block of the small-object pool (detail::GraphBlock). The output's
//     creator is implicit (the node knows where its Function is), its generation is the
//     Function's plus one. One allocation per recorded op (bench/op_profile.cpp).
//   - apply() on a Function the user made with std::make_shared (the book's spelling), or a
//     call<> Function with several outputs: the inputs and the weak output references go
//     to a separate Ext, the outputs are LeafNodes holding their creator.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include "dezero/core.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

const Variable& VariableSpan::at(std::size_t i) const {
  if (i >= n_)
    throw std::out_of_range("Function::input: index " + std::to_string(i) + " >= " + std::to_string(n_) + " inputs");
  return p_[i];
}

// --- Function -----------------------------------------------------------------------------
Function::~Function() { release_inputs(); }

FunctionAttrs Function::attributes() const { return {}; }

std::string detail::without_namespaces(const std::string& name) {
  const std::size_t last = name.rfind("::", name.find('<'));
  return last == std::string::npos ? name : name.substr(last + 2);
}

std::string detail::type_name_without_namespaces(const std::type_info& type) {
  int status = 0;
  char* d = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  const std::string n = (status == 0 && d) ? d : type.name();
  std::free(d);
  return without_namespaces(n);
}

std::string Function::name() const { return detail::type_name_without_namespaces(fn_type()); }

VariableSpan Function::inputs() const {
  if (flags_ & kExt) return VariableSpan(ext()->inputs.data(), ext()->inputs.size());
  if (flags_ & kBlock) return VariableSpan(input_slots(), n_inputs_);
  return VariableSpan();
}

// The inputs' data, checked, then forward(). The list forward() reads borrows the inputs'
// tensors (no reference count up and down): the inputs outlive the call.
TensorList Function::run_forward(const Variable* const* in, std::size_t n) {
  TensorList xs;
  xs.reserve(n);
  struct GiveBack {
    TensorList& xs;
    ~GiveBack() {
      for (Tensor& x : xs) detail::release_borrowed(x);
    }
  } give_back{xs};
  for (std::size_t i = 0; i < n; ++i) {
    const Variable& x = *in[i];
    if (!x.defined() || !x.data().defined())
      throw ValueError(name() + ": input " + std::to_string(i) + " holds no data" +
                       detail::empty_cause_text(detail::empty_cause(x.data())));
    xs.push_back(detail::borrow(x.data()));
  }
  return forward(xs);
}

// Keeps the inputs as graph references: in the block's slots, or in a new Ext.
void Function::link_inputs(const Variable* const* in, std::size_t n, bool in_slots) {
  int gen = 0;
  for (std::size_t i = 0; i < n; ++i) gen = std::max(gen, in[i]->generation());
  generation_ = gen;
  if (in_slots && n <= n_slots_) {
    Variable* s = input_slots();
    for (std::size_t i = 0; i < n; ++i) {
      new (&s[i]) Variable();
      s[i].node_ = detail::NodeHandle::graph_ref(in[i]->node_.ptr());
    }
    n_inputs_ = static_cast<std::uint16_t>(n);
    return;
  }
  Ext* e = new Ext;
  for (std::size_t i = 0; i < n; ++i) {
    e->inputs.emplace_back();
    e->inputs.back().node_ = detail::NodeHandle::graph_ref(in[i]->node_.ptr());
  }
  in_ = e;
  flags_ |= kExt;
}

void Function::release_inputs() noexcept {
  if (flags_ & kExt) {
    Ext* e = ext();
    for (Variable& x : e->inputs) detail::defer_release(x.node_.take_graph_ref());
    delete e;
    in_ = nullptr;
    flags_ = static_cast<std::uint8_t>(flags_ & ~kExt);
  } else if (flags_ & kBlock) {
    Variable* s = input_slots();
    for (std::size_t i = 0; i < n_inputs_; ++i) {
      detail::defer_release(s[i].node_.take_graph_ref());
      s[i].~Variable();
    }
  }
  n_inputs_ = 0;
}
void Function::release_block_inputs() noexcept { release_inputs(); }

// The outputs as LeafNodes whose creator is `self`, the inputs in an Ext.
VariableList Function::link_separate_outputs(const Variable* const* in, std::size_t n, TensorList&& ys,
                                             const std::shared_ptr<Function>& self) {
  // A Function applied again (once every output of its first call is gone: apply() checks)
  // forgets its first inputs: after linking the new ones (`in` may point at the old ones).
  Ext* old = (flags_ & kExt) ? ext() : nullptr;
  in_ = nullptr;
  flags_ = static_cast<std::uint8_t>(flags_ & ~kExt);
  link_inputs(in, n, false);
  if (old) {
    for (Variable& x : old->inputs) detail::defer_release(x.node_.take_graph_ref());
    delete old;
  }
  VariableList outputs;
  outputs.reserve(ys.size());
  for (auto& y : ys) {
    std::shared_ptr<VariableNode> node = detail::make_leaf_node();
    node->data = std::move(y);
    auto& leaf = static_cast<detail::LeafNode&>(*node);
    leaf.creator = self;
    leaf.generation = generation_ + 1;
    ext()->outputs.push_back(OutputRef{node, node->data.shape(), node->data.dtype()});
    outputs.emplace_back(std::move(node));
  }
  return outputs;
}

VariableList Function::apply_without_graph(const Variable* const* in, std::size_t n) {
  TensorList ys = run_forward(in, n);
  VariableList outputs;
  outputs.reserve(ys.size());
  for (auto& y : ys) outputs.emplace_back(std::move(y));
  return outputs;
}

VariableList Function::apply(const VariableList& inputs) {
  SmallVector<const Variable*, 3> in;
  for (const Variable& x : inputs) in.push_back(&x);
  if (!Config::enable_backprop) return apply_without_graph(in.data(), in.size());
  TensorList ys = run_forward(in.data(), in.size());
  std::shared_ptr<Function> self = weak_from_this().lock();
  if (!self)
    throw Error(name() + ": a Function must be created with std::make_shared to be part of a graph");
  if (flags_ & kBlock)
    throw Error(name() + ": apply: this Function is in a graph already (dezero::call recorded it); hint: make a "
                "new Function object for each call");
  // The book's `f = Square(); y1 = f(a); y2 = f(b)`: a Function keeps one set of inputs, so a
  // second call while the first call's outputs live would silently send y1's gradient to b.
  if (flags_ & kExt)
    for (const OutputRef& o : ext()->outputs)
      if (!o.node.expired())
        throw Error(name() + ": this Function object was called already, and the output of that call " +
                    o.shape.str() + " is still in use: a Function remembers the inputs of one call, so a second "
                    "call would give the first output a wrong gradient; hint: make a new object for each call "
                    "(std::make_shared<" + name() + ">()), or call it with dezero::call<" + name() + ">(...)");
  return link_separate_outputs(in.data(), in.size(), std::move(ys), self);
}
VariableList Function::apply(VariableList&& inputs) { return apply(static_cast<const VariableList&>(inputs)); }

VariableList Function::record_in_block(const Variable* const* in, std::size_t n,
                                       std::shared_ptr<VariableNode>&& block_node_sp) {
  TensorList ys = run_forward(in, n);
  if (ys.size() != 1)  // several outputs (or none): separate nodes whose creator refers to the block
    return link_separate_outputs(in, n, std::move(ys), std::shared_ptr<Function>(block_node_sp, this));
  link_inputs(in, n, true);  // the common case: the output is the block's own node
  VariableNode& node = *block_node_sp;
  node.data = std::move(ys[0]);
  node.flags_ |= VariableNode::kEmbedded;
  flags_ |= kEmbeddedOut;
  VariableList outputs;
  outputs.emplace_back(std::move(block_node_sp));
  return outputs;
}

Variable Function::operator()(const Variable& x) { return std::move(apply(VariableList{x}).at(0)); }
Variable Function::operator()(const Variable& a, const Variable& b) { return std::move(apply(VariableList{a, b}).at(0)); }
Variable Function::operator()(const Variable& a, const Variable& b, const Variable& c) {
  return std::move(apply(VariableList{a, b, c}).at(0));
}

std::size_t Function::n_outputs() const {
  if (flags_ & kEmbeddedOut) return 1;
  if (flags_ & kExt) return ext()->outputs.size();
  return 0;
}

VariableList Function::outputs() const {
  VariableList out;
  for (std::size_t i = 0, n = n_outputs(); i < n; ++i) out.push_back(output(i));
  return out;
}

Variable Function::output(std::size_t i) const {
  if (i >= n_outputs())
    throw std::out_of_range("Function::output: index " + std::to_string(i) + " >= " + std::to_string(n_outputs()) +
                            " outputs");
  if (flags_ & kEmbeddedOut) {
    std::shared_ptr<Function> self = std::const_pointer_cast<Function>(weak_from_this().lock());
    if (!self) return Variable();
    return Variable(std::shared_ptr<VariableNode>(self, const_cast<Function*>(this)->block_node()));
  }
  return Variable(ext()->outputs[i].node.lock());
}

bool Function::needs_input_grad(std::size_t i) const {
  const auto& n = input(i).node();
  if (!n || !n->requires_grad()) return false;
  if (detail::has_creator(*n) || n->is_parameter()) return true;
  // A leaf held only by graphs (e.g. a Tensor passed as input, or a temporary Variable
  // used twice) can never have its gradient read: no Variable outside a graph refers to
  // it (NodeHandle's count). Computing one would waste the work, and under create_graph
  // leave a gradient whose graph leads back to the leaf: a cycle nothing could free.
  return n->handles.load(std::memory_order_acquire) > 0;
}

}  // namespace dezero
