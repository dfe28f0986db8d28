// tests/test_threads.cpp - one initialised model serving several inference threads at
// once (README, "Threads"): N threads x 10^4 forwards of an MLP and of a small CNN
// (conv, batch norm, pooling, linear) under no_grad() and test_mode() give, bit for
// bit, what one thread gives; the first, lazy calls of an uninitialised model from
// several threads create each parameter once. CI also runs this file under
// ThreadSanitizer (tools/test.sh), which is what catches a data race; here the
// checks are the outputs themselves.
#include <atomic>
#include <thread>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;
namespace F = dezero::F;
namespace L = dezero::L;

namespace {

constexpr int kThreads = 3;
constexpr int kCalls = 10000;

// A CNN with every lazily shaped layer kind: (N, 1, 8, 8) -> (N, 10).
std::shared_ptr<models::Sequential> small_cnn() {
  auto m = std::make_shared<models::Sequential>();
  m->append(std::make_shared<L::Conv2d>(4, 3, 1, 1));
  m->append(std::make_shared<L::BatchNorm>());
  m->append([](const Variable& x) { return F::pooling(F::relu(x), 2, 2); });
  m->append([](const Variable& x) { return F::reshape(x, {x.shape()[0], -1}); });
  m->append(std::make_shared<L::Linear>(10));
  return m;
}

// Each thread cycles through `inputs`, call k on inputs[k % n], and compares every
// output with want[k % n]; returns the number of mismatches over all threads.
int serve(L::Layer& model, const std::vector<Tensor>& inputs, const std::vector<Tensor>& want, int calls) {
  std::atomic<int> mismatches{0}, ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      auto ng = no_grad();  // Config is per thread: each worker sets its own
      auto tm = test_mode();
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();  // start together
      for (int k = 0; k < calls; ++k) {
        const std::size_t i = static_cast<std::size_t>(k + t) % inputs.size();
        Variable y = model(inputs[i]);
        if (!utils::array_equal(y.data(), want[i])) mismatches.fetch_add(1);
      }
    });
  }
  for (auto& th : pool) th.join();
  return mismatches.load();
}

std::vector<Tensor> one_thread(L::Layer& model, const std::vector<Tensor>& inputs) {
  auto ng = no_grad();
  auto tm = test_mode();
  std::vector<Tensor> out;
  for (const Tensor& x : inputs) out.push_back(model(x).data().copy());
  return out;
}

std::vector<Tensor> draws(const Shape& shape, int n) {
  std::vector<Tensor> xs;
  for (int i = 0; i < n; ++i) xs.push_back(random::randn(shape, float32));
  return xs;
}

}  // namespace

TEST_CASE("threads: one initialised MLP serves several inference threads, bit for bit") {
  random::seed(3);
  models::MLP model({64, 64, 10}, F::relu);
  std::vector<Tensor> xs = draws({8, 32}, 4);
  std::vector<Tensor> want = one_thread(model, xs);  // also initialises the lazy shapes
  CHECK(serve(model, xs, want, kCalls) == 0);
}

TEST_CASE("threads: one initialised CNN (conv, batch norm, pooling) serves several inference threads") {
  random::seed(4);
  auto model = small_cnn();
  std::vector<Tensor> xs = draws({2, 1, 8, 8}, 4);
  {  // a training step first, so that batch norm's running statistics are not the initial ones
    Variable loss = F::sum((*model)(xs[0]));
    loss.backward();
  }
  std::vector<Tensor> want = one_thread(*model, xs);
  const std::vector<double> mean_before = model->params()[2].data().to_vector<double>();  // bn avg_mean
  CHECK(serve(*model, xs, want, kCalls) == 0);
  // Test mode only reads the running statistics.
  CHECK(model->params()[2].data().to_vector<double>() == mean_before);
}

