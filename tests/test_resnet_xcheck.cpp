// tests/test_resnet_xcheck.cpp - our ResNet building blocks against DeZero's formulas computed by
// PyTorch (tools/make_resnet_fixtures.py -> tests/data/resnet/; step 58, DeZero models.py):
// BottleneckA(8, 4, 16, stride 2 and 1; stride 2 with downsample_fb), BottleneckB(16, 4), BuildingBlock(3, 8, 4, 16, stride 2)
// and ResNet's stem and head (conv1 7x7 s2 p3 with bias -> bn1 -> ReLU -> pooling(3, 2) ->
// global average pooling -> fc6; built from the same layers and F:: calls as ResNet::forward,
// whose res2..res5 would need a whole ResNet50's weights in the fixtures).
//
// Each case loads <case>.npz (float32 weights under DeZero's keys) with Layer::load_weights and
// compares, against float64 references:
//   test mode:  y (running statistics)
//   train mode: y (batch statistics), the gradient of sum(y * r) for x and for every W, b, gamma
//               and beta, and every avg_mean / avg_var after that one forward (decay 0.9, the
//               unbiased m / (m - 1) on the variance)
// once with the layers as built (float32: the weights as loaded; tolerance 1e-3) and once with
// every parameter turned float64 after loading (tolerance 1e-9). The error is
// max |ours - ref| / max |ref| over the array (see rel_err): a relative error on the array's
// scale, so a near-zero element of a BN gradient need not match to 1e-9 of itself. A further
// case nudges one weight or statistic and checks that the comparison then fails (float64).
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/fixtures.hpp"
#include "support/test_util.hpp"

using namespace dezero;

namespace {

const char* const kFile = "resnet/resnet.txt";

Tensor fixture(const std::string& name) { return dzt::fx(kFile, name); }
bool has_ref(const std::string& name) { return dzt::fixture_file(kFile).arrays.count(name) != 0; }

// max |a - b| / max(max |b|, 0.01); infinity when the shapes differ or a is undefined. The floor
// is for the stem's conv1/b gradient, 0 up to rounding (a train-mode BatchNorm right after the
// convolution removes any per-channel constant); every other reference array has a scale >= 0.05.
double rel_err(const Tensor& a, const Tensor& b) {
  if (!a.defined() || a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  const std::vector<double> av = a.to_cpu().to_vector<double>(), bv = b.to_vector<double>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(av[i] - bv[i]));
    scale = std::max(scale, std::abs(bv[i]));
  }
  return std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff / std::max(scale, 0.01);
}

// The stem and head of ResNet::forward, without res2..res5: conv1 = Conv2d(6, 7, stride 2, pad 3)
// with bias (3 -> 6 channels), bn1, fc6 = Linear(6 -> 5); the same keys as ResNet's.
class StemHead : public L::Layer {
 public:
  StemHead() {
    conv1 = register_layer("conv1", std::make_shared<L::Conv2d>(6, 7, 2, 3, false, float32, 3));
    bn1 = register_layer("bn1", std::make_shared<L::BatchNorm>());
    fc6 = register_layer("fc6", std::make_shared<L::Linear>(5, false, float32, 6));
  }
  // x: (N, 3, 23, 27) -> conv1 (N, 6, 12, 14) -> pool (N, 6, 5, 6) -> (N, 6) -> (N, 5)
  Variable forward(const Variable& x) override {
    Variable h = F::relu(bn1(conv1(x)));
    h = F::pooling(h, 3, 2);
    const std::int64_t N = h.shape()[0], C = h.shape()[1];
    h = F::average_pooling(h, {static_cast<int>(h.shape()[2]), static_cast<int>(h.shape()[3])}, 1);
    h = F::reshape(h, {N, C});
    return fc6(h);
  }
  L::LayerRef<L::Conv2d> conv1;
  L::LayerRef<L::BatchNorm> bn1;
  L::LayerRef<L::Linear> fc6;
};

struct Case {
  std::string name;
  std::function<std::shared_ptr<L::Layer>()> make;
};

std::vector<Case> cases() {
  return {{"bottleneck_a_s2", [] { return std::make_shared<models::BottleneckA>(8, 4, 16, 2); }},
          {"bottleneck_a_s1", [] { return std::make_shared<models::BottleneckA>(8, 4, 16, 1); }},
          {"bottleneck_a_fb", [] { return std::make_shared<models::BottleneckA>(8, 4, 16, 2, true); }},
          {"bottleneck_b", [] { return std::make_shared<models::BottleneckB>(16, 4); }},
          {"building_block", [] { return std::make_shared<models::BuildingBlock>(3, 8, 4, 16, 2); }},
          {"stem_head", [] { return std::make_shared<StemHead>(); }}};
}

