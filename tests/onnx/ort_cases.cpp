// tests/onnx/ort_cases.cpp - the exported models that ONNX Runtime judges (CTest onnx_ort).
//
// Writes, under the folder given, one folder per model: model.onnx (exported with dynamic_batch)
// and case_b1.json, case_b3.json: the inputs at batch 1 and 3 and what dezero computes for them.
// tests/onnx/ort_judge.js runs each model in ONNX Runtime (npm's onnxruntime-node, with its
// graph optimisations on, as deployed) and compares. The models cover the exporter's emitters
// and the forms that once computed differently there (issue 43): labels of another dtype, a mean
// over the batch, padded max pooling over negative values.
//
//   onnx_ort_cases <folder>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <dezero/dezero.hpp>
#include <dezero/onnx.hpp>

#include "ort_case_writer.hpp"

using namespace dezero;
namespace fs = std::filesystem;

namespace {

using Inputs = ort_case::Inputs;

void write_case(const std::string& dir, std::int64_t b, const Inputs& in, const VariableList& out) {
  ort_case::write(dir, b, in, out);
}

dezero::onnx::ExportOptions options(const Inputs& in) {
  dezero::onnx::ExportOptions o;
  o.dynamic_batch = true;
  for (const auto& [n, v] : in) o.input_names.push_back(n);
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::cerr << "usage: onnx_ort_cases <folder>\n";
    return 2;
  }
  const std::string root = argv[1];
  random::Generator gen(43);
  auto test = test_mode();

  // A model (a Layer): exported with export_model.
  auto layer_case = [&](const std::string& name, L::Layer& model, const Shape& sample, DType dt = float32) {
    const std::string dir = root + "/" + name;
    fs::create_directories(dir);
    for (std::int64_t b : {1, 3}) {
      Shape s = sample;
      s.insert(s.begin(), b);
      Variable x(gen.randn(s, dt) - 0.5);  // mostly negative somewhere: zero padding shows
      const VariableList y{model(x)};
      if (b == 1) dezero::onnx::export_model(model, {x}, dir + "/model.onnx", options({{"x", x}}));
      write_case(dir, b, {{"x", x}}, y);
    }
  };
  // A graph of inputs (export_graph): `f` builds the outputs from the inputs of a batch.
  auto graph_case = [&](const std::string& name, const std::function<Inputs(std::int64_t)>& make,
                        const std::function<VariableList(const VariableList&)>& f) {
    const std::string dir = root + "/" + name;
    fs::create_directories(dir);
    for (std::int64_t b : {1, 3}) {
      const Inputs in = make(b);
      VariableList xs;
      for (const auto& [n, v] : in) xs.push_back(v);
      const VariableList ys = f(xs);
      if (b == 1) dezero::onnx::export_graph(xs, ys, dir + "/model.onnx", options(in));
      write_case(dir, b, in, ys);
    }
  };

  models::MLP mlp({16, 4}, F::relu, random::Generator(1));
  layer_case("mlp", mlp, {5});

  models::Sequential cnn;
  cnn.append(std::make_shared<L::Conv2d>(4, 3, 1, 1, false, float32, 2));
  cnn.append(std::make_shared<L::BatchNorm>());
  cnn.append([](const Variable& v) { return F::relu(v); });
  cnn.append([](const Variable& v) { return F::average_pooling(v, 2, 1, 1); });
  cnn.append([](const Variable& v) { return F::reshape(v, {v.shape()[0], -1}); });
  cnn.append(std::make_shared<L::Linear>(3));
  {
    auto train = using_config("train", true);
    cnn(Variable(gen.randn({4, 2, 6, 6}, float32)));  // batch norm's running statistics move off their start
  }
  layer_case("cnn", cnn, {2, 6, 6});

  models::Sequential pool;  // issue 43, item 13: a window of negative values gives 0, not a negative
  pool.append([](const Variable& v) { return F::pooling(v, 3, 2, 1); });
  pool.append([](const Variable& v) { return F::pooling(v, 2, 1, 1); });
  layer_case("max_pool_padded", pool, {3, 5, 5});

  models::Sequential deconv;
  deconv.append(std::make_shared<L::Deconv2d>(2, 3, 2, 1, false, float32, 3));
  deconv.append([](const Variable& v) { return F::tanh(v); });
  layer_case("deconv", deconv, {3, 4, 4});

  Parameter W(gen.randn({5, 2}, float32), "W");
  // Issue 43, item 11: int64 labels of sigmoid_cross_entropy are an input, not a constant.
  graph_case("sigmoid_ce_int64_labels",
             [&](std::int64_t b) {
               return Inputs{{"x", Variable(gen.randn({b, 5}, float32))},
                             {"t", Variable(gen.randint(0, 2, {b, 2}))}};
             },
             [&](const VariableList& v) { return VariableList{F::sigmoid_cross_entropy(F::matmul(v[0], W), v[1])}; });
  Parameter W4(gen.randn({5, 4}, float32), "W");
  graph_case("softmax_ce_int32_labels",
             [&](std::int64_t b) {
               return Inputs{{"x", Variable(gen.randn({b, 5}, float32))},
                             {"t", Variable(gen.randint(0, 4, {b, 1}).astype(int32))}};
             },
             [&](const VariableList& v) { return VariableList{F::softmax_cross_entropy(F::matmul(v[0], W4), v[1])}; });
  // Issue 43, item 12: the mean over the batch divides by the batch the graph is run on.
  graph_case("mean_over_batch", [&](std::int64_t b) { return Inputs{{"x", Variable(gen.randn({b, 5}, float32))}}; },
             [&](const VariableList& v) {
               return VariableList{F::mean(F::matmul(v[0], W), Axes{0}), F::mean(F::sigmoid(v[0]))};
             });
  graph_case("mse", [&](std::int64_t b) {
               return Inputs{{"x", Variable(gen.randn({b, 5}, float32))}, {"t", Variable(gen.randn({b, 2}, float32))}};
             },
             [&](const VariableList& v) { return VariableList{F::mean_squared_error(F::matmul(v[0], W), v[1])}; });
  std::cout << "onnx_ort_cases: 8 models, batches 1 and 3, written to " << root << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "onnx_ort_cases: " << e.what() << "\n";
  return 1;
}
