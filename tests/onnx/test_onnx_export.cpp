// tests/onnx/test_onnx_export.cpp - export_model / export_graph (onnx-chainer's design) judged by
// round trips: each model is exported, the file is read back with libonnx and passes its checker,
// it is imported as an onnx::OnnxModel, and the outputs (float32, 1e-5) and the gradients of the
// inputs and of the parameters (matched by their named_params() keys, which are the initializers'
// names) after one backward equal the original's. Also: a graph of most exportable functions,
// dynamic batch sizes, opset 17, and the errors (a Function with no ONNX form, a bad opset, a
// path that cannot be written).
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/onnx.hpp>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "support/test_util.hpp"
#include "onnx_test_util.hpp"
#include "ort_case_writer.hpp"

using namespace dezero;
namespace dx = dezero::onnx;

namespace {

using dezero_onnx_test::TempDir;

// --- files ------------------------------------------------------------------------------------------

// The file read back with libonnx; it passes ONNX's checker and names us as its producer.
::onnx::ModelProto checked(const std::string& path) {
  ::onnx::ModelProto m;
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  REQUIRE(m.ParseFromIstream(&f));
  CHECK_NOTHROW(::onnx::checker::check_model(m));
  CHECK(m.producer_name() == "dezero-cpp");
  CHECK(m.producer_version() == dezero::version());
  return m;
}

// For ONNX Runtime, the second judge (CTest onnx_ort, which runs after this file's tests): when
// DEZERO_ORT_CASES names a folder, the model just exported at `path` and dezero's outputs of `f`
// for `xs` in test mode are left there, and with `dynamic` (dynamic_batch) also for a batch of 3
// made of xs's rows.
void leave_for_ort(const std::string& path, const std::function<VariableList(const VariableList&)>& f,
                   const VariableList& xs, bool dynamic) {
  const char* root = std::getenv("DEZERO_ORT_CASES");
  if (!root || !*root) return;
  static std::atomic<int> counter{0};
  const std::string stem = std::filesystem::path(path).stem().string();
  const std::string dir = std::string(root) + "/" + std::to_string(counter++) + "_" + stem;
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(path, dir + "/model.onnx", std::filesystem::copy_options::overwrite_existing);
  ::onnx::ModelProto m;
  std::ifstream file(path, std::ios::binary);
  REQUIRE(m.ParseFromIstream(&file));
  auto test = test_mode();
  auto ng = no_grad();
  auto write = [&](const VariableList& in) {
    ort_case::Inputs named;
    for (std::size_t i = 0; i < in.size(); ++i) named.emplace_back(m.graph().input(static_cast<int>(i)).name(), in[i]);
    ort_case::write(dir, in.empty() ? 0 : in[0].shape()[0], named, f(in));
  };
  write(xs);
  if (!dynamic || xs.empty() || xs[0].ndim() == 0) return;
  const std::int64_t n = xs[0].shape()[0];
  const Tensor rows = array(std::vector<std::int64_t>{0, 1 % n, 2 % n}, Shape{3}, int64);
  VariableList x3;
  for (const Variable& x : xs) x3.push_back(Variable(take(x.data(), rows.to(x.data().device()))));
  if (n != 3) write(x3);
}

std::set<std::string> initializer_names(const ::onnx::ModelProto& m) {
  std::set<std::string> s;
  for (const auto& t : m.graph().initializer()) s.insert(t.name());
  return s;
}

// The op types of the nodes, Constant nodes (the exporter's fixed scalars) left out.
std::vector<std::string> op_types(const ::onnx::ModelProto& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node())
    if (n.op_type() != "Constant") ops.push_back(n.op_type());
  return ops;
}

bool has_op(const ::onnx::ModelProto& m, const std::string& op) {
  auto ops = op_types(m);
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// |got - want| <= tol (|want| + max |want|) element by element: float32 arithmetic in a
// different order is exact to a few ulps of the largest terms. A plain loop over the host
// data: VGG16's gradients are 138M elements.
template <class T>
bool close_data(const Tensor& got, const Tensor& want, double tol, std::string& where) {
  const T* g = got.data<T>();
  const T* w = want.data<T>();
  const std::int64_t n = want.size();
  double scale = 0;
  for (std::int64_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(static_cast<double>(w[i])));
  for (std::int64_t i = 0; i < n; ++i) {
    const double gi = g[i], wi = w[i];
    if (!(std::abs(gi - wi) <= tol * (std::abs(wi) + scale))) {
      where = "element " + std::to_string(i) + ": " + std::to_string(gi) + " != " + std::to_string(wi);
      return false;
    }
  }
  return true;
}
void check_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  REQUIRE_MESSAGE(got.defined(), what << ": no value");
  CHECK_MESSAGE(got.shape() == want.shape(), what << ": shape " << got.shape().str() << " != " << want.shape().str());
  if (got.shape() != want.shape()) return;
  const Tensor w = want.to_cpu();
  const Tensor g = got.dtype() == w.dtype() ? got.to_cpu() : got.to_cpu().astype(w.dtype());
  std::string where;
  bool ok = false;
  switch (w.dtype()) {
    case float32: ok = close_data<float>(g, w, tol, where); break;
    case float64: ok = close_data<double>(g, w, tol, where); break;
    case int32: ok = close_data<std::int32_t>(g, w, tol, where); break;
    case int64: ok = close_data<std::int64_t>(g, w, tol, where); break;
    case bfloat16:  // compared through float32 (exact widening)
    case float16: {
      const Tensor w32 = w.astype(float32);
      ok = close_data<float>(g.astype(float32), w32, tol, where);
      break;
    }
  }
  CHECK_MESSAGE(ok, what << ": " << where);
}

// --- one forward and backward -------------------------------------------------------------------------
struct Run {
  VariableList ys;
  std::vector<Tensor> gxs;                // the inputs' gradients (undefined for integer inputs)
  std::map<std::string, Tensor> gparams;  // the parameters' gradients by key
};

