// tests/test_random.cpp - random::Generator: streams of their own (issue 12), next to the
// process-wide stream of dezero::random that DeZero's np.random calls map to.
#include <doctest/doctest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "dezero/dezero.hpp"
#include "support/test_util.hpp"

using namespace dezero;

namespace {
std::vector<double> draw(random::Generator g, Device d = Device::cpu()) { return g.randn({64}, float64, d).to_vector<double>(); }
}  // namespace

TEST_CASE("Generator(s) draws what seed(s) gives the global stream, and leaves the global stream alone") {
  random::seed(42);
  std::vector<double> global = random::randn({64}).to_vector<double>();
  random::Generator g(42);
  CHECK(draw(g) == global);
  // The global stream continues where it was, whatever a Generator draws meanwhile.
  random::seed(7);
  std::vector<double> a = random::rand({8}).to_vector<double>();
  random::seed(7);
  random::Generator other(7);
  (void)other.randn({1000});
  CHECK(random::rand({8}).to_vector<double>() == a);
  // NumPy's values for RandomState(42).randn(1)[0] and .permutation(5).
  random::Generator h(42);
  CHECK(h.randn({1}).item<double>() == doctest::Approx(0.4967141530112327).epsilon(1e-15));
  random::Generator p(42);
  CHECK(p.permutation(5).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 4, 2, 0, 3});
}

TEST_CASE("rand: float32 draws stay in [0, 1) where NumPy's float64 draw rounds to 1.0f") {
  // NumPy: np.random.seed(30); np.random.rand(2**20)[629437] == 0.9999999965811852, which
  // float32 rounds to 1.0 (DeZero's rand(...).astype(np.float32) would give 1.0 there)
  random::seed(30);
  Tensor d = random::rand(Shape{1 << 20}, float64);
  REQUIRE(d.to_vector<double>()[629437] == 0.9999999965811852);
  random::seed(30);
  Tensor f = random::rand(Shape{1 << 20}, float32);
  std::vector<float> v = f.to_vector<float>();
  CHECK(v[629437] < 1.0f);
  CHECK(v[629437] == std::nextafter(1.0f, 0.0f));
  CHECK(f.max().item<float>() < 1.0f);
  CHECK(v[0] == static_cast<float>(d.to_vector<double>()[0]));  // elsewhere the same rounding as before
}

TEST_CASE("Generator: independent streams, handles that share one, reseeding, the global handle") {
  random::Generator a(1), b(1);
  std::vector<double> first = draw(a);
  CHECK(draw(b) == first);         // same seed, same stream
  CHECK(draw(a) != first);         // a moved on
  random::Generator c = a;         // a copy is the same stream
  CHECK(c == a);
  std::vector<double> from_c = draw(c);
  random::Generator fresh(1);
  (void)draw(fresh), (void)draw(fresh);
  CHECK(draw(a) != from_c);        // c's draw advanced a as well
  a.seed(1);
  CHECK(draw(a) == first);
  CHECK(random::Generator::global().is_global());
  CHECK_FALSE(a.is_global());
  CHECK(random::Generator::global() == random::Generator::global());
  random::Generator::global().seed(42);
  std::vector<double> viaglobal = draw(random::Generator::global());
  random::seed(42);
  CHECK(random::randn({64}).to_vector<double>() == viaglobal);
  CHECK(dzt::has(dzt::thrown<ValueError>([] { random::Generator g(1ULL << 33); }), "random::Generator: seed"));
  CHECK(dzt::has(dzt::thrown<ValueError>([] { random::seed(1ULL << 33); }), "random::seed: seed"));
  CHECK(dzt::has(dzt::thrown<DtypeError>([] { random::Generator(0).randn({2}, int64); }), "randn"));
}

TEST_CASE("Generator: threads that each seed their own get the same stream, bit for bit") {
  constexpr int kThreads = 4;
  std::vector<std::vector<double>> out(kThreads);
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i)
    ts.emplace_back([&out, i] {
      random::Generator g(42);
      for (int k = 0; k < 200; ++k) {
        auto v = g.rand({16}).to_vector<double>();
        out[i].insert(out[i].end(), v.begin(), v.end());
        // The global stream is drawn from meanwhile: it must not disturb g.
        (void)random::rand({3});
      }
    });
  for (auto& t : ts) t.join();
  random::Generator ref(42);
  std::vector<double> expect;
  for (int k = 0; k < 200; ++k) {
    auto v = ref.rand({16}).to_vector<double>();
    expect.insert(expect.end(), v.begin(), v.end());
  }
  for (int i = 0; i < kThreads; ++i) CHECK(out[i] == expect);
}

