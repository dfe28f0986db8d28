// dezero/core/variable.cpp - Variable and Parameter (DeZero core.py, steps 1, 7-9, 44): the handle,
// its node and the node's iterative destruction (a million-node chain must not recurse),
// moving data between devices, and printing.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

// --- VariableNode: iterative destruction (a million-node chain must not recurse) ------
namespace {
thread_local std::vector<std::shared_ptr<Function>>* g_pending = nullptr;
}

VariableNode::~VariableNode() {
  if (!creator) return;
  if (g_pending) {  // an outer destructor is draining: hand our creator to it
    g_pending->push_back(std::move(creator));
    return;
  }
  std::vector<std::shared_ptr<Function>> pending;
  g_pending = &pending;
  pending.push_back(std::move(creator));
  while (!pending.empty()) {
    std::shared_ptr<Function> f = std::move(pending.back());
    pending.pop_back();
    f.reset();  // may destroy inputs, whose creators land in `pending`
  }
  g_pending = nullptr;
}

// --- Variable ---------------------------------------------------------------------------
void detail::on_last_handle(VariableNode& node) noexcept {
  // See NodeHandle: a gradient with a graph behind it can lead back to this node.
  // Leaves only: the gradients of intermediate variables are still being read and
  // accumulated while backward runs (through short-lived handles), and backward
  // itself drops them afterwards unless retain_grad asks to keep them.
  if (!node.creator && node.grad && node.grad->creator) node.grad.reset();
}

Variable::Variable(Tensor data, std::string name) : node_(std::make_shared<VariableNode>()) {
  node_->data = std::move(data);
  node_->name = std::move(name);
}

Parameter::Parameter(Tensor data, std::string name) : Variable(std::move(data), std::move(name)) {
  node_->is_parameter = true;
}

namespace {
// The data of an empty Variable: an undefined Tensor that remembers why it is empty,
// so that the operation that receives it can say so (tensor/checks.cpp).
const Tensor& empty_tensor(detail::EmptyCause cause) {
  static const Tensor by_cause[] = {
      detail::undefined_tensor(detail::EmptyCause::none), detail::undefined_tensor(detail::EmptyCause::grad_not_kept),
      detail::undefined_tensor(detail::EmptyCause::grad_not_reached),
      detail::undefined_tensor(detail::EmptyCause::grad_no_backprop)};
  return by_cause[static_cast<std::size_t>(cause)];
}
const std::string& empty_string() {
  static const std::string s;
  return s;
}
}  // namespace

const Tensor& Variable::data() const { return node_ ? node_->data : empty_tensor(node_.empty_cause()); }
const Tensor& Variable::defined_data(const char* op) const {
  if (!node_) {
    const detail::EmptyCause cause = node_.empty_cause();
    if (cause != detail::EmptyCause::none)
      throw ValueError(std::string(op) + ": the variable holds no data" + detail::empty_cause_text(cause));
    throw ValueError(std::string(op) + ": the variable is empty (Variable()); hint: give it a tensor first");
  }
  return node_->data;
}
void Variable::set_data(Tensor data) {
  if (!node_) node_ = std::make_shared<VariableNode>();
  node_->data = std::move(data);
}
Variable Variable::grad() const {
  if (node_ && node_->grad) return Variable(node_->grad);
  Variable none;
  if (node_) {
    none.node_.set_empty_cause(!Config::enable_backprop ? detail::EmptyCause::grad_no_backprop
                               : node_->creator         ? detail::EmptyCause::grad_not_kept
                                                        : detail::EmptyCause::grad_not_reached);
  }
  return none;
}
bool Variable::has_grad() const { return node_ && node_->grad; }
void Variable::set_grad(const Variable& g) {
  if (!node_) throw ValueError("set_grad: the variable is empty (Variable())");
  node_->grad = g.node_;
}
void Variable::cleargrad() {
  if (node_) node_->grad.reset();
}
const std::string& Variable::name() const { return node_ ? node_->name : empty_string(); }
void Variable::set_name(std::string name) {
  if (!node_) node_ = std::make_shared<VariableNode>();
  node_->name = std::move(name);
}
std::shared_ptr<Function> Variable::creator() const { return node_ ? node_->creator : nullptr; }
void Variable::set_creator(const std::shared_ptr<Function>& f) {
  if (!node_) throw ValueError("set_creator: the variable is empty (Variable())");
  node_->creator = f;
  node_->generation = f ? f->generation() + 1 : 0;
}
int Variable::generation() const { return node_ ? node_->generation : 0; }
bool Variable::requires_grad() const { return node_ && node_->requires_grad; }
void Variable::set_requires_grad(bool r) {
  if (!node_) throw ValueError("set_requires_grad: the variable is empty (Variable())");
  node_->requires_grad = r;
}
bool Variable::is_parameter() const { return node_ && node_->is_parameter; }

void Variable::unchain() {
  if (node_) node_->creator.reset();
}

void Variable::to(Device device) {
  if (!node_) return;
  if (node_->data.defined()) node_->data = node_->data.to(device);
  if (node_->grad && node_->grad->data.defined()) node_->grad->data = node_->grad->data.to(device);
}
void Variable::to_cpu() { to(Device::cpu()); }
void Variable::to_gpu(int id) { to(Device::cuda(id)); }

std::string Variable::str() const {
  if (!node_ || !node_->data.defined()) return "variable(None)";
  std::string body = node_->data.str(), out = "variable(";
  for (char c : body) {
    out += c;
    if (c == '\n') out += "         ";
  }
  return out + ")";
}
std::ostream& operator<<(std::ostream& os, const Variable& v) { return os << v.str(); }

}  // namespace dezero
