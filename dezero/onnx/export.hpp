// dezero/onnx/export.hpp - internal: what the exporter's two halves share. export.cpp traces the
// graph and names its values; for each Function it fills a Call and runs the emitter that
// emitters() (export_ops.cpp) gives for Function::name(), which writes ONNX nodes through the
// Writer.
//
// Names: inside dezero::onnx, ONNX's own classes are spelt ::onnx::NodeProto.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include "dezero/core.hpp"
#include "dezero/error.hpp"
#include "dezero/tensor.hpp"

namespace dezero::onnx::detail::exporter {

using Ints = std::vector<std::int64_t>;

// ONNX's element type (TensorProto::DataType) for a dtype.
int elem_type(DType dt);
// The host's bytes as raw_data: ONNX's raw_data is little-endian, as the hosts dezero runs on.
void fill_tensor_proto(const Tensor& t, const std::string& name, ::onnx::TensorProto* p);

// --- the graph being written -----------------------------------------------------------------
// Value names (one per Variable node, unique in the graph), initializers and nodes.
class Writer {
 public:
  // fixed_as_constants: values that are not parameters are Constant nodes (export_model), else
  // initializers (export_graph, whose leaves are what an importer trains).
  Writer(::onnx::GraphProto& g, int opset, bool dynamic_batch, bool fixed_as_constants)
      : g_(g), opset_(opset), dynamic_(dynamic_batch), constants_(fixed_as_constants) {}
  int opset() const { return opset_; }
  bool dynamic_batch() const { return dynamic_; }

  // A name not used yet, from `base` ("Conv2d_3", "Conv2d_3_1", ...).
  std::string fresh(const std::string& base) {
    std::string n = base;
    for (int k = 1; used_.count(n); ++k) n = base + "_" + std::to_string(k);
    used_.insert(n);
    return n;
  }
  bool used(const std::string& name) const { return used_.count(name) != 0; }
  void reserve(const std::string& name) { used_.insert(name); }

  // Tensors that have a name already: the graph inputs' data and the model's parameters.
  // A tensor attribute (BatchNorm's running mean, EmbedID's ids) that is one of them is
  // written under that name; an initializer is written on first use.
  void know(const Tensor& t, const std::string& name, bool is_input) { known_.push_back({t, name, is_input, false}); }
  const std::string* known_name(const Tensor& t) {
    for (Known& k : known_) {
      if (!k.t.is_same(t) || k.t.shape() != t.shape() || k.t.dtype() != t.dtype()) continue;
      if (!k.is_input && !k.written) {
        fill_tensor_proto(k.t, k.name, g_.add_initializer());
        k.written = true;
      }
      return &k.name;
    }
    return nullptr;
  }

  std::string initializer(const Tensor& t, const std::string& name) {
    fill_tensor_proto(t, name, g_.add_initializer());
    return name;
  }
  // `t` as a value: a known tensor's name, else a new initializer or Constant named from `base`.
  std::string tensor(const Tensor& t, const std::string& base) {
    if (const std::string* n = known_name(t)) return *n;
    return fixed(t, fresh(base));
  }
  std::string fixed(const Tensor& t, const std::string& name) { return constants_ ? constant(t, name) : initializer(t, name); }
  // A fixed value as a Constant node (an importer keeps it fixed; a float initializer would
  // become a trainable parameter there).
  std::string constant(const Tensor& t, const std::string& name) {
    ::onnx::NodeProto& n = node("Constant", {}, {name});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    fill_tensor_proto(t, name, a->mutable_t());
    return name;
  }
  std::string scalar(double v, DType dt, const std::string& base) { return constant(full(Shape{}, v, dt), fresh(base)); }
  std::string ints(const Ints& v, const std::string& base) {
    return initializer(array(v, Shape{static_cast<std::int64_t>(v.size())}, int64), fresh(base));
  }