// ys = f(xs) in test mode, then the backward of sum_i sum(ys_i * r_i), r_i drawn from a fixed
// seed, so that the gradient elements differ from each other.
Run run(const std::function<VariableList(const VariableList&)>& f, const VariableList& xs_in,
        const std::vector<std::pair<std::string, Parameter>>& params) {
  auto test = test_mode();
  VariableList xs;
  for (const Variable& x : xs_in) xs.push_back(Variable(x.data()));
  for (auto kp : params) kp.second.cleargrad();
  Run r;
  r.ys = f(xs);
  random::Generator gen(7);
  Variable loss;
  for (const Variable& y : r.ys) {
    Variable t = F::sum(y * Variable(gen.randn(y.shape(), y.dtype())));
    loss = loss.defined() ? loss + t : t;
  }
  loss.backward();
  for (const Variable& x : xs) r.gxs.push_back(x.has_grad() ? x.grad().data() : Tensor());
  for (const auto& [k, p] : params)
    if (p.has_grad()) r.gparams[k] = p.grad().data();
  return r;
}
Run run(L::Layer& model, const VariableList& xs) {
  return run([&](const VariableList& v) { return model(v); }, xs, model.named_params());
}

void compare(const Run& got, const Run& want, double tol) {
  REQUIRE(got.ys.size() == want.ys.size());
  for (std::size_t i = 0; i < want.ys.size(); ++i)
    check_close(got.ys[i].data(), want.ys[i].data(), tol, "output " + std::to_string(i));
  for (std::size_t i = 0; i < want.gxs.size(); ++i)
    if (want.gxs[i].defined()) check_close(got.gxs[i], want.gxs[i], tol, "gradient of input " + std::to_string(i));
  CHECK(!want.gparams.empty());
  for (const auto& [k, g] : want.gparams) {
    auto it = got.gparams.find(k);
    CHECK_MESSAGE(it != got.gparams.end(), "the imported model has no gradient for '" << k << "'");
    if (it != got.gparams.end()) check_close(it->second, g, tol, "gradient of " + k);
  }
}

// Exports `model` on xs, checks the file, imports it and compares one forward and backward.
// Returns the file as libonnx reads it.
::onnx::ModelProto round_trip(L::Layer& model, const VariableList& xs, const dx::ExportOptions& opts = {},
                              double tol = 1e-5) {
  TempDir dir;
  const std::string path = dir.file("model.onnx");
  dx::export_model(model, xs, path, opts);
  CHECK(!std::filesystem::exists(path + ".tmp"));
  ::onnx::ModelProto m = checked(path);
  CHECK(m.opset_import(0).version() == opts.opset_version);
  std::set<std::string> inits = initializer_names(m);
  for (const auto& [k, p] : model.named_params()) CHECK_MESSAGE(inits.count(k), "no initializer '" << k << "'");

  Run want = run(model, xs);
  leave_for_ort(path, [&](const VariableList& v) { return model(v); }, xs, opts.dynamic_batch);
  dx::OnnxModel imported(path);
  CHECK(imported.producer().find("dezero-cpp") != std::string::npos);
  Run got = run(imported, xs);
  compare(got, want, tol);
  return m;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// --- models ---------------------------------------------------------------------------------------------
// conv (pad 1) + BatchNorm + ReLU + max pooling + conv (stride 2) + average pooling (pad 1) + Linear.
class SmallCNN : public Model {
 public:
  SmallCNN() {
    conv1 = register_layer("conv1", std::make_shared<L::Conv2d>(4, 3, 1, 1));
    bn1 = register_layer("bn1", std::make_shared<L::BatchNorm>());
    conv2 = register_layer("conv2", std::make_shared<L::Conv2d>(6, 3, 2, 1, /*nobias=*/true));
    fc = register_layer("fc", std::make_shared<L::Linear>(5));
  }
  // x: (N, 2, 8, 8) -> (N, 4, 8, 8) -> pool (N, 4, 4, 4) -> (N, 6, 2, 2) -> avg (N, 6, 2, 2) -> (N, 5)
  Variable forward(const Variable& x) override {
    Variable h = F::relu((*bn1)((*conv1)(x)));
    h = F::pooling(h, 2, 2);
    h = F::average_pooling((*conv2)(h), 3, 1, 1);
    return (*fc)(F::reshape(h, {h.shape()[0], -1}));
  }
  std::shared_ptr<L::Conv2d> conv1, conv2;
  std::shared_ptr<L::BatchNorm> bn1;
  std::shared_ptr<L::Linear> fc;
};

// Grouped convolutions: a depthwise one with a channel multiplier (4 -> 8 in 4 groups), a
// grouped one (8 -> 6 in 2 groups, no bias), a grouped transposed one (6 -> 3 in 3 groups).
class GroupedCNN : public Model {
 public:
  GroupedCNN() {
    L::ConvOptions dw;
    dw.pad = 1;
    dw.groups = 4;
    depthwise = register_layer("dw", std::make_shared<L::Conv2d>(8, 3, dw));
    L::ConvOptions g2;
    g2.stride = 2;
    g2.nobias = true;
    g2.groups = 2;
    grouped = register_layer("g2", std::make_shared<L::Conv2d>(6, 3, g2));
    L::ConvOptions d3;
    d3.stride = 2;
    d3.pad = 1;
    d3.groups = 3;
    up = register_layer("up", std::make_shared<L::Deconv2d>(3, 4, d3));
  }
  // x: (N, 4, 8, 8) -> (N, 8, 8, 8) -> (N, 6, 3, 3) -> (N, 3, 6, 6)
  Variable forward(const Variable& x) override {
    return (*up)(F::relu((*grouped)(F::relu((*depthwise)(x)))));
  }
  std::shared_ptr<L::Conv2d> depthwise, grouped;
  std::shared_ptr<L::Deconv2d> up;
};

// Two steps of an LSTM (the recurrent weights are used from the second on), then Linear.
class TwoStepLSTM : public Model {
 public:
  TwoStepLSTM() {
    lstm = register_layer("lstm", std::make_shared<L::LSTM>(6));
    fc = register_layer("fc", std::make_shared<L::Linear>(2));
  }
  // x: (N, 4) -> h (N, 6) twice -> (N, 2)
  Variable forward(const Variable& x) override {
    lstm->reset_state();
    (*lstm)(x);
    return (*fc)((*lstm)(F::tanh(x)));
  }
  std::shared_ptr<L::LSTM> lstm;
  std::shared_ptr<L::Linear> fc;
};

// The activations and normalisation of PyTorch's model zoo: gelu (both forms), hard_swish,
// hard_sigmoid, erf, layer_norm over one axis (lazy L::LayerNorm) and over two (L::LayerNorm({2, 3})).
class ZooNet : public Model {
 public:
  ZooNet() {
    l1 = register_layer("l1", std::make_shared<L::Linear>(6));
    ln1 = register_layer("ln1", std::make_shared<L::LayerNorm>());
    ln2 = register_layer("ln2", std::make_shared<L::LayerNorm>(Shape{2, 3}, 1e-3));
    l2 = register_layer("l2", std::make_shared<L::Linear>(3));
  }
  // x: (N, 5) -> (N, 6) -> (N, 2, 3) -> (N, 6) -> (N, 3)
  Variable forward(const Variable& x) override {
    Variable h = (*ln1)(F::gelu((*l1)(x)));
    h = F::hard_swish(F::gelu(h * 2.0, "tanh")) + F::hard_sigmoid(h, 0.3, 0.4) * F::erf(h);
    h = (*ln2)(F::reshape(h, {h.shape()[0], 2, 3}));
    return (*l2)(F::reshape(h, {h.shape()[0], 6}));
  }
  std::shared_ptr<L::Linear> l1, l2;
  std::shared_ptr<L::LayerNorm> ln1, ln2;
};

// A few train-mode passes, so that BatchNorm's running statistics are not 0 and 1.
void warm_up(L::Layer& model, const Shape& shape) {
  random::Generator gen(3);
  for (int i = 0; i < 3; ++i) model(Variable(gen.randn(shape, float32) * 2.0 + 0.5));
}

// A Function that the exporter does not know.
class Cube : public Function {
 public:
  TensorList forward(const TensorList& xs) override { return {xs[0] * xs[0] * xs[0]}; }
  VariableList backward(const VariableList& gys) override { return {gys[0] * input(0) * input(0) * 3.0}; }
};

}  // namespace