// The layer of a case with the fixture's weights, in `dtype`, on `dev`.
std::shared_ptr<L::Layer> load(const Case& c, DType dtype, Device dev) {
  std::shared_ptr<L::Layer> layer = c.make();
  layer->load_weights(dzt::data_dir() + "/resnet/" + c.name + ".npz");
  if (dtype != float32)
    for (auto& [key, p] : layer->named_params()) p.set_data(p.data().astype(dtype));
  layer->to(dev);
  return layer;
}

using Errors = std::vector<std::pair<std::string, double>>;  // (what, rel_err)

// Runs the case's layer in test mode, then in train mode with backward, and measures every
// result against the fixture.
Errors compare(const std::string& name, L::Layer& layer, DType dtype, Device dev) {
  Errors errs;
  const Tensor x = fixture(name + "_x").astype(dtype).to(dev);
  {
    auto guard = test_mode();
    errs.emplace_back("test y", rel_err(layer(Variable(x)).data(), fixture(name + "_test_y")));
  }
  layer.cleargrads();
  Variable xv(x);
  Variable y = layer(xv);
  errs.emplace_back("train y", rel_err(y.data(), fixture(name + "_train_y")));
  F::sum(y * Variable(fixture(name + "_r").astype(dtype).to(dev))).backward();
  errs.emplace_back("train gx", rel_err(xv.grad().data(), fixture(name + "_train_gx")));
  for (auto& [key, p] : layer.named_params()) {
    if (has_ref(name + "_train_g:" + key)) {
      errs.emplace_back("grad " + key, rel_err(p.grad().data(), fixture(name + "_train_g:" + key)));
    } else if (has_ref(name + "_train_s:" + key)) {
      errs.emplace_back("running " + key, rel_err(p.data(), fixture(name + "_train_s:" + key)));
      errs.emplace_back("no grad on " + key, p.grad().defined() ? 1.0 : 0.0);  // running stats get none
    } else {
      errs.emplace_back("no reference for " + key, std::numeric_limits<double>::infinity());
    }
  }
  return errs;
}

double worst(const Errors& errs) {
  double w = 0;
  for (const auto& e : errs) w = std::max(w, e.second);
  return w;
}

}  // namespace

TEST_CASE("resnet xcheck: BottleneckA, BottleneckB, BuildingBlock and the stem/head match PyTorch") {
  dzt::on_each_device([](Device dev) {
    for (const Case& c : cases()) {
      for (DType dtype : {float64, float32}) {
        const double tol = dtype == float64 ? 1e-9 : 1e-3;
        CAPTURE(c.name);
        const std::string dt = dtype_name(dtype);
        CAPTURE(dt);
        auto layer = load(c, dtype, dev);
        const Errors errs = compare(c.name, *layer, dtype, dev);
        CHECK(errs.size() >= layer->named_params().size() + 3);  // test y, train y, gx, every parameter
        for (const auto& [what, err] : errs) {
          CAPTURE(what);
          CHECK(err <= tol);
        }
        if (std::getenv("DEZERO_XCHECK_VERBOSE") != nullptr)  // the figures, for a report
          MESSAGE(c.name << " " << dt << ": worst error " << worst(errs));
      }
    }
  });
}

TEST_CASE("resnet xcheck: the comparison fails when one weight or statistic is off") {
  // Nudges, after loading, one value by 1e-3 of its size: each comparison it feeds must exceed
  // the float64 tolerance, so the cases above can fail.
  struct Nudge {
    std::string case_name, key, what;
  };
  const std::vector<Nudge> nudges = {
      {"building_block", "b2/bn1/avg_var", "test y"},     // a running statistic: test mode only
      {"building_block", "a/conv4/W", "train gx"},         // the projection shortcut's weight
      {"bottleneck_a_s2", "bn3/beta", "train y"},
      {"stem_head", "fc6/b", "test y"},
      {"bottleneck_b", "conv2/W", "grad conv1/W"}};
  for (const Nudge& n : nudges) {
    CAPTURE(n.case_name);
    CAPTURE(n.key);
    const Case c = [&] {
      for (const Case& k : cases())
        if (k.name == n.case_name) return k;
      throw std::runtime_error("no case " + n.case_name);
    }();
    auto layer = load(c, float64, Device::cpu());
    bool found = false;
    for (auto& [key, p] : layer->named_params()) {
      if (key != n.key) continue;
      found = true;
      std::vector<double> v = p.data().to_vector<double>();
      v[0] += 1e-3 * std::max(std::abs(v[0]), 0.1);
      p.set_data(array(v, p.data().shape(), float64));
    }
    REQUIRE(found);
    const Errors errs = compare(c.name, *layer, float64, Device::cpu());
    const auto it = std::find_if(errs.begin(), errs.end(), [&](const auto& e) { return e.first == n.what; });
    REQUIRE(it != errs.end());
    CHECK(it->second > 1e-9);
  }
}
