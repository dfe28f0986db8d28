// dezero/onnx/import.cpp - OnnxModel, the importer: reads a .onnx file with libonnx's protobuf
// classes, checks everything it will need at load time (opset, every node against the op table,
// dtypes, names, the graph's order, external data), and on every forward call runs the nodes in
// topological order as DeZero Functions (the OpDefs of import_ops_*.cpp), so that backward,
// optimizers, to_gpu and the weight files work on the imported model.
//
// Not here: reading the file and its external data (model_file.cpp), the checks of its nodes
// against the op table and of its declared inputs and outputs (import_check.cpp), the ops
// themselves (import_ops_math.cpp, import_ops_shape.cpp, import_ops_index.cpp, import_ops_conv.cpp,
// import_ops_nn.cpp), TensorProto reading and attribute access (proto.cpp), export (export.cpp).
#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dezero/error.hpp"
#include "dezero/onnx.hpp"
#include "dezero/tensor/memory_cap.hpp"
#include "dezero/onnx/model_file.hpp"
#include "dezero/onnx/ops.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::onnx {

// --- the op table -------------------------------------------------------------------------------
namespace detail {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_math_ops(t);
    register_shape_ops(t);
    register_index_ops(t);
    register_conv_ops(t);
    register_nn_ops(t);
    return t;
  }();
  return table;
}

const OpDef* find_op(const std::string& op_type, int opset) {
  for (const auto& d : op_table())
    if (d.op_type == op_type && opset >= d.min_opset && opset <= d.max_opset) return &d;
  return nullptr;
}

}  // namespace detail

namespace {

using dezero::detail::fail;
using detail::describe_node;
using detail::is_default_domain;

constexpr int kMinOpset = 7;
constexpr int kMaxOpset = 20;
constexpr std::int64_t kMinRunBytes = std::int64_t{1} << 29;  // the automatic run cap's floor
std::atomic<std::int64_t> g_max_run_bytes{0};

// The sub-layers that hold parameters whose ONNX names contain '/' ("layer1/conv/W" is layer
// "layer1", its layer "conv", its parameter "W"), so that named_params() gives the names back.
class ParamGroup : public L::Layer {
 public:
  Parameter add(const std::string& name, Parameter p) { return register_parameter(name, std::move(p)); }
  std::shared_ptr<ParamGroup> group(const std::string& name) {
    for (const auto& e : entries())
      if (e.name == name && e.layer) return std::static_pointer_cast<ParamGroup>(e.layer);
    auto g = std::make_shared<ParamGroup>();
    register_layer(name, g);
    return g;
  }
};

}  // namespace

// --- Impl -----------------------------------------------------------------------------------------
struct OnnxModel::Impl {
  std::string path;
  std::string dir_real;  // the model's folder, resolved: external data must lie inside it
  ::onnx::ModelProto proto;
  int opset = 0;
  std::string producer;

  std::vector<std::string> input_names, output_names;
  std::vector<ValueInfo> input_info, output_info;
  std::vector<bool> input_typed, input_ranked;  // per input: dtype checked, rank checked

  // Values: every name in the graph has a slot; forward fills a vector of Variables by slot.
  std::unordered_map<std::string, int> slot_of;
  int n_slots = 0;
  std::vector<int> input_slots, output_slots;
  std::vector<std::pair<int, Parameter>> params;  // float initializers
  struct Fixed {
    int slot;
    Tensor host;       // on the host, as read
    Variable on_device;  // float ones: a copy on the parameters' device, made lazily
  };
  std::vector<Fixed> fixed;  // integer initializers and Constant outputs
  std::mutex fixed_mutex;
  std::int64_t model_bytes = 0;  // the initializers' bytes: the automatic memory cap scales with them

  struct Step {
    const ::onnx::NodeProto* node;
    const detail::OpDef* op;
    std::vector<int> in;       // -1 for an empty (omitted optional) input
    std::vector<int> out;      // -1 for an empty output name
    std::vector<bool> out_used;  // consumed later or a graph output
    std::vector<int> release;  // slots whose last use is this step
  };
  std::vector<Step> steps;
  std::size_t max_inputs = 0;  // the most inputs of one step
  std::vector<const ::onnx::NodeProto*> order;  // every node, topological (Constant included)

