// core.cpp - Variable, Function, Config and backward (DeZero core.py).
#include "dezero/core.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <ostream>
#include <queue>
#include <typeinfo>
#include <unordered_set>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

// --- Config (step 18) -------------------------------------------------------------
thread_local bool Config::enable_backprop = true;
thread_local bool Config::train = true;

namespace {
bool* config_flag(const std::string& name) {
  if (name == "enable_backprop") return &Config::enable_backprop;
  if (name == "train") return &Config::train;
  throw ValueError("using_config: unknown configuration '" + name + "'; hint: the names are \"enable_backprop\" and \"train\"");
}
}  // namespace

ConfigGuard::ConfigGuard(const std::string& name, bool value) : flag_(config_flag(name)), old_(*flag_) { *flag_ = value; }
ConfigGuard::ConfigGuard(ConfigGuard&& o) noexcept : flag_(o.flag_), old_(o.old_) { o.flag_ = nullptr; }
ConfigGuard::~ConfigGuard() {
  if (flag_) *flag_ = old_;
}
ConfigGuard using_config(const std::string& name, bool value) { return ConfigGuard(name, value); }
ConfigGuard no_grad() { return ConfigGuard("enable_backprop", false); }
ConfigGuard test_mode() { return ConfigGuard("train", false); }

namespace {
// Small RAII flip of enable_backprop without the name lookup (hot path of backward).
struct BackpropFlag {
  bool old;
  explicit BackpropFlag(bool v) : old(Config::enable_backprop) { Config::enable_backprop = v; }
  ~BackpropFlag() { Config::enable_backprop = old; }
};
}  // namespace

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
const Tensor& empty_tensor() {
  static const Tensor t;
  return t;
}
const std::string& empty_string() {
  static const std::string s;
  return s;
}
}  // namespace

const Tensor& Variable::data() const { return node_ ? node_->data : empty_tensor(); }
void Variable::set_data(Tensor data) {
  if (!node_) node_ = std::make_shared<VariableNode>();
  node_->data = std::move(data);
}
Variable Variable::grad() const { return node_ && node_->grad ? Variable(node_->grad) : Variable(); }
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

void Variable::unchain_backward() {
  if (!node_ || !node_->creator) return;
  // `seen` owns every Function we cut off, so none is destroyed while we still walk it.
  std::vector<std::shared_ptr<Function>> stack{node_->creator};
  std::vector<std::shared_ptr<Function>> seen;
  std::unordered_set<const Function*> seen_set;
  while (!stack.empty()) {
    std::shared_ptr<Function> f = std::move(stack.back());
    stack.pop_back();
    for (const Variable& x : f->inputs()) {
      if (x.node_ && x.node_->creator) {
        const std::shared_ptr<Function>& c = x.node_->creator;
        if (seen_set.insert(c.get()).second) {
          seen.push_back(c);
          stack.push_back(c);
        }
        x.node_->creator.reset();
      }
    }
  }
}

namespace {
std::atomic<std::uint64_t> g_visit_epoch{0};
struct ByGeneration {
  bool operator()(const std::shared_ptr<Function>& a, const std::shared_ptr<Function>& b) const {
    return a->generation() < b->generation();
  }
};
}  // namespace

