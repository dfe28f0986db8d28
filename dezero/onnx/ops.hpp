// dezero/onnx/ops.hpp - internal: the importer's op table. Each ONNX op is one OpDef: the
// attributes it accepts, a load-time check of a node (before anything runs), and run(), which
// builds the node's outputs out of DeZero Functions on every forward call. The families register
// themselves in import_ops_*.cpp; import.cpp reads the file, checks every node against the
// table, and runs the nodes in order.
//
// Names: this is namespace dezero::onnx, so ONNX's own classes are spelt ::onnx::NodeProto.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include "dezero/core.hpp"
#include "dezero/tensor.hpp"

namespace dezero::onnx::detail {

// --- errors ---------------------------------------------------------------------------------------
// "node 'conv1' (Conv, opset 13): <what>". Load-time refusals are NotImplementedError (an op,
// attribute, value or dtype that is not supported) or ValueError (a node that is malformed);
// run-time shape problems are ShapeError.
std::string describe_node(const ::onnx::NodeProto& node, int opset);
[[noreturn]] void unsupported(const ::onnx::NodeProto& node, int opset, const std::string& what);
[[noreturn]] void malformed(const ::onnx::NodeProto& node, int opset, const std::string& what);

// --- attributes -----------------------------------------------------------------------------------
// Typed access to a node's attributes, with defaults; a wrong attribute type is malformed().
struct Attrs {
  const ::onnx::NodeProto& node;
  int opset;
  const ::onnx::AttributeProto* find(const std::string& name) const;
  bool has(const std::string& name) const { return find(name) != nullptr; }
  std::int64_t i(const std::string& name, std::int64_t def) const;
  float f(const std::string& name, float def) const;
  std::string s(const std::string& name, const std::string& def) const;
  std::vector<std::int64_t> ints(const std::string& name, std::vector<std::int64_t> def = {}) const;
  std::vector<float> floats(const std::string& name, std::vector<float> def = {}) const;
  // A TensorProto attribute (Constant's value) as a host Tensor.
  Tensor tensor(const std::string& name) const;
};

// A TensorProto (raw_data or the typed fields; external data through `read_external`) as a host
// Tensor: float -> float32, double -> float64, int32/int64 -> the same; bool, int8, uint8, int16
// and uint16 -> int64 (a flag or small integer); anything else is NotImplementedError naming
// `what`. Sizes are checked against the bytes present before anything is allocated; the reader
// of external data is given the byte count the dims and type need, and reads no more.
using ExternalReader = std::function<std::string(const ::onnx::TensorProto&, std::uint64_t bytes)>;
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& what,
                         const ExternalReader& read_external = nullptr);
// Whether an ONNX element type (TensorProto::DataType) is one tensor_from_proto reads.
bool supported_elem_type(int elem_type);
// The dezero dtype an ONNX element type is read as (supported_elem_type must hold).
DType dtype_of_elem_type(int elem_type);

// --- running a node -------------------------------------------------------------------------------
// What run() sees: the node, the model's opset for the default domain, its inputs (Variables;
// integer values live on the host and carry no gradient) and attributes.
class OpContext {
 public:
  OpContext(const ::onnx::NodeProto& node, int opset, const std::vector<const Variable*>& inputs, Device device)
      : node_(node), opset_(opset), inputs_(inputs), device_(device), attrs_{node, opset} {}
  const ::onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }
  const Attrs& attrs() const { return attrs_; }
  // The device of the model's parameters: where constants made by an op go.
  Device device() const { return device_; }

  // Inputs, counting empty-named optional ones ("" in the node's input list).
  std::size_t num_inputs() const { return inputs_.size(); }
  bool has_input(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Input i; malformed() when it is absent.
  const Variable& input(std::size_t i) const;
  // Input i's data on the host (shape arithmetic: a Reshape's shape, Slice's starts).
  Tensor host_input(std::size_t i) const;
  // Input i's data on the host as integers (an int64 or int32 1-d or 0-d tensor).
  std::vector<std::int64_t> int_list(std::size_t i) const;
  // The number of outputs the node names, and whether output i is named (optional outputs).
  std::size_t num_outputs() const { return static_cast<std::size_t>(node_.output_size()); }
  bool wants_output(std::size_t i) const {
    return i < num_outputs() && !node_.output(static_cast<int>(i)).empty();
  }

  [[noreturn]] void unsupported(const std::string& what) const { detail::unsupported(node_, opset_, what); }
  [[noreturn]] void malformed(const std::string& what) const { detail::malformed(node_, opset_, what); }

 private:
  const ::onnx::NodeProto& node_;
  int opset_;
  const std::vector<const Variable*>& inputs_;
  Device device_;
  Attrs attrs_;
};

// One op: its ONNX type, the opsets it is imported for, the attributes it accepts (any other is
// refused at load time), an optional check of the node's attribute values at load time, and the
// op itself. run() returns one Variable per output the node names (an empty Variable for an
// optional output that is not wanted).
struct OpDef {
  std::string op_type;
  int min_opset = 7;
  int max_opset = 20;
  std::vector<std::string> attributes;
  std::function<void(const Attrs&)> check;  // may be empty; throws through unsupported()/malformed()
  std::function<VariableList(OpContext&)> run;
};

using OpTable = std::vector<OpDef>;

// The families (import_ops_*.cpp) add their ops to the table.
void register_math_ops(OpTable& table);   // element-wise, comparisons, Softmax, reductions
void register_shape_ops(OpTable& table);  // Reshape, Slice, Pad, ...; shape arithmetic (Shape, Range, Cast)
void register_index_ops(OpTable& table);  // Gather, GatherElements, ScatterND
void register_conv_ops(OpTable& table);   // Conv, ConvTranspose, pools
void register_nn_ops(OpTable& table);     // Gemm, MatMul, BatchNormalization, Dropout, LSTM, losses

// The whole table, built once.
const OpTable& op_table();
// The entry for an op at an opset, or nullptr.
const OpDef* find_op(const std::string& op_type, int opset);

}  // namespace dezero::onnx::detail