  std::string where() const { return "onnx import: '" + path + "'"; }

  int slot(const std::string& name) {
    auto it = slot_of.find(name);
    if (it != slot_of.end()) return it->second;
    slot_of.emplace(name, n_slots);
    return n_slots++;
  }

  // --- loading --------------------------------------------------------------------------------------
  void read(const std::string& p) {
    path = p;
    detail::read_model_file(path, where(), proto);
    dir_real = detail::model_folder(path, where());
    producer = proto.producer_name();
    if (!proto.producer_version().empty()) producer += (producer.empty() ? "" : " ") + proto.producer_version();
  }

  void read_opset() {
    bool found = false;
    std::int64_t version = 0;
    for (const auto& o : proto.opset_import()) {
      if (!is_default_domain(o.domain())) continue;
      if (found && o.version() != version)
        fail<ValueError>(where().c_str(), "the default domain is imported twice, at opsets ", version, " and ",
                         o.version());
      version = o.version();
      found = true;
    }
    if (!found)
      fail<NotImplementedError>(where().c_str(), "no opset for the default ONNX domain (an IR version 2 model?); "
                                "dezero imports opsets ", kMinOpset, " to ", kMaxOpset);
    if (version < kMinOpset || version > kMaxOpset)
      fail<NotImplementedError>(where().c_str(), "opset ", version, " is not supported (dezero imports ", kMinOpset,
                                " to ", kMaxOpset, "); hint: convert it with onnx.version_converter");
    opset = static_cast<int>(version);
  }

  // Every node against the table, in the file's order, before anything else is built.
  void check_nodes() { detail::check_nodes(proto.graph(), opset); }

  Tensor constant_value(const ::onnx::NodeProto& node) {
    detail::Attrs at{node, opset};
    const auto& a = node.attribute(0);
    const std::string& n = a.name();
    if (n == "value") {
      if (a.has_t() && a.t().data_location() == ::onnx::TensorProto::EXTERNAL) {  // a large constant kept aside
        auto reader = [this](const ::onnx::TensorProto& t, std::uint64_t bytes) { return read_external(t, bytes); };
        return detail::tensor_from_proto(a.t(), "'" + path + "': " + describe_node(node, opset) + " value", reader);
      }
      return at.tensor("value");
    }
    if (n == "value_float") return array(static_cast<double>(at.f(n, 0.0f)), float32);
    if (n == "value_int") return array(static_cast<std::int64_t>(at.i(n, 0)), int64);
    if (n == "value_floats") {
      auto v = at.floats(n);
      return array(std::vector<float>(v.begin(), v.end()), float32);
    }
    auto v = at.ints(n);
    return array(v, int64);
  }

  // Graph inputs (those that are not initializers) and outputs, with their declared types.
  void read_signature(const std::unordered_set<std::string>& initializer_names) {
    const auto& g = proto.graph();
    std::unordered_set<std::string> seen;
    for (const auto& v : g.input()) {
      if (v.name().empty()) fail<ValueError>(where().c_str(), "a graph input has no name");
      if (!seen.insert(v.name()).second)
        fail<ValueError>(where().c_str(), "graph input '", v.name(), "' is declared twice");
      if (initializer_names.count(v.name())) continue;  // an initializer (a default the caller cannot override here)
      int et = 0;
      ValueInfo info = detail::value_info_of(v, where(), "input", et);
      input_names.push_back(v.name());
      input_typed.push_back(et != 0);
      input_ranked.push_back(v.has_type() && v.type().tensor_type().has_shape());
      input_info.push_back(std::move(info));
      input_slots.push_back(slot(v.name()));
    }
    if (g.output_size() == 0) fail<ValueError>(where().c_str(), "the graph has no outputs");
    for (const auto& v : g.output()) {
      if (v.name().empty()) fail<ValueError>(where().c_str(), "a graph output has no name");
      int et = 0;
      output_info.push_back(detail::value_info_of(v, where(), "output", et));
      output_names.push_back(v.name());
      output_slots.push_back(slot(v.name()));
    }
  }

