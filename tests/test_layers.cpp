// tests/test_layers.cpp - L::Layer registry, Linear (step 44's seeded numbers), EmbedID,
// BatchNorm, RNN / LSTM with truncated BPTT, Model, Sequential, MLP.
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <thread>

#include "support/test_util.hpp"

using namespace dezero;
namespace F = dezero::F;
namespace L = dezero::L;

namespace {

// Step 45's model, as the book's reader writes it.
class TwoLayerNet : public Model {
 public:
  TwoLayerNet(std::int64_t hidden_size, std::int64_t out_size) {
    l1 = register_layer("l1", std::make_shared<L::Linear>(hidden_size));
    l2 = register_layer("l2", std::make_shared<L::Linear>(out_size));
  }
  Variable forward(const Variable& x) override { return (*l2)(F::sigmoid((*l1)(x))); }
  std::shared_ptr<L::Linear> l1, l2;
};

// A layer with its own parameter between two sub-layers, and two inputs.
class Mixed : public L::Layer {
 public:
  Mixed() {
    first = register_layer("first", std::make_shared<L::Linear>(2, false, float32, 3));
    scale = register_parameter("scale", Parameter(ones({2})));
    last = register_layer("last", std::make_shared<L::Linear>(1, true, float32, 2));
  }
  VariableList forward_multi(const VariableList& xs) override {
    return {(*last)((*first)(xs[0]) * scale + xs[1])};
  }
  std::shared_ptr<L::Linear> first, last;
  Parameter scale;
};

Variable mse(const Variable& a, const Variable& b) {  // DeZero's mean_squared_error
  Variable d = a - b;
  return F::sum(d * d) / static_cast<double>(d.len());
}

std::vector<std::string> keys(const L::Layer& l) {
  std::vector<std::string> k;
  for (auto& [name, p] : l.named_params()) k.push_back(name);
  return k;
}

}  // namespace

// --- registry -------------------------------------------------------------------------------------
TEST_CASE("Layer: parameters and sub-layers in registration order") {
  Mixed m;
  CHECK(keys(m) == std::vector<std::string>{"first/W", "first/b", "scale", "last/W"});
  auto ps = m.params();
  REQUIRE(ps.size() == 4);
  CHECK(ps[0].is_same(m.first->W));
  CHECK(ps[1].is_same(m.first->b));
  CHECK(ps[2].is_same(m.scale));
  CHECK(ps[3].is_same(m.last->W));
  CHECK(ps[0].name() == "W");
  CHECK(m.param("first/b").is_same(m.first->b));
  CHECK(m.layer("last") == m.last);
  CHECK_THROWS_AS(m.param("nope"), ValueError);

  TwoLayerNet net(10, 1);
  CHECK(keys(net) == std::vector<std::string>{"l1/W", "l1/b", "l2/W", "l2/b"});
}

// The same model written with LayerRef members, called as l1(x).
class TwoLayerNetRef : public Model {
 public:
  TwoLayerNetRef(std::int64_t hidden_size, std::int64_t out_size) {
    l1 = register_layer("l1", std::make_shared<L::Linear>(hidden_size));
    l2 = register_layer("l2", std::make_shared<L::Linear>(out_size));
  }
  Variable forward(const Variable& x) override { return l2(F::sigmoid(l1(x))); }
  L::LayerRef<L::Linear> l1, l2;
};

TEST_CASE("Layer: register_layer's handle is called like the layer; shared_ptr members still work") {
  Variable x(random::randn({3, 2}, float64));
  TwoLayerNet a(4, 1);
  TwoLayerNetRef b(4, 1);
  random::seed(0);  // the weights are drawn on the first call
  Variable ya = a(x);
  random::seed(0);
  Variable yb = b(x);
  CHECK(utils::array_equal(ya.data(), yb.data()));
  CHECK(b.l1->W.data().defined());
  std::shared_ptr<L::Linear> as_shared = b.l1;  // a LayerRef is a shared_ptr
  CHECK(as_shared.get() == b.l1.get());
  CHECK(b.params().size() == 4);
  L::LayerRef<L::Layer> base = b.l2;  // converts to a handle of a base class
  CHECK(utils::array_equal(base(F::sigmoid(b.l1(x))).data(), yb.data()));
  L::LayerRef<L::Linear> empty;
  CHECK_THROWS_AS(empty(x), ValueError);
}

