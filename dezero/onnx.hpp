/// \file
/// ONNX in and out (dezero::onnx): export a model by tracing one forward run, import an ONNX
/// model as a trainable dezero Model.
///
/// ```cpp
/// models::MLP model({100, 10});
/// Variable x(random::randn({1, 784}, float32));
/// dezero::onnx::ExportOptions opts;
/// opts.dynamic_batch = true;                                   // axis 0 symbolic
/// dezero::onnx::export_model(model, {x}, "mlp.onnx", opts);    // runs model(x) once in test mode
///
/// dezero::onnx::OnnxModel m("mlp.onnx");                       // a dezero::Model
/// Variable y = m(x);                                           // DeZero Functions: backward works
/// optimizers::SGD sgd(0.01);
/// sgd.setup(m);                                                // the float initializers are Parameters
/// ```
///
/// Export follows onnx-chainer: the model runs once with backprop on and Config::train off,
/// the recorded graph is walked from the outputs, and each Function becomes one ONNX node (or a
/// few). Parameters become initializers named by their named_params() keys. A Function with no
/// ONNX form is a NotImplementedError naming it and the opset.
///
/// Import builds the define-by-run graph out of DeZero Functions on every call, so backward()
/// (with create_graph), optimizers, to_gpu(), save_weights() and load_weights() work on it.
/// Floating-point initializers are Parameters keyed by their ONNX names (a '/' in a name makes
/// sub-layers, so named_params() gives the name back as it was); integer initializers and
/// Constant nodes are fixed tensors; the shape arithmetic that exporters write for dynamic batch
/// sizes (Shape, Gather, Slice, Concat, Unsqueeze, Cast, ConstantOfShape ...) runs on the host.
/// Everything the model needs is checked when it is loaded: an op, attribute or dtype it does not
/// support is a NotImplementedError naming the node, the op and its opset; a corrupt file, a
/// cycle, an undefined input or external data outside the model's folder is an IOError or a
/// ValueError. docs/onnx-ops.md lists the ops, opsets and notes.
///
/// The code is in libdezero_onnx (CMake target dezero::onnx), built when CMake finds ONNX
/// (`-DDEZERO_ONNX=AUTO|ON|OFF`; Debian's libonnx-dev); is_available() says whether it was.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/layers.hpp"
#include "dezero/models.hpp"

/// ONNX import and export (libdezero_onnx).
namespace dezero::onnx {

/// Whether this build of dezero has dezero::onnx (libdezero_onnx, built when CMake found ONNX).
/// Without it the other names of this header are declared but not defined: linking a program that
/// uses them fails.
bool is_available();

// --- export ---------------------------------------------------------------------------------------
/// The keywords of export_model / export_graph (onnx-chainer's export arguments).
struct ExportOptions {
  /// The default ONNX opset of the written model: 13 to 17 (a ValueError otherwise).
  int opset_version = 13;
  /// The graph inputs' names, one per input ("input_0", "input_1", ... when empty).
  std::vector<std::string> input_names;
  /// The graph outputs' names, one per output ("output_0", ... when empty).
  std::vector<std::string> output_names;
  /// Axis 0 of every input and output is written as the symbolic dimension "batch".
  bool dynamic_batch = false;
  /// The graph's name in the file.
  std::string graph_name = "dezero";
};

/// Runs `model(inputs)` once (Config::train off, backprop on), and writes the recorded graph
/// to `path` as an ONNX model.
///
/// The model's parameters become initializers named by their named_params() keys ("l0/W").
/// The file passes onnx::checker::check_model with full shape inference; it is written to
/// a new temporary file next to it (an unpredictable name, created with O_EXCL | O_NOFOLLOW) and
/// renamed into place, so a failed export leaves no half-written file and follows no planted symlink.
/// A Function with no ONNX form is a NotImplementedError naming it and the opset; a file that
/// cannot be written is an IOError.
void export_model(L::Layer& model, const VariableList& inputs, const std::string& path,
                  const ExportOptions& options = ExportOptions());

/// Writes the recorded graph from `inputs` to `outputs` (Variables made with backprop on) as an
/// ONNX model, without a Layer: leaves that are not inputs (Parameters and other Variables the
/// graph holds) become initializers, named by Variable::name() when it is unique and set, else
/// "param_<i>". The rest as for export_model.
void export_graph(const VariableList& inputs, const VariableList& outputs, const std::string& path,
                  const ExportOptions& options = ExportOptions());

// --- import ---------------------------------------------------------------------------------------
/// One graph input or output of an imported model, as the file declares it.
struct ValueInfo {
  std::string name;                 ///< The value's name in the graph.
  DType dtype = float32;            ///< Its element type.
  std::vector<std::int64_t> shape;  ///< Its dimensions; -1 where the file gives a symbol or nothing.
  std::vector<std::string> dim_params;  ///< Per dimension, the symbol ("batch") or "" for a fixed size.
};

/// An ONNX model as a dezero::Model (the importer): `m(x)` builds the graph out of DeZero
/// Functions, so backward, optimizers, to_gpu and the weight files work on it.
class OnnxModel : public Model {
 public:
  /// Reads, checks and prepares the model at `path` (a .onnx file; external data is read from
  /// its folder only). Throws IOError for a file that cannot be read or parsed, NotImplementedError
  /// for an op, attribute, opset or dtype that is not supported (naming the node, the op and its
  /// opset), ValueError for a graph with a cycle or an undefined input.
  explicit OnnxModel(const std::string& path);
  ~OnnxModel() override;

  /// Runs the graph on one input; the first graph output. A wrong number of inputs is a ValueError.
  Variable forward(const Variable& x) override;
  /// Runs the graph on its inputs, in the order of input_names(); the outputs in the order of
  /// output_names(). An input whose dtype or rank differs from the file's is a DtypeError /
  /// ShapeError naming it; a fixed dimension that differs is a ShapeError.
  VariableList forward_multi(const VariableList& xs) override;

  /// The names of the graph inputs the caller feeds (initializers excluded), in order.
  const std::vector<std::string>& input_names() const;
  /// The names of the graph outputs, in order.
  const std::vector<std::string>& output_names() const;
  /// The inputs' and outputs' declared dtypes and shapes.
  ///@{
  const std::vector<ValueInfo>& input_info() const;
  const std::vector<ValueInfo>& output_info() const;
  ///@}
  /// The default domain's opset the model was written for.
  int opset_version() const;
  /// The op type of every node, in the graph's (topological) order.
  std::vector<std::string> op_types() const;
  /// The producer named in the file ("pytorch 1.13.1", "dezero-cpp 0.1.0"), or "".
  const std::string& producer() const;

  /// \cond INTERNAL
  struct Impl;
  /// \endcond

 private:
  std::shared_ptr<Impl> impl_;
};

/// The most memory one run of an imported model's graph (an OnnxModel call) may take on its
/// thread: the bytes of the tensors it makes, less those it frees, whatever op makes them.
///
/// A tensor that would pass it is refused before it is allocated, with a ValueError naming the
/// node, so a small file cannot make the program allocate gigabytes (a Expand or a broadcasting
/// Add that asks for 2^32 elements). 0, the default: 64 times the bytes of the model's
/// initializers and of the call's inputs, and at least 2^29 (512 MiB). Process-wide,
/// thread-safe; a ValueError for a negative value.
void set_max_run_bytes(std::int64_t bytes);
/// The value set by set_max_run_bytes (0: the automatic cap).
std::int64_t get_max_run_bytes();

}  // namespace dezero::onnx