  // external_data: `location` relative to the model's folder, never leaving it.
  std::string read_external(const ::onnx::TensorProto& t, std::uint64_t bytes) const {
    return detail::read_external_data(t, dir_real, where(), bytes);
  }

  // Floating-point initializers become Parameters keyed by their ONNX names. A name with '/'
  // becomes nested sub-layers ("a/b/W": layer a, layer b, parameter W) so that named_params()
  // and the weight files give it back. Escape: a name that cannot nest - an empty part ("a//b",
  // "/a", "a/"), or one whose prefix is itself an initializer ("a" and "a/b") - is registered
  // flat with each '/' written "%2F" ("a%2Fb"); a clash left after that is a ValueError.
  void read_initializers(OnnxModel& model) {
    const auto& g = proto.graph();
    if (g.sparse_initializer_size() > 0)
      fail<NotImplementedError>(where().c_str(), "sparse initializers ('", g.sparse_initializer(0).values().name(),
                                "') are not supported");
    std::unordered_set<std::string> names, float_names;  // float_names: those that become Parameters
    for (const auto& t : g.initializer()) {
      if (t.name().empty()) fail<ValueError>(where().c_str(), "an initializer has no name");
      if (!names.insert(t.name()).second)
        fail<ValueError>(where().c_str(), "initializer '", t.name(), "' is given twice");
      if (t.data_type() == ::onnx::TensorProto::FLOAT || t.data_type() == ::onnx::TensorProto::DOUBLE)
        float_names.insert(t.name());
    }
    auto reader = [this](const ::onnx::TensorProto& t, std::uint64_t bytes) { return read_external(t, bytes); };
    for (const auto& t : g.initializer()) {
      Tensor value = detail::tensor_from_proto(t, "'" + path + "': initializer '" + t.name() + "'", reader);
      const int s = slot(t.name());
      if (!is_floating(value.dtype())) {
        fixed.push_back(Fixed{s, value, Variable()});
        continue;
      }
      Parameter p(value, t.name());
      try {
        params.emplace_back(s, register_param(model, t.name(), p, float_names));
      } catch (const ValueError& e) {
        fail<ValueError>(where().c_str(), "initializer '", t.name(), "' cannot be a parameter: ", e.what());
      }
    }
  }

  static Parameter register_param(OnnxModel& model, const std::string& name, Parameter p,
                                  const std::unordered_set<std::string>& param_names) {
    std::vector<std::string> parts;
    bool nestable = name.find('/') != std::string::npos;
    std::size_t start = 0;
    while (nestable) {
      std::size_t end = name.find('/', start);
      std::string part = name.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (part.empty()) nestable = false;
      parts.push_back(part);
      if (end == std::string::npos) break;
      if (param_names.count(name.substr(0, end))) nestable = false;  // "a" is a parameter too
      start = end + 1;
    }
    if (!nestable) {
      std::string key;
      for (char c : name) {
        if (c == '/') key += "%2F";
        else key += c;
      }
      return model.register_parameter(key, std::move(p));
    }
    // The first level is on the model itself; deeper levels are ParamGroups.
    std::shared_ptr<ParamGroup> g;
    for (const auto& e : model.entries())
      if (e.name == parts[0] && e.layer) g = std::static_pointer_cast<ParamGroup>(e.layer);
    if (!g) {
      g = std::make_shared<ParamGroup>();
      model.register_layer(parts[0], g);
    }
    for (std::size_t i = 1; i + 1 < parts.size(); ++i) g = g->group(parts[i]);
    return g->add(parts.back(), std::move(p));
  }

