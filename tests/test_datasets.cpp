// tests/test_datasets.cpp - transforms, Dataset, Spiral / SinCurve (against NumPy's numbers in
// tests/data/spiral.txt, made by tools/make_spiral_fixture.py), the IDX reader and
// MNIST / Fashion-MNIST read from the fixtures of tools/make_idx_fixtures.py.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <dezero/datasets.hpp>
#include <dezero/download.hpp>
#include <dezero/transforms.hpp>

#include "support/gzip_bomb.hpp"
#include "support/memory_ceiling.hpp"
#include "support/test_util.hpp"

using namespace dezero;
namespace fs = std::filesystem;
namespace T = dezero::transforms;

namespace {
using dzt::ScopedEnv;
using dzt::TempDir;

const std::string kData = dzt::data_dir();

// name -> values of tests/data/spiral.txt
std::map<std::string, std::vector<double>> read_fixture(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::map<std::string, std::vector<double>> m;
  std::string name;
  std::size_t n;
  while (in >> name >> n) {
    std::vector<double> v(n);
    for (auto& x : v) in >> x;
    m[name] = v;
  }
  return m;
}

void copy_mnist_fixtures(const fs::path& to) {
  fs::create_directories(to);
  for (auto& e : fs::directory_iterator(kData + "/mnist")) fs::copy_file(e.path(), to / e.path().filename());
}


template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const IOError& e) {
    return e.what();
  }
  return "(no IOError)";
}

// the pixel formula of tools/make_idx_fixtures.py
int pixel(int n, int r, int c, bool train) { return (n * 7 + r * 3 + c * 5 + (train ? 0 : 100)) % 256; }

}  // namespace

// --- transforms --------------------------------------------------------------------------
TEST_CASE("transforms: Normalize, Flatten, AsType, ToFloat, ToInt, Compose") {
  Tensor x = array({{1.0, 2.0}, {3.0, 4.0}}, float32);
  Tensor y = T::Normalize(1.0, 2.0)(x);
  CHECK(y.dtype() == float32);  // DeZero keeps float32 for a scalar mean/std
  CHECK(dzt::vals(y) == std::vector<double>{0.0, 0.5, 1.0, 1.5});
  CHECK(T::Normalize()(array({1, 2})).dtype() == float64);  // integers become float64 (NumPy)
  CHECK(T::Flatten()(x).shape() == Shape{4});
  CHECK(T::AsType(float64)(x).dtype() == float64);
  CHECK(T::ToFloat()(array({1, 2})).dtype() == float32);
  Tensor i = T::ToInt()(array({1.7, -2.5}));
  CHECK(i.dtype() == int64);
  CHECK(dzt::vals(i) == std::vector<double>{1, -2});
  T::Compose empty;
  CHECK(empty.is_identity());
  CHECK(empty(x).is_same(x));
  T::Compose c({T::Flatten(), T::ToFloat(float64), T::Normalize(0.0, 4.0)});
  CHECK(c.batchable());
  Tensor z = c(x);
  CHECK(z.shape() == Shape{4});
  CHECK(z.dtype() == float64);
  CHECK(dzt::vals(z) == std::vector<double>{0.25, 0.5, 0.75, 1.0});
}

TEST_CASE("transforms: per-channel Normalize (DeZero reshapes mean to (C, 1, 1))") {
  Tensor img = arange(12.0, float32).reshape(Shape{3, 2, 2});
  T::Normalize n({0.0, 4.0, 8.0}, {1.0, 2.0, 4.0});
  Tensor y = n(img);
  CHECK(y.shape() == Shape{3, 2, 2});
  CHECK(y.dtype() == float32);
  CHECK(dzt::vals(y) == std::vector<double>{0, 1, 2, 3, 0, 0.5, 1, 1.5, 0, 0.25, 0.5, 0.75});
}