TEST_CASE("Generator: layers' initialisers, dropout and the DataLoader's shuffle take one") {
  // Linear draws W from the generator it was given, like seed(0) + Linear on the global stream.
  random::seed(0);
  L::Linear global_init(3, false, float32, 4);
  random::seed(123);  // the global stream is elsewhere now
  L::Linear own(3, false, float32, 4, random::Generator(0));
  CHECK(own.W.data().to_vector<float>() == global_init.W.data().to_vector<float>());
  // Lazy init draws from the layer's generator at the first call.
  random::Generator g(5);
  L::Linear lazy(3, false, float32, 0, g);
  lazy(Variable(zeros({2, 4})));
  CHECK(lazy.W.data().to_vector<float>() ==
        (random::Generator(5).randn({4, 3}) * std::sqrt(1.0 / 4.0)).astype(float32).to_vector<float>());
  models::MLP m1({5, 2}, F::sigmoid, random::Generator(9)), m2({5, 2}, F::sigmoid, random::Generator(9));
  Variable x(random::randn({3, 4}).astype(float32));
  CHECK(m1(x).data().to_vector<float>() == m2(x).data().to_vector<float>());
  L::EmbedID e1(6, 2, float32, random::Generator(3)), e2(6, 2, float32, random::Generator(3));
  CHECK(e1.W.data().to_vector<float>() == e2.W.data().to_vector<float>());
  L::LSTM l1(4, 3, random::Generator(8)), l2(4, 3, random::Generator(8));
  CHECK(l1.x2f->W.data().to_vector<float>() == l2.x2f->W.data().to_vector<float>());
  CHECK(l1.x2f->W.data().to_vector<float>() != l1.x2i->W.data().to_vector<float>());

  L::Conv2d c1(4, 3, 1, 1, false, float32, 0, random::Generator(13)), c2(4, 3, 1, 1, false, float32, 2,
                                                                        random::Generator(13));
  c1(Variable(zeros({1, 2, 5, 5})));  // lazy: drawn at the first call, from the same stream
  CHECK(c1.W.data().to_vector<float>() == c2.W.data().to_vector<float>());
  L::Deconv2d t1(3, 2, 1, 0, false, float32, 2, random::Generator(14)), t2(3, 2, 1, 0, false, float32, 2,
                                                                          random::Generator(14));
  CHECK(t1.W.data().to_vector<float>() == t2.W.data().to_vector<float>());

  Variable ones(dezero::ones({1000}));
  Variable d1 = F::dropout(ones, 0.5, random::Generator(11));
  Variable d2 = F::dropout(ones, 0.5, random::Generator(11));
  CHECK(d1.data().to_vector<double>() == d2.data().to_vector<double>());
  double kept = d1.data().sum().item<double>() / 2.0;
  CHECK(kept > 400);
  CHECK(kept < 600);

  datasets::Spiral spiral;
  DataLoader loader(spiral, 30, true, false, random::Generator(21));
  CHECK(loader.index() == random::Generator(21).permutation(spiral.size()).to_vector<std::int64_t>());
  DataLoader same(spiral, 30, true, false, random::Generator(21));
  CHECK(same.index() == loader.index());
}

TEST_CASE("Generator: device tensors are reproducible from the generator's seed") {
  dzt::on_each_device([](Device d) {
    CHECK(draw(random::Generator(3), d) == draw(random::Generator(3), d));
    CHECK(draw(random::Generator(3), d) != draw(random::Generator(4), d));
  });
}

TEST_CASE("Generator: two threads training their own models match one thread, bit for bit") {
  // Each run: an MLP and a DataLoader drawing from Generator(seed), 3 epochs of SGD on Spiral.
  // The dataset is built once: Spiral reseeds the global stream as DeZero's get_spiral does.
  const datasets::Spiral data;
  auto train = [&data](std::uint64_t seed) {
    random::Generator gen(seed);
    DataLoader loader(data, 30, true, false, gen);
    models::MLP model({10, 3}, F::sigmoid, gen);
    optimizers::SGD opt(1.0);
    opt.setup(model);
    std::vector<float> losses;
    for (int epoch = 0; epoch < 3; ++epoch)
      for (auto& [x, t] : loader) {
        Variable loss = F::softmax_cross_entropy(model(Variable(x.astype(float32))), Variable(t));
        model.cleargrads();
        loss.backward();
        opt.update();
        losses.push_back(loss.data().item<float>());
      }
    return losses;
  };
  std::vector<float> alone0 = train(0), alone1 = train(1);
  std::vector<float> t0, t1;
  std::thread a([&] { t0 = train(0); }), b([&] { t1 = train(1); });
  a.join();
  b.join();
  CHECK(t0 == alone0);
  CHECK(t1 == alone1);
  CHECK(alone0 != alone1);
}
