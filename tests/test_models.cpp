// tests/test_models.cpp - the model zoo: VGG16 and ResNet50/101/152 have DeZero's keys and
// shapes (tests/data/models/*.txt, written by tools/make_model_fixtures.py from DeZero's
// architecture), load DeZero-layout weight files, fetch pretrained weights through
// get_file's cache, fail clearly without them, and run forward / backward.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/test_util.hpp"

using namespace dezero;
namespace F = dezero::F;
namespace fs = std::filesystem;

namespace {

// One fixture: the keys in the order of the .txt, their shapes and fill bases, the total count.
struct KeyFixture {
  std::vector<std::string> keys;
  std::map<std::string, Shape> shapes;
  std::map<std::string, double> base;
  std::int64_t count = 0;
  std::string npz;
};

KeyFixture read_fixture(const std::string& name) {
  KeyFixture f;
  const std::string dir = dzt::data_dir() + "/models/";
  f.npz = dir + name + ".npz";
  std::ifstream in(dir + name + ".txt");
  REQUIRE(in.good());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string key;
    s >> key;
    if (key == "count") {
      s >> f.count;
      continue;
    }
    double base = 0;
    s >> base;
    std::vector<std::int64_t> dims;
    for (std::int64_t d = 0; s >> d;) dims.push_back(d);
    f.keys.push_back(key);
    f.shapes[key] = Shape(dims);
    f.base[key] = base;
  }
  REQUIRE(f.count > 0);
  return f;
}

// The fixture's value at flat index i of the key: base + 0.0625 * (i % 5).
double fill_value(const KeyFixture& f, const std::string& key, std::int64_t i) {
  return f.base.at(key) + 0.0625 * static_cast<double>(i % 5);
}

// The model's keys and shapes equal the fixture's; the value count is the fixture's.
void check_keys_and_shapes(const L::Layer& model, const KeyFixture& f) {
  auto named = model.named_params();
  std::vector<std::string> keys;
  std::int64_t count = 0;
  for (const auto& [key, p] : named) {
    keys.push_back(key);
    REQUIRE_MESSAGE(p.data().defined(), key);
    auto it = f.shapes.find(key);
    REQUIRE_MESSAGE(it != f.shapes.end(), "the model's key " << key << " is not DeZero's");
    CHECK_MESSAGE(p.data().shape() == it->second, key << ": " << p.data().shape().str() << " vs " << it->second.str());
    CHECK(p.data().dtype() == float32);
    count += p.data().size();
  }
  std::vector<std::string> expected = f.keys;
  std::sort(keys.begin(), keys.end());
  std::sort(expected.begin(), expected.end());
  CHECK(keys == expected);
  CHECK(count == f.count);
}

// Spot checks after loading the fixture: the first, a middle and the last keys, several indices.
void check_loaded(const L::Layer& model, const KeyFixture& f) {
  for (std::size_t k : {std::size_t{0}, f.keys.size() / 2, f.keys.size() - 1}) {
    const std::string& key = f.keys[k];
    Tensor t = model.param(key).data();
    std::vector<double> v = t.to_vector<double>();
    const auto n = static_cast<std::int64_t>(v.size());
    for (std::int64_t i : {std::int64_t{0}, std::int64_t{1}, std::int64_t{4}, n / 3, n - 1})
      CHECK_MESSAGE(v[static_cast<std::size_t>(i)] == doctest::Approx(fill_value(f, key, i)).epsilon(1e-7),
                    key << "[" << i << "]");
  }
}

void copy_fixture(const KeyFixture& f, const fs::path& to) { fs::copy_file(f.npz, to); }

}  // namespace