TEST_CASE("transforms: apply_batch equals the stack of per-sample results") {
  random::seed(0);
  Tensor xs = random::randn(Shape{5, 3, 2, 2}, float32);
  std::vector<T::Transform> ts = {
      T::Normalize(0.5, 0.25), T::Normalize({0.1, 0.2, 0.3}, {1.0, 2.0, 3.0}), T::Flatten(), T::ToInt(),
      T::Compose({T::Flatten(), T::ToFloat(float64), T::Normalize(1.0, 3.0)}),
      T::Transform([](const Tensor& x) { return x.sum(); })};
  for (auto& t : ts) {
    std::vector<Tensor> each;
    for (int i = 0; i < 5; ++i) each.push_back(t(xs[i]));
    Tensor expect = stack(each, 0);
    Tensor got = t.apply_batch(xs);
    CHECK(got.shape() == expect.shape());
    CHECK(got.dtype() == expect.dtype());
    CHECK(utils::array_equal(got, expect));
  }
  CHECK_FALSE(ts.back().batchable());
  CHECK_FALSE(T::Compose({T::Flatten(), ts.back()}).batchable());
}

// --- Dataset -----------------------------------------------------------------------------
TEST_CASE("Dataset: batchable transforms are applied once at load, get(i) unchanged") {
  Tensor data = arange(24.0).reshape(Shape{4, 2, 3});  // int64
  Tensor label = array({3, 1, 2, 0});
  datasets::Dataset raw(data, label);
  datasets::Dataset ds(data, label, T::Compose({T::Flatten(), T::ToFloat(), T::Normalize(0.0, 2.0)}),
                       T::AsType(int32));
  CHECK(ds.size() == 4);
  CHECK(ds.data().shape() == Shape{4, 6});  // transformed once
  CHECK(ds.data().dtype() == float32);
  CHECK(ds.label().dtype() == int32);
  auto [x, t] = ds.get(2);
  CHECK(x.shape() == Shape{6});
  CHECK(x.dtype() == float32);
  CHECK(dzt::vals(x) == std::vector<double>{6, 6.5, 7, 7.5, 8, 8.5});
  CHECK(t.ndim() == 0);
  CHECK(t.item<std::int32_t>() == 2);
  CHECK(dzt::vals(ds.get(-1).first) == dzt::vals(ds.get(3).first));
  CHECK_THROWS_AS(ds.get(4), IndexError);
  auto [rx, rt] = raw.get(1);
  CHECK(rx.shape() == Shape{2, 3});
  CHECK(rt.dtype() == int64);
  auto [bx, bt] = ds.get_batch({3, 0, 3});
  CHECK(bx.shape() == Shape{3, 6});
  CHECK(dzt::vals(bt) == std::vector<double>{0, 3, 0});
  CHECK(dzt::vals(bx[1]) == dzt::vals(ds.get(0).first));
}

TEST_CASE("Dataset: a per-sample function transform runs in get() and get_batch()") {
  Tensor data = arange(6.0, float64).reshape(Shape{3, 2});
  int calls = 0;
  datasets::Dataset ds(data, Tensor(), [&calls](const Tensor& x) {
    ++calls;
    return x * 10.0;
  });
  CHECK(calls == 0);  // not batchable: not applied at load
  CHECK(ds.data().is_same(data));
  auto [x, t] = ds.get(1);
  CHECK(dzt::vals(x) == std::vector<double>{20, 30});
  CHECK_FALSE(t.defined());  // no labels: DeZero's (x, None)
  auto [bx, bt] = ds.get_batch({2, 0});
  CHECK(bx.shape() == Shape{2, 2});
  CHECK(dzt::vals(bx) == std::vector<double>{40, 50, 0, 10});
  CHECK_FALSE(bt.defined());
  CHECK(calls == 3);
  CHECK_THROWS_AS(datasets::Dataset(data, array({1, 2})), ShapeError);
}

TEST_CASE("Dataset::to_gpu moves the data (DeviceError without CUDA)") {
  datasets::Spiral ds;
  if (!cuda::is_available()) {
    CHECK_THROWS_AS(ds.to_gpu(), DeviceError);
    MESSAGE("skipped: no CUDA device");
    return;
  }
  ds.to_gpu();
  CHECK(ds.device() == Device::cuda(0));
  auto [x, t] = ds.get_batch({0, 5, 7});
  CHECK(x.device() == Device::cuda(0));
  ds.to_cpu();
  CHECK(ds.data().device().is_cpu());
}

