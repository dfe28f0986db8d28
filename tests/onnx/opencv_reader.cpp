// tests/onnx/opencv_reader.cpp - OpenCV's dnn (cv::dnn::readNetFromONNX) as an independent
// reader of what onnx::export_model writes: the exported MLP and a small CNN (conv + BatchNorm
// + ReLU + max pooling + Linear) run in OpenCV and match dezero's own outputs to 1e-4. OpenCV's
// importer is not ONNX's reference: it is one real consumer of the files, with its own view of
// each op (OpenCV 4.6).
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/onnx.hpp>

#include <opencv2/dnn.hpp>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include "onnx_test_util.hpp"

using namespace dezero;
namespace dx = dezero::onnx;

namespace {

using dezero_onnx_test::TempDir;


// A float32 tensor as an N-d cv::Mat (a copy).
cv::Mat to_mat(const Tensor& t) {
  std::vector<int> sizes(t.shape().begin(), t.shape().end());
  cv::Mat m(static_cast<int>(sizes.size()), sizes.data(), CV_32F);
  std::vector<float> v = t.to_vector<float>();
  std::copy(v.begin(), v.end(), m.ptr<float>());
  return m;
}

// Runs the exported file in OpenCV on x and compares with dezero's y, element by element.
void check_opencv(const std::string& path, const Tensor& x, const Tensor& y, double tol) {
  cv::dnn::Net net = cv::dnn::readNetFromONNX(path);
  REQUIRE(!net.empty());
  net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  net.setInput(to_mat(x));
  cv::Mat out = net.forward();
  REQUIRE(out.isContinuous());
  REQUIRE(static_cast<std::int64_t>(out.total()) == y.size());
  std::vector<int> dims(out.size.p, out.size.p + out.dims);
  CHECK(std::vector<std::int64_t>(dims.begin(), dims.end()) == std::vector<std::int64_t>(y.shape().begin(), y.shape().end()));
  std::vector<float> want = y.to_vector<float>();
  const float* got = out.ptr<float>();
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - double(want[i])));
  CHECK_MESSAGE(worst <= tol, "OpenCV differs from dezero by " << worst);
}

// conv (pad 1) + BatchNorm + ReLU + max pooling + conv (stride 2) + ReLU + Linear.
class SmallCNN : public Model {
 public:
  SmallCNN() {
    conv1 = register_layer("conv1", std::make_shared<L::Conv2d>(4, 3, 1, 1));
    bn1 = register_layer("bn1", std::make_shared<L::BatchNorm>());
    conv2 = register_layer("conv2", std::make_shared<L::Conv2d>(6, 3, 2, 1));
    fc = register_layer("fc", std::make_shared<L::Linear>(5));
  }
  // x: (N, 3, 8, 8) -> (N, 4, 8, 8) -> pool (N, 4, 4, 4) -> (N, 6, 2, 2) -> (N, 24) -> (N, 5)
  Variable forward(const Variable& x) override {
    Variable h = F::relu((*bn1)((*conv1)(x)));
    h = F::pooling(h, 2, 2);
    h = F::relu((*conv2)(h));
    return (*fc)(F::reshape(h, {h.shape()[0], -1}));
  }
  std::shared_ptr<L::Conv2d> conv1, conv2;
  std::shared_ptr<L::BatchNorm> bn1;
  std::shared_ptr<L::Linear> fc;
};

Tensor predict(L::Layer& model, const Tensor& x) {
  auto test = test_mode();
  auto nograd = no_grad();
  return model(Variable(x)).data();
}

}  // namespace

TEST_CASE("onnx opencv: OpenCV's dnn runs the exported MLP") {
  random::Generator gen(1);
  models::MLP model({16, 8, 3});
  Tensor x = gen.randn({4, 10}, float32);
  TempDir dir;
  dx::export_model(model, {Variable(x)}, dir.file("mlp.onnx"));
  check_opencv(dir.file("mlp.onnx"), x, predict(model, x), 1e-4);
}

TEST_CASE("onnx opencv: OpenCV's dnn runs an exported CNN with BatchNorm and pooling") {
  random::Generator gen(2);
  SmallCNN model;
  for (int i = 0; i < 3; ++i) model(Variable(gen.randn({4, 3, 8, 8}, float32) + 0.5));  // running statistics
  Tensor x = gen.randn({2, 3, 8, 8}, float32);
  TempDir dir;
  dx::export_model(model, {Variable(x)}, dir.file("cnn.onnx"));
  check_opencv(dir.file("cnn.onnx"), x, predict(model, x), 1e-4);

  // With a symbolic batch axis, OpenCV runs it at another batch size.
  dx::ExportOptions opts;
  opts.dynamic_batch = true;
  dx::export_model(model, {Variable(x)}, dir.file("cnn_dynamic.onnx"), opts);
  Tensor x3 = gen.randn({3, 3, 8, 8}, float32);
  check_opencv(dir.file("cnn_dynamic.onnx"), x3, predict(model, x3), 1e-4);
}

TEST_CASE("onnx opencv: max pooling with padding (Pad + MaxPool)") {
  random::Generator gen(3);
  models::Sequential model{[](const Variable& v) { return F::pooling(v, 3, 2, 1); }};
  Tensor x = gen.randn({1, 2, 7, 7}, float32) - 1.0;
  TempDir dir;
  dx::export_model(model, {Variable(x)}, dir.file("pool.onnx"));
  check_opencv(dir.file("pool.onnx"), x, predict(model, x), 1e-5);
}

TEST_CASE("onnx opencv: average pooling with padding (count_include_pad)") {
  random::Generator gen(3);
  models::Sequential model{[](const Variable& v) { return F::average_pooling(v, 2, 1, 1); }};
  Tensor x = gen.randn({1, 2, 7, 7}, float32) - 1.0;
  TempDir dir;
  dx::export_model(model, {Variable(x)}, dir.file("pool.onnx"));
  check_opencv(dir.file("pool.onnx"), x, predict(model, x), 1e-5);
}