// --- round trips of the models ---------------------------------------------------------------------------
TEST_CASE("onnx export: MLP round trip (MatMul + Add + Sigmoid), outputs and gradients equal") {
  random::Generator gen(1);
  models::MLP model({10, 7, 3});
  Variable x(gen.randn({4, 6}, float32));
  ::onnx::ModelProto m = round_trip(model, {x});
  CHECK(op_types(m) ==
        std::vector<std::string>{"MatMul", "Add", "Sigmoid", "MatMul", "Add", "Sigmoid", "MatMul", "Add"});
  CHECK(initializer_names(m) == std::set<std::string>{"l0/W", "l0/b", "l1/W", "l1/b", "l2/W", "l2/b"});
  CHECK(m.graph().input_size() == 1);
  CHECK(m.graph().input(0).name() == "input_0");
  CHECK(m.graph().output(0).name() == "output_0");
  CHECK(m.graph().input(0).type().tensor_type().shape().dim(0).dim_value() == 4);
}

TEST_CASE("onnx export: Sequential with layers and callables round trip") {
  random::Generator gen(2);
  models::Sequential model{std::make_shared<L::Linear>(8), F::tanh, std::make_shared<L::Linear>(6),
                           [](const Variable& v) { return F::leaky_relu(v, 0.1); }, std::make_shared<L::Linear>(4),
                           [](const Variable& v) { return F::log_softmax(v); }};
  Variable x(gen.randn({3, 5}, float32));
  dx::ExportOptions opts;
  opts.input_names = {"features"};
  opts.output_names = {"log_probs"};
  ::onnx::ModelProto m = round_trip(model, {x}, opts);
  CHECK(m.graph().input(0).name() == "features");
  CHECK(m.graph().output(0).name() == "log_probs");
  CHECK(has_op(m, "Tanh"));
  CHECK(has_op(m, "LeakyRelu"));
  CHECK(has_op(m, "LogSoftmax"));
}

TEST_CASE("onnx export: gelu, hard_swish, hard_sigmoid, erf and layer_norm round trip at opsets 13, 14 and 17") {
  random::Generator gen(23);
  ZooNet model;
  model(Variable(gen.randn({2, 5}, float32)));  // the lazy parameters
  // non-trivial gamma and beta
  for (auto* ln : {model.ln1.get(), model.ln2.get()}) {
    ln->gamma.set_data(gen.rand(ln->gamma.shape(), float32) + 0.5);
    ln->beta.set_data(gen.randn(ln->beta.shape(), float32) * 0.3);
  }
  for (int opset : {13, 14, 17}) {
    CAPTURE(opset);
    dx::ExportOptions opts;
    opts.opset_version = opset;
    opts.dynamic_batch = true;
    ::onnx::ModelProto m = round_trip(model, {Variable(gen.randn({4, 5}, float32))}, opts, 2e-5);
    for (const char* op : {"Erf", "Tanh", "HardSigmoid"}) CHECK_MESSAGE(has_op(m, op), "no " << op);
    CHECK(has_op(m, "HardSwish") == (opset >= 14));
    CHECK(has_op(m, "LayerNormalization") == (opset >= 17));
    CHECK(has_op(m, "ReduceMean") == (opset < 17));
  }
}

