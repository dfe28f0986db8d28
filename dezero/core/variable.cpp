// dezero/core/variable.cpp - Variable and Parameter (DeZero core.py, steps 1, 7-9, 44): the handle,
// its node (creator, generation, name), releasing a graph without recursion (a million-node
// chain must not overflow the stack), moving data between devices, and printing.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/core/grad_hooks.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/thread_state.hpp"

namespace dezero {

// --- dropping a graph without recursion ---------------------------------------------------
// Destroying a node releases its creator, whose destructor releases its inputs, whose
// nodes release their creators... Each release of a graph reference goes through
// defer_release: the outermost call on a thread drains a list of pending releases, and
// every release made while it drains is appended to that list instead of recursing.
namespace {
struct PendingReleases {
  std::vector<std::shared_ptr<void>> list;
  bool draining = false;
};
// One list per thread (thread_state.hpp); once the thread's list is gone, releases go
// straight through.
PendingReleases* pending() { return detail::ThreadState<PendingReleases>::get(); }
}  // namespace

void detail::defer_release(std::shared_ptr<void>&& p) noexcept {
  if (!p) return;
  PendingReleases* pr = pending();
  if (!pr) {  // this thread's list is gone (thread exit): release here
    p.reset();
    return;
  }
  if (pr->draining) {
    try {
      pr->list.push_back(std::move(p));
    } catch (...) {  // out of memory for the list: release here (recursion only then)
      p.reset();
    }
    return;
  }
  pr->draining = true;
  p.reset();
  while (!pr->list.empty()) {
    std::shared_ptr<void> q = std::move(pr->list.back());
    pr->list.pop_back();
    q.reset();  // may append more
  }
  pr->draining = false;
}

// --- what a node keeps outside itself -------------------------------------------------------
// Names, and the creator a user set on a node inside a graph block, are rare: they live in
// one table, so that a node stays 80 bytes.
namespace {
struct NodeExtra {
  std::string name;
  std::shared_ptr<Function> creator;  // set_creator() on a node inside a block
  int generation = 0;
};
struct ExtraTable {
  std::mutex mu;
  std::unordered_map<const VariableNode*, NodeExtra> map;
};
ExtraTable& extras() {
  static ExtraTable* t = new ExtraTable;  // never destroyed: nodes die until the process ends
  return *t;
}
const std::string& empty_string() {
  static const std::string s;
  return s;
}
}  // namespace

namespace {
[[gnu::noinline, gnu::cold]] void drop_grad_hooks(const VariableNode* n) noexcept;  // the hook table (end of file)
}  // namespace

VariableNode::~VariableNode() {
  if (grad) detail::defer_release(std::move(grad));
  if (flags_ & kHooked) drop_grad_hooks(this);
  if (flags_ & (kNamed | kOverride)) {
    std::shared_ptr<Function> creator;
    {
      ExtraTable& t = extras();
      std::lock_guard<std::mutex> lock(t.mu);
      auto it = t.map.find(this);
      if (it != t.map.end()) {
        creator = std::move(it->second.creator);
        t.map.erase(it);
      }
    }
    detail::defer_release(std::move(creator));
  }
}

detail::LeafNode::~LeafNode() {
  if (creator) detail::defer_release(std::move(creator));
}

std::shared_ptr<VariableNode> detail::make_leaf_node() {
  return std::allocate_shared<LeafNode>(PoolAllocator<LeafNode>());
}

namespace {
Function* embedded_fn(const VariableNode& n, std::int16_t offset) {
  return reinterpret_cast<Function*>(const_cast<char*>(reinterpret_cast<const char*>(&n)) - offset);
}
}  // namespace

Function* VariableNode::creator_ptr() const {
  if (!(flags_ & kEmbedded)) return static_cast<const detail::LeafNode*>(this)->creator.get();
  if (flags_ & kOverride) {
    ExtraTable& t = extras();
    std::lock_guard<std::mutex> lock(t.mu);
    return t.map[this].creator.get();
  }
  if (flags_ & kUnchained) return nullptr;
  return embedded_fn(*this, fn_offset_);
}

int VariableNode::generation() const {
  if (!(flags_ & kEmbedded)) return static_cast<const detail::LeafNode*>(this)->generation;
  if (flags_ & kOverride) {
    ExtraTable& t = extras();
    std::lock_guard<std::mutex> lock(t.mu);
    return t.map[this].generation;
  }
  return embedded_fn(*this, fn_offset_)->generation() + 1;  // kept after unchain(), as DeZero
}

const std::string& VariableNode::name() const {
  if (!(flags_ & kNamed)) return empty_string();
  ExtraTable& t = extras();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.map[this].name;  // unordered_map keeps its elements in place: the reference stays valid
}

bool detail::has_creator(const VariableNode& n) {
  if ((n.flags_ & (VariableNode::kEmbedded | VariableNode::kUnchained | VariableNode::kOverride)) ==
      VariableNode::kEmbedded)
    return true;
  return n.creator_ptr() != nullptr;
}

std::shared_ptr<Function> detail::creator_of(const std::shared_ptr<VariableNode>& node) {
  if (!node) return nullptr;
  const VariableNode& n = *node;
  if (!(n.flags_ & VariableNode::kEmbedded)) return static_cast<const LeafNode&>(n).creator;
  if (n.flags_ & VariableNode::kOverride) {
    ExtraTable& t = extras();
    std::lock_guard<std::mutex> lock(t.mu);
    return t.map[&n].creator;
  }
  if (n.flags_ & VariableNode::kUnchained) return nullptr;
  return std::shared_ptr<Function>(node, embedded_fn(n, n.fn_offset_));  // shares the block's count
}

// --- Variable ---------------------------------------------------------------------------
void detail::on_last_handle(VariableNode& node) noexcept {
  // See NodeHandle: a gradient with a graph behind it can lead back to this node.
  // Leaves only: the gradients of intermediate variables are still being read and
  // accumulated while backward runs (through short-lived handles), and backward
  // itself drops them afterwards unless retain_grad asks to keep them.
  if (node.grad && !has_creator(node) && has_creator(*node.grad)) defer_release(std::move(node.grad));
}

Variable::Variable(Tensor data, std::string name) : node_(detail::make_leaf_node()) {
  node_->data = std::move(data);
  if (!name.empty()) set_name(std::move(name));
}

Parameter::Parameter(Tensor data, std::string name) : Variable(std::move(data), std::move(name)) {
  node_->flags_ |= VariableNode::kParameter;
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
}  // namespace

const Tensor& detail::empty_variable_data(detail::EmptyCause cause) { return empty_tensor(cause); }
const Tensor& Variable::defined_data(const char* op) const {
  if (!node_) {
    const detail::EmptyCause cause = node_.empty_cause();
    if (cause != detail::EmptyCause::none)
      detail::fail<ValueError>(op, "the variable holds no data", detail::empty_cause_text(cause));
    detail::fail<ValueError>(op, "the variable is empty (Variable()); hint: give it a tensor first");
  }
  return node_->data;
}
void Variable::set_data(Tensor data) {
  if (!node_) node_ = detail::make_leaf_node();
  node_->data = std::move(data);
}
Variable Variable::grad() const {
  if (node_ && node_->grad) return Variable(node_->grad);
  Variable none;
  if (node_) {
    none.node_.set_empty_cause(!Config::enable_backprop     ? detail::EmptyCause::grad_no_backprop
                               : detail::has_creator(*node_) ? detail::EmptyCause::grad_not_kept
                                                             : detail::EmptyCause::grad_not_reached);
  }
  return none;
}
bool Variable::has_grad() const { return node_ && node_->grad; }
void Variable::set_grad(const Variable& g) {
  if (!node_) detail::fail<ValueError>("set_grad", "the variable is empty (Variable())");
  node_->grad = g.node_;
}
void Variable::cleargrad() {
  if (node_) detail::defer_release(std::move(node_->grad));
}
const std::string& Variable::name() const { return node_ ? node_->name() : empty_string(); }
void Variable::set_name(std::string name) {
  if (!node_) node_ = detail::make_leaf_node();
  if (name.empty() && !(node_->flags_ & VariableNode::kNamed)) return;
  ExtraTable& t = extras();
  std::lock_guard<std::mutex> lock(t.mu);
  t.map[node_.ptr().get()].name = std::move(name);
  node_->flags_ |= VariableNode::kNamed;
}
std::shared_ptr<Function> Variable::creator() const { return detail::creator_of(node_.ptr()); }
void Variable::set_creator(const std::shared_ptr<Function>& f) {
  if (!node_) detail::fail<ValueError>("set_creator", "the variable is empty (Variable())");
  VariableNode& n = *node_;
  const int gen = f ? f->generation() + 1 : 0;
  if (!(n.flags_ & VariableNode::kEmbedded)) {
    auto& leaf = static_cast<detail::LeafNode&>(n);
    std::shared_ptr<Function> old = std::move(leaf.creator);
    leaf.creator = f;
    leaf.generation = gen;
    detail::defer_release(std::move(old));
    return;
  }
  std::shared_ptr<Function> old;
  {
    ExtraTable& t = extras();
    std::lock_guard<std::mutex> lock(t.mu);
    if (f.get() == embedded_fn(n, n.fn_offset_)) {  // back to its own block's Function
      n.flags_ = static_cast<std::uint8_t>(n.flags_ & ~(VariableNode::kUnchained | VariableNode::kOverride));
      auto it = t.map.find(&n);
      if (it != t.map.end()) old = std::move(it->second.creator);
    } else {
      NodeExtra& e = t.map[&n];
      old = std::move(e.creator);
      e.creator = f;
      e.generation = gen;
      n.flags_ |= VariableNode::kOverride;
    }
  }
  detail::defer_release(std::move(old));
}
int Variable::generation() const { return node_ ? node_->generation() : 0; }
bool Variable::requires_grad() const { return node_ && node_->requires_grad(); }
void Variable::set_requires_grad(bool r) {
  if (!node_) detail::fail<ValueError>("set_requires_grad", "the variable is empty (Variable())");
  if (r) node_->flags_ |= VariableNode::kRequiresGrad;
  else node_->flags_ = static_cast<std::uint8_t>(node_->flags_ & ~VariableNode::kRequiresGrad);
}
bool Variable::is_parameter() const { return node_ && node_->is_parameter(); }

// Forgets a node's creator. A node inside a block keeps its Function's memory, so the
// Function lets go of its inputs instead: the graph above is freed as when DeZero drops
// the creator (a shared_ptr kept from creator() then sees no inputs).
void Variable::unchain_node(VariableNode& n) {
  if (!(n.flags_ & VariableNode::kEmbedded)) {
    detail::defer_release(std::move(static_cast<detail::LeafNode&>(n).creator));
    return;
  }
  if (n.flags_ & VariableNode::kOverride) {
    std::shared_ptr<Function> old;
    {
      ExtraTable& t = extras();
      std::lock_guard<std::mutex> lock(t.mu);
      old = std::move(t.map[&n].creator);
    }
    detail::defer_release(std::move(old));
    return;
  }
  if (n.flags_ & VariableNode::kUnchained) return;
  n.flags_ |= VariableNode::kUnchained;
  embedded_fn(n, n.fn_offset_)->release_inputs();
}

void Variable::unchain() {
  if (node_) unchain_node(*node_);
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

// --- grad-ready hooks ------------------------------------------------------------------------
// Rare as names are: one table, by node (in registration order) and by id (for
// HookHandle::remove). A node's hooks go with it (~VariableNode). Calls are made outside
// the lock, so that a hook may register or remove hooks.
namespace {
struct GradHook {
  std::uint64_t id;
  std::shared_ptr<const GradReadyHook> fn;
};
struct HookTable {
  std::mutex mu;
  std::unordered_map<const VariableNode*, std::vector<GradHook>> by_node;
  std::unordered_map<std::uint64_t, const VariableNode*> by_id;
  std::uint64_t next_id = 1;
};
HookTable& hooks() {
  static HookTable* t = new HookTable;  // never destroyed, as the extras table
  return *t;
}
[[gnu::noinline, gnu::cold]] void drop_grad_hooks(const VariableNode* n) noexcept {
  std::vector<GradHook> gone;  // destroyed after the lock: a hook's captures may hold variables
  {
    HookTable& t = hooks();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.by_node.find(n);
    if (it == t.by_node.end()) return;
    gone.swap(it->second);
    t.by_node.erase(it);
    for (const GradHook& h : gone) t.by_id.erase(h.id);
  }
  detail::grad_hooks_live.fetch_sub(static_cast<std::int64_t>(gone.size()), std::memory_order_relaxed);
}
}  // namespace

std::atomic<std::int64_t> detail::grad_hooks_live{0};

std::uint64_t detail::grad_hook_id_limit() {
  HookTable& t = hooks();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.next_id;
}

bool detail::has_grad_ready_hooks(const VariableNode& n) { return (n.flags_ & VariableNode::kHooked) != 0; }

void detail::run_grad_ready_hooks(const Variable& v, std::uint64_t id_limit) {
  HookTable& t = hooks();
  std::vector<GradHook> todo;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.by_node.find(v.node().get());
    if (it == t.by_node.end()) return;
    for (const GradHook& h : it->second)
      if (h.id < id_limit) todo.push_back(h);
  }
  for (const GradHook& h : todo) {
    {
      std::lock_guard<std::mutex> lock(t.mu);
      if (!t.by_id.count(h.id)) continue;  // removed by an earlier hook
    }
    (*h.fn)(v);
  }
}

HookHandle Variable::register_post_accumulate_grad_hook(GradReadyHook hook) {
  const char* op = "register_post_accumulate_grad_hook";
  if (!node_) detail::fail<ValueError>(op, "the variable is empty (Variable()); hint: give it a tensor first");
  if (!hook) detail::fail<ValueError>(op, "the hook is an empty std::function");
  if (detail::has_creator(*node_)) {
    const std::shared_ptr<Function> f = creator();
    detail::fail<ValueError>(op, "the variable is not a leaf (made by ", f->name(),
                             "), and only a leaf's gradient is kept",
                             detail::Hint{"register it on the leaves it depends on (parameters, inputs), or "
                                          "unchain() it first"});
  }
  if (!node_->requires_grad())
    detail::fail<ValueError>(op, "the variable does not require grad, so backward never computes its ",
                             "gradient; hint: set_requires_grad(true) first");
  auto fn = std::make_shared<const GradReadyHook>(std::move(hook));
  HookTable& t = hooks();
  std::lock_guard<std::mutex> lock(t.mu);
  const std::uint64_t id = t.next_id;
  std::vector<GradHook>& list = t.by_node[node_.ptr().get()];
  list.push_back(GradHook{id, std::move(fn)});
  try {
    t.by_id.emplace(id, node_.ptr().get());
  } catch (...) {
    list.pop_back();
    throw;
  }
  ++t.next_id;
  node_->flags_ |= VariableNode::kHooked;
  detail::grad_hooks_live.fetch_add(1, std::memory_order_relaxed);
  return HookHandle(id);
}

void HookHandle::remove() {
  if (id_ == 0) return;
  std::shared_ptr<const GradReadyHook> gone;  // destroyed after the lock
  {
    HookTable& t = hooks();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.by_id.find(id_);
    if (it == t.by_id.end()) return;
    std::vector<GradHook>& list = t.by_node[it->second];
    for (auto h = list.begin(); h != list.end(); ++h) {
      if (h->id == id_) {
        gone = std::move(h->fn);
        list.erase(h);
        break;
      }
    }
    // The node keeps its kHooked flag (another thread may read it): backward finds an
    // empty list, which costs the walk only while other hooks are live.
    if (list.empty()) t.by_node.erase(it->second);
    t.by_id.erase(it);
  }
  detail::grad_hooks_live.fetch_sub(1, std::memory_order_relaxed);
}

bool HookHandle::registered() const {
  if (id_ == 0) return false;
  HookTable& t = hooks();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.by_id.count(id_) != 0;
}

}  // namespace dezero