TEST_CASE("Layer: bad and duplicate names are refused") {
  struct Bad : L::Layer {
    void dup() {
      register_parameter("W", Parameter(ones({1})));
      register_parameter("W", Parameter(ones({1})));
    }
    void slash() { register_parameter("a/b", Parameter(ones({1}))); }
  };
  Bad b;
  CHECK_THROWS_AS(b.dup(), ValueError);
  CHECK_THROWS_AS(b.slash(), ValueError);
}

TEST_CASE("Layer: two-input call, cleargrads, inputs/outputs") {
  Mixed m;
  Variable x(random::randn({4, 3}, float32)), z(random::randn({4, 2}, float32));
  Variable y = m(x, z);
  CHECK(y.shape() == Shape{4, 1});
  CHECK(m.outputs()[0].is_same(y));
  CHECK(m.inputs().size() == 2);
  F::sum(y).backward();
  for (auto& p : m.params()) CHECK(p.has_grad());
  m.cleargrads();
  for (auto& p : m.params()) CHECK_FALSE(p.has_grad());
  L::Layer plain;
  CHECK_THROWS_AS(plain(x), NotImplementedError);
}

TEST_CASE("Layer: to_gpu without a CUDA device is a DeviceError and moves nothing") {
  if (cuda::is_available()) {
    MESSAGE("skipped: a CUDA device is present");
    return;
  }
  TwoLayerNet net(3, 1);
  net(random::randn({2, 4}, float32));
  CHECK_THROWS_AS(net.to_gpu(), DeviceError);
  for (auto& p : net.params()) CHECK(p.data().device() == Device::cpu());
  net.to_cpu();
}

TEST_CASE("Layer: to() moves data and gradients") {
  dzt::on_each_device([](Device dev) {
    TwoLayerNet net(3, 2);
    net.to(dev);
    Variable y = net(random::randn({2, 4}, float32, dev));
    F::sum(y).backward();
    net.to_cpu();
    for (auto& p : net.params()) {
      CHECK(p.data().device() == Device::cpu());
      CHECK(p.grad().data().device() == Device::cpu());
    }
  });
}

// --- Linear ---------------------------------------------------------------------------------------
TEST_CASE("Linear: lazy in_size, explicit in_size, nobias, dtype") {
  dzt::on_each_device([](Device dev) {
    L::Linear lazy(5);
    CHECK_FALSE(lazy.W.data().defined());
    CHECK(lazy.b.data().shape() == Shape{5});
    lazy.to(dev);
    Variable y = lazy(random::randn({7, 3}, float32, dev));
    CHECK(lazy.in_size == 3);
    CHECK(lazy.W.data().shape() == Shape{3, 5});
    CHECK(lazy.W.data().device() == dev);
    CHECK(y.shape() == Shape{7, 5});
    CHECK(y.dtype() == float32);

    L::Linear eager(4, true, float64, 6);
    CHECK(eager.W.data().shape() == Shape{6, 4});
    CHECK(eager.W.data().dtype() == float64);
    CHECK_FALSE(eager.b.defined());
    CHECK(eager.params().size() == 1);
  });
  CHECK_THROWS_AS(L::Linear(3)(random::randn({4}, float32)), ShapeError);
}

TEST_CASE("Linear: W = randn(in, out) * sqrt(1/in) from dezero::random, like DeZero") {
  random::seed(0);
  Tensor expect = (random::randn({3, 4}, float64).astype(float32) * std::sqrt(1.0 / 3)).astype(float64);
  random::seed(0);
  L::Linear l(4, false, float32, 3);
  CHECK(l.W.data().astype(float64).to_vector<double>() == expect.to_vector<double>());
}