  ::onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    ::onnx::NodeProto& n = *g_.add_node();
    n.set_op_type(op);
    std::string base = node_base_.empty() ? op : node_base_;
    std::string name = base;
    for (int k = 1; node_names_.count(name); ++k) name = base + "/" + op + (k > 1 ? "_" + std::to_string(k) : "");
    node_names_.insert(name);
    n.set_name(name);
    for (const auto& s : in) n.add_input(s);
    for (const auto& s : out) n.add_output(s);
    return n;
  }
  void set_node_base(const std::string& b) { node_base_ = b; }

  // `name` (of dtype `from`) as dtype `to`: a Cast node when they differ (one per value and dtype).
  std::string as_dtype(const std::string& name, DType from, DType to) {
    if (from == to) return name;
    std::string& out = casts_[name + "\n" + dtype_name(to)];
    if (out.empty()) {
      out = fresh(name + "_" + dtype_name(to));
      attr(node("Cast", {name}, {out}), "to", std::int64_t{elem_type(to)});
    }
    return out;
  }

  static void attr(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(::onnx::NodeProto& n, const std::string& name, double v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr(::onnx::NodeProto& n, const std::string& name, const Ints& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (std::int64_t x : v) a->add_ints(x);
  }
  static void attr(::onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }

 private:
  struct Known {
    Tensor t;
    std::string name;
    bool is_input, written;
  };
  ::onnx::GraphProto& g_;
  int opset_;
  bool dynamic_, constants_;
  std::unordered_set<std::string> used_, node_names_;
  std::vector<Known> known_;
  std::unordered_map<std::string, std::string> casts_;
  std::string node_base_;
};

// --- one Function, as an emitter sees it ------------------------------------------------------
struct Call {
  std::string name;           // fn.name()
  FunctionAttrs attrs;        // fn.attributes()
  VariableList inputs;        // the recorded inputs
  std::vector<std::string> in;   // their value names
  VariableList outputs;       // the outputs (an empty Variable for one that is gone)
  std::vector<std::string> out;  // their value names
  std::string base;           // the name its nodes and helper values are named from

  std::size_t n_in() const { return inputs.size(); }
  const Shape& in_shape(std::size_t i) const { return inputs[i].shape(); }
  DType in_dtype(std::size_t i) const { return inputs[i].dtype(); }
  const Shape& out_shape() const { return outputs[0].shape(); }
  DType out_dtype() const { return outputs[0].dtype(); }

  const FunctionAttr* find(const std::string& key) const {
    for (const auto& [k, v] : attrs)
      if (k == key) return &v;
    return nullptr;
  }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  template <class T>
  const T& get(const std::string& key) const {
    const FunctionAttr* a = find(key);
    if (!a || !std::holds_alternative<T>(*a))
      throw NotImplementedError("onnx::export: " + name + " does not describe its '" + key +
                                "' (Function::attributes()), so it cannot be exported; hint: override attributes()");
    return std::get<T>(*a);
  }
  std::int64_t i(const std::string& k) const { return get<std::int64_t>(k); }
  double f(const std::string& k) const { return get<double>(k); }
  const Ints& ints(const std::string& k) const { return get<Ints>(k); }

  [[noreturn]] void unsupported(Writer& w, const std::string& why) const {
    throw NotImplementedError("onnx::export: " + name + " has no ONNX form at opset " + std::to_string(w.opset()) +
                              ": " + why);
  }
  // Input i as the output's dtype (DeZero promotes dtypes, ONNX wants them equal).
  std::string x(Writer& w, std::size_t i) const { return w.as_dtype(in[i], in_dtype(i), out_dtype()); }
  std::string tmp(Writer& w, const std::string& what) const { return w.fresh(base + "/" + what); }
};

using Emitter = void (*)(Writer&, const Call&);

// --- the table (export_ops.cpp) ---------------------------------------------------------------------
// Function::name() -> its emitter.
const std::map<std::string, Emitter>& emitters();
// The names emitters() knows, comma-separated (an error's hint).
std::string exportable_names();
// The Functions that have no ONNX form, by name, with the reason (an error's message). Every
// Function of dezero/ is in emitters() or here: tools/check_functions.py counts them.
const std::map<std::string, const char*>& not_exported();

}  // namespace dezero::onnx::detail::exporter