  // The nodes in topological order (stable: the file's order where it allows), after checking
  // that every input is defined exactly once.
  void order_nodes(const std::unordered_set<std::string>& available) {
    const auto& g = proto.graph();
    const int n = g.node_size();
    std::unordered_map<std::string, int> made_by;
    for (int k = 0; k < n; ++k) {
      const auto& node = g.node(k);
      for (const auto& o : node.output()) {
        if (o.empty()) continue;
        if (available.count(o))
          detail::malformed(node, opset, "its output '" + o + "' is also a graph input or an initializer");
        auto [it, inserted] = made_by.emplace(o, k);
        if (!inserted)
          detail::malformed(node, opset, "its output '" + o + "' is also produced by " +
                                             describe_node(g.node(it->second), opset) + " (each value is defined once)");
      }
    }
    std::vector<int> pending(static_cast<std::size_t>(n), 0);
    std::vector<std::vector<int>> consumers(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      const auto& node = g.node(k);
      std::unordered_set<int> deps;
      for (const auto& in : node.input()) {
        if (in.empty() || available.count(in)) continue;
        auto it = made_by.find(in);
        if (it == made_by.end())
          detail::malformed(node, opset, "input '" + in + "' is never defined (not a graph input, an initializer or "
                                         "another node's output)");
        deps.insert(it->second);
      }
      pending[static_cast<std::size_t>(k)] = static_cast<int>(deps.size());
      for (int d : deps) consumers[static_cast<std::size_t>(d)].push_back(k);
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int k = 0; k < n; ++k)
      if (pending[static_cast<std::size_t>(k)] == 0) ready.push(k);
    while (!ready.empty()) {
      int k = ready.top();
      ready.pop();
      order.push_back(&g.node(k));
      for (int c : consumers[static_cast<std::size_t>(k)])
        if (--pending[static_cast<std::size_t>(c)] == 0) ready.push(c);
    }
    if (static_cast<int>(order.size()) != n) {
      // Every node left waits on another one left: walking from one to the made_by of an
      // input it waits on must come back to a node already seen, which lies on a cycle.
      auto waiting_on = [&](int k, std::string& value) {
        for (const auto& in : g.node(k).input()) {
          auto it = made_by.find(in);
          if (!in.empty() && !available.count(in) && it != made_by.end() &&
              pending[static_cast<std::size_t>(it->second)] > 0) {
            value = in;
            return it->second;
          }
        }
        return -1;
      };
      int k = 0;
      while (pending[static_cast<std::size_t>(k)] == 0) ++k;
      std::vector<bool> seen(static_cast<std::size_t>(n), false);
      std::string value;
      while (k >= 0 && !seen[static_cast<std::size_t>(k)]) {
        seen[static_cast<std::size_t>(k)] = true;
        k = waiting_on(k, value);
      }
      if (k < 0) fail<ValueError>(where().c_str(), "the graph has a cycle");
      waiting_on(k, value);
      detail::malformed(g.node(k), opset, "the graph has a cycle: input '" + value + "' depends on this node's own output");
    }
    for (const auto& name : output_names)
      if (!available.count(name) && !made_by.count(name))
        fail<ValueError>(where().c_str(), "graph output '", name, "' is never defined");
  }

