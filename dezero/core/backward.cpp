// dezero/core/backward.cpp - back-propagation (steps 7-9, 14-16, 33): Variable::backward walks
// the graph by generation, highest first, and accumulates gradients; unchain_backward
// cuts the graph above a variable (truncated BPTT, step 59).
//
// With create_graph the backward pass is recorded like any forward pass, so its
// gradients can be differentiated again; without it every Function of the backward
// pass runs with enable_backprop off, which is what lets the built-in functions take
// their no-graph path (dezero/functions/dual.hpp).
#include <atomic>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_set>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

namespace {
// Small RAII flip of enable_backprop without the name lookup (hot path of backward).
struct BackpropFlag {
  bool old;
  explicit BackpropFlag(bool v) : old(Config::enable_backprop) { Config::enable_backprop = v; }
  ~BackpropFlag() { Config::enable_backprop = old; }
};
}  // namespace

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
  if (!node_ || !node_->data.defined()) {
    const detail::EmptyCause cause = detail::empty_cause(data());
    if (cause != detail::EmptyCause::none)
      throw ValueError("backward: the variable holds no data" + detail::empty_cause_text(cause));
    throw ValueError("backward: the variable holds no data; hint: create it from a Tensor, e.g. Variable(dezero::array(1.0))");
  }
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

}  // namespace dezero
