// dezero/core/node_handle.hpp - detail::NodeHandle, the handle inside a Variable (public
// because Variable holds one by value; included by dezero/core.hpp, not meant to be used
// on its own).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "dezero/tensor.hpp"  // detail::EmptyCause

namespace dezero {

struct VariableNode;

/// \cond INTERNAL
namespace detail {
// The handle inside a Variable. It counts the Variables that refer to a node from
// outside the graph (a Function's stored inputs do not count). When the last one of
// a leaf goes, a gradient that carries a graph (made with create_graph) is dropped:
// that graph leads back to the leaf itself, a reference cycle that nothing could
// read any more and shared_ptr would never free (Python's GC collects it in DeZero).
class NodeHandle {
 public:
  NodeHandle() = default;
  NodeHandle(std::shared_ptr<VariableNode> p) : p_(std::move(p)) { acquire(); }  // NOLINT implicit
  NodeHandle(const NodeHandle& o) : p_(o.p_), cause_(o.cause_) { acquire(); }
  NodeHandle(NodeHandle&& o) noexcept : p_(std::move(o.p_)), counted_(o.counted_), cause_(o.cause_) {
    o.counted_ = true;
  }
  NodeHandle& operator=(const NodeHandle& o) {
    if (this != &o) {
      NodeHandle tmp(o);
      swap(tmp);
    }
    return *this;
  }
  NodeHandle& operator=(NodeHandle&& o) noexcept {
    if (this != &o) {
      NodeHandle tmp(std::move(o));
      swap(tmp);
    }
    return *this;
  }
  ~NodeHandle() { release(); }

  const std::shared_ptr<VariableNode>& ptr() const { return p_; }
  operator const std::shared_ptr<VariableNode>&() const { return p_; }  // NOLINT implicit
  VariableNode* operator->() const { return p_.get(); }
  VariableNode& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const NodeHandle& o) const { return p_ == o.p_; }
  bool operator!=(const NodeHandle& o) const { return p_ != o.p_; }
  bool operator==(std::nullptr_t) const { return p_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return p_ != nullptr; }
  // Why an empty handle is empty (Variable::grad() of a variable without one).
  EmptyCause empty_cause() const { return p_ ? EmptyCause::none : cause_; }
  void set_empty_cause(EmptyCause c) { cause_ = c; }
  // A reference held by the graph (a Function's input): stops counting.
  void make_graph_ref() {
    release();
    counted_ = false;
  }
  // A graph reference to p from the start (a Function's input): shares the node, never counts.
  static NodeHandle graph_ref(const std::shared_ptr<VariableNode>& p) {
    NodeHandle h;
    h.p_ = p;
    h.counted_ = false;
    return h;
  }
  // Moves the node out of this handle: a counted one gives up its count first (which may
  // be the node's last handle, see on_last_handle).
  std::shared_ptr<VariableNode> take_counted() noexcept {
    release();
    counted_ = true;
    return std::move(p_);
  }
  // Moves the node out of a graph reference without touching the count (the graph's
  // reference ends; the caller drops the pointer, see detail::defer_release).
  std::shared_ptr<VariableNode> take_graph_ref() noexcept {
    counted_ = true;
    return std::move(p_);
  }

 private:
  void swap(NodeHandle& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(counted_, o.counted_);
    std::swap(cause_, o.cause_);
  }
  inline void acquire();
  inline void release() noexcept;
  std::shared_ptr<VariableNode> p_;
  bool counted_ = true;
  EmptyCause cause_ = EmptyCause::none;  // in the padding after counted_: the handle stays 24 bytes
};
void on_last_handle(VariableNode& node) noexcept;
}  // namespace detail
/// \endcond

}  // namespace dezero

// acquire() and release() need VariableNode, which core.hpp defines after including
// this header; included alone, this header brings core.hpp in for them.
#include "dezero/core.hpp"
