// dezero/onnx/import_util.hpp - internal: what the importer's op families (import_ops_*.cpp)
// share: the cap on the sizes a file may ask for, helpers for inputs, axes and errors, and the
// builders of their OpDefs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/onnx/ops.hpp"
#include "dezero/tensor.hpp"

namespace dezero::onnx::detail {

// --- sizes from the file --------------------------------------------------------------------------
// The most elements one op may create from sizes that the file declares or that its inputs' values
// give (ConstantOfShape, Expand, Range, Pad; the padded inputs and dilated kernels of Conv,
// ConvTranspose and the pools, ConvTranspose's results, the pools' windows): 2^31 by default. A
// larger one is refused before anything is allocated; the fuzz targets lower the cap. Defined in
// import_ops_shape.cpp.
std::int64_t max_output_elements();
void set_max_output_elements(std::int64_t n);

// The element count of `shape` (what the node is about to create: "output", "padded input"),
// or a ValueError naming the node, `what`, the shape and the cap when it is larger than the
// cap or than int64 can count. Negative extents are malformed().
// An empty shape is checked too, without its zeros: an extent of 10^12 beside a 0 is refused,
// since loops run over it (a kernel's depth, a group count) even when nothing is stored.
std::int64_t check_output_size(const OpContext& ctx, const std::vector<std::int64_t>& shape, const std::string& what);

// The steps a recurrent node (LSTM, GRU, RNN) is unrolled into, one graph per step: 2^20.
constexpr std::int64_t kMaxRecurrentSteps = std::int64_t{1} << 20;

// --- values and inputs ---------------------------------------------------------------------------
// A result that is never differentiated: integers (shapes, indices, flags) and constants.
inline Variable fixed(Tensor t) {
  Variable v(std::move(t));
  v.set_requires_grad(false);
  return v;
}

inline bool is_int(const Variable& v) { return is_integer(v.dtype()); }

// t on `device` (a no-op when it is there).
inline Tensor on(const Tensor& t, Device device) { return t.device() == device ? t : t.to(device); }

inline std::string shape_str(const std::vector<std::int64_t>& v) { return Shape(v).str(); }

// An axis in [-rank, rank) made non-negative, or malformed().
inline int axis_in(const OpContext& ctx, std::int64_t axis, int rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.malformed(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// The one value of input i (a 0-d or one-element tensor), as a double.
inline double scalar_input(const OpContext& ctx, std::size_t i) {
  Tensor t = ctx.host_input(i);
  if (t.size() != 1)
    ctx.malformed("input " + std::to_string(i) + " must hold one value, got shape " + t.shape().str());
  return t.astype(float64).item<double>();
}

// Whether every input given is an integer tensor (then the op computes on Tensors).
inline bool int_inputs(const OpContext& ctx) {
  for (std::size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && !is_int(ctx.input(i))) return false;
  return true;
}

// t != 0 element-wise: a value as ONNX's bool (And, Or, Xor, Cast to BOOL).
inline Tensor flag(const Tensor& t) { return dezero::not_equal(t, zeros_like(t)); }

// --- errors and attributes (the nn families) ------------------------------------------------------
using I64s = std::vector<std::int64_t>;

inline std::string ints_str(const I64s& v) {
  std::string r = "[";
  for (std::size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

[[noreturn]] inline void shape_error(const OpContext& ctx, const std::string& what) {
  throw ShapeError(describe_node(ctx.node(), ctx.opset()) + ": " + what);
}

// A float input (the nn ops compute in float32 / float64 only).
inline const Variable& float_input(const OpContext& ctx, std::size_t i, const char* name) {
  const Variable& v = ctx.input(i);
  if (!is_floating(v.dtype()))
    ctx.unsupported(std::string("input ") + name + " of dtype " + dtype_name(v.dtype()) +
                    ": only float and double are supported");
  return v;
}

// --- building the table ---------------------------------------------------------------------------
// An OpDef from its parts (the math and shape families).
inline OpDef simple(const std::string& name, int min_opset, int max_opset, std::vector<std::string> attributes,
                    std::function<VariableList(OpContext&)> run, std::function<void(const Attrs&)> check = nullptr) {
  OpDef d;
  d.op_type = name;
  d.min_opset = min_opset;
  d.max_opset = max_opset;
  d.attributes = std::move(attributes);
  d.check = std::move(check);
  d.run = std::move(run);
  return d;
}

// One OpDef per opset range where an op's attributes changed (the nn and conv families).
inline void add(OpTable& table, const std::string& op, int min_opset, int max_opset, std::vector<std::string> attrs,
                std::function<void(const Attrs&)> check, std::function<VariableList(OpContext&)> run) {
  table.push_back(OpDef{op, min_opset, max_opset, std::move(attrs), std::move(check), std::move(run)});
}

}  // namespace dezero::onnx::detail
