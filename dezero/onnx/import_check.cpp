// dezero/onnx/import_check.cpp - internal: what the importer checks in a model file before it builds
// anything (model_file.hpp): every node against the op table (its domain, its op at the model's
// opset, its attributes, the OpDef's own check), a Constant's form, and the declared type of each
// graph input and output.
#include <algorithm>
#include <iterator>
#include <string>

#include "dezero/onnx.hpp"
#include "dezero/onnx/model_file.hpp"
#include "dezero/onnx/ops.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::onnx::detail {

namespace {
using dezero::detail::fail;

// A Constant node: exactly one value attribute of a kind dezero has, no inputs, one named output.
void check_constant(const ::onnx::NodeProto& node, int opset) {
  static const char* kValues[] = {"value", "value_float", "value_floats", "value_int", "value_ints"};
  int n = 0;
  for (const auto& a : node.attribute()) {
    if (std::find(std::begin(kValues), std::end(kValues), a.name()) != std::end(kValues)) {
      ++n;
    } else if (a.name() == "sparse_value" || a.name() == "value_string" || a.name() == "value_strings") {
      unsupported(node, opset, "attribute '" + a.name() + "' is not supported (dezero has no " +
                                           (a.name() == "sparse_value" ? "sparse" : "string") + " tensors)");
    } else {
      unsupported(node, opset, "attribute '" + a.name() +
                                           "' is not supported (Constant accepts value, value_float, value_floats, "
                                           "value_int, value_ints)");
    }
  }
  if (n != 1) malformed(node, opset, "a Constant needs exactly one value attribute, it has " + std::to_string(n));
  if (node.input_size() != 0) malformed(node, opset, "a Constant has no inputs");
  if (node.output_size() != 1 || node.output(0).empty())
    malformed(node, opset, "a Constant has exactly one named output");
}

}  // namespace

// Every node of `g` against the table at `opset`, in the file's order: unsupported() or malformed()
// for the first that does not fit.
void check_nodes(const ::onnx::GraphProto& g, int opset) {
  for (const auto& node : g.node()) {
    if (!is_default_domain(node.domain()))
      unsupported(node, opset, "domain '" + node.domain() +
                                           "' is not supported (dezero imports the default ONNX domain only)");
    if (node.op_type() == "Constant") {
      check_constant(node, opset);
      continue;
    }
    const detail::OpDef* op = find_op(node.op_type(), opset);
    if (!op) {
      std::string other;
      for (const auto& d : op_table())
        if (d.op_type == node.op_type())
          other += (other.empty() ? "" : ", ") + std::to_string(d.min_opset) + "-" + std::to_string(d.max_opset);
      if (!other.empty())
        unsupported(node, opset, "op " + node.op_type() + " is imported for opsets " + other +
                                             " only; hint: convert the model with onnx.version_converter");
      unsupported(node, opset, "op " + node.op_type() +
                                           " is not supported; docs/onnx-ops.md lists the ops dezero imports");
    }
    for (const auto& a : node.attribute()) {
      if (std::find(op->attributes.begin(), op->attributes.end(), a.name()) == op->attributes.end()) {
        std::string known;
        for (const auto& k : op->attributes) known += (known.empty() ? "" : ", ") + k;
        unsupported(node, opset, "attribute '" + a.name() + "' is not supported (" + node.op_type() +
                                             " accepts " + (known.empty() ? std::string("none") : known) + ")");
      }
    }
    if (op->check) op->check(Attrs{node, opset});
  }
}

// A graph input's or output's declared type: `elem_type` 0 when the file gives none; shape -1
// for a dimension that is a symbol or unknown.
ValueInfo value_info_of(const ::onnx::ValueInfoProto& v, const std::string& where, const std::string& role,
                        int& elem_type) {
  ValueInfo info;
  info.name = v.name();
  elem_type = 0;
  if (!v.has_type()) return info;
  const auto& type = v.type();
  if (!type.has_tensor_type()) {
    std::string kind = type.has_sequence_type() ? "a sequence" : type.has_map_type() ? "a map"
                       : type.has_optional_type() ? "an optional" : type.has_sparse_tensor_type() ? "a sparse tensor"
                                                                                                   : "not a tensor";
    fail<NotImplementedError>(where.c_str(), "graph ", role, " '", v.name(), "' is ", kind,
                              " (dezero imports tensors only)");
  }
  const auto& tt = type.tensor_type();
  elem_type = tt.elem_type();
  if (elem_type != 0) {
    if (!supported_elem_type(elem_type)) {
      std::string tname = ::onnx::TensorProto::DataType_IsValid(elem_type)
                              ? ::onnx::TensorProto::DataType_Name(static_cast<::onnx::TensorProto::DataType>(elem_type))
                              : std::to_string(elem_type);
      fail<NotImplementedError>(where.c_str(), "graph ", role, " '", v.name(), "' has element type ", tname,
                                ", which dezero does not support (float, double, int32, int64; bool and small "
                                "integers as int64)");
    }
    info.dtype = dtype_of_elem_type(elem_type);
  }
  if (tt.has_shape()) {
    if (tt.shape().dim_size() > kMaxNdim)
      fail<NotImplementedError>(where.c_str(), "graph ", role, " '", v.name(), "' has ", tt.shape().dim_size(),
                                " dimensions (dezero has at most ", kMaxNdim, ")");
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          fail<ValueError>(where.c_str(), "graph ", role, " '", v.name(), "' has a negative dimension ", d.dim_value());
        info.shape.push_back(d.dim_value());
        info.dim_params.emplace_back();
      } else {
        info.shape.push_back(-1);
        info.dim_params.push_back(d.has_dim_param() ? d.dim_param() : std::string());
      }
    }
  }
  return info;
}

}  // namespace dezero::onnx::detail