TEST_CASE("Linear: step 44 reproduces DeZero's seeded losses") {
  random::seed(0);
  Tensor x = random::rand({100, 1});
  const double pi = std::acos(-1.0);
  Tensor y = sin(x * (2 * pi)) + random::rand({100, 1});
  L::Linear l1(10), l2(1);
  auto predict = [&](const Variable& v) { return l2(F::sigmoid(l1(v))); };
  const double lr = 0.2;
  std::vector<double> losses;
  for (int i = 0; i < 10000; ++i) {
    Variable loss = mse(y, predict(x));
    l1.cleargrads();
    l2.cleargrads();
    loss.backward();
    for (L::Linear* l : {&l1, &l2})
      for (auto& p : l->params()) {
        Tensor d = p.data();
        d -= p.grad().data() * lr;
      }
    if (i % 1000 == 0) losses.push_back(loss.data().item<double>());
  }
  MESSAGE(std::setprecision(17) << "step 44 losses: first " << losses.front() << ", at 9000 " << losses.back());
  CHECK(losses.front() == doctest::Approx(0.8165178492839196).epsilon(1e-12));
  // DeZero's last printed loss (i = 9000).
  CHECK(losses.back() == doctest::Approx(0.0761876413118557).epsilon(1e-10));
}

// --- EmbedID -------------------------------------------------------------------------------------
TEST_CASE("EmbedID: rows of W, gradients accumulate for repeated ids") {
  L::EmbedID emb(5, 3);
  CHECK(emb.W.data().shape() == Shape{5, 3});
  Tensor ids = array(std::vector<std::int64_t>{1, 3, 1, 0}, Shape{2, 2});
  Variable y = emb(ids);
  CHECK(y.shape() == Shape{2, 2, 3});
  auto w = emb.W.data().to_vector<float>();
  auto v = y.data().to_vector<float>();
  for (int j = 0; j < 3; ++j) CHECK(v[3 + j] == w[3 * 3 + j]);
  F::sum(y).backward();
  auto g = emb.W.grad().data().to_vector<float>();
  CHECK(g == std::vector<float>{1, 1, 1, 2, 2, 2, 0, 0, 0, 1, 1, 1, 0, 0, 0});
  CHECK_THROWS_AS(emb(random::rand({2})), DtypeError);
}

// --- BatchNorm ------------------------------------------------------------------------------------
TEST_CASE("BatchNorm: train mode normalises and updates running statistics; test mode uses them") {
  random::seed(7);
  L::BatchNorm bn;
  Tensor x = random::randn({8, 3}, float32) * 2.0 + 1.0;
  Variable y = bn(x);
  CHECK(keys(bn) == std::vector<std::string>{"avg_mean", "avg_var", "gamma", "beta"});
  CHECK(bn.gamma.data().shape() == Shape{3});
  CHECK(bn.avg_mean.data().dtype() == float32);
  Tensor mu = x.mean(0), var = ((x - mu) * (x - mu)).mean(0);
  CHECK(dzt::allclose(y.data().mean(0), zeros({3}), 1e-4, 1e-5));
  CHECK(dzt::allclose((y.data() * y.data()).mean(0), var / (var + 2e-5), 1e-4, 1e-5));
  CHECK(dzt::allclose(bn.avg_mean.data(), mu * 0.1));
  CHECK(dzt::allclose(bn.avg_var.data(), 0.9 + var * (0.1 * 8.0 / 7.0)));
  {
    auto g = test_mode();
    Variable yt = bn(x);
    Tensor want = (x - bn.avg_mean.data()) / sqrt(bn.avg_var.data() + 2e-5);
    CHECK(dzt::allclose(yt.data(), want));
  }
  Variable y4 = L::BatchNorm()(random::randn({2, 3, 4, 5}, float32));
  CHECK(y4.shape() == Shape{2, 3, 4, 5});
  // gradients reach gamma and beta, not the running statistics
  F::sum(bn(x) * bn(x)).backward();
  CHECK(bn.gamma.has_grad());
  CHECK_FALSE(bn.avg_mean.has_grad());
}

