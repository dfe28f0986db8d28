// tests/onnx/test_onnx_pytorch.cpp - models exported by PyTorch, imported with OnnxModel, against
// PyTorch's own numbers (issue 30: outputs to 1e-5, parameter gradients to 1e-4 relative).
//
// The fixtures (tests/data/onnx/, made by make_fixtures.py there with Debian's PyTorch 1.13):
//   mlp     784-100-10, Linear + ReLU (Gemm)
//   lenet   conv 5x5, ReLU, max pool, conv, ReLU, max pool, x.view(x.size(0), -1) (the Shape ->
//           Gather -> Unsqueeze -> Concat -> Reshape arithmetic of a dynamic batch), three Linear
//   bn_cnn  conv, BatchNorm2d, ReLU, AvgPool2d with padding (Pad + AveragePool), conv, BatchNorm2d,
//           ReLU, mean over H and W (ReduceMean), Linear; PyTorch's eval mode = dezero::test_mode()
//   zoo_ops13, zoo_ops17  GELU (Erf and tanh forms), Hardswish, Hardsigmoid, LayerNorm over one
//           and two axes, Linear on 3-d values (Transpose + MatMul + Add), at opsets 13 and 17
//   fresh_bn  bn_cnn's CNN as constructed, whose running statistics PyTorch wrote as Identity nodes
//           of the BatchNorm weights and biases; fresh_bn.npz holds a batch and the losses of three
//           SGD steps in train mode
//   fresh_tied  a CNN with two BatchNorms of 8 channels as constructed: PyTorch wrote bn2's weight as an
//           Identity of bn1's; fresh_tied.npz holds a batch and the losses of three SGD steps
// each exported with opset 13 and a symbolic batch axis ("batch"). For each, <name>.npz holds
// inputs of 3 and 5 samples (x3, x5), PyTorch's outputs (y3, y5), a weight w3, and the gradients of
// sum(y3 * w3) for the input (gx3) and every parameter ("g/<initializer name>"), and for bn_cnn one
// forward of x5 in train mode (y5_train, and the running statistics it leaves, "train/<name>");
// <name>.txt lists the file's initializers in order, each "param" or "stat" (BatchNorm's running
// mean and variance). On the CPU, and on CUDA when a device is present.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/npz.hpp>
#include <dezero/onnx.hpp>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

// --- fixtures -------------------------------------------------------------------------------------
std::string fixture_path(const std::string& file) { return std::string(DEZERO_TEST_DATA_DIR) + "/onnx/" + file; }

std::map<std::string, Tensor> load_arrays(const std::string& name) {
  std::map<std::string, Tensor> arrays;
  for (auto& [key, t] : utils::load_npz(fixture_path(name + ".npz"))) arrays.emplace(key, t);
  return arrays;
}

// (initializer name, whether it is a trained parameter) in the file's order, from <name>.txt.
std::vector<std::pair<std::string, bool>> initializers(const std::string& name) {
  std::ifstream in(fixture_path(name + ".txt"));
  std::vector<std::pair<std::string, bool>> out;
  std::string key, kind;
  while (in >> key >> kind) out.emplace_back(key, kind == "param");
  return out;
}

// The initializer names of an .onnx file in the file's order, read with libonnx itself.
std::vector<std::string> onnx_initializer_names(const std::string& path) {
  ::onnx::ModelProto proto;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(proto.ParseFromIstream(&in));
  std::vector<std::string> names;
  for (const auto& t : proto.graph().initializer()) names.push_back(t.name());
  return names;
}

// max |a - b| / max(max |b|, floor) over the arrays: an error on the array's scale (a gradient's
// near-zero elements need not match to 1e-4 of themselves). Infinity when the shapes differ.
double rel_err(const Tensor& a, const Tensor& b, double floor = 1e-6) {
  if (!a.defined() || a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  const std::vector<double> av = a.to_cpu().to_vector<double>(), bv = b.to_cpu().to_vector<double>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(av[i] - bv[i]));
    scale = std::max(scale, std::abs(bv[i]));
  }
  return std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff / std::max(scale, floor);
}

// |a - b| <= atol + rtol |b| for every element (float32 outputs: 1e-5 both).
bool outputs_match(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  if (!a.defined() || a.shape() != b.shape()) return false;
  const std::vector<double> av = a.to_cpu().to_vector<double>(), bv = b.to_cpu().to_vector<double>();
  for (std::size_t i = 0; i < av.size(); ++i)
    if (!(std::abs(av[i] - bv[i]) <= tol + tol * std::abs(bv[i]))) return false;
  return true;
}