  // Steps to run, and when each intermediate value can be dropped.
  void plan() {
    std::unordered_set<int> keep(output_slots.begin(), output_slots.end());
    for (const auto& p : params) keep.insert(p.first);
    for (const auto& f : fixed) keep.insert(f.slot);
    for (int s : input_slots) keep.insert(s);
    for (const auto* node : order) {
      if (node->op_type() == "Constant") {
        Tensor value = constant_value(*node);
        const int s = slot(node->output(0));
        fixed.push_back(Fixed{s, value, Variable()});
        keep.insert(s);
        continue;
      }
      Step st{node, detail::find_op(node->op_type(), opset), {}, {}, {}, {}};
      for (const auto& in : node->input()) st.in.push_back(in.empty() ? -1 : slot(in));
      max_inputs = std::max(max_inputs, st.in.size());
      for (const auto& o : node->output()) st.out.push_back(o.empty() ? -1 : slot(o));
      steps.push_back(std::move(st));
    }
    std::vector<int> last_use(static_cast<std::size_t>(n_slots), -1);
    for (std::size_t k = 0; k < steps.size(); ++k)
      for (int s : steps[k].in)
        if (s >= 0) last_use[static_cast<std::size_t>(s)] = static_cast<int>(k);
    for (std::size_t k = 0; k < steps.size(); ++k) {
      auto& st = steps[k];
      for (int s : st.out) {
        const bool is_output = s >= 0 && keep.count(s);
        const bool consumed = s >= 0 && last_use[static_cast<std::size_t>(s)] > static_cast<int>(k);
        st.out_used.push_back(is_output || consumed);
        if (s >= 0 && !is_output && !consumed) st.release.push_back(s);  // produced, never read
      }
    }
    for (int s = 0; s < n_slots; ++s) {
      int k = last_use[static_cast<std::size_t>(s)];
      if (k >= 0 && !keep.count(s)) steps[static_cast<std::size_t>(k)].release.push_back(s);
    }
  }

  // What the two passes below need to know of the graph: how many node inputs and graph outputs
  // read each value, the float initializers and their Parameters, the parameter keys taken, and
  // every value name the file uses (so that a new one is fresh).
  struct ValueIndex {
    std::unordered_map<std::string, int> readers;
    std::unordered_map<std::string, std::size_t> param_of;  // float initializer name -> index in params
    std::unordered_set<std::string> taken, float_names, names_used;
  };
  ValueIndex index_values(OnnxModel& model) const {
    const auto& g = proto.graph();
    ValueIndex ix;
    for (const auto* node : order)
      for (const auto& in : node->input())
        if (!in.empty()) ++ix.readers[in];
    for (const auto& o : g.output()) ++ix.readers[o.name()];
    for (const auto& t : g.initializer())
      for (std::size_t i = 0; i < params.size(); ++i)
        if (params[i].first == slot_of.at(t.name())) ix.param_of[t.name()] = i;
    for (const auto& [k, p] : model.named_params()) ix.taken.insert(k);
    for (const auto& [n, i] : ix.param_of) ix.float_names.insert(n);
    for (const auto& [n, sl] : slot_of) ix.names_used.insert(n);
    for (const auto* node : order) {
      for (const auto& in : node->input()) ix.names_used.insert(in);
      for (const auto& o : node->output()) ix.names_used.insert(o);
    }
    return ix;
  }
  // A copy of params[from] as a new Parameter `name`, read through a new value name from `base`.
  std::string add_copy(OnnxModel& model, ValueIndex& ix, std::size_t from, const std::string& name,
                       const std::string& base) {
    std::string value_name = base + name;  // a value name the file does not use
    while (ix.names_used.count(value_name)) value_name += "_";
    ix.names_used.insert(value_name);
    const Tensor value = params[from].second.data().copy();
    params.emplace_back(slot(value_name), register_param(model, name, Parameter(value, name), ix.float_names));
    ix.taken.insert(name);
    return value_name;
  }

  // PyTorch's exporter merges initializers of equal values: in a fresh export every BatchNorm
  // weight of one size is the same initializer (all ones), the other BatchNorms reading it
  // through an Identity node. Trained as the file says, the merged weights would stay tied where
  // PyTorch's were separate, and fine-tuning would drift from PyTorch's after the first step
  // (ResNet18: 5 BatchNorms shared bn1.weight). An Identity whose input is a float initializer
  // that something else reads too gets a Parameter of its own, a copy, named after the Identity's
  // output: each value the file names is then its own tensor, and an update to one changes no
  // other. (Weights that a model really shares, PyTorch writes as one initializer read directly,
  // and they stay shared.) Before separate_batch_norm_statistics and plan().
  void untie_identity_copies(OnnxModel& model) {
    ValueIndex ix = index_values(model);
    for (const auto* cnode : order) {
      if (cnode->op_type() != "Identity" || cnode->input_size() != 1 || cnode->output_size() != 1) continue;
      const std::string src = cnode->input(0);
      auto it = ix.param_of.find(src);
      if (it == ix.param_of.end() || ix.readers[src] < 2) continue;
      auto* node = const_cast<::onnx::NodeProto*>(cnode);  // the Impl's own copy of the file's graph
      std::string name = node->output(0);
      for (int k = 2; ix.taken.count(name); ++k) name = node->output(0) + "_" + std::to_string(k);
      --ix.readers[src];
      node->set_input(0, add_copy(model, ix, it->second, name, "dezero/untied/"));
    }
  }

