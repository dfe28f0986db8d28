// dezero/onnx/export.cpp - export_model / export_graph, onnx-chainer's design: the graph that one
// forward run recorded is walked from its outputs, and each Function becomes one ONNX node or a
// few, by the emitters of export_ops.cpp. A model's parameters become initializers named by
// their named_params() keys; the values it does not train (scalars, other leaves) are Constant
// nodes, so that an importer keeps them fixed. export_graph has no model: its leaves are
// initializers. The model is checked with ONNX's checker and strict shape inference, then
// written through an AtomicFile (an unpredictable temp name next to the target, then renamed).
//
// Not here: the emitters (export_ops.cpp), reading ONNX files (import.cpp). Names: inside
// dezero::onnx, ONNX's own classes are spelt ::onnx::ModelProto.
#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "dezero/core/trace.hpp"
#include "dezero/onnx.hpp"
#include "dezero/onnx/export.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/utils/atomic_file.hpp"
#include "dezero/version.hpp"

namespace dezero::onnx {

// --- tensors and value types as protos ------------------------------------------------------------
namespace detail::exporter {

int elem_type(DType dt) {
  switch (dt) {
    case float32: return ::onnx::TensorProto::FLOAT;
    case float64: return ::onnx::TensorProto::DOUBLE;
    case int32: return ::onnx::TensorProto::INT32;
    case int64: return ::onnx::TensorProto::INT64;
    case float16: return ::onnx::TensorProto::FLOAT16;    // raw_data: the 2-byte bits, little-endian
    case bfloat16: return ::onnx::TensorProto::BFLOAT16;
  }
  return ::onnx::TensorProto::UNDEFINED;
}

// The host's bytes as raw_data: ONNX's raw_data is little-endian, as the hosts dezero runs on.
void fill_tensor_proto(const Tensor& t, const std::string& name, ::onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(elem_type(t.dtype()));
  for (std::int64_t d : t.shape()) p->add_dims(d);
  Tensor h = t.to_cpu();
  p->set_raw_data(h.raw_data(), h.nbytes());
}

}  // namespace detail::exporter

namespace {

using dezero::detail::fail;
using detail::exporter::Call;
using detail::exporter::elem_type;
using detail::exporter::emitters;
using detail::exporter::exportable_names;
using detail::exporter::not_exported;
using detail::exporter::Writer;

constexpr int kMinOpset = 13, kMaxOpset = 17;

void fill_value_info(const std::string& name, DType dt, const Shape& s, bool dynamic_batch,
                     ::onnx::ValueInfoProto* v) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type(dt));
  auto* shape = tt->mutable_shape();
  for (int i = 0; i < s.ndim(); ++i) {
    auto* d = shape->add_dim();
    if (dynamic_batch && i == 0) d->set_dim_param("batch");
    else d->set_dim_value(s[i]);
  }
}