TEST_CASE("onnx export: an LSTM layer (two steps) round trip") {
  random::Generator gen(17);
  TwoStepLSTM model;
  round_trip(model, {Variable(gen.randn({3, 4}, float32))});
}

TEST_CASE("onnx export: a CNN with Conv2d, BatchNorm (running statistics), pooling and Linear round trip") {
  random::Generator gen(4);
  SmallCNN model;
  warm_up(model, {4, 2, 8, 8});
  std::vector<double> mean = dzt::vals(model.bn1->avg_mean);
  CHECK(std::any_of(mean.begin(), mean.end(), [](double v) { return v != 0.0; }));
  Variable x(gen.randn({2, 2, 8, 8}, float32));
  ::onnx::ModelProto m = round_trip(model, {x});
  for (const char* op : {"Conv", "BatchNormalization", "Relu", "MaxPool", "AveragePool", "Reshape", "MatMul"})
    CHECK_MESSAGE(has_op(m, op), "no " << op);
  std::set<std::string> inits = initializer_names(m);
  CHECK(inits.count("bn1/avg_mean"));
  CHECK(inits.count("bn1/avg_var"));
  // The running statistics in the file are the layer's.
  for (const auto& t : m.graph().initializer())
    if (t.name() == "bn1/avg_mean") {
      std::vector<float> v(mean.size());
      REQUIRE(t.raw_data().size() == v.size() * sizeof(float));
      std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
      for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == doctest::Approx(mean[i]));
    }
  // DeZero's average pooling counts the padded zeros: a Pad node, then AveragePool.
  std::vector<std::string> ops = op_types(m);
  auto avg = std::find(ops.begin(), ops.end(), "AveragePool");
  REQUIRE(avg != ops.end());
  CHECK(*(avg - 1) == "Pad");
}

TEST_CASE("onnx export: grouped and depthwise Conv2d / Deconv2d round trip with ONNX's group attribute") {
  random::Generator gen(21);
  GroupedCNN model;
  Variable x(gen.randn({2, 4, 8, 8}, float32));
  ::onnx::ModelProto m = round_trip(model, {x});
  CHECK(op_types(m) == std::vector<std::string>{"Conv", "Relu", "Conv", "Relu", "ConvTranspose"});
  std::vector<std::int64_t> groups;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Conv" && n.op_type() != "ConvTranspose") continue;
    std::int64_t g = 0;
    for (const auto& a : n.attribute())
      if (a.name() == "group") g = a.i();
    groups.push_back(g);
  }
  CHECK(groups == std::vector<std::int64_t>{4, 2, 3});
  // An ordinary convolution writes no group (ONNX's default, 1).
  SmallCNN plain;
  ::onnx::ModelProto p = round_trip(plain, {Variable(gen.randn({2, 2, 8, 8}, float32))});
  for (const auto& n : p.graph().node())
    for (const auto& a : n.attribute()) CHECK(a.name() != "group");
}

TEST_CASE("onnx export: pooling with padding pads with zeros, as DeZero does (Pad + MaxPool / AveragePool)") {
  random::Generator gen(5);
  Variable x(gen.randn({2, 3, 5, 5}, float32) - 1.0);  // mostly negative: -inf padding would differ
  models::Sequential net{[](const Variable& v) { return F::pooling(v, 3, 2, 1); },
                         [](const Variable& v) { return F::average_pooling(v, 2, 1, 1); }};
  TempDir dir;
  dx::export_model(net, {x}, dir.file("pool.onnx"));
  ::onnx::ModelProto m = checked(dir.file("pool.onnx"));
  CHECK(op_types(m) == std::vector<std::string>{"Pad", "MaxPool", "Pad", "AveragePool"});
  // Issue 43, item 13: max pooling's Pad writes -0.0 (its bytes are not all zero, so ONNX Runtime
  // does not fold it into MaxPool's -inf padding); average pooling's +0.0.
  std::vector<std::string> zeros;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Constant" && n.output(0).find("/zero") != std::string::npos) {
      const auto& t = n.attribute(0).t();
      REQUIRE(t.raw_data().size() == 4);
      float v;
      std::memcpy(&v, t.raw_data().data(), 4);
      zeros.push_back(std::signbit(v) ? "-0" : "+0");
      CHECK(v == 0.0f);
    }
  CHECK(zeros == std::vector<std::string>{"-0", "+0"});
  leave_for_ort(dir.file("pool.onnx"), [&](const VariableList& v) { return net(v); }, {x}, false);
  dx::OnnxModel imported(dir.file("pool.onnx"));
  auto test = test_mode();
  check_close(imported(x).data(), net(x).data(), 1e-6, "pooling with padding");
}

TEST_CASE("onnx export: VGG16 round trip (224 x 224, random weights)") {
  auto t0 = std::chrono::steady_clock::now();
  random::Generator gen(6);
  models::VGG16 model;
  Variable x(gen.randn({1, 3, 224, 224}, float32));
  std::vector<std::string> ops = op_types(round_trip(model, {x}));
  CHECK(std::count(ops.begin(), ops.end(), "Conv") == 13);
  MESSAGE("VGG16 round trip: " << seconds_since(t0) << " s");
}

TEST_CASE("onnx export: ResNet50 round trip (64 x 64, random weights)") {
  auto t0 = std::chrono::steady_clock::now();
  random::Generator gen(8);
  models::ResNet model(50);
  Variable x(gen.randn({1, 3, 64, 64}, float32));
  ::onnx::ModelProto m = round_trip(model, {x});
  std::vector<std::string> ops = op_types(m);
  CHECK(std::count(ops.begin(), ops.end(), "Conv") == 53);
  CHECK(std::count(ops.begin(), ops.end(), "BatchNormalization") == 53);
  MESSAGE("ResNet50 round trip: " << seconds_since(t0) << " s");
}