  // BatchNormalization updates its running statistics in place (train mode, fine-tuning). An
  // exporter may hand it a tensor the file also uses elsewhere: PyTorch merges initializers of
  // equal values, so a fresh export's running_var is an Identity of some BN's weight (all ones)
  // and running_mean of some bias. Each statistic that is not this node's alone (its initializer,
  // or the Identity chain from it, has another reader) gets a Parameter of its own, a copy, named
  // after the value the node reads: no update then reaches a weight or another node's statistic.
  // Before plan(), while the graph's names are still in the proto.
  void separate_batch_norm_statistics(OnnxModel& model) {
    ValueIndex ix = index_values(model);
    std::unordered_map<std::string, std::string> identity_of;  // an Identity's output -> its input
    for (const auto* node : order)
      if (node->op_type() == "Identity" && node->input_size() == 1 && node->output_size() == 1)
        identity_of[node->output(0)] = node->input(0);
    for (const auto* cnode : order) {
      if (cnode->op_type() != "BatchNormalization") continue;
      auto* node = const_cast<::onnx::NodeProto*>(cnode);  // the Impl's own copy of the file's graph
      for (int i : {3, 4}) {
        if (node->input_size() <= i || node->input(i).empty()) continue;
        const std::string read = node->input(i);
        std::string src = read;
        bool alone = ix.readers[src] == 1;
        while (identity_of.count(src)) {
          src = identity_of.at(src);
          alone = alone && ix.readers[src] == 1;
        }
        auto it = ix.param_of.find(src);
        if (alone || it == ix.param_of.end()) continue;
        const std::string stat = i == 3 ? "/running_mean" : "/running_var";
        std::string name = read != src && !ix.taken.count(read) ? read : node->output(0) + stat;
        for (int k = 2; ix.taken.count(name); ++k) name = node->output(0) + stat + "_" + std::to_string(k);
        node->set_input(i, add_copy(model, ix, it->second, name, "dezero/statistic/"));
      }
    }
  }

  void load(OnnxModel& model, const std::string& p) {
    read(p);
    read_opset();
    check_nodes();
    const auto& g = proto.graph();
    std::unordered_set<std::string> initializer_names;
    for (const auto& t : g.initializer()) initializer_names.insert(t.name());
    read_signature(initializer_names);
    std::unordered_set<std::string> available(initializer_names);
    for (const auto& v : g.input()) available.insert(v.name());
    order_nodes(available);
    read_initializers(model);
    untie_identity_copies(model);
    separate_batch_norm_statistics(model);
    for (const auto& p : params) model_bytes += static_cast<std::int64_t>(p.second.data().nbytes());
    for (const auto& f : fixed) model_bytes += static_cast<std::int64_t>(f.host.nbytes());
    plan();
    proto.mutable_graph()->clear_initializer();  // their data lives in the Parameters and fixed tensors now
  }