// --- checking and writing -------------------------------------------------------------------------
void check_options(const VariableList& inputs, const ExportOptions& o, const char* op) {
  const std::string who = std::string("onnx::") + op;
  if (o.opset_version < kMinOpset || o.opset_version > kMaxOpset)
    fail<ValueError>(who.c_str(), "opset_version ", o.opset_version, " is not supported; hint: 13 to 17");
  if (inputs.empty()) fail<ValueError>(who.c_str(), "no inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined() || !inputs[i].data().defined())
      fail<ValueError>(who.c_str(), "input ", i, " holds no data");
  if (!o.input_names.empty() && o.input_names.size() != inputs.size())
    fail<ValueError>(who.c_str(), o.input_names.size(), " input_names for ", inputs.size(), " inputs");
}

void check_names(const std::vector<std::string>& names, const char* what) {
  std::unordered_set<std::string> seen;
  for (const auto& n : names) {
    if (n.empty()) fail<ValueError>("onnx::export", "an empty name in ", what);
    if (!seen.insert(n).second) fail<ValueError>("onnx::export", "the name '", n, "' twice in ", what);
  }
}

// The checker and strict shape inference (with type checks): a failure is our bug.
void check(::onnx::ModelProto& m) {
  try {
    ::onnx::checker::check_model(m);
    ::onnx::ShapeInferenceOptions opts(/*check_type=*/true, /*strict_mode=*/1, /*data_prop=*/true);
    ::onnx::shape_inference::InferShapes(m, ::onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    fail<ValueError>("onnx::export", "the written model fails ONNX's checks: ", e.what(),
                     "; this is a bug in dezero's exporter, please report it with the model");
  }
  m.mutable_graph()->clear_value_info();  // the inferred shapes stay out of the file
}

// The serialized model through an AtomicFile: "<path>.<random>.tmp" (created afresh, never
// through a symlink), fsync, rename.
void write_file(const ::onnx::ModelProto& m, const std::string& path) {
  if (m.ByteSizeLong() > static_cast<std::size_t>(INT_MAX))
    fail<ValueError>("onnx::export", "the model is ", m.ByteSizeLong(),
                     " bytes, past protobuf's 2 GiB; external data is not written");
  std::string bytes;
  if (!m.SerializeToString(&bytes)) fail<ValueError>("onnx::export", "protobuf cannot serialize the model");
  dezero::detail::write_file_atomically(path, bytes, "onnx::export");
}

using NamedParams = std::vector<std::pair<std::string, Parameter>>;

// Builds, checks and writes the model. `model_params`: the model's named parameters
// (export_model), or nullptr (export_graph).
void write_graph(const VariableList& inputs, const VariableList& outputs, const NamedParams* model_params,
                 const std::string& path, const ExportOptions& o) {
  if (outputs.empty()) fail<ValueError>("onnx::export", "the graph has no outputs");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !outputs[i].data().defined())
      fail<ValueError>("onnx::export", "output ", i, " holds no data");
    const bool is_input = std::any_of(inputs.begin(), inputs.end(), [&](const Variable& x) { return x.is_same(outputs[i]); });
    if (!outputs[i].creator() && !is_input)
      fail<ValueError>("onnx::export", "output ", i, " ", outputs[i].shape(),
                       " has no recorded graph: it is neither computed from the inputs nor one of them; hint: "
                       "compute it with backprop on (not under no_grad())");
  }
  if (!o.output_names.empty() && o.output_names.size() != outputs.size())
    fail<ValueError>("onnx::export", o.output_names.size(), " output_names for ", outputs.size(), " outputs");
  std::vector<std::string> in_names = o.input_names, out_names = o.output_names;
  for (std::size_t i = in_names.size(); i < inputs.size(); ++i) in_names.push_back("input_" + std::to_string(i));
  for (std::size_t i = out_names.size(); i < outputs.size(); ++i) out_names.push_back("output_" + std::to_string(i));
  std::vector<std::string> all = in_names;
  all.insert(all.end(), out_names.begin(), out_names.end());
  check_names(all, "input_names and output_names");

  ::onnx::ModelProto model;
  model.set_ir_version(o.opset_version >= 15 ? 8 : 7);
  model.set_producer_name("dezero-cpp");
  model.set_producer_version(dezero::version());
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(o.opset_version);
  ::onnx::GraphProto& g = *model.mutable_graph();
  g.set_name(o.graph_name);
  Writer w(g, o.opset_version, o.dynamic_batch, model_params != nullptr);

  // Names: inputs, outputs and parameters first; values and initializers after.
  std::unordered_map<const VariableNode*, std::string> names;
  for (const auto& n : all) w.reserve(n);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (names.count(inputs[i].node().get())) fail<ValueError>("onnx::export", "input ", i, " is given twice");
    names[inputs[i].node().get()] = in_names[i];
    w.know(inputs[i].data(), in_names[i], true);
    fill_value_info(in_names[i], inputs[i].dtype(), inputs[i].shape(), o.dynamic_batch && inputs[i].ndim() > 0,
                    g.add_input());
  }
  std::unordered_map<const VariableNode*, std::string> param_names;
  for (const auto& [key, p] : model_params ? *model_params : NamedParams()) {
    if (!p.data().defined()) continue;
    if (w.used(key))
      fail<ValueError>("onnx::export", "the parameter '", key, "' has the name of a graph input or output; hint: "
                       "rename that input or output (ExportOptions::input_names / output_names)");
    w.reserve(key);
    param_names[p.node().get()] = key;
    w.know(p.data(), key, false);
  }

  dezero::detail::TracedGraph t = dezero::detail::trace_graph(inputs, outputs);

  // Leaves: a graph input's data (labels re-wrapped by a loss), a parameter, or another leaf:
  // an initializer for export_graph, a Constant node for export_model (whose trainable
  // values are its parameters).
  const std::string fallback = model_params ? "const_" : "param_";
  std::map<std::string, int> leaf_name_count;
  for (const Variable& v : t.leaves)
    if (!v.name().empty()) ++leaf_name_count[v.name()];
  std::size_t unnamed = 0;
  for (const Variable& v : t.leaves) {
    const VariableNode* n = v.node().get();
    if (auto it = param_names.find(n); it != param_names.end()) {
      names[n] = *w.known_name(v.data());
      continue;
    }
    if (const std::string* k = w.known_name(v.data())) {
      names[n] = *k;
      continue;
    }
    std::string name = v.name();
    if (name.empty() || leaf_name_count[name] > 1 || w.used(name)) name = w.fresh(fallback + std::to_string(unnamed++));
    else w.reserve(name);
    names[n] = w.fixed(v.data(), name);
  }

  // The graph outputs: the Function that makes one writes it under its output name; one
  // that is an input, a leaf or another output already is passed on by an Identity.
  std::vector<std::pair<std::string, std::string>> identities;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const VariableNode* n = outputs[i].node().get();
    if (auto it = names.find(n); it != names.end()) identities.emplace_back(it->second, out_names[i]);
    else names[n] = out_names[i];
  }

  std::map<std::string, int> counters;
  for (const auto& fn : t.order) {
    Call c{fn->name(), fn->attributes(), fn->inputs(), {}, fn->outputs(), {}, {}};
    auto e = emitters().find(c.name);
    if (e == emitters().end() && not_exported().count(c.name))
      fail<NotImplementedError>("onnx::export", c.name, " has no ONNX form: ", not_exported().at(c.name),
                                "; hint: export the graph of a model's forward");
    if (e == emitters().end())
      fail<NotImplementedError>("onnx::export", c.name, " has no ONNX form at opset ", o.opset_version,
                                "; hint: the exporter writes ", exportable_names());
    c.base = w.fresh(c.name + "_" + std::to_string(counters[c.name]++));
    for (const Variable& x : c.inputs) c.in.push_back(names.at(x.node().get()));
    for (std::size_t k = 0; k < c.outputs.size(); ++k) {
      const Variable& y = c.outputs[k];
      if (!y.defined()) {
        c.out.push_back(k == 0 ? c.base : w.fresh(c.base + "_out" + std::to_string(k)));
        continue;
      }
      auto it = names.find(y.node().get());
      if (it != names.end()) c.out.push_back(it->second);
      else c.out.push_back(names[y.node().get()] = k == 0 ? c.base : w.fresh(c.base + "_out" + std::to_string(k)));
    }
    if (c.outputs.empty() || !c.outputs[0].defined())
      fail<ValueError>("onnx::export", c.name, "'s output is gone; hint: keep the outputs alive while exporting");
    w.set_node_base(c.base);
    e->second(w, c);
  }
  w.set_node_base("");
  for (const auto& [from, to] : identities) w.node("Identity", {from}, {to});
  for (std::size_t i = 0; i < outputs.size(); ++i)
    fill_value_info(out_names[i], outputs[i].dtype(), outputs[i].shape(), o.dynamic_batch && outputs[i].ndim() > 0,
                    g.add_output());

  check(model);
  write_file(model, path);
}

}  // namespace

// --- the API ---------------------------------------------------------------------------------------
void export_model(L::Layer& model, const VariableList& inputs, const std::string& path, const ExportOptions& options) {
  check_options(inputs, options, "export_model");
  VariableList outputs;
  {
    auto test = dezero::test_mode();
    auto backprop = dezero::using_config("enable_backprop", true);
    outputs = model(inputs);
  }
  const NamedParams params = model.named_params();
  write_graph(inputs, outputs, &params, path, options);
}

void export_graph(const VariableList& inputs, const VariableList& outputs, const std::string& path,
                  const ExportOptions& options) {
  check_options(inputs, options, "export_graph");
  write_graph(inputs, outputs, nullptr, path, options);
}

}  // namespace dezero::onnx