// --- export_graph -------------------------------------------------------------------------------------------
TEST_CASE("onnx export: export_graph of most exportable functions round trips") {
  random::Generator gen(9);
  Variable x(gen.randn({3, 4}, float32) * 0.5);
  Parameter W(gen.randn({4, 5}, float32) * 0.5, "W");
  Parameter b(gen.randn({5}, float32) * 0.1);
  Tensor labels = array(std::vector<std::int64_t>{1, 0, 4}, Shape{3}, int64);
  auto f = [&](const VariableList& in) -> VariableList {
    const Variable& xx = in[0];
    Variable h = F::matmul(xx, W) + b;                                 // MatMul, Add (broadcast)
    Variable a = F::tanh(h) * 2.0 - F::sigmoid(h) / 3.0;               // Mul const, Sub
    a = 1.0 - a + F::exp(h * 0.2) + F::log(F::pow(h, 2.0) + 1.0);      // rsub, Pow, Log
    a = a * F::sin(h) + F::cos(h) / (F::relu(h) + 2.0) - (-h);        // Div, Neg
    a = 2.0 / (a * a + 1.0) + F::leaky_relu(h, 0.2);                  // rdiv
    Variable t = F::transpose(F::reshape(a, {3, 5, 1}), {1, 0, 2});   // (5, 3, 1)
    Variable s = F::sum(t, 2) + F::max(t, {2}) + F::min(F::reshape(a, {5, 3}), 0, true);  // (5, 3)
    s = F::clip(s, -1.5, 1.5) + F::broadcast_to(F::sum_to(s, {1, 3}), {5, 3});
    Variable g = F::get_item(s, {Slice(1, 4), Slice(std::nullopt, std::nullopt, -1)}) +
                 F::get_item(s, {Index(array(std::vector<std::int64_t>{0, 2, 4}, Shape{3}, int64))});
    g = g + F::get_item(F::reshape(s, {5, 3, 1}), {Ellipsis, 0})[Slice(0, 3)] +
        F::get_item(s, {Slice(-3, std::nullopt), newaxis, Slice(std::nullopt, std::nullopt, -1)}).sum(1) *
            F::get_item(s, {-1, Slice(0, std::nullopt, 2)}).sum();
    Variable y1 = F::softmax(F::transpose(g)) + F::get_item(s, {2});   // (3, 3)
    Variable y2 = F::mean_squared_error(y1, F::sum(g, 1, true));       // 0-d
    Variable y3 = F::softmax_cross_entropy(F::log_softmax(a, 0) * 3.0, in[1]);
    Variable y4 = F::sigmoid_cross_entropy(a, F::sigmoid(h));
    return {y1, y2, y3, y4};
  };
  TempDir dir;
  VariableList xs{x, Variable(labels)};
  VariableList ys = f(xs);
  dx::ExportOptions opts;
  opts.input_names = {"x", "t"};
  dx::export_graph(xs, ys, dir.file("graph.onnx"), opts);
  ::onnx::ModelProto m = checked(dir.file("graph.onnx"));
  std::set<std::string> inits = initializer_names(m);
  CHECK(inits.count("W"));         // named
  CHECK(inits.count("param_0"));   // unnamed
  CHECK(m.graph().input_size() == 2);
  CHECK(m.graph().output_size() == 4);
  for (const char* op : {"MatMul", "Pow", "Sin", "Cos", "ReduceSum", "ReduceMax", "ReduceMin", "Clip", "Expand", "Slice",
                         "Gather", "Softmax", "SoftmaxCrossEntropyLoss", "Transpose"})
    CHECK_MESSAGE(has_op(m, op), "no " << op);

  std::vector<std::pair<std::string, Parameter>> params{{"W", W}, {"param_0", b}};
  leave_for_ort(dir.file("graph.onnx"), f, xs, false);
  Run want = run(f, xs, params);
  dx::OnnxModel imported(dir.file("graph.onnx"));
  Run got = run([&](const VariableList& v) { return imported(v); }, xs, imported.named_params());
  compare(got, want, 1e-5);
}

TEST_CASE("onnx export: an imported model exports again (a CNN and two losses)") {
  random::Generator gen(15);
  SmallCNN cnn;
  warm_up(cnn, {4, 2, 8, 8});
  Variable x(gen.randn({2, 2, 8, 8}, float32));
  Tensor labels = array(std::vector<std::int64_t>{3, 1}, Shape{2}, int64);
  Variable t(labels);
  auto f = [&](const VariableList& in) -> VariableList {
    Variable y = cnn(in[0]);
    return {y, F::softmax_cross_entropy(y, in[1]), F::mean_squared_error(F::sigmoid(y), F::softmax(y))};
  };
  VariableList xs{x, t};
  VariableList ys = [&] {
    auto test = test_mode();
    return f(xs);
  }();
  TempDir dir;
  dx::export_graph(xs, ys, dir.file("first.onnx"));
  dx::OnnxModel first(dir.file("first.onnx"));
  dx::export_model(first, xs, dir.file("second.onnx"));
  ::onnx::ModelProto m = checked(dir.file("second.onnx"));
  std::set<std::string> inits = initializer_names(m);
  for (const auto& [k, p] : first.named_params()) CHECK_MESSAGE(inits.count(k), "no initializer '" << k << "'");
  dx::OnnxModel second(dir.file("second.onnx"));
  leave_for_ort(dir.file("second.onnx"), [&](const VariableList& v) { return first(v); }, xs, false);
  Run want = run(first, xs);
  Run got = run(second, xs);
  compare(got, want, 1e-5);
  auto test = test_mode();
  check_close(second(xs)[0].data(), ys[0].data(), 1e-5, "second import vs the CNN");
}

