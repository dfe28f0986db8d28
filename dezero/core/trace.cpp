// dezero/core/trace.cpp - trace_graph (core/trace.hpp).
#include "dezero/core/trace.hpp"

#include <unordered_set>

namespace dezero::detail {

TracedGraph trace_graph(const VariableList& inputs, const VariableList& outputs) {
  std::unordered_set<const VariableNode*> stop;
  for (const Variable& x : inputs) stop.insert(x.node().get());
  std::unordered_set<const Function*> seen;
  std::unordered_set<const VariableNode*> leaf_seen;
  TracedGraph t;
  struct Frame {
    std::shared_ptr<Function> fn;
    std::size_t next;
  };
  std::vector<Frame> stack;
  auto visit = [&](const Variable& v) {
    if (stop.count(v.node().get())) return;
    std::shared_ptr<Function> f = v.creator();
    if (!f) {
      if (leaf_seen.insert(v.node().get()).second) t.leaves.push_back(v);
    } else if (seen.insert(f.get()).second) {
      stack.push_back({std::move(f), 0});
    }
  };
  for (const Variable& y : outputs) {
    visit(y);
    while (!stack.empty()) {
      Frame& fr = stack.back();
      VariableSpan in = fr.fn->inputs();
      if (fr.next < in.size()) {
        visit(in[fr.next++]);  // may push: fr is not used after this
        continue;
      }
      t.order.push_back(std::move(fr.fn));
      stack.pop_back();
    }
  }
  return t;
}

}  // namespace dezero::detail