// --- Spiral, SinCurve --------------------------------------------------------------------
TEST_CASE("Spiral reproduces DeZero's get_spiral (NumPy fixture)") {
  auto fx = read_fixture(kData + "/spiral.txt");
  for (bool train : {true, false}) {
    datasets::Spiral ds(train);
    CAPTURE(train);
    CHECK(ds.size() == 300);
    CHECK(ds.data().shape() == Shape{300, 2});
    CHECK(ds.data().dtype() == float32);
    CHECK(ds.label().dtype() == int64);
    std::vector<float> x = ds.data().to_vector<float>();
    const auto& ex = fx[train ? "train_x" : "test_x"];
    REQUIRE(ex.size() == x.size());
    int diff = 0;
    for (std::size_t k = 0; k < x.size(); ++k) diff += x[k] != static_cast<float>(ex[k]);
    CHECK(diff == 0);
    CHECK(dzt::vals(ds.label()) == fx[train ? "train_t" : "test_t"]);
    auto [x0, t0] = ds.get(0);
    CHECK(x0.shape() == Shape{2});
    CHECK(t0.item<std::int64_t>() == static_cast<std::int64_t>(fx[train ? "train_t" : "test_t"][0]));
  }
  auto [x, t] = datasets::get_spiral(true);
  CHECK(utils::array_equal(x, datasets::Spiral(true).data()));
}

TEST_CASE("SinCurve: 999 (1,) samples, label is the next value") {
  datasets::SinCurve train(true), test(false);
  CHECK(train.size() == 999);
  CHECK(train.data().shape() == Shape{999, 1});
  CHECK(train.label().shape() == Shape{999, 1});
  CHECK(train.data().dtype() == float64);
  auto d = train.data().to_vector<double>(), l = train.label().to_vector<double>();
  for (int i = 0; i < 998; ++i) REQUIRE(d[i + 1] == l[i]);
  const double pi = std::acos(-1.0);
  std::vector<double> xs = linspace(0, 2 * pi, 1000).to_vector<double>();
  double max_noise = 0;
  for (int i = 0; i < 999; ++i) max_noise = std::max(max_noise, std::abs(d[i] - std::sin(xs[i])));
  CHECK(max_noise <= 0.05 + 1e-12);
  CHECK(max_noise > 0.01);
  auto td = test.data().to_vector<double>();
  for (int i = 0; i < 999; ++i) REQUIRE(td[i] == doctest::Approx(std::cos(xs[i])).epsilon(1e-12));
  auto [x, t] = test.get(5);
  CHECK(x.shape() == Shape{1});
}

// --- IDX files, MNIST, Fashion-MNIST -------------------------------------------------------
TEST_CASE("read_idx reads images and labels") {
  Tensor im = datasets::read_idx(kData + "/mnist/train-images-idx3-ubyte.gz");
  CHECK(im.shape() == Shape{12, 28, 28});
  CHECK(im.dtype() == int32);
  auto v = im.to_vector<std::int32_t>();
  int bad = 0;
  for (int n = 0; n < 12; ++n)
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) bad += v[(n * 28 + r) * 28 + c] != pixel(n, r, c, true);
  CHECK(bad == 0);
  Tensor lb = datasets::read_idx(kData + "/mnist/t10k-labels-idx1-ubyte.gz");
  CHECK(lb.shape() == Shape{5});
  CHECK(dzt::vals(lb) == std::vector<double>{1, 4, 7, 0, 3});
}

