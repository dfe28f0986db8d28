// tests/onnx/test_onnx_plan.cpp - dezero::compile on an imported model: PyTorch is the judge.
//
// tests/data/onnx/plan_net.onnx (make_fixtures.py plan_net, PyTorch 1.13, opset 13, BatchNorm kept)
// holds what the plan's oneDNN program takes from an import: Conv + BatchNormalization (folded) +
// Relu (fused), MaxPool with padding and ceil_mode (the importer's Pad of -inf and a pool, one
// oneDNN pool), a fire module's Concat, a residual Add fused into the convolution before it, a
// depthwise Conv with Clip (ReLU6) and HardSwish (opset 13's HardSigmoid + Mul) as its post-ops,
// GlobalAveragePool, then Flatten and Gemm replayed. The planned output
// must be PyTorch's to 1e-5 at the batch it was compiled for (3 and 5); the unplanned import is
// checked beside it. An OnnxModel is a Model: compile(model, {x}) as for any other.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/npz.hpp>
#include <dezero/onnx.hpp>
#include <dezero/plan.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

std::string fixture(const std::string& file) { return std::string(DEZERO_TEST_DATA_DIR) + "/onnx/" + file; }

// max |a - b| / max |b|
double rel(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const double scale = max(abs(b.astype(float64))).item<double>();
  return max(abs(a.astype(float64) - b.astype(float64))).item<double>() / std::max(scale, 1e-30);
}

}  // namespace

TEST_CASE("compile: a PyTorch export planned gives PyTorch's outputs (plan_net, batch 3 and 5)") {
  std::map<std::string, Tensor> arrays;
  for (auto& [key, t] : utils::load_npz(fixture("plan_net.npz"))) arrays.emplace(key, t);
  onnx::OnnxModel model(fixture("plan_net.onnx"));
  for (const std::string n : {"3", "5"}) {
    CAPTURE(n);
    const Variable x(arrays.at("x" + n));
    const Tensor& want = arrays.at("y" + n);
    Plan plan = compile(model, {x});
    const Tensor got = plan(x).data();
    CHECK(rel(got, want) < 1e-5);
    {
      auto t = test_mode();
      auto g = no_grad();
      CHECK(rel(model(x).data(), want) < 1e-5);
    }
    const Plan::Stats st = plan.stats();
    const char* env = std::getenv("DEZERO_ONEDNN");  // DEZERO_ONEDNN=0: replays only
    if (is_onednn_available() && !(env && std::string(env) == "0") && cpu_info().isa != "sse2") {
      CHECK(st.folded == 2);        // both BatchNormalizations
      CHECK(st.onednn == 9);        // 6 convolutions, the pool, the concat, the global average
      CHECK(st.fused >= 9);         // 6 Relus, the Add, Clip and HardSwish (HardSigmoid + Mul) after convolutions, the Pad
      CHECK(st.replayed == 3);      // Flatten (a Reshape), Gemm (MatMul, Add)
      const std::string s = plan.summary();
      CHECK(dzt::has(s, "max pool 3x3"));
      CHECK(dzt::has(s, "concat of 2"));
      CHECK(dzt::has(s, "+sum+relu"));
      CHECK(dzt::has(s, "groups 32+relu+clip+hardswish"));  // relu6 is Relu + Clip in PyTorch 1.13
    } else if (!is_onednn_available()) {
      CHECK(st.replayed == st.recorded);
    }
    // A second call, another input of the shape: PyTorch's function still (the batch's other order).
    Tensor flipped = x.data()[Indices{Slice(std::nullopt, std::nullopt, -1)}];
    Tensor want_flipped = want[Indices{Slice(std::nullopt, std::nullopt, -1)}];
    CHECK(rel(plan(Variable(flipped)).data(), want_flipped) < 1e-5);
  }
}
