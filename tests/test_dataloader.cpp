// tests/test_dataloader.cpp - DataLoader / SeqDataLoader: batch counts and shapes (DeZero's
// figures), epochs and reshuffling, DeZero's RNG order, the per-sample path, devices.
#include <algorithm>
#include <fstream>
#include <map>
#include <type_traits>

#include <dezero/dataloaders.hpp>

#include "support/test_util.hpp"

using namespace dezero;
namespace T = dezero::transforms;

namespace {
std::vector<std::int64_t> fixture_ints(const std::string& key) {
  std::ifstream in(dzt::data_dir() + "/spiral.txt");
  std::string name;
  std::size_t n;
  while (in >> name >> n) {
    std::vector<double> v(n);
    for (auto& x : v) in >> x;
    if (name == key) return std::vector<std::int64_t>(v.begin(), v.end());
  }
  FAIL("no " << key << " in spiral.txt");
  return {};
}
}  // namespace

static_assert(!std::is_constructible_v<DataLoader, datasets::Spiral&&, std::int64_t>,
              "a DataLoader over a temporary dataset would dangle");

TEST_CASE("DataLoader: spiral, batch size 7 -> 43 batches, the last (6, 2)") {
  datasets::Spiral ds;
  DataLoader loader(ds, 7);
  CHECK(loader.size() == 43);
  std::vector<std::int64_t> order = loader.index();
  int n = 0;
  std::vector<Tensor> xs;
  for (auto& [x, t] : loader) {
    CHECK(x.shape() == Shape{n == 42 ? 6 : 7, 2});
    CHECK(t.shape() == Shape{n == 42 ? 6 : 7});
    CHECK(x.dtype() == float32);
    CHECK(t.dtype() == int64);
    xs.push_back(x);
    ++n;
  }
  CHECK(n == 43);
  // the batches are the dataset in this epoch's order
  Tensor all = concatenate(xs, 0);
  CHECK(utils::array_equal(all, take(ds.data(), array(order))));
  std::sort(order.begin(), order.end());
  for (std::int64_t i = 0; i < 300; ++i) REQUIRE(order[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("DataLoader: drop_last, shuffle = false, next()") {
  datasets::Spiral ds;
  DataLoader dl(ds, 7, true, true);
  CHECK(dl.size() == 42);
  int n = 0;
  for (auto& b : dl) {
    CHECK(b.first.shape() == Shape{7, 2});
    ++n;
  }
  CHECK(n == 42);

  DataLoader seq(ds, 100, false);
  auto b = seq.next();
  REQUIRE(b);
  CHECK(utils::array_equal(b->first, ds.data()[Slice(0, 100)]));
  CHECK(seq.next());
  CHECK(seq.next());
  CHECK_FALSE(seq.next());  // end of epoch: reset, like StopIteration
  CHECK(seq.iteration() == 0);
  CHECK(utils::array_equal(seq.next()->second, ds.label()[Slice(0, 100)]));
  CHECK_THROWS_AS(DataLoader(ds, 0), ValueError);
}

TEST_CASE("DataLoader: every epoch is reshuffled; a loop left early resumes") {
  datasets::Spiral ds;
  DataLoader loader(ds, 30);
  std::vector<std::vector<std::int64_t>> orders;
  std::vector<std::vector<double>> first_t;
  for (int epoch = 0; epoch < 3; ++epoch) {
    orders.push_back(loader.index());
    int n = 0;
    for (auto& [x, t] : loader) {
      if (n++ == 0) first_t.push_back(dzt::vals(t));
    }
    CHECK(n == 10);
  }
  CHECK(orders[0] != orders[1]);
  CHECK(orders[1] != orders[2]);
  CHECK(first_t[0] != first_t[1]);

  int seen = 0;
  for (auto& b : loader) {
    (void)b;
    if (++seen == 4) break;
  }
  CHECK(loader.iteration() == 4);
  for (auto& b : loader) {
    (void)b;
    ++seen;
  }
  CHECK(seen == 10);
}

TEST_CASE("DataLoader draws DeZero's permutation after Spiral (steps 48-50)") {
  datasets::Spiral ds(true);  // seeds 1984 and leaves the RNG where DeZero does
  DataLoader loader(ds, 30);
  CHECK(loader.index() == fixture_ints("loader_index"));
  auto b = loader.next();
  std::vector<std::int64_t> first(loader.index().begin(), loader.index().begin() + 30);
  CHECK(utils::array_equal(b->first, take(ds.data(), array(first))));
}

TEST_CASE("DataLoader: per-sample transform path gives the same batches as get()") {
  Tensor data = arange(40.0, float64).reshape(Shape{10, 2, 2});
  Tensor label = arange(10.0);
  datasets::Dataset ds(data, label, [](const Tensor& x) { return x.sum(); }, T::ToFloat());
  DataLoader loader(ds, 4, false);
  int n = 0;
  for (auto& [x, t] : loader) {
    CHECK(x.shape() == Shape{n == 2 ? 2 : 4});
    CHECK(t.dtype() == float32);
    for (std::int64_t i = 0; i < x.len(); ++i)
      CHECK(x[i].item<double>() == ds.get(n * 4 + i).first.item<double>());
    ++n;
  }
  CHECK(n == 3);
}

TEST_CASE("DataLoader over MNIST fixtures: one gather per batch, float32 (B, 784)") {
  datasets::MNIST ds(true, datasets::MNIST::default_transform(), {}, dzt::data_dir() + "/mnist");
  DataLoader loader(ds, 5);
  std::vector<Shape> shapes;
  for (auto& [x, t] : loader) {
    CHECK(x.dtype() == float32);
    CHECK(t.dtype() == int64);
    shapes.push_back(x.shape());
  }
  CHECK(shapes == std::vector<Shape>{Shape{5, 784}, Shape{5, 784}, Shape{2, 784}});
}

TEST_CASE("SeqDataLoader: SinCurve 999 / 30 -> 34 batches of (30, 1)") {
  datasets::SinCurve ds(true);
  SeqDataLoader loader(ds, 30);
  CHECK(loader.size() == 34);
  std::vector<double> d = ds.data().to_vector<double>(), l = ds.label().to_vector<double>();
  const std::int64_t jump = 999 / 30;
  std::int64_t k = 0;
  for (auto& [x, t] : loader) {
    REQUIRE(x.shape() == Shape{30, 1});
    REQUIRE(t.shape() == Shape{30, 1});
    auto xv = x.to_vector<double>(), tv = t.to_vector<double>();
    for (std::int64_t i = 0; i < 30; ++i) {
      std::size_t j = static_cast<std::size_t>((i * jump + k) % 999);
      REQUIRE(xv[static_cast<std::size_t>(i)] == d[j]);
      REQUIRE(tv[static_cast<std::size_t>(i)] == l[j]);
    }
    ++k;
  }
  CHECK(k == 34);
  int again = 0;
  for (auto& b : loader) {
    (void)b;
    ++again;
  }
  CHECK(again == 34);
}

TEST_CASE("DataLoader::to_gpu: batches on the device (DeviceError without CUDA)") {
  datasets::Spiral ds;
  DataLoader loader(ds, 50);
  if (!cuda::is_available()) {
    CHECK_THROWS_AS(loader.to_gpu(), DeviceError);
    CHECK(loader.device().is_cpu());
    MESSAGE("skipped: no CUDA device");
    return;
  }
  loader.to_gpu();
  for (auto& [x, t] : loader) {
    CHECK(x.device() == Device::cuda(0));
    CHECK(t.device() == Device::cuda(0));
  }
  loader.to_cpu();
  CHECK(loader.next()->first.device().is_cpu());
  datasets::Spiral gpu_ds;
  gpu_ds.to_gpu();
  DataLoader g(gpu_ds, 50);
  auto b = g.next();
  CHECK(b->first.device() == Device::cuda(0));
  CHECK(b->first.shape() == Shape{50, 2});
}

TEST_CASE("DataLoader: DataLoaderOptions names shuffle, drop_last and the stream") {
  datasets::Spiral data;  // 300 samples
  DataLoaderOptions o;
  o.shuffle = false;
  o.drop_last = true;
  DataLoader by_name(data, 7, o), by_position(data, 7, false, true);
  CHECK(by_name.max_iter() == 300 / 7);
  std::int64_t batches = 0;
  auto it = by_position.begin();
  for (const auto& [x, t] : by_name) {
    CHECK(utils::array_equal(x, it->first));
    CHECK(utils::array_equal(t, it->second));
    ++it;
    ++batches;
  }
  CHECK(batches == 300 / 7);
  static_assert(!std::is_constructible_v<DataLoader, datasets::Spiral&&, int, DataLoaderOptions>,
                "a loader over a temporary dataset would dangle");
}