void Variable::backward(bool retain_grad, bool create_graph) {
  if (!node_ || !node_->data.defined())
    throw ValueError("backward: the variable holds no data; hint: create it from a Tensor, e.g. Variable(dezero::array(1.0))");
  if (!node_->grad) {
    node_->grad = std::make_shared<VariableNode>();
    node_->grad->data = ones_like(node_->data);
  } else if (node_->grad->data.shape() != node_->data.shape()) {
    throw ShapeError("backward: the variable has shape " + node_->data.shape().str() + " but its grad has shape " +
                     node_->grad->data.shape().str() + "; hint: set_grad() with a gradient of the same shape");
  }
  if (!node_->creator) return;

  const std::uint64_t epoch = ++g_visit_epoch;
  std::priority_queue<std::shared_ptr<Function>, std::vector<std::shared_ptr<Function>>, ByGeneration> funcs;
  auto add_func = [&](const std::shared_ptr<Function>& f) {
    if (f->visit_mark_ != epoch) {
      f->visit_mark_ = epoch;
      funcs.push(f);
    }
  };
  add_func(node_->creator);

  VariableList gys;
  while (!funcs.empty()) {
    std::shared_ptr<Function> f = funcs.top();
    funcs.pop();
    gys.clear();
    for (std::size_t i = 0; i < f->outputs_.size(); ++i) {
      auto o = f->outputs_[i].node.lock();
      if (o && o->grad) {
        gys.emplace_back(o->grad);
      } else {  // an output that got no gradient (or died) contributes zeros
        Device dev = f->inputs_.empty() ? Device::cpu() : f->inputs_[0].data().device();
        gys.emplace_back(zeros(f->outputs_[i].shape, f->outputs_[i].dtype, dev));
      }
    }
    VariableList gxs;
    {
      BackpropFlag flag(create_graph);
      gxs = f->backward(gys);
    }
    if (gxs.size() != f->inputs_.size())
      throw ValueError("backward: " + f->name() + ".backward returned " + std::to_string(gxs.size()) +
                       " gradients for " + std::to_string(f->inputs_.size()) + " inputs");
    for (std::size_t i = 0; i < gxs.size(); ++i) {
      const Variable& x = f->inputs_[i];
      Variable& gx = gxs[i];
      if (!gx.defined() || !gx.data().defined() || !f->needs_input_grad(i)) continue;
      if (gx.shape() != x.shape())
        throw ShapeError("backward: " + f->name() + ".backward returned a gradient of shape " + gx.shape().str() +
                         " for input " + std::to_string(i) + " of shape " + x.shape().str());
      if (!x.node_->grad) {
        x.node_->grad = gx.node_;
      } else {
        BackpropFlag flag(create_graph);
        x.node_->grad = (Variable(x.node_->grad) + gx).node_;
      }
      if (x.node_->creator) add_func(x.node_->creator);
    }
    if (!retain_grad) {
      for (auto& out : f->outputs_)
        if (auto o = out.node.lock()) o->grad.reset();
    }
  }
}

void Variable::to(Device device) {
  if (!node_) return;
  if (node_->data.defined()) node_->data = node_->data.to(device);
  if (node_->grad && node_->grad->data.defined()) node_->grad->data = node_->grad->data.to(device);
}
void Variable::to_cpu() { to(Device::cpu()); }
void Variable::to_gpu(int id) { to(Device::cuda(id)); }

Variable Variable::reshape(const Shape& shape) const { return F::reshape(*this, shape); }
Variable Variable::transpose() const { return F::transpose(*this); }
Variable Variable::transpose(const std::vector<int>& axes) const { return F::transpose(*this, axes); }
Variable Variable::T() const { return F::transpose(*this); }
Variable Variable::sum(const Axes& axes, bool keepdims) const { return F::sum(*this, axes, keepdims); }
Variable Variable::max(const Axes& axes, bool keepdims) const { return F::max(*this, axes, keepdims); }
Variable Variable::min(const Axes& axes, bool keepdims) const { return F::min(*this, axes, keepdims); }
Variable Variable::pow(double c) const { return F::pow(*this, c); }
Variable Variable::matmul(const Variable& W) const { return F::matmul(*this, W); }
Variable Variable::dot(const Variable& W) const { return F::matmul(*this, W); }
Variable Variable::operator[](const Index& index) const { return F::get_item(*this, Indices{index}); }
Variable Variable::operator[](const Indices& indices) const { return F::get_item(*this, indices); }

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
      throw ValueError(name() + ": input " + std::to_string(i) + " holds no data");
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
  // A leaf held only by this graph (e.g. a Tensor passed as input) can never be read.
  return n.use_count() > 1;
}

}  // namespace dezero