TEST_CASE("threads: the first calls of an uninitialised model from several threads create each parameter once") {
  std::vector<Tensor> xs;
  for (int round = 0; round < 20; ++round) {  // a race is a matter of timing: try it several times
    random::seed(9);
    if (xs.empty()) xs = draws({2, 1, 8, 8}, 1);
    random::seed(11);
    auto shared = small_cnn();
    random::seed(11);
    auto alone = small_cnn();
    std::vector<Tensor> want = one_thread(*alone, xs);
    random::seed(11);  // the lazy draws of `shared` come from this stream, in layer order
    CHECK(serve(*shared, xs, want, 1) == 0);
    auto a = shared->params(), b = alone->params();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(utils::array_equal(a[i].data(), b[i].data()));
  }
}

TEST_CASE("threads: calls under no_grad() do not replace what Layer::inputs()/outputs() recorded") {
  L::Linear l(2, false, float32, 3);
  Variable x(random::randn({1, 3}, float32));
  Variable y = l(x);
  {
    auto ng = no_grad();
    Variable other = l(random::randn({1, 3}, float32));
    CHECK(other.defined());
  }
  REQUIRE(l.outputs().size() == 1);
  CHECK(l.outputs()[0].is_same(y));
  CHECK(l.inputs()[0].is_same(x));
}

// Graph objects come from per-thread caches of the small-object pool (tensor/small_pool.cpp):
// a graph recorded on one thread and dropped on another gives its blocks to the second
// thread's cache, which must hand them out again as sound memory. Producers record graphs
// (with a shared parameter, so that its node and storage are counted from both threads) and
// pass them over; the consumer runs backward and drops them.
TEST_CASE("threads: graphs recorded on one thread, differentiated and freed on another") {
  Variable w(array({0.5, -1.0, 2.0}), "w");
  constexpr int kGraphs = 2000;
  std::vector<Variable> made(kGraphs);
  std::atomic<int> ready{0};
  std::thread producer([&] {
    for (int i = 0; i < kGraphs; ++i) {
      {  // the producer's own handles go before the graph is handed over
        Variable x(array({1.0, 2.0, 3.0}) * static_cast<double>(i % 7));
        Variable h = F::sigmoid(x * w) + 1.0;
        made[static_cast<std::size_t>(i)] = F::sum(h * h);
      }
      ready.store(i + 1, std::memory_order_release);
    }
  });
  double total = 0;
  std::thread consumer([&] {
    for (int i = 0; i < kGraphs; ++i) {
      while (ready.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      Variable y = std::move(made[static_cast<std::size_t>(i)]);
      total += y.data().item<double>();
      y.backward();  // w's gradient adds up over the graphs (only this thread writes it)
    }
  });
  producer.join();
  consumer.join();
  // The same sum and gradient on one thread.
  double want = 0;
  Variable w1(array({0.5, -1.0, 2.0}));
  for (int i = 0; i < kGraphs; ++i) {
    Variable x(array({1.0, 2.0, 3.0}) * static_cast<double>(i % 7));
    Variable h = F::sigmoid(x * w1) + 1.0;
    Variable y = F::sum(h * h);
    want += y.data().item<double>();
    y.backward();
  }
  CHECK(total == want);
  CHECK(utils::array_equal(w.grad().data(), w1.grad().data()));
}

// A thread's caches (the small-object pool's, the queue of pending releases, backward's
// buffer, the storage counters) are given up when the thread ends; a graph that a user's
// thread_local keeps is destroyed after them and must still be freed, without them.
TEST_CASE("threads: a graph kept in a thread_local is freed when its thread ends") {
  const std::uint64_t live0 = Storage::live_count();
  std::thread t([] {
    static thread_local Variable kept;  // constructed before the library's: destroyed after them
    Variable x(array({1.0, 2.0}));
    Variable y = x;
    for (int i = 0; i < 2000; ++i) y = F::sin(y) + 1.0;
    y.backward();
    kept = y;
  });
  t.join();
  CHECK(Storage::live_count() == live0);
}