// --- keys and shapes -----------------------------------------------------------------------------
TEST_CASE("VGG16: DeZero's 16 layers, 32 parameters, 138,357,544 values, keys and shapes") {
  KeyFixture f = read_fixture("vgg16");
  CHECK(f.count == 138357544);
  models::VGG16 model;
  CHECK(model.entries().size() == 16);
  CHECK(model.params().size() == 32);
  check_keys_and_shapes(model, f);
  CHECK(model.param("fc6/W").data().shape() == Shape{25088, 4096});
  CHECK(model.named_params().front().first == "conv1_1/W");
  CHECK(model.named_params().back().first == "fc8/b");

  SUBCASE("the fixture loads into it") {
    model.load_weights(f.npz);
    check_loaded(model, f);
  }
}

TEST_CASE("ResNet50/101/152: DeZero's keys and shapes; forward (N, 3, 64, 64) -> (N, 1000)") {
  for (int n : {50, 101, 152}) {
    CAPTURE(n);
    KeyFixture f = read_fixture("resnet" + std::to_string(n));
    models::ResNet model(n);
    check_keys_and_shapes(model, f);
    {
      auto guard = test_mode();
      Variable y = model(random::Generator(4).randn({1, 3, 64, 64}, float32));
      CHECK(y.shape() == Shape{1, 1000});
      CHECK(std::isfinite(F::sum(y).data().item<double>()));
    }
    if (n == 50) {
      CHECK(model.param("res2/a/bn1/avg_mean").data().shape() == Shape{64});
      CHECK(model.param("res3/b3/bn2/gamma").data().shape() == Shape{128});
      CHECK(model.param("conv1/b").data().shape() == Shape{64});
      CHECK(model.param("fc6/W").data().shape() == Shape{2048, 1000});
      CHECK(model.res3->b.size() == 3);
      CHECK(dzt::has(dzt::thrown<ValueError>([&] { model.param("res2/a/conv1/b"); }), "conv1/b"));  // nobias
    }
    model.load_weights(f.npz);
    check_loaded(model, f);
  }
}

TEST_CASE("ResNet(34) is a ValueError naming the depths") {
  std::string msg = dzt::thrown<ValueError>([] { models::ResNet r(34); });
  CHECK(dzt::has(msg, "ResNet"));
  CHECK(dzt::has(msg, "34"));
  CHECK(dzt::has(msg, "50, 101 or 152"));
  CHECK(dzt::has(dzt::thrown<ValueError>([] { models::BuildingBlock b(0, 64, 64, 256, 1); }), "n_layers"));
}

// --- pretrained weights ----------------------------------------------------------------------------
TEST_CASE("pretrained = true loads the cached file from $DEZERO_HOME without downloading") {
  dzt::TempDir home;
  dzt::ScopedEnv env("DEZERO_HOME", home.str());
  dzt::ScopedEnv mirror("DEZERO_MODELS_MIRROR", "file:///nonexistent/");  // a download would fail
  SUBCASE("ResNet50") {
    KeyFixture f = read_fixture("resnet50");
    copy_fixture(f, home.path / "resnet50.npz");
    random::seed(7);
    models::ResNet50 model(true);
    check_loaded(model, f);
    CHECK(model.n_layers == 50);
    // As in DeZero (lazy W, then the file), no random numbers were drawn for it.
    const double next = random::Generator::global().randn({1}, float64).item<double>();
    CHECK(next == random::Generator(7).randn({1}, float64).item<double>());
  }
  SUBCASE("VGG16") {
    KeyFixture f = read_fixture("vgg16");
    copy_fixture(f, home.path / "vgg16.npz");
    models::VGG16 model(true);
    check_loaded(model, f);
  }
  SUBCASE("the mirror is a base URL: file:// with the file there") {
    dzt::TempDir mirror_dir;
    KeyFixture f = read_fixture("resnet50");
    copy_fixture(f, mirror_dir.path / "resnet50.npz");
    dzt::ScopedEnv m("DEZERO_MODELS_MIRROR", "file://" + mirror_dir.str());  // no trailing '/'
    CHECK(models::models_mirror() == "file://" + mirror_dir.str() + "/");
    models::ResNet50 model(true);
    check_loaded(model, f);
    CHECK(fs::exists(home.path / "resnet50.npz"));  // downloaded into the cache
  }
}