// --- RNN / LSTM -----------------------------------------------------------------------------------
TEST_CASE("RNN: shapes, h2h sized by the hidden size (DeZero bug), reset_state") {
  L::RNN rnn(4, 3);  // explicit in_size != hidden_size broke DeZero at step 2
  Tensor x = random::randn({2, 3}, float32);
  Variable h1 = rnn(x);
  CHECK(h1.shape() == Shape{2, 4});
  Variable h2 = rnn(x);
  CHECK(h2.shape() == Shape{2, 4});
  CHECK(rnn.h2h->W.data().shape() == Shape{4, 4});
  CHECK(rnn.x2h->W.data().shape() == Shape{3, 4});
  CHECK(keys(rnn) == std::vector<std::string>{"x2h/W", "x2h/b", "h2h/W"});
  rnn.reset_state();
  CHECK_FALSE(rnn.h.defined());
  CHECK(dzt::allclose(rnn(x).data(), h1.data(), 0, 0));  // a fresh sequence repeats the first step
}

TEST_CASE("LSTM: shapes and keys") {
  L::LSTM lstm(5);
  Tensor x = random::randn({3, 2}, float32);
  Variable h = lstm(x);
  CHECK(h.shape() == Shape{3, 5});
  CHECK(lstm.c.shape() == Shape{3, 5});
  h = lstm(x);
  CHECK(h.shape() == Shape{3, 5});
  CHECK(keys(lstm).size() == 12);  // x2f..x2u: W and b; h2f..h2u: W only
  CHECK(lstm.h2u->W.data().shape() == Shape{5, 5});
}

namespace {
template <class Rnn>
void truncated_bptt() {
  random::seed(1);
  Rnn rnn(6);
  L::Linear fc(1);
  const int bptt = 3, steps = 9;
  Tensor xs = random::randn({steps, 1, 1}, float32);
  Variable loss(zeros({}, float32));
  int count = 0, backwards = 0;
  for (int t = 0; t < steps; ++t) {
    Variable y = fc(rnn(xs[t]));
    loss = loss + mse(y, xs[(t + 1) % steps]);
    if (++count % bptt == 0) {
      rnn.cleargrads();
      fc.cleargrads();
      loss.backward();
      loss.unchain_backward();
      CHECK(rnn.params()[0].has_grad());
      // unchain_backward made the carried state a leaf: the next window starts from it
      CHECK(rnn.h.creator() == nullptr);
      for (auto& p : rnn.params()) {
        Tensor d = p.data();
        d -= p.grad().data() * 0.01;
      }
      ++backwards;
      loss = Variable(zeros({}, float32));
    }
  }
  CHECK(backwards == steps / bptt);
  for (auto& p : rnn.params()) {
    auto v = dzt::vals(p);
    for (double e : v) CHECK(std::isfinite(e));
  }
}
}  // namespace

TEST_CASE("RNN and LSTM: truncated BPTT with unchain_backward") {
  SUBCASE("RNN") { truncated_bptt<L::RNN>(); }
  SUBCASE("LSTM") { truncated_bptt<L::LSTM>(); }
}

// --- models --------------------------------------------------------------------------------------
TEST_CASE("MLP: l0, l1, ... with the activation between layers") {
  random::seed(2);
  models::MLP mlp({10, 4, 1});
  Tensor x = random::randn({5, 3}, float32);
  Variable y = mlp(x);
  CHECK(y.shape() == Shape{5, 1});
  CHECK(keys(mlp) == std::vector<std::string>{"l0/W", "l0/b", "l1/W", "l1/b", "l2/W", "l2/b"});
  Variable manual = (*mlp.layers[2])(F::sigmoid((*mlp.layers[1])(F::sigmoid((*mlp.layers[0])(x)))));
  CHECK(utils::array_equal(y.data(), manual.data()));
  models::MLP relu_mlp({3, 2}, F::relu);
  CHECK(relu_mlp(x).shape() == Shape{5, 2});
}

TEST_CASE("Sequential: layers and callables, keys by position") {
  random::seed(5);
  auto a = std::make_shared<L::Linear>(4);
  auto b = std::make_shared<L::Linear>(2);
  models::Sequential seq{a, F::sigmoid, b, [](const Variable& v) { return v * 2.0; }};
  CHECK(seq.size() == 4);
  Tensor x = random::randn({3, 5}, float32);
  Variable y = seq(x);
  CHECK(utils::array_equal(y.data(), ((*b)(F::sigmoid((*a)(x))) * 2.0).data()));
  CHECK(keys(seq) == std::vector<std::string>{"l0/W", "l0/b", "l2/W", "l2/b"});
}

