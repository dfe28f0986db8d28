// dezero/core/backward.cpp - back-propagation (steps 7-9, 14-16, 33): Variable::backward walks
// the graph by generation, highest first, and accumulates gradients; unchain_backward
// cuts the graph above a variable (truncated BPTT, step 59).
//
// With create_graph the backward pass is recorded like any forward pass, so its
// gradients can be differentiated again; without it every Function of the backward
// pass runs with enable_backprop off, which is what lets the built-in functions take
// their no-graph path (dezero/functions/dual.hpp).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_set>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/thread_state.hpp"

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
  if (!node_ || !detail::has_creator(*node_)) return;
  // Two passes: first every Function above (held in `seen`, so none is destroyed while we
  // walk) and the variables they take, then cut those variables' creators. Cutting a
  // variable inside a block lets its Function drop its inputs, so the walk must be over
  // before the first cut.
  std::vector<std::shared_ptr<Function>> seen;
  std::unordered_set<const Function*> seen_set;
  std::vector<Function*> stack;
  std::vector<std::shared_ptr<VariableNode>> cut;
  auto visit = [&](std::shared_ptr<Function> f) {
    if (f && seen_set.insert(f.get()).second) {
      stack.push_back(f.get());
      seen.push_back(std::move(f));
    }
  };
  visit(detail::creator_of(node_.ptr()));
  while (!stack.empty()) {
    Function* f = stack.back();
    stack.pop_back();
    for (const Variable& x : f->inputs()) {
      if (x.node_ && detail::has_creator(*x.node_)) {
        visit(detail::creator_of(x.node_.ptr()));
        cut.push_back(x.node_.ptr());
      }
    }
  }
  for (auto& n : cut) unchain_node(*n);
}

namespace {
bool later_generation(const std::shared_ptr<Function>& a, const std::shared_ptr<Function>& b) {
  return a->generation() < b->generation();  // a max-heap by generation
}

// The queue of a backward pass, a heap of Functions by generation. Its buffer is kept per
// thread between calls (a backward inside a backward makes its own, and so does one at
// thread exit, after the thread's buffer is gone: thread_state.hpp).
struct QueueBuffer {
  std::vector<std::shared_ptr<Function>> spare;
  bool taken = false;
};
QueueBuffer* queue_buffer() { return detail::ThreadState<QueueBuffer>::get(); }
}  // namespace

void Variable::backward(bool retain_grad, bool create_graph) {
  if (!node_ || !node_->data.defined()) {
    const detail::EmptyCause cause = detail::empty_cause(data());
    if (cause != detail::EmptyCause::none)
      throw ValueError("backward: the variable holds no data" + detail::empty_cause_text(cause));
    throw ValueError("backward: the variable holds no data; hint: create it from a Tensor, e.g. Variable(dezero::array(1.0))");
  }
  if (!node_->grad) {
    node_->grad = detail::make_leaf_node();
    node_->grad->data = ones_like(node_->data);
  } else if (node_->grad->data.shape() != node_->data.shape()) {
    throw ShapeError("backward: the variable has shape " + node_->data.shape().str() + " but its grad has shape " +
                     node_->grad->data.shape().str() + "; hint: set_grad() with a gradient of the same shape");
  }
  if (!detail::has_creator(*node_)) return;

  QueueBuffer* qb = queue_buffer();
  std::vector<std::shared_ptr<Function>> funcs;
  const bool own_buffer = qb && !qb->taken;
  if (own_buffer) {
    funcs.swap(qb->spare);
    qb->taken = true;
  }
  // A Function is queued once (its kQueued flag): the flag comes off when it is taken from
  // the queue, which happens after every Function of a later generation, so nothing can
  // queue it again in this pass.
  auto add_func = [&](std::shared_ptr<Function>&& f) {
    if (f->flags_ & Function::kQueued) return;
    f->flags_ |= Function::kQueued;
    funcs.push_back(std::move(f));
    std::push_heap(funcs.begin(), funcs.end(), later_generation);
  };
  auto give_back = [&] {
    for (auto& f : funcs) f->flags_ = static_cast<std::uint8_t>(f->flags_ & ~Function::kQueued);
    funcs.clear();
    if (own_buffer) {
      funcs.swap(qb->spare);
      qb->taken = false;
    }
  };

  try {
    add_func(detail::creator_of(node_.ptr()));
    VariableList gys;
    while (!funcs.empty()) {
      std::pop_heap(funcs.begin(), funcs.end(), later_generation);
      std::shared_ptr<Function> f = std::move(funcs.back());
      funcs.pop_back();
      f->flags_ = static_cast<std::uint8_t>(f->flags_ & ~Function::kQueued);
      gys.clear();
      if (f->flags_ & Function::kEmbeddedOut) {
        VariableNode* o = f->block_node();
        if (o->grad) {  // a reference that does not count as a handle: nobody outside sees it
          gys.emplace_back();
          gys.back().node_ = detail::NodeHandle::graph_ref(o->grad);
        } else {
          gys.emplace_back(zeros(o->data.shape(), o->data.dtype(), o->data.device()));
        }
      } else {
        for (std::size_t i = 0, n = f->n_outputs(); i < n; ++i) {
          const Function::OutputRef& ref = f->ext()->outputs[i];
          auto o = ref.node.lock();
          if (o && o->grad) {
            gys.emplace_back(o->grad);
          } else {  // an output that got no gradient (or died) contributes zeros
            const VariableSpan xs = f->inputs();
            Device dev = xs.empty() ? Device::cpu() : xs[0].data().device();
            gys.emplace_back(zeros(ref.shape, ref.dtype, dev));
          }
        }
      }
      VariableList gxs;
      {
        BackpropFlag flag(create_graph);
        gxs = f->backward(gys);
      }
      const VariableSpan xs = f->inputs();
      if (gxs.size() != xs.size())
        throw ValueError("backward: " + f->name() + ".backward returned " + std::to_string(gxs.size()) +
                         " gradients for " + std::to_string(xs.size()) + " inputs");
      for (std::size_t i = 0; i < gxs.size(); ++i) {
        const Variable& x = xs[i];
        Variable& gx = gxs[i];
        if (!gx.defined() || !gx.data().defined() || !f->needs_input_grad(i)) continue;
        if (gx.shape() != x.shape())
          throw ShapeError("backward: " + f->name() + ".backward returned a gradient of shape " + gx.shape().str() +
                           " for input " + std::to_string(i) + " of shape " + x.shape().str());
        if (!x.node_->grad) {
          x.node_->grad = gx.node_.take_counted();
        } else {
          BackpropFlag flag(create_graph);
          x.node_->grad = (Variable(x.node_->grad) + gx).node_;
        }
        if (detail::has_creator(*x.node_)) add_func(detail::creator_of(x.node_.ptr()));
      }
      if (!retain_grad) {
        if (f->flags_ & Function::kEmbeddedOut) {
          detail::defer_release(std::move(f->block_node()->grad));
        } else {
          for (std::size_t i = 0, n = f->n_outputs(); i < n; ++i)
            if (auto o = f->ext()->outputs[i].node.lock()) detail::defer_release(std::move(o->grad));
        }
      }
    }
  } catch (...) {
    give_back();
    throw;
  }
  give_back();
}

}  // namespace dezero