TEST_CASE("onnx export: deconv2d, embed_id with the ids as an input, batch_norm on (N, C)") {
  random::Generator gen(10);
  Variable x(gen.randn({2, 3, 4, 4}, float32));
  Parameter Wd(gen.randn({3, 2, 3, 3}, float32) * 0.3, "deconv_W");
  Parameter bd(gen.randn({2}, float32) * 0.1, "deconv_b");
  Parameter E(gen.randn({6, 4}, float32), "embed");
  Parameter gamma(gen.randn({4}, float32) + 1.0, "gamma"), beta(gen.randn({4}, float32), "beta");
  Tensor rm = gen.randn({4}, float32) * 0.1, rv = gen.rand({4}, float32) + 0.5;
  Tensor ids = array(std::vector<std::int64_t>{5, 0, 3}, Shape{3}, int64);
  auto f = [&](const VariableList& in) -> VariableList {
    auto test = test_mode();
    Variable d = F::deconv2d(in[0], Wd, bd, 2, 1, Pair(8, 8));   // output_padding 1
    Variable e = F::batch_norm(F::embed_id(in[1], E), gamma, beta, rm, rv);
    return {d, e};
  };
  VariableList xs{x, Variable(ids)};
  VariableList ys = f(xs);
  TempDir dir;
  dx::export_graph(xs, ys, dir.file("g.onnx"));
  ::onnx::ModelProto m = checked(dir.file("g.onnx"));
  CHECK(has_op(m, "ConvTranspose"));
  CHECK(has_op(m, "Gather"));
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Gather") CHECK(n.input(1) == "input_1");  // the ids are the graph input
  std::vector<std::pair<std::string, Parameter>> params{{"deconv_W", Wd}, {"deconv_b", bd}, {"embed", E},
                                                       {"gamma", gamma}, {"beta", beta}};
  leave_for_ort(dir.file("g.onnx"), f, xs, false);
  Run want = run(f, xs, params);
  dx::OnnxModel imported(dir.file("g.onnx"));
  Run got = run([&](const VariableList& v) { return imported(v); }, xs, imported.named_params());
  compare(got, want, 1e-5);
}

TEST_CASE("onnx export: mixed dtypes are cast to the result's, once per value") {
  random::Generator gen(18);
  Variable x(gen.randn({2, 3}, float32));
  Parameter b(gen.randn({3}, float64), "b");
  Variable y = F::exp(x * b) + x / b;  // float64, x cast once
  TempDir dir;
  dx::export_graph({x}, {y}, dir.file("mixed.onnx"));
  ::onnx::ModelProto m = checked(dir.file("mixed.onnx"));
  std::vector<std::string> ops = op_types(m);
  CHECK(std::count(ops.begin(), ops.end(), "Cast") == 1);
  CHECK(m.graph().output(0).type().tensor_type().elem_type() == ::onnx::TensorProto::DOUBLE);
  std::vector<std::pair<std::string, Parameter>> params{{"b", b}};
  auto f = [&](const VariableList& in) -> VariableList { return {F::exp(in[0] * b) + in[0] / b}; };
  leave_for_ort(dir.file("mixed.onnx"), f, {x}, false);
  Run want = run(f, {x}, params);
  dx::OnnxModel imported(dir.file("mixed.onnx"));
  Run got = run([&](const VariableList& v) { return imported(v); }, {x}, imported.named_params());
  compare(got, want, 1e-6);
}

TEST_CASE("onnx export: an output that is an input or a constant goes through Identity") {
  random::Generator gen(11);
  Variable x(gen.randn({2, 3}, float32));
  Variable y = F::exp(x);
  TempDir dir;
  dx::export_graph({x}, {y, x, y}, dir.file("id.onnx"));
  ::onnx::ModelProto m = checked(dir.file("id.onnx"));
  CHECK(op_types(m) == std::vector<std::string>{"Exp", "Identity", "Identity"});
  dx::OnnxModel imported(dir.file("id.onnx"));
  VariableList outs = imported(VariableList{x});
  REQUIRE(outs.size() == 3);
  check_close(outs[0].data(), y.data(), 1e-6, "exp");
  check_close(outs[1].data(), x.data(), 0, "x");
  check_close(outs[2].data(), y.data(), 1e-6, "exp again");
}

TEST_CASE("onnx export: a model on the GPU writes the same file as on the CPU") {
  if (dzt::skip_without_gpu()) return;
  random::Generator gen(16);
  SmallCNN model;
  warm_up(model, {4, 2, 8, 8});
  Tensor x = gen.randn({2, 2, 8, 8}, float32);
  TempDir dir;
  dx::export_model(model, {Variable(x)}, dir.file("cpu.onnx"));
  model.to_gpu();
  dx::export_model(model, {Variable(x.to_gpu())}, dir.file("gpu.onnx"));
  ::onnx::ModelProto a = checked(dir.file("cpu.onnx")), b = checked(dir.file("gpu.onnx"));
  CHECK(a.SerializeAsString() == b.SerializeAsString());
}