TEST_CASE("read_idx: bad magic, short data, truncated and corrupt gzip name the file") {
  std::string p = kData + "/idx_bad/bad-magic-images-idx3-ubyte.gz";
  std::string e = error_of([&] { datasets::read_idx(p); });
  CHECK(e.find(p) != std::string::npos);
  CHECK_MESSAGE(e.find("0x03080000") != std::string::npos, e);

  p = kData + "/idx_bad/short-labels-idx1-ubyte.gz";
  e = error_of([&] { datasets::read_idx(p); });
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("truncated") != std::string::npos);

  TempDir tmp;
  std::string good = dzt::read_bytes(kData + "/mnist/train-images-idx3-ubyte.gz");
  fs::path cut = tmp.path / "cut-idx3-ubyte.gz";
  dzt::write_bytes(cut, good.substr(0, good.size() / 2));
  e = error_of([&] { datasets::read_idx(cut.string()); });
  CHECK(e.find(cut.string()) != std::string::npos);

  fs::path flipped = tmp.path / "flipped-idx3-ubyte.gz";
  std::string bad = good;
  for (std::size_t k = 20; k < 60; ++k) bad[k] = static_cast<char>(bad[k] ^ 0x5a);
  dzt::write_bytes(flipped, bad);
  e = error_of([&] { datasets::read_idx(flipped.string()); });
  CHECK(e.find(flipped.string()) != std::string::npos);

  fs::path crc = tmp.path / "crc-idx3-ubyte.gz";  // gzip trailer (CRC32) damaged
  std::string bad_crc = good;
  bad_crc[bad_crc.size() - 6] = static_cast<char>(bad_crc[bad_crc.size() - 6] ^ 1);
  dzt::write_bytes(crc, bad_crc);
  e = error_of([&] { datasets::read_idx(crc.string()); });
  CHECK(e.find(crc.string()) != std::string::npos);

  fs::path huge = tmp.path / "huge-idx3-ubyte";  // plain (not gzipped) IDX with an absurd header
  dzt::write_bytes(huge, std::string("\x00\x00\x08\x03", 4) + std::string(12, '\xff') + "abc");
  e = error_of([&] { datasets::read_idx(huge.string()); });
  CHECK(e.find(huge.string()) != std::string::npos);
  CHECK(dzt::has(e, "more than the cap"));
  CHECK(dzt::has(e, "3 bytes after the header"));

  fs::path plain = tmp.path / "plain-idx1-ubyte";  // uncompressed files are read as well
  dzt::write_bytes(plain, std::string("\x00\x00\x08\x01\x00\x00\x00\x02\x07\x09", 10));
  CHECK(dzt::vals(datasets::read_idx(plain.string())) == std::vector<double>{7, 9});

  std::string missing = (tmp.path / "nope.gz").string();
  e = error_of([&] { datasets::read_idx(missing); });
  CHECK(e.find(missing) != std::string::npos);
}