TEST_CASE("pretrained = true without the file and no way to download it: an IOError saying what to do") {
  dzt::TempDir home;
  dzt::ScopedEnv env("DEZERO_HOME", home.str());
  dzt::ScopedEnv mirror("DEZERO_MODELS_MIRROR", "file:///nonexistent/");
  std::string msg = dzt::thrown<IOError>([] { models::VGG16 m(true); });
  CHECK(dzt::has(msg, "VGG16"));
  CHECK(dzt::has(msg, "vgg16.npz"));
  CHECK(dzt::has(msg, "file:///nonexistent/vgg16.npz"));
  CHECK(dzt::has(msg, home.str()));
  CHECK(dzt::has(msg, "DEZERO_MODELS_MIRROR"));
  msg = dzt::thrown<IOError>([] { models::ResNet152 m(true); });
  CHECK(dzt::has(msg, "ResNet152"));
  CHECK(dzt::has(msg, "file:///nonexistent/resnet152.npz"));
  CHECK(home.entries() == 0);  // no partial file left behind
  // Without a mirror the URL is DeZero's release.
  unsetenv("DEZERO_MODELS_MIRROR");
  CHECK(models::models_mirror() == "https://github.com/koki0702/dezero-models/releases/download/v0.1/");
}

TEST_CASE("a corrupt or mismatched weight file leaves the model untouched") {
  KeyFixture f = read_fixture("resnet50");
  models::ResNet50 model;
  const std::vector<double> before = model.param("conv1/W").data().to_vector<double>();
  dzt::TempDir dir;
  SUBCASE("truncated") {
    std::string bytes = dzt::read_bytes(f.npz);
    dzt::write_bytes(dir.path / "resnet50.npz", bytes.substr(0, bytes.size() / 2));
    CHECK(dzt::thrown<IOError>([&] { model.load_weights((dir.path / "resnet50.npz").string()); }) != "NO THROW");
  }
  SUBCASE("another model's file (ResNet101 into ResNet50)") {
    std::string msg = dzt::thrown<ValueError>([&] { model.load_weights(read_fixture("resnet101").npz); });
    CHECK(dzt::has(msg, "res4/b"));
  }
  CHECK(model.param("conv1/W").data().to_vector<double>() == before);
}

// --- forward and backward ----------------------------------------------------------------------------
TEST_CASE("VGG16 forward: (1, 3, 224, 224) -> (1, 1000); extract gives named activations at any size") {
  models::VGG16 model;
  Tensor x = random::Generator(0).randn({1, 3, 224, 224}, float32);
  auto guard = test_mode();  // no dropout: forward and extract agree
  Variable y = model(x);
  CHECK(y.shape() == Shape{1, 1000});
  CHECK(y.dtype() == float32);

  auto acts = model.extract(x, {"conv5_3", "pool5", "fc8", "conv1_1"});
  CHECK(acts.size() == 4);
  CHECK(acts.at("conv1_1").shape() == Shape{1, 64, 224, 224});
  CHECK(acts.at("conv5_3").shape() == Shape{1, 512, 14, 14});
  CHECK(acts.at("pool5").shape() == Shape{1, 512, 7, 7});
  CHECK(dzt::allclose(acts.at("fc8").data(), y.data()));
  CHECK(F::min(acts.at("conv1_1")).data().item<double>() >= 0.0);  // after ReLU

  // Grad-CAM: the gradient of a logit reaches conv5_3's activation.
  Variable logit = acts.at("fc8")[{0, 3}];
  logit.backward(true);
  REQUIRE(acts.at("conv5_3").has_grad());
  CHECK(acts.at("conv5_3").grad().shape() == Shape{1, 512, 14, 14});
  CHECK(model.conv5_3->outputs().size() == 1);

  // extract on any size, average pooling (style transfer); bad names and shapes.
  x = random::Generator(1).randn({1, 3, 64, 48}, float32);
  auto mx = model.extract(x, {"conv1_1", "conv2_1", "conv3_1", "conv4_1", "conv5_1", "conv4_2"});
  auto av = model.extract(x, {"conv1_1", "conv2_1", "conv5_1"}, models::VGG16::Pooling::average);
  CHECK(mx.size() == 6);
  CHECK(mx.at("conv5_1").shape() == Shape{1, 512, 4, 3});
  CHECK(av.at("conv5_1").shape() == Shape{1, 512, 4, 3});
  CHECK(dzt::allclose(mx.at("conv1_1").data(), av.at("conv1_1").data()));   // before any pooling
  CHECK(!dzt::allclose(mx.at("conv2_1").data(), av.at("conv2_1").data()));  // after one
  CHECK(model.extract(x, {}).empty());

  std::string msg = dzt::thrown<ValueError>([&] { model.extract(x, {"conv6_1"}); });
  CHECK(dzt::has(msg, "VGG16::extract"));
  CHECK(dzt::has(msg, "conv6_1"));
  CHECK(dzt::has(msg, "pool5"));
  msg = dzt::thrown<ShapeError>([&] { model(x); });
  CHECK(dzt::has(msg, "fc6"));
  CHECK(dzt::has(msg, "224"));
  msg = dzt::thrown<ShapeError>([&] { model(Tensor(zeros({1, 1, 32, 32}))); });
  CHECK(dzt::has(msg, "(1, 1, 32, 32)"));
}