// --- the checks, the same for every model ----------------------------------------------------------
// `input_shape`: the declared input shape after the batch axis. The model and its inputs on `dev`.
void check_model(const std::string& name, const std::vector<std::int64_t>& input_shape, Device dev, int opset = 13) {
  auto arrays = load_arrays(name);
  for (auto& [key, a] : arrays) a = a.to(dev);
  const auto inits = initializers(name);
  REQUIRE(!inits.empty());
  dezero::onnx::OnnxModel model(fixture_path(name + ".onnx"));
  model.to(dev);

  // What the file declares: one input and one output, axis 0 the symbol "batch".
  CHECK(model.opset_version() == opset);
  CHECK(model.producer().rfind("pytorch", 0) == 0);
  REQUIRE(model.input_names() == std::vector<std::string>{"input"});
  REQUIRE(model.output_names() == std::vector<std::string>{"output"});
  const dezero::onnx::ValueInfo& in = model.input_info().at(0);
  CHECK(in.dtype == float32);
  REQUIRE(in.shape.size() == input_shape.size() + 1);
  CHECK(in.shape[0] == -1);
  CHECK(in.dim_params[0] == "batch");
  CHECK(std::vector<std::int64_t>(in.shape.begin() + 1, in.shape.end()) == input_shape);
  CHECK(model.output_info().at(0).dim_params.at(0) == "batch");

  // The initializers PyTorch wrote are the model's parameters, keyed and ordered as in the file.
  std::vector<std::string> keys, expected;
  for (auto& [key, p] : model.named_params()) keys.push_back(key);
  for (auto& [key, trained] : inits) expected.push_back(key);
  CHECK(keys == expected);
  CHECK(onnx_initializer_names(fixture_path(name + ".onnx")) == expected);

  // Outputs at batch 5 and at batch 3 with backward of sum(y * w).
  {
    auto g = no_grad();
    const Variable y5 = model(Variable(arrays.at("x5")));
    CHECK_MESSAGE(outputs_match(y5.data(), arrays.at("y5")), name << " batch 5: y differs from PyTorch's, rel "
                                                                  << rel_err(y5.data(), arrays.at("y5")));
  }
  Variable x(arrays.at("x3"));
  model.cleargrads();
  const Variable y = model(x);
  CHECK_MESSAGE(outputs_match(y.data(), arrays.at("y3")),
                name << " batch 3: y differs from PyTorch's, rel " << rel_err(y.data(), arrays.at("y3")));
  Variable loss = F::sum(y * Variable(arrays.at("w3")));
  loss.backward();

  REQUIRE(x.has_grad());
  CHECK_MESSAGE(rel_err(x.grad().data(), arrays.at("gx3")) <= 1e-4,
                name << ": d/dx rel " << rel_err(x.grad().data(), arrays.at("gx3")));
  int compared = 0;
  for (auto& [key, p] : model.named_params()) {
    const auto trained = std::find_if(inits.begin(), inits.end(), [&](const auto& i) { return i.first == key; });
    if (trained == inits.end()) continue;  // a wrong key: the keys CHECK above reported it
    if (!trained->second) {
      // BatchNorm's running statistics are not trained: no gradient reaches them (or zeros).
      if (p.has_grad())
        CHECK_MESSAGE(rel_err(p.grad().data(), zeros(p.shape(), p.dtype())) == 0.0, name << ": " << key);
      continue;
    }
    const Tensor& want = arrays.at("g/" + key);
    REQUIRE_MESSAGE(p.has_grad(), name << ": no gradient for " << key);
    const double err = rel_err(p.grad().data(), want);
    CHECK_MESSAGE(err <= 1e-4, name << ": d/d" << key << " rel " << err);
    ++compared;
  }
  CHECK(compared == std::count_if(inits.begin(), inits.end(), [](const auto& i) { return i.second; }));

  // The batch stays dynamic after a run: batch 5 again, and one sample (row 0 of batch 5).
  {
    auto g = no_grad();
    CHECK(outputs_match(model(Variable(arrays.at("x5"))).data(), arrays.at("y5")));
    const Tensor x1 = arrays.at("x5")[Slice(0, 1)];
    const Tensor y1 = arrays.at("y5")[Slice(0, 1)];
    CHECK(outputs_match(model(Variable(x1)).data(), y1));
  }
}

}  // namespace

// --- the three models -----------------------------------------------------------------------------
TEST_CASE("PyTorch's MLP 784-100-10 (Gemm, Relu): outputs and gradients as PyTorch's") {
  dzt::on_each_device([](Device dev) { check_model("mlp", {784}, dev); });
}

TEST_CASE("PyTorch's LeNet with x.view(x.size(0), -1) at batch 3 and 5: outputs and gradients") {
  dzt::on_each_device([](Device dev) { check_model("lenet", {1, 28, 28}, dev); });
}

