// dezero/core/backward.cpp - back-propagation (steps 7-9, 14-16, 33): Variable::backward walks
// the graph by generation, highest first, and accumulates gradients; unchain_backward
// cuts the graph above a variable (truncated BPTT, step 59).
//
// With create_graph the backward pass is recorded like any forward pass, so its
// gradients can be differentiated again; without it every Function of the backward
// pass runs with enable_backprop off, which is what lets the built-in functions take
// their no-graph path (dezero/functions/dual.hpp).
//
// Grad-ready hooks (Variable::register_post_accumulate_grad_hook): while any is registered,
// backward first counts, for each leaf with hooks, the uses that the pass will run
// (HookPass below); a leaf's hooks run when its last use has run.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/core/grad_hooks.hpp"
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

// --- when is a leaf's gradient final: counting its uses (grad-ready hooks) --------------------
// The Functions a backward pass runs are those reached from the output's creator through
// inputs that need a gradient (Function::needs_input_grad). Before the pass, a walk over
// them counts, as PyTorch's engine counts dependencies:
//   - for each leaf with hooks, its uses: the (Function, input) pairs that take it;
//   - for each Function, the uses of its output by the other Functions of the walk.
// During the pass, a Function that has run its backward and accumulated its inputs'
// gradients is done: each of its uses comes off the counts. A leaf at 0 that got a gradient
// in this pass has its final one, and its hooks run. A Function at 0 that nobody queued (every
// Function that uses its output returned no gradient for it) will not run: it is done at
// once, so that the leaves below it are not waited for forever.
//
// The generation order makes this the same moment as "every consumer has run": a Function
// runs after all those of a higher generation, and each consumer of a leaf or of an output
// is of a higher generation than its creator. Hooks thus run in the reverse order of use.
struct HookPass {
  struct Use {                  // one input of a Function, as far as the counts go
    VariableNode* leaf = nullptr;  // the input, when it has hooks
    Function* creator = nullptr;   // its creator, when it has one
  };
  struct Fn {
    std::shared_ptr<Function> keep;  // alive until the pass ends (a hook may cut the graph)
    int uses = 0;
    bool done = false;
    SmallVector<Use, 3> inputs;
  };
  struct Leaf {
    Variable v;  // a graph reference to the leaf (no handle count), as the hooks see it
    int uses = 0;
    bool reached = false;  // got a gradient in this pass
  };
  std::unordered_map<const Function*, Fn> fns;
  std::unordered_map<const VariableNode*, Leaf> leaves;
  std::vector<Function*> todo;  // done()'s list of Functions that will not run
  std::uint64_t id_limit = 0;
  HookPass() = default;
  HookPass(const HookPass&) = delete;
  HookPass& operator=(const HookPass&) = delete;
  ~HookPass();  // out of line: backward's own body does not grow by the maps' destructors
};
__attribute__((noinline)) HookPass::~HookPass() = default;
}  // namespace