TEST_CASE("Model::plot writes the graph of the forward pass") {
  TwoLayerNet net(3, 1);
  auto dir = std::filesystem::temp_directory_path() / "dezero_test_layers";
  std::filesystem::create_directories(dir);
  std::string written = net.plot(Variable(random::randn({2, 2}, float32)), (dir / "model.png").string());
  CHECK(std::filesystem::exists(written));
}

TEST_CASE("unchain_backward on a chain whose functions only the chain owns (core regression)") {
  // Each intermediate is held only by the next function: cutting the graph used to
  // free functions still on unchain_backward's work list (crashed truncated BPTT).
  Variable a(array(1.0));
  Variable y = a;
  for (int i = 0; i < 50; ++i) y = F::tanh(y) + a;
  y.unchain_backward();
  CHECK(y.creator() != nullptr);  // y itself keeps its creator, as in DeZero
  CHECK(y.creator()->input(0).creator() == nullptr);
  y.backward();
  CHECK(a.grad().data().item<double>() == 1.0);
}

// --- the options forms: DeZero's keywords by name ------------------------------------------------
TEST_CASE("layers: LinearOptions and ConvOptions build what the positional forms build") {
  L::LinearOptions lo;
  lo.in_size = 3;
  lo.dtype = float64;
  random::seed(1);
  L::Linear a(4, lo);
  random::seed(1);
  L::Linear b(4, false, float64, 3);
  CHECK(a.in_size == 3);
  CHECK(utils::array_equal(a.W.data(), b.W.data()));
  CHECK(a.W.data().dtype() == float64);
  lo = L::LinearOptions{};
  lo.nobias = true;
  CHECK_FALSE(L::Linear(4, lo).b.defined());

  L::ConvOptions co;
  co.stride = {2, 1};
  co.pad = 1;
  co.in_channels = 2;
  random::seed(2);
  L::Conv2d c(3, 3, co);
  random::seed(2);
  L::Conv2d d(3, 3, {2, 1}, 1, false, float32, 2);  // a braced stride stays positional
  CHECK(c.stride == Pair(2, 1));
  CHECK(d.stride == Pair(2, 1));
  CHECK(c.pad == Pair(1));
  CHECK(utils::array_equal(c.W.data(), d.W.data()));
  Tensor x = random::randn({1, 2, 6, 6}, float32);
  CHECK(utils::array_equal(c(x).data(), d(x).data()));
  co = L::ConvOptions{};
  co.nobias = true;
  L::Deconv2d e(2, 3, co);
  CHECK_FALSE(e.b.defined());
  CHECK(e.stride == Pair(1));
}

TEST_CASE("Layer: predict() is the call under no_grad() and test_mode(), for that call only, on any thread") {
  random::seed(7);
  models::Sequential m;
  m.append(std::make_shared<L::Linear>(16));
  m.append([](const Variable& x) { return F::dropout(x, 0.5); });
  m.append(std::make_shared<L::BatchNorm>());
  m.append(std::make_shared<L::Linear>(3));
  const Tensor x = random::randn({5, 4}, float32);
  m(x);  // lazy shapes, and batch norm's statistics moved off their start
  Tensor want;
  {
    auto ng = no_grad();
    auto tm = test_mode();
    want = m(x).data().copy();
  }
  CHECK(Config::train);
  CHECK(Config::enable_backprop);
  Variable y = m.predict(Variable(x));
  CHECK(utils::array_equal(y.data(), want));
  CHECK_FALSE(y.creator());     // no graph
  CHECK(Config::train);         // the flags are back
  CHECK(Config::enable_backprop);
  CHECK(utils::array_equal(m.predict(VariableList{Variable(x)})[0].data(), want));
  // A worker thread that forgets the flags: its call would train-mode the dropout; predict() would not.
  Tensor from_thread;
  std::thread([&] { from_thread = m.predict(Variable(x)).data(); }).join();
  CHECK(utils::array_equal(from_thread, want));
  // What it throws passes through, and the flags are restored.
  CHECK_THROWS_AS(m.predict(Variable(random::randn({5, 7}, float32))), ShapeError);
  CHECK(Config::train);
  CHECK(Config::enable_backprop);
}