// GELU is Erf (or Tanh) with Mul/Add/Div at both opsets.
TEST_CASE("PyTorch's GELU (both forms), Hardswish, Hardsigmoid and LayerNorm at opset 13 (composed)") {
  // LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div, Hardswish as HardSigmoid + Mul
  dzt::on_each_device([](Device dev) { check_model("zoo_ops13", {4, 12}, dev, 13); });
}

TEST_CASE("PyTorch's GELU (both forms), HardSwish, Hardsigmoid and LayerNormalization at opset 17") {
  dzt::on_each_device([](Device dev) { check_model("zoo_ops17", {4, 12}, dev, 17); });
}

TEST_CASE("PyTorch's CNN with BatchNorm2d (eval) and padded AvgPool2d, in test mode") {
  auto guard = test_mode();
  dzt::on_each_device([](Device dev) { check_model("bn_cnn", {3, 16, 16}, dev); });
}

TEST_CASE("PyTorch's CNN with BatchNorm2d in train mode: batch statistics, running ones updated as PyTorch's") {
  // Without test_mode() the imported BatchNormalization normalises with the batch statistics and
  // updates the running ones in place (fine-tuning), as PyTorch's train() does: one forward of x5.
  dzt::on_each_device([](Device dev) {
    auto arrays = load_arrays("bn_cnn");
    dezero::onnx::OnnxModel model(fixture_path("bn_cnn.onnx"));
    model.to(dev);
    Variable y;
    {
      auto g = no_grad();
      y = model(Variable(arrays.at("x5").to(dev)));
    }
    CHECK_MESSAGE(outputs_match(y.data(), arrays.at("y5_train")),
                  "train mode: y differs from PyTorch's, rel " << rel_err(y.data(), arrays.at("y5_train")));
    CHECK_FALSE(outputs_match(y.data(), arrays.at("y5")));  // not the eval output: test_mode matters
    int stats = 0;
    for (auto& [key, p] : model.named_params()) {
      const auto it = arrays.find("train/" + key);
      if (it == arrays.end()) continue;
      const double err = rel_err(p.data(), it->second);
      CHECK_MESSAGE(err <= 1e-5, key << " after one train-mode forward: rel " << err);
      ++stats;
    }
    CHECK(stats == 4);
  });
}

// Three SGD steps in train mode on a fresh export must give PyTorch's losses.
namespace {
void check_fresh(const std::string& name) {
  auto arrays = load_arrays(name);
  dezero::onnx::OnnxModel model(fixture_path(name + ".onnx"));
  optimizers::SGD sgd(name == "fresh_tied" ? 0.5 : 0.1);
  sgd.setup(model);
  const std::vector<double> want = arrays.at("losses").to_vector<double>();
  REQUIRE(want.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    Variable loss = F::softmax_cross_entropy(model(Variable(arrays.at("x"))), arrays.at("t"));
    const double got = loss.data().item<double>();
    CHECK_MESSAGE(std::abs(got - want[k]) <= 1e-5 * std::abs(want[k]), "step " << k << ": " << got << ", PyTorch " << want[k]);
    model.cleargrads();
    loss.backward();
    sgd.update();
  }
}
}  // namespace

TEST_CASE("PyTorch's fresh CNN (running statistics that alias weights) fine-tunes with PyTorch's losses") {
  // fresh_bn: BnCNN as constructed, exported as it is: PyTorch merged the equal initializers, so
  // each running_var is an Identity of a BatchNorm weight (ones) and each running_mean of a bias
  // (issue 47): an update of a running statistic that reached gamma or beta would change the next loss.
  check_fresh("fresh_bn");
}

TEST_CASE("PyTorch's fresh CNN with two BatchNorms of one size (merged weights) fine-tunes with PyTorch's losses") {
  // fresh_tied: bn2.weight is an Identity of bn1.weight in the file (and its bias of bn1.bias);
  // PyTorch trains them apart, so tied weights would give other losses from the second step on.
  check_fresh("fresh_tied");
}

TEST_CASE("the comparison catches a wrong weight") {
  // The checks above are not vacuous: one bias nudged by 1e-3 after import fails them.
  auto arrays = load_arrays("mlp");
  dezero::onnx::OnnxModel model(fixture_path("mlp.onnx"));
  auto g = no_grad();
  REQUIRE(outputs_match(model(Variable(arrays.at("x5"))).data(), arrays.at("y5")));
  for (auto& [key, p] : model.named_params())
    if (key == "fc2.bias") p.set_data(p.data() + 1e-3);
  CHECK_FALSE(outputs_match(model(Variable(arrays.at("x5"))).data(), arrays.at("y5")));
  CHECK(arrays.at("x3").shape() == Shape{3, 784});
  CHECK(arrays.at("g/fc1.weight").shape() == Shape{100, 784});
}