TEST_CASE("ResNet50 forward at 224; backward: every parameter but the running statistics gets a grad of its shape") {
  models::ResNet50 model;
  {
    auto guard = test_mode();
    CHECK(model(random::Generator(2).randn({1, 3, 224, 224}, float32)).shape() == Shape{1, 1000});
    CHECK(dzt::has(dzt::thrown<ShapeError>([&] { model(Tensor(zeros({1, 3, 4, 4}))); }), "ResNet50"));
  }
  Tensor x = random::Generator(5).randn({2, 3, 64, 64}, float32);
  Variable y = model(x);
  Variable loss = F::sum(y * y);
  loss.backward();
  std::size_t with_grad = 0, stats = 0;
  for (const auto& [key, p] : model.named_params()) {
    CAPTURE(key);
    const bool running = dzt::has(key, "avg_mean") || dzt::has(key, "avg_var");
    if (running) {
      CHECK(!p.has_grad());
      ++stats;
      continue;
    }
    REQUIRE(p.has_grad());
    CHECK(p.grad().shape() == p.data().shape());
    ++with_grad;
  }
  CHECK(stats == 2 * 53);  // 53 BatchNorms: bn1 + 16 bottlenecks x 3 + 4 shortcuts
  CHECK(with_grad == model.params().size() - stats);
  // Train mode updated bn1's running mean from the batch.
  std::vector<double> mean = model.bn1->avg_mean.data().to_vector<double>();
  CHECK(std::any_of(mean.begin(), mean.end(), [](double m) { return m != 0.0; }));
}

TEST_CASE("models on CUDA: ResNet50 forward/backward and VGG16 extract after to_gpu()") {
  if (dzt::skip_without_gpu()) return;
  models::ResNet50 resnet;
  resnet.to_gpu();
  Variable x = random::Generator(6).randn({2, 3, 64, 64}, float32).to(Device::cuda(0));
  Variable y = resnet(x);
  CHECK(y.shape() == Shape{2, 1000});
  CHECK(y.device() == Device::cuda(0));
  F::sum(y * y).backward();
  CHECK(resnet.conv1->W.grad().device() == Device::cuda(0));
  CHECK(resnet.fc6->W.grad().shape() == Shape{2048, 1000});

  models::VGG16 vgg;
  vgg.to_gpu();
  auto acts = vgg.extract(x, {"conv4_2"}, models::VGG16::Pooling::average);
  CHECK(acts.at("conv4_2").shape() == Shape{2, 512, 8, 8});
  CHECK(acts.at("conv4_2").device() == Device::cuda(0));
}