TEST_CASE("MNIST from a directory: default transform, raw images, labels") {
  std::string dir = kData + "/mnist";
  datasets::MNIST train(true, datasets::MNIST::default_transform(), {}, dir);
  CHECK(train.size() == 12);
  CHECK(train.data().shape() == Shape{12, 784});  // transformed once at load
  CHECK(train.data().dtype() == float32);
  CHECK(train.label().dtype() == int64);
  auto [x, t] = train.get(3);
  CHECK(x.shape() == Shape{784});
  CHECK(x.dtype() == float32);
  auto xv = x.to_vector<float>();
  CHECK(xv[0] == static_cast<float>(pixel(3, 0, 0, true)) / 255.0f);
  CHECK(xv[28 * 5 + 7] == static_cast<float>(pixel(3, 5, 7, true)) / 255.0f);
  CHECK(t.item<std::int64_t>() == 9);

  datasets::MNIST raw(false, {}, {}, dir);
  CHECK(raw.size() == 5);
  auto [rx, rt] = raw.get(2);
  CHECK(rx.shape() == Shape{1, 28, 28});
  CHECK(rx.dtype() == int32);
  CHECK(rx.to_vector<std::int32_t>()[28 + 1] == pixel(2, 1, 1, false));
  CHECK(rt.item<std::int64_t>() == 7);
  CHECK(datasets::MNIST::labels().at(7) == "7");

  // DEZERO_HOME is the default directory; the fixtures copied there are not MNIST's files, and
  // a file in the cache is checked against its published SHA-256 on every load
  TempDir home;
  copy_mnist_fixtures(home.path);
  ScopedEnv env("DEZERO_HOME", home.str());
  CHECK(utils::cache_dir() == home.str());
  std::string e = error_of([] { datasets::MNIST(false); });
  INFO(e);
  CHECK(dzt::has(e, (home.path / "t10k-images-idx3-ubyte.gz").string()));
  CHECK(dzt::has(e, "d9896ea84ec8f2fd1cef1e2c2027fc55e466a65b395a4d83fbe5d362636f1bdc"));  // the fixture's
  CHECK(dzt::has(e, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"));  // MNIST's
  CHECK(dzt::has(e, "delete it"));
  CHECK(home.entries() == 4);  // nothing removed, nothing added
}

TEST_CASE("MNIST: damaged or mismatched files are errors naming the files") {
  TempDir tmp;
  copy_mnist_fixtures(tmp.path);
  fs::copy_file(tmp.path / "t10k-labels-idx1-ubyte.gz", tmp.path / "train-labels-idx1-ubyte.gz",
                fs::copy_options::overwrite_existing);
  std::string e = error_of([&] { datasets::MNIST(true, {}, {}, tmp.str()); });
  CHECK(e.find((tmp.path / "train-images-idx3-ubyte.gz").string()) != std::string::npos);
  CHECK(e.find((tmp.path / "train-labels-idx1-ubyte.gz").string()) != std::string::npos);
  CHECK(e.find("12 images") != std::string::npos);

  std::string good = dzt::read_bytes(tmp.path / "t10k-images-idx3-ubyte.gz");
  dzt::write_bytes(tmp.path / "t10k-images-idx3-ubyte.gz", good.substr(0, good.size() - 100));
  e = error_of([&] { datasets::MNIST(false, datasets::MNIST::default_transform(), {}, tmp.str()); });
  CHECK(e.find((tmp.path / "t10k-images-idx3-ubyte.gz").string()) != std::string::npos);
}

TEST_CASE("FashionMNIST: explicit dir, $DEZERO_HOME/fashion-mnist, labels") {
  datasets::FashionMNIST f(false, datasets::FashionMNIST::default_transform(), {}, kData + "/mnist");
  CHECK(f.size() == 5);
  CHECK(f.data().shape() == Shape{5, 784});
  CHECK(datasets::FashionMNIST::labels().at(9) == "Ankle boot");
  CHECK(std::string(datasets::FashionMNIST::system_dir()) == "/usr/share/datasets/fashion-mnist");

  // $DEZERO_HOME/fashion-mnist: checked against Zalando's SHA-256 (the fixtures are not its files)
  TempDir home;
  copy_mnist_fixtures(home.path / "fashion-mnist");
  ScopedEnv env("DEZERO_HOME", home.str());
  std::string e = error_of([] { datasets::FashionMNIST(true); });
  INFO(e);
  CHECK(dzt::has(e, "37e24d9076e13c707fd6d16e528d7d5ac740645e3cfe41e12ceed17e67a7cc81"));
  CHECK(dzt::has(e, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"));
  CHECK(std::string(datasets::FashionMNIST::default_mirror()).rfind("https://", 0) == 0);
}

TEST_CASE("MNIST::image_transform keeps the (1, 28, 28) form a CNN takes, float32 in [0, 1]") {
  datasets::MNIST cnn(true, datasets::MNIST::image_transform(), {}, kData + "/mnist");
  CHECK(cnn.data().shape() == Shape{12, 1, 28, 28});
  auto [x, t] = cnn.get(3);
  CHECK(x.shape() == Shape{1, 28, 28});
  CHECK(x.dtype() == float32);
  auto xv = x.to_vector<float>();
  CHECK(xv[28 * 5 + 7] == static_cast<float>(pixel(3, 5, 7, true)) / 255.0f);
  CHECK(x.min().item<float>() >= 0.0f);
  CHECK(x.max().item<float>() <= 1.0f);
  CHECK(t.item<std::int64_t>() == 9);
  auto [xb, tb] = cnn.get_batch({0, 1, 2});
  CHECK(xb.shape() == Shape{3, 1, 28, 28});
  datasets::FashionMNIST f(false, datasets::MNIST::image_transform(), {}, kData + "/mnist");
  CHECK(f.get(0).first.shape() == Shape{1, 28, 28});
}

// --- size caps ---------------------------------------------------------------------------
namespace {
// An IDX header: magic 0x0803 (or 0x0801 with one dim) and the dims, big-endian.
std::string idx_header(const std::vector<std::uint32_t>& dims) {
  std::string h("\x00\x00\x08", 3);
  h.push_back(static_cast<char>(dims.size()));
  for (std::uint32_t d : dims)
    for (int i = 3; i >= 0; --i) h.push_back(static_cast<char>((d >> (8 * i)) & 0xff));
  return h;
}
}  // namespace

TEST_CASE("read_idx: a small gzip declaring (and holding) 10^9 elements is refused before it allocates") {
  TempDir tmp;
  const fs::path bomb = tmp.path / "train-images-idx3-ubyte.gz";
  const std::string bytes = dzt::gzip_zeros(idx_header({1000, 1000, 1000}), 1000000000ull);
  REQUIRE(bytes.size() < 2000000);  // about 1 MB that inflates to 1 GB (a 4 GB int32 tensor)
  dzt::write_bytes(bomb, bytes);
  const dzt::CeilingRun run = dzt::run_under_ceiling([&] { datasets::read_idx(bomb.string()); });
  INFO(run.outcome);
  CHECK(dzt::has(run.outcome, "error: read_idx: " + bomb.string()));
  CHECK(dzt::has(run.outcome, "(1000, 1000, 1000)"));
  CHECK(dzt::has(run.outcome, "1000000000 elements"));
  CHECK(dzt::has(run.outcome, "cap of 268435456"));
  CHECK(dzt::has(run.outcome, "datasets::set_max_idx_elements"));
  MESSAGE("peak RSS grew by " << run.grew_kb << " kB");
  CHECK(run.grew_kb >= 0);
  CHECK(run.grew_kb < 64 * 1024);  // before the cap: about 5 GB
}

TEST_CASE("set_max_idx_elements: the cap is settable, and a ValueError when not positive") {
  CHECK(datasets::get_max_idx_elements() == (std::int64_t{1} << 28));
  const std::string labels = kData + "/mnist/t10k-labels-idx1-ubyte.gz";  // 5 labels
  datasets::set_max_idx_elements(4);
  const std::string e = error_of([&] { datasets::read_idx(labels); });
  datasets::set_max_idx_elements(std::int64_t{1} << 28);
  INFO(e);
  CHECK(dzt::has(e, "(5,) claim 5 elements"));
  CHECK(dzt::has(e, "cap of 4"));
  CHECK(dzt::has(e, "set_max_idx_elements"));
  CHECK_FALSE(dzt::has(e, "does not match the file size"));
  CHECK(datasets::read_idx(labels).size() == 5);
  CHECK_THROWS_AS(datasets::set_max_idx_elements(0), ValueError);
  CHECK_THROWS_AS(datasets::set_max_cifar_samples(-1), ValueError);
  CHECK(datasets::get_max_cifar_samples() == 60000);
}

namespace {
// Samples computed in get() (no stored data): sample i is (i, i % 2).
class Computed : public datasets::Dataset {
 public:
  Computed() : Dataset(true) {}
  std::int64_t size() const override { return 6; }
  Batch get(std::int64_t i) const override {
    return {full(Shape{2}, static_cast<double>(i), float32), full(Shape{}, static_cast<double>(i % 2), int64)};
  }
};
}  // namespace

TEST_CASE("Dataset::subset: the samples at the indices, in order, transforms kept; checks") {
  datasets::Spiral spiral(false);
  const std::vector<std::int64_t> idx{5, 0, 299, -1};
  datasets::Dataset sub = spiral.subset(idx);
  CHECK(sub.size() == 4);
  CHECK_FALSE(sub.train());
  const Batch want = spiral.get_batch(idx), got = sub.get_batch({0, 1, 2, 3});
  CHECK(utils::array_equal(got.first, want.first));
  CHECK(utils::array_equal(got.second, want.second));
  CHECK(utils::array_equal(sub.get(1).first, spiral.get(0).first));

  // A per-sample transform still runs at each access (a random augmentation stays random).
  int calls = 0;
  datasets::Dataset counted(random::randn({10, 3}, float32), Tensor(), T::Transform([&calls](const Tensor& x) {
                              ++calls;
                              return x * 2.0;
                            }));
  datasets::Dataset half = counted.subset({1, 3});
  CHECK(calls == 0);
  CHECK(utils::array_equal(half.get(1).first, counted.data()[3] * 2.0));
  CHECK(calls == 1);
  half.get(1);
  CHECK(calls == 2);  // once per access
  CHECK_FALSE(half.label().defined());

  // The copy outlives its source.
  datasets::Dataset kept = datasets::Dataset(random::randn({4, 2}, float32), zeros({4}, int64)).subset({2});
  CHECK(kept.size() == 1);

  // A dataset whose samples are computed: computed once, here.
  Computed c;
  datasets::Dataset cs = c.subset({4, 1});
  CHECK(cs.get(0).first.to_vector<float>() == std::vector<float>{4.f, 4.f});
  CHECK(cs.get(1).second.item<std::int64_t>() == 1);

  CHECK(dzt::has(dzt::thrown<ValueError>([&] { spiral.subset({}); }), "no indices"));
  CHECK(dzt::has(dzt::thrown<IndexError>([&] { spiral.subset({300}); }), "index 300"));
  DataLoader loader(sub, 2, false);
  CHECK(loader.size() == 2);
}