// --- options --------------------------------------------------------------------------------------------------
TEST_CASE("onnx export: dynamic_batch runs at another batch size after import") {
  random::Generator gen(12);
  SUBCASE("MLP") {
    models::MLP model({8, 3}, F::relu);
    dx::ExportOptions opts;
    opts.dynamic_batch = true;
    round_trip(model, {Variable(gen.randn({4, 5}, float32))}, opts);
    TempDir dir;
    const Variable x4(gen.randn({4, 5}, float32));
    dx::export_model(model, {x4}, dir.file("mlp.onnx"), opts);
    ::onnx::ModelProto m = checked(dir.file("mlp.onnx"));
    leave_for_ort(dir.file("mlp.onnx"), [&](const VariableList& v) { return model(v); }, {x4}, true);
    CHECK(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param() == "batch");
    CHECK(m.graph().output(0).type().tensor_type().shape().dim(0).dim_param() == "batch");
    dx::OnnxModel imported(dir.file("mlp.onnx"));
    REQUIRE(imported.input_info().size() == 1);
    CHECK(imported.input_info()[0].shape[0] == -1);
    Variable x7(gen.randn({7, 5}, float32));
    auto test = test_mode();
    check_close(imported(x7).data(), model(x7).data(), 1e-5, "batch 7");
  }
  SUBCASE("CNN with a reshape to (N, -1)") {
    SmallCNN model;
    warm_up(model, {4, 2, 8, 8});
    dx::ExportOptions opts;
    opts.dynamic_batch = true;
    TempDir dir;
    const Variable x2(gen.randn({2, 2, 8, 8}, float32));
    dx::export_model(model, {x2}, dir.file("cnn.onnx"), opts);
    checked(dir.file("cnn.onnx"));
    leave_for_ort(dir.file("cnn.onnx"), [&](const VariableList& v) { return model(v); }, {x2}, true);
    dx::OnnxModel imported(dir.file("cnn.onnx"));
    Variable x5(gen.randn({5, 2, 8, 8}, float32));
    auto test = test_mode();
    check_close(imported(x5).data(), model(x5).data(), 1e-5, "batch 5");
  }
  SUBCASE("losses divide by the batch size of the run") {
    Parameter W(gen.randn({5, 3}, float32), "W");
    Variable x(gen.randn({4, 5}, float32)), t(gen.randn({4, 3}, float32));
    dx::ExportOptions opts;
    opts.dynamic_batch = true;
    TempDir dir;
    dx::export_graph({x, t}, {F::mean_squared_error(F::matmul(x, W), t)}, dir.file("mse.onnx"), opts);
    checked(dir.file("mse.onnx"));
    leave_for_ort(dir.file("mse.onnx"),
                  [&](const VariableList& v) { return VariableList{F::mean_squared_error(F::matmul(v[0], W), v[1])}; },
                  {x, t}, true);
    dx::OnnxModel imported(dir.file("mse.onnx"));
    Variable x6(gen.randn({6, 5}, float32)), t6(gen.randn({6, 3}, float32));
    check_close(imported(VariableList{x6, t6})[0].data(), F::mean_squared_error(F::matmul(x6, W), t6).data(), 1e-5,
                "mse at batch 6");
  }
  // Issue 43, items 11 and 12: a value derived from an input never becomes a constant.
  SUBCASE("sigmoid_cross_entropy with int64 labels reads the labels it is given") {
    Parameter W(gen.randn({5, 2}, float32), "W");
    Variable x(gen.randn({1, 5}, float32)), t(array(std::vector<std::int64_t>{1, 0}, Shape{1, 2}, int64));
    dx::ExportOptions opts;
    opts.dynamic_batch = true;
    TempDir dir;
    dx::export_graph({x, t}, {F::sigmoid_cross_entropy(F::matmul(x, W), t)}, dir.file("sce.onnx"), opts);
    ::onnx::ModelProto m = checked(dir.file("sce.onnx"));
    const std::vector<std::string> ops = op_types(m);
    CHECK(std::find(ops.begin(), ops.end(), "Cast") != ops.end());
    leave_for_ort(dir.file("sce.onnx"),
                  [&](const VariableList& v) { return VariableList{F::sigmoid_cross_entropy(F::matmul(v[0], W), v[1])}; },
                  {x, t}, true);
    dx::OnnxModel imported(dir.file("sce.onnx"));
    for (std::vector<std::int64_t> labels : {std::vector<std::int64_t>{0, 1, 1, 0, 1, 1}, {1, 1, 0, 0, 0, 1}}) {
      Variable x3(gen.randn({3, 5}, float32)), t3(array(labels, Shape{3, 2}, int64));
      check_close(imported(VariableList{x3, t3})[0].data(), F::sigmoid_cross_entropy(F::matmul(x3, W), t3).data(), 1e-5,
                  "sigmoid_cross_entropy at batch 3");
    }
  }
  SUBCASE("softmax_cross_entropy with int32 (N, 1) labels reads the labels it is given") {
    Parameter W(gen.randn({5, 4}, float32), "W");
    Variable x(gen.randn({2, 5}, float32)), t(array(std::vector<std::int32_t>{1, 3}, Shape{2, 1}, int32));
    dx::ExportOptions opts;
    opts.dynamic_batch = true;
    TempDir dir;
    dx::export_graph({x, t}, {F::softmax_cross_entropy(F::matmul(x, W), t)}, dir.file("ce.onnx"), opts);
    checked(dir.file("ce.onnx"));
    leave_for_ort(dir.file("ce.onnx"),
                  [&](const VariableList& v) { return VariableList{F::softmax_cross_entropy(F::matmul(v[0], W), v[1])}; },
                  {x, t}, true);
    dx::OnnxModel imported(dir.file("ce.onnx"));
    Variable x3(gen.randn({3, 5}, float32)), t3(array(std::vector<std::int32_t>{0, 2, 2}, Shape{3, 1}, int32));
    check_close(imported(VariableList{x3, t3})[0].data(), F::softmax_cross_entropy(F::matmul(x3, W), t3).data(), 1e-5,
                "softmax_cross_entropy at batch 3");
  }
  SUBCASE("mean over the batch axis divides by the batch it is run on (ReduceMean)") {
    Parameter W(gen.randn({5, 3}, float32), "W");
    Variable x(gen.randn({1, 5}, float32));
    dx::ExportOptions opts;
    opts.dynamic_batch = true;
    TempDir dir;
    dx::export_graph({x}, {F::mean(F::matmul(x, W), Axes{0})}, dir.file("mean.onnx"), opts);
    ::onnx::ModelProto m = checked(dir.file("mean.onnx"));
    const std::vector<std::string> ops = op_types(m);
    CHECK(std::find(ops.begin(), ops.end(), "ReduceMean") != ops.end());
    leave_for_ort(dir.file("mean.onnx"),
                  [&](const VariableList& v) { return VariableList{F::mean(F::matmul(v[0], W), Axes{0})}; }, {x}, true);
    dx::OnnxModel imported(dir.file("mean.onnx"));
    Variable x3(gen.randn({3, 5}, float32));
    check_close(imported(x3).data(), F::mean(F::matmul(x3, W), Axes{0}).data(), 1e-5, "mean at batch 3");
  }
}