  // --- running --------------------------------------------------------------------------------------
  void check_inputs(const VariableList& xs) const {
    if (xs.size() != input_names.size()) {
      std::string names;
      for (const auto& n : input_names) names += (names.empty() ? "" : ", ") + n;
      fail<ValueError>(where().c_str(), "the model takes ", input_names.size(), " input(s) (", names, "), got ",
                       xs.size());
    }
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const ValueInfo& info = input_info[i];
      auto who = [&] { return where() + ": input '" + info.name + "'"; };
      if (!xs[i].defined() || !xs[i].data().defined()) throw ValueError(who() + " is an empty Variable");
      if (input_typed[i] && xs[i].dtype() != info.dtype)
        throw DtypeError(who() + " is " + dtype_name(xs[i].dtype()) + " but the model declares " + dtype_name(info.dtype) +
                         "; hint: convert it with astype(" + dtype_name(info.dtype) + ")");
      if (!input_ranked[i]) continue;
      const Shape& shape = xs[i].shape();
      auto declared = [&] {
        std::string s = "(";
        for (std::size_t d = 0; d < info.shape.size(); ++d) {
          if (d) s += ", ";
          s += info.shape[d] >= 0 ? std::to_string(info.shape[d])
               : info.dim_params[d].empty() ? std::string("?") : info.dim_params[d];
        }
        return s + (info.shape.size() == 1 ? ",)" : ")");
      };
      if (static_cast<std::size_t>(shape.ndim()) != info.shape.size())
        throw ShapeError(who() + " has shape " + shape.str() + " but the model declares rank " +
                         std::to_string(info.shape.size()) + " " + declared());
      for (std::size_t d = 0; d < info.shape.size(); ++d)
        if (info.shape[d] >= 0 && shape[static_cast<int>(d)] != info.shape[d])
          throw ShapeError(who() + " has shape " + shape.str() + " but the model declares " + declared() + " (axis " +
                           std::to_string(d) + " must be " + std::to_string(info.shape[d]) + ")");
    }
  }

  // Runs one node's op; a dezero::Error from inside it is rethrown (same class) naming the node.
  VariableList run_step(const Step& st, const std::vector<const Variable*>& ins, Device device) const {
    detail::OpContext ctx(*st.node, opset, ins, device);
    auto named = [&](const Error& e) {
      const std::string node = describe_node(*st.node, opset), m = e.what();
      return m.find(node) != std::string::npos ? m : "onnx import: " + node + ": " + m;
    };
    try {
      return st.op->run(ctx);
    } catch (const std::bad_alloc&) {
      fail<ValueError>("onnx import", describe_node(*st.node, opset),
                       ": not enough memory for what it makes; hint: onnx::set_max_run_bytes caps a run below that");
    } catch (const DeviceError&) {
      throw;  // CUDA failures and out-of-memory keep their own class and message
    } catch (const ShapeError& e) {
      throw ShapeError(named(e));
    } catch (const DtypeError& e) {
      throw DtypeError(named(e));
    } catch (const IndexError& e) {
      throw IndexError(named(e));
    } catch (const ValueError& e) {
      throw ValueError(named(e));
    } catch (const NotImplementedError& e) {
      throw NotImplementedError(named(e));
    }
  }

  VariableList forward(const VariableList& xs) {
    check_inputs(xs);
    // What the run may hold (set_max_run_bytes): checked before every tensor any op allocates.
    std::int64_t input_bytes = 0;
    for (const Variable& x : xs) input_bytes += static_cast<std::int64_t>(x.data().nbytes());
    const std::int64_t set = get_max_run_bytes();
    const std::int64_t limit = set > 0 ? set : std::max(kMinRunBytes, 64 * (model_bytes + input_bytes));
    dezero::detail::MemoryCap cap(limit, [this, limit, set](std::int64_t asked, std::int64_t held) {
      return "a tensor of " + std::to_string(asked) + " bytes, with the " + std::to_string(held) +
             " bytes this run of '" + path + "' holds, passes its cap of " + std::to_string(limit) + " bytes (" +
             (set > 0 ? std::string("onnx::set_max_run_bytes")
                      : std::string("64 x the model's and the inputs' bytes, at least 512 MiB; onnx::set_max_run_bytes "
                                    "sets another")) +
             "); a malformed model, or a shape input that asks for too much?";
    });
    std::vector<Variable> vals(static_cast<std::size_t>(n_slots));
    Device device = !params.empty() && params.front().second.data().defined() ? params.front().second.device()
                    : !xs.empty() ? xs[0].device()
                                  : Device::cpu();
    for (std::size_t i = 0; i < xs.size(); ++i) vals[static_cast<std::size_t>(input_slots[i])] = xs[i];
    for (const auto& p : params) vals[static_cast<std::size_t>(p.first)] = p.second;
    if (!fixed.empty()) {
      std::lock_guard<std::mutex> lock(fixed_mutex);
      for (auto& f : fixed) {
        // Integer values (shape arithmetic, indices) stay on the host; float ones follow the parameters.
        const Device want = is_floating(f.host.dtype()) ? device : Device::cpu();
        if (!f.on_device.defined() || f.on_device.device() != want) {
          f.on_device = Variable(f.host.to(want));
          f.on_device.set_requires_grad(false);
        }
        vals[static_cast<std::size_t>(f.slot)] = f.on_device;
      }
    }
    std::vector<const Variable*> ins;
    ins.reserve(max_inputs);
    for (const auto& st : steps) {
      ins.clear();
      for (int s : st.in) {
        const Variable* v = s >= 0 ? &vals[static_cast<std::size_t>(s)] : nullptr;
        ins.push_back(v && v->defined() ? v : nullptr);
      }
      VariableList outs = run_step(st, ins, device);
      if (outs.size() > st.out.size())
        detail::malformed(*st.node, opset, "the op returned " + std::to_string(outs.size()) + " outputs for " +
                                               std::to_string(st.out.size()) + " named by the node");
      for (std::size_t o = 0; o < st.out.size(); ++o) {
        const bool have = o < outs.size() && outs[o].defined();
        if (!have && st.out_used[o])
          detail::malformed(*st.node, opset, "the op gave no value for output '" + st.node->output(static_cast<int>(o)) +
                                                 "', which the graph uses");
        if (have && st.out[o] >= 0) vals[static_cast<std::size_t>(st.out[o])] = std::move(outs[o]);
      }
      for (int s : st.release) vals[static_cast<std::size_t>(s)] = Variable();
    }
    VariableList ys;
    for (std::size_t o = 0; o < output_slots.size(); ++o) {
      const Variable& y = vals[static_cast<std::size_t>(output_slots[o])];
      if (!y.defined()) fail<ValueError>(where().c_str(), "graph output '", output_names[o], "' got no value");
      ys.push_back(y);
    }
    return ys;
  }
};