void Variable::backward(bool retain_grad, bool create_graph) {
  if (!node_ || !node_->data.defined()) {
    const detail::EmptyCause cause = detail::empty_cause(data());
    if (cause != detail::EmptyCause::none)
      detail::fail<ValueError>("backward", "the variable holds no data", detail::empty_cause_text(cause));
    detail::fail<ValueError>("backward", "the variable holds no data",
                             detail::Hint{"create it from a Tensor, e.g. Variable(dezero::array(1.0))"});
  }
  if (!node_->grad) {
    node_->grad = detail::make_leaf_node();
    node_->grad->data = ones_like(node_->data);
  } else if (node_->grad->data.shape() != node_->data.shape()) {
    detail::fail<ShapeError>("backward", "the variable has shape ", node_->data.shape(), " but its grad has shape ",
                             node_->grad->data.shape(), "; hint: set_grad() with a gradient of the same shape");
  }
  if (!detail::has_creator(*node_)) return;

  // With grad-ready hooks registered somewhere, count the uses (HookPass); a pass that
  // reaches no leaf with hooks drops the counts again. Without any, one relaxed load. The
  // hook code sits in lambdas kept out of line (noinline), so that this function's body,
  // and with it what the compiler inlines into the loop below, stays as it was without hooks.
  HookPass* hp = nullptr;  // owned, deleted by give_back (no destructor in this frame either)
  if (detail::grad_hooks_live.load(std::memory_order_relaxed) != 0) hp = [&]() __attribute__((noinline)) {
    auto pass = std::make_unique<HookPass>();
    pass->id_limit = detail::grad_hook_id_limit();
    std::shared_ptr<Function> root = detail::creator_of(node_.ptr());
    std::vector<Function*> stack{root.get()};
    pass->fns[root.get()].keep = std::move(root);
    while (!stack.empty()) {
      Function* f = stack.back();
      stack.pop_back();
      HookPass::Fn& e = pass->fns[f];
      const VariableSpan xs = f->inputs();
      for (std::size_t i = 0; i < xs.size(); ++i) {
        if (!f->needs_input_grad(i)) continue;
        const std::shared_ptr<VariableNode>& n = xs[i].node_.ptr();
        HookPass::Use u;
        if (detail::has_grad_ready_hooks(*n)) {
          HookPass::Leaf& l = pass->leaves[n.get()];
          if (!l.v.node_) l.v.node_ = detail::NodeHandle::graph_ref(n);
          ++l.uses;
          u.leaf = n.get();
        }
        if (detail::has_creator(*n)) {
          std::shared_ptr<Function> g = detail::creator_of(n);
          HookPass::Fn& c = pass->fns[g.get()];
          if (!c.keep) {
            stack.push_back(g.get());
            c.keep = std::move(g);
          }
          ++c.uses;
          u.creator = c.keep.get();
        }
        if (u.leaf || u.creator) e.inputs.push_back(u);
      }
    }
    return pass->leaves.empty() ? nullptr : pass.release();
  }();
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
    delete hp;
  };

  // v got a gradient in this pass.
  auto reached = [&](const VariableNode* v) __attribute__((noinline)) {
    if (!detail::has_grad_ready_hooks(*v)) return;
    auto l = hp->leaves.find(v);
    if (l != hp->leaves.end()) l->second.reached = true;
  };
  // f has run (or will not run): its uses come off the counts; the hooks of a leaf at 0 run.
  auto done = [&](Function* f0) __attribute__((noinline)) {
    std::vector<Function*>& todo = hp->todo;
    todo.assign(1, f0);
    while (!todo.empty()) {
      auto it = hp->fns.find(todo.back());
      todo.pop_back();
      if (it == hp->fns.end() || it->second.done) continue;  // a Function the walk did not see
      it->second.done = true;
      for (const HookPass::Use& u : it->second.inputs) {
        if (u.leaf) {
          HookPass::Leaf& l = hp->leaves[u.leaf];
          if (--l.uses == 0 && l.reached) detail::run_grad_ready_hooks(l.v, hp->id_limit);
        }
        if (u.creator) {
          HookPass::Fn& c = hp->fns[u.creator];
          if (--c.uses == 0 && !(u.creator->flags_ & Function::kQueued)) todo.push_back(u.creator);
        }
      }
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
        detail::fail<ValueError>("backward", f->name(), ".backward returned ", std::to_string(gxs.size()),
                                 " gradients for ", std::to_string(xs.size()), " inputs");
      for (std::size_t i = 0; i < gxs.size(); ++i) {
        const Variable& x = xs[i];
        Variable& gx = gxs[i];
        if (!gx.defined() || !gx.data().defined() || !f->needs_input_grad(i)) continue;
        if (gx.shape() != x.shape())
          detail::fail<ShapeError>("backward", f->name(), ".backward returned a gradient of shape ", gx.shape(),
                                   " for input ", std::to_string(i), " of shape ", x.shape());
        if (!x.node_->grad) {
          x.node_->grad = gx.node_.take_counted();
        } else {
          BackpropFlag flag(create_graph);
          x.node_->grad = (Variable(x.node_->grad) + gx).node_;
        }
        if (hp) reached(x.node_.ptr().get());
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
      if (hp) done(f.get());
    }
  } catch (...) {
    // A pass stopped half-way (a hook threw, a backward failed): the Functions still queued
    // hold partial gradients in their outputs, which the next pass over this graph would
    // add to. They go as they would have gone after running.
    if (!retain_grad) [&]() __attribute__((noinline, cold)) {
      for (auto& f : funcs) {
        if (f->flags_ & Function::kEmbeddedOut) {
          detail::defer_release(std::move(f->block_node()->grad));
        } else {
          for (std::size_t i = 0, n = f->n_outputs(); i < n; ++i)
            if (auto o = f->ext()->outputs[i].node.lock()) detail::defer_release(std::move(o->grad));
        }
      }
    }();
    give_back();
    throw;
  }
  give_back();
}

}  // namespace dezero