TEST_CASE("onnx export: opsets 13 to 17") {
  random::Generator gen(13);
  SmallCNN model;
  warm_up(model, {4, 2, 8, 8});
  for (int opset = 13; opset <= 17; ++opset) {
    CAPTURE(opset);
    dx::ExportOptions opts;
    opts.opset_version = opset;
    ::onnx::ModelProto m = round_trip(model, {Variable(gen.randn({2, 2, 8, 8}, float32))}, opts);
    CHECK(m.ir_version() == (opset >= 15 ? 8 : 7));
  }
  TempDir dir;
  models::MLP mlp({4, 2});
  dx::ExportOptions opts;
  opts.opset_version = 17;
  dx::export_model(mlp, {Variable(gen.randn({3, 3}, float32))}, dir.file("m.onnx"), opts);
  dx::OnnxModel imported(dir.file("m.onnx"));
  CHECK(imported.opset_version() == 17);
}

// --- errors ---------------------------------------------------------------------------------------------------
TEST_CASE("onnx export: a Function with no ONNX form is a NotImplementedError naming it and the opset") {
  random::Generator gen(14);
  Variable x(gen.randn({2, 3}, float32));
  Variable y = F::exp(call<Cube>({F::tanh(x)}));
  TempDir dir;
  std::string msg = dzt::thrown<NotImplementedError>([&] { dx::export_graph({x}, {y}, dir.file("cube.onnx")); });
  CHECK_MESSAGE(dzt::has(msg, "Cube has no ONNX form at opset 13"), msg);
  CHECK(!std::filesystem::exists(dir.file("cube.onnx")));
  CHECK(!std::filesystem::exists(dir.file("cube.onnx.tmp")));

  // A library function without an ONNX form: im2col.
  Variable c = F::im2col(Variable(gen.randn({1, 1, 3, 3}, float32)), 2);
  msg = dzt::thrown<NotImplementedError>([&] { dx::export_graph({x}, {c}, dir.file("im2col.onnx")); });
  CHECK_MESSAGE(dzt::has(msg, "Im2col has no ONNX form"), msg);
  // batch_norm recorded in train mode.
  Tensor rm, rv;
  Variable bn = F::batch_norm(x, Variable(ones({3}, float32)), Variable(zeros({3}, float32)), rm, rv);
  msg = dzt::thrown<NotImplementedError>([&] { dx::export_graph({x}, {bn}, dir.file("bn.onnx")); });
  CHECK_MESSAGE(dzt::has(msg, "BatchNorm has no ONNX form"), msg);
  CHECK_MESSAGE(dzt::has(msg, "train mode"), msg);
}

TEST_CASE("onnx export: outputs computed without a graph are a ValueError") {
  Variable x(ones({2, 2}, float32));
  Variable y;
  {
    auto off = no_grad();
    y = F::exp(x);
  }
  TempDir dir;
  std::string msg = dzt::thrown<ValueError>([&] { dx::export_graph({x}, {y}, dir.file("m.onnx")); });
  CHECK_MESSAGE(dzt::has(msg, "output 0 (2, 2) has no recorded graph"), msg);
  CHECK(std::filesystem::is_empty(dir.path));
}

TEST_CASE("onnx export: opsets other than 13 to 17 are a ValueError") {
  models::MLP model({2});
  Variable x(ones({1, 2}, float32));
  TempDir dir;
  for (int v : {7, 12, 18}) {
    dx::ExportOptions opts;
    opts.opset_version = v;
    std::string msg = dzt::thrown<ValueError>([&] { dx::export_model(model, {x}, dir.file("m.onnx"), opts); });
    CHECK_MESSAGE(dzt::has(msg, "opset_version " + std::to_string(v)), msg);
  }
  CHECK(std::filesystem::is_empty(dir.path));
  dx::ExportOptions opts;
  opts.input_names = {"a", "b"};
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { dx::export_model(model, {x}, dir.file("m.onnx"), opts); }), "input_names"));
  opts.input_names = {"y"};
  opts.output_names = {"y"};
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { dx::export_model(model, {x}, dir.file("m.onnx"), opts); }), "twice"));
  opts.output_names = {"l0/W"};
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { dx::export_model(model, {x}, dir.file("m.onnx"), opts); }),
                 "the parameter 'l0/W' has the name of a graph input or output"));
  CHECK(std::filesystem::is_empty(dir.path));
}

TEST_CASE("onnx export: a path that cannot be written is an IOError and leaves nothing behind") {
  models::MLP model({3});
  Variable x(ones({2, 2}, float32));
  TempDir dir;
  const std::string path = dir.file("missing/folder/m.onnx");
  std::string msg = dzt::thrown<IOError>([&] { dx::export_model(model, {x}, path); });
  CHECK_MESSAGE(dzt::has(msg, dir.file("missing/folder/m.onnx")), msg);
  CHECK(!std::filesystem::exists(dir.file("missing")));

  // A symlink planted at the temporary name the export once used ("<path>.tmp") is never
  // followed: the temporary file's name is unpredictable and made with O_EXCL | O_NOFOLLOW.
  const std::string target = dir.file("victim.txt");
  std::ofstream(target) << "keep";
  std::filesystem::create_symlink(target, dir.file("m.onnx.tmp"));
  dx::export_model(model, {x}, dir.file("m.onnx"));
  checked(dir.file("m.onnx"));
  std::ifstream in(target);
  std::string content;
  in >> content;
  CHECK(content == "keep");
  CHECK(dir.names() == std::vector<std::string>{"m.onnx", "m.onnx.tmp", "victim.txt"});
}