// --- OnnxModel --------------------------------------------------------------------------------------
OnnxModel::OnnxModel(const std::string& path) : impl_(std::make_shared<Impl>()) { impl_->load(*this, path); }

OnnxModel::~OnnxModel() = default;

Variable OnnxModel::forward(const Variable& x) { return impl_->forward(VariableList{x})[0]; }

VariableList OnnxModel::forward_multi(const VariableList& xs) { return impl_->forward(xs); }

void set_max_run_bytes(std::int64_t bytes) {
  if (bytes < 0) fail<ValueError>("onnx::set_max_run_bytes", "the cap must be >= 0 (0: automatic), got ", bytes);
  g_max_run_bytes.store(bytes, std::memory_order_relaxed);
}
std::int64_t get_max_run_bytes() { return g_max_run_bytes.load(std::memory_order_relaxed); }

const std::vector<std::string>& OnnxModel::input_names() const { return impl_->input_names; }
const std::vector<std::string>& OnnxModel::output_names() const { return impl_->output_names; }
const std::vector<ValueInfo>& OnnxModel::input_info() const { return impl_->input_info; }
const std::vector<ValueInfo>& OnnxModel::output_info() const { return impl_->output_info; }
int OnnxModel::opset_version() const { return impl_->opset; }
const std::string& OnnxModel::producer() const { return impl_->producer; }

std::vector<std::string> OnnxModel::op_types() const {
  std::vector<std::string> out;
  out.reserve(impl_->order.size());
  for (const auto* n : impl_->order) out.push_back(n->op_type());
  return out;
}

}  // namespace dezero::onnx
