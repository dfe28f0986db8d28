// tests/test_optimizers.cpp - the five update rules against hand-written float64 steps,
// hooks (WeightDecay = L2 term in the loss, ClipGrad, FreezeParam), no allocation
// after the first step, state files that resume a run exactly, the multi-tensor
// step against one kernel per parameter (bit for bit, on every device), and the host
// kernels' vector lanes against their scalar tail on extreme values.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>

#include "dezero/tensor/fused.hpp"  // detail::*_update_multi_
#include "support/test_util.hpp"

using namespace dezero;
namespace F = dezero::F;
namespace L = dezero::L;
namespace O = dezero::optimizers;

namespace {

const std::vector<double> W0{1.0, -2.0, 3.0}, G{0.5, -1.0, 2.0};

// Runs `steps` updates of a single float64 parameter W0 with the constant gradient G.
std::vector<double> run_rule(O::Optimizer& opt, int steps, Device dev = Device::cpu()) {
  Parameter w(array(W0, float64, dev));
  opt.setup(std::vector<Parameter>{w});
  for (int i = 0; i < steps; ++i) {
    w.set_grad(Variable(array(G, float64, dev)));
    opt.update();
  }
  return w.data().to_vector<double>();
}

void check_close(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-14) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(tol));
}

std::vector<std::vector<double>> snapshot(const L::Layer& m) {
  std::vector<std::vector<double>> out;
  for (auto& p : m.params()) out.push_back(p.data().to_vector<double>());
  return out;
}

Variable loss_of(models::MLP& m, const Tensor& x, const Tensor& t) {
  Variable d = m(x) - t;
  return F::sum(d * d) / static_cast<double>(x.len());
}

void train(models::MLP& m, O::Optimizer& opt, const Tensor& x, const Tensor& t, int steps) {
  for (int i = 0; i < steps; ++i) {
    Variable loss = loss_of(m, x, t);
    m.cleargrads();
    loss.backward();
    opt.update();
  }
}

std::filesystem::path out_dir() {
  auto d = std::filesystem::temp_directory_path() / "dezero_test_optimizers";
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace

// --- update rules ---------------------------------------------------------------------------------
TEST_CASE("SGD: W -= lr * g") {
  dzt::on_each_device([](Device dev) {
    O::SGD opt(0.1);
    check_close(run_rule(opt, 1, dev), {0.95, -1.9, 2.8});
  });
}

TEST_CASE("MomentumSGD: v = momentum v - lr g; W += v") {
  dzt::on_each_device([](Device dev) {
    O::MomentumSGD opt(0.1, 0.9);
    // v1 = -0.1 g; v2 = 0.9 v1 - 0.1 g = -0.19 g; W2 = W0 - 0.29 g
    check_close(run_rule(opt, 2, dev), {0.855, -1.71, 2.42});
  });
}

TEST_CASE("AdaGrad: h += g^2; W -= lr g / (sqrt(h) + eps)") {
  dzt::on_each_device([](Device dev) {
    O::AdaGrad opt(0.1, 1e-8);
    std::vector<double> want = W0;
    double h[3] = {0, 0, 0};
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 3; ++i) {
        h[i] += G[i] * G[i];
        want[i] -= 0.1 * G[i] / (std::sqrt(h[i]) + 1e-8);
      }
    check_close(run_rule(opt, 2, dev), want);
    // step 1 moves every weight by about lr against its gradient's sign
    O::AdaGrad one(0.1, 1e-8);
    check_close(run_rule(one, 1, dev), {0.9, -1.9, 2.9}, 1e-7);
  });
}

TEST_CASE("AdaDelta: DeZero's rule") {
  dzt::on_each_device([](Device dev) {
    O::AdaDelta opt(0.95, 1e-6);
    std::vector<double> want = W0;
    double msg[3] = {0, 0, 0}, msdx[3] = {0, 0, 0};
    for (int s = 0; s < 3; ++s)
      for (int i = 0; i < 3; ++i) {
        msg[i] = 0.95 * msg[i] + 0.05 * G[i] * G[i];
        double dx = std::sqrt((msdx[i] + 1e-6) / (msg[i] + 1e-6)) * G[i];
        msdx[i] = 0.95 * msdx[i] + 0.05 * dx * dx;
        want[i] -= dx;
      }
    check_close(run_rule(opt, 3, dev), want);
  });
}

TEST_CASE("Adam: bias-corrected lr = alpha sqrt(1 - b2^t) / (1 - b1^t), eps outside") {
  dzt::on_each_device([](Device dev) {
    O::Adam opt(0.001, 0.9, 0.999, 1e-8);
    std::vector<double> want = W0;
    double m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
    for (int t = 1; t <= 3; ++t) {
      double lr = 0.001 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
      for (int i = 0; i < 3; ++i) {
        m[i] += (1 - 0.9) * (G[i] - m[i]);
        v[i] += (1 - 0.999) * (G[i] * G[i] - v[i]);
        want[i] -= lr * m[i] / (std::sqrt(v[i]) + 1e-8);
      }
    }
    check_close(run_rule(opt, 3, dev), want);
    CHECK(opt.t() == 3);
    CHECK(opt.bias_corrected_lr() == doctest::Approx(0.001 * std::sqrt(1 - std::pow(0.999, 3)) / (1 - std::pow(0.9, 3))));
    O::Adam one;
    // Issue 35: before the first update the bias-corrected step is an error naming the learning
    // rate (it was NaN); the learning rate itself is `alpha`.
    std::string msg = dzt::thrown<ValueError>([&] { (void)one.bias_corrected_lr(); });
    CHECK_MESSAGE(dzt::has(msg, "before the first update()"), msg);
    CHECK_MESSAGE(dzt::has(msg, "the learning rate is `alpha` (0.001"), msg);
    one.alpha = 1e-4;
    CHECK(one.alpha == 1e-4);
    one.alpha = 0.001;
    check_close(run_rule(one, 1, dev), {0.999, -1.999, 2.999}, 1e-7);  // first step ~ alpha * sign(g)
  });
}

TEST_CASE("Optimizer: float32 weights with float64 gradients (float64 data), no target, empty hook") {
  random::seed(0);
  L::Linear l(2);
  O::SGD opt(0.5);
  opt.setup(l);
  Variable y = l(random::rand({4, 3}));  // float64 input through float32 weights
  F::sum(y).backward();
  const Tensor before = l.W.data().copy();
  opt.update();
  CHECK(l.W.data().dtype() == float32);
  // NumPy's W -= lr * g: computed in float64, rounded to float32 once.
  CHECK(utils::array_equal(l.W.data(), (before.astype(float64) - l.W.grad().data() * 0.5).astype(float32)));
  O::SGD none;
  CHECK_THROWS_AS(none.update(), ValueError);
  CHECK_THROWS_AS(none.add_hook(O::Hook()), ValueError);
}

// --- no allocation after the first step ------------------------------------------------------------
TEST_CASE("Optimizer: a step allocates no tensor memory after the first one") {
  dzt::on_each_device([](Device dev) {
    random::seed(9);
    Tensor x = random::randn({4, 5}, float32).to(dev), t = random::randn({4, 3}, float32).to(dev);
    // freeze: FreezeParam on the first layer (the multi-tensor step then skips two parameters)
    auto check = [&](O::Optimizer& opt, const std::string& name, bool freeze = false) {
      CAPTURE(name);
      models::MLP m({8, 3});
      m(x.to_cpu());  // create the lazy weights
      m.to(dev);
      opt.setup(m);
      if (freeze) opt.add_hook(O::FreezeParam(m.layers[0]));
      for (int step = 0; step < 3; ++step) {
        Variable loss = loss_of(m, x, t);
        m.cleargrads();
        loss.backward();
        const auto before = Storage::allocation_count();
        opt.update();
        const auto allocated = Storage::allocation_count() - before;
        if (step == 0) MESSAGE(name << ": first update allocated " << allocated << " state tensors");
        else CHECK(allocated == 0);
      }
    };
    O::SGD sgd;
    O::MomentumSGD momentum;
    O::AdaGrad adagrad;
    O::AdaDelta adadelta;
    O::Adam adam;
    O::Adam adam_wd;
    adam_wd.add_hook(O::WeightDecay(1e-4));
    O::MomentumSGD momentum_wd;
    momentum_wd.add_hook(O::WeightDecay(1e-4));
    check(sgd, "SGD");
    check(momentum, "MomentumSGD");
    check(adagrad, "AdaGrad");
    check(adadelta, "AdaDelta");
    check(adam, "Adam");
    check(adam_wd, "Adam + WeightDecay");
    check(momentum_wd, "MomentumSGD + WeightDecay + FreezeParam", true);
  });
}

// --- hooks ------------------------------------------------------------------------------------------
TEST_CASE("WeightDecay: the same update as adding rate/2 * sum(W^2) to the loss (test_weight_decay.py)") {
  // DeZero's test uses softmax_cross_entropy; any loss shows the equivalence.
  random::seed(0);
  const double rate = 0.4;
  Tensor x = random::rand({10, 2});
  L::Linear layer(3, true, float64, 2);
  O::SGD opt;  // lr 0.01

  layer.W.set_data(ones({2, 3}, float64));
  opt.setup(layer);
  opt.add_hook(O::WeightDecay(rate));
  Variable y = layer(x);
  Variable loss = F::sum(F::sin(y)) / 10.0;
  layer.cleargrads();
  loss.backward();
  opt.update();
  Tensor W0 = layer.W.data().copy();

  layer.W.set_data(ones({2, 3}, float64));
  opt.clear_hooks();
  y = layer(x);
  loss = F::sum(F::sin(y)) / 10.0 + rate / 2.0 * F::sum(layer.W * layer.W);
  layer.cleargrads();
  loss.backward();
  opt.update();
  CHECK(dzt::allclose(W0, layer.W.data(), 1e-12, 1e-14));
}

TEST_CASE("WeightDecay: a gradient shared by two parameters is not decayed twice") {
  Parameter a(array({1.0, 2.0, 3.0})), b(array({-1.0, 0.5, 4.0}));
  F::sum(a + b).backward();  // add's backward hands one gradient to both inputs
  MESSAGE("a and b share one gradient node: " << a.grad().is_same(b.grad()));
  O::SGD opt(1.0);
  opt.setup(std::vector<Parameter>{a, b});
  opt.add_hook(O::WeightDecay(0.5));
  opt.update();
  // W -= 1 * (1 + 0.5 W)
  CHECK(a.data().to_vector<double>() == std::vector<double>{-0.5, -0.0, 0.5});
  CHECK(b.data().to_vector<double>() == std::vector<double>{-1.5, -0.75, 1.0});
}

TEST_CASE("ClipGrad: scales all gradients by max_norm / (global norm + 1e-6) when that is < 1") {
  Parameter p(array({0.0})), q(array({0.0}));
  O::SGD opt(1.0);
  opt.setup(std::vector<Parameter>{p, q});
  opt.add_hook(O::ClipGrad(1.0));
  p.set_grad(Variable(array({3.0})));
  q.set_grad(Variable(array({4.0})));
  opt.update();
  const double rate = 1.0 / (5.0 + 1e-6);
  CHECK(p.data().item<double>() == doctest::Approx(-3.0 * rate).epsilon(1e-15));
  CHECK(q.data().item<double>() == doctest::Approx(-4.0 * rate).epsilon(1e-15));

  O::SGD loose(1.0);
  loose.setup(std::vector<Parameter>{p, q});
  loose.add_hook(O::ClipGrad(10.0));
  p.set_data(array({0.0}));
  p.set_grad(Variable(array({3.0})));
  q.set_grad(Variable(array({4.0})));
  loose.update();
  CHECK(p.data().item<double>() == -3.0);
}

TEST_CASE("FreezeParam: frozen layers and parameters are skipped (DeZero crashed)") {
  random::seed(3);
  models::MLP m({4, 2});
  Tensor x = random::randn({3, 5}, float32), t = random::randn({3, 2}, float32);
  loss_of(m, x, t);  // create the lazy weights
  O::SGD opt(0.1);
  opt.setup(m);
  opt.add_hook(O::FreezeParam(m.layers[0], m.layers[1]->b));
  const auto before = snapshot(m);
  train(m, opt, x, t, 2);
  const auto after = snapshot(m);
  CHECK(after[0] == before[0]);  // l0/W
  CHECK(after[1] == before[1]);  // l0/b
  CHECK(after[2] != before[2]);  // l1/W trains
  CHECK(after[3] == before[3]);  // l1/b
}

// --- state files --------------------------------------------------------------------------------------
namespace {
template <class Opt>
void check_resume(const std::string& name) {
  CAPTURE(name);
  random::seed(11);
  Tensor x = random::randn({6, 3}, float32), t = random::randn({6, 2}, float32);
  models::MLP a({5, 2});
  Opt oa;
  oa.setup(a);
  train(a, oa, x, t, 3);
  const auto dir = out_dir();
  const std::string wpath = (dir / "w.npz").string(), spath = (dir / "state.npz").string();
  a.save_weights(wpath);
  oa.save_state(spath);
  train(a, oa, x, t, 3);

  models::MLP b({5, 2});
  b.load_weights(wpath);
  Opt ob;
  ob.setup(b);
  ob.load_state(spath);
  CHECK(ob.t() == 3);
  train(b, ob, x, t, 3);
  CHECK(snapshot(a) == snapshot(b));  // bit-identical

  models::MLP c({5, 2});  // without the state the run differs
  c.load_weights(wpath);
  Opt oc;
  oc.setup(c);
  train(c, oc, x, t, 3);
  CHECK(snapshot(a) != snapshot(c));
}
}  // namespace

TEST_CASE("Optimizer state: save_state / load_state resume a run exactly") {
  check_resume<O::MomentumSGD>("MomentumSGD");
  check_resume<O::AdaGrad>("AdaGrad");
  check_resume<O::AdaDelta>("AdaDelta");
  check_resume<O::Adam>("Adam");
}

TEST_CASE("Optimizer state: a file that does not fit the target throws and changes nothing") {
  random::seed(12);
  Tensor x = random::randn({2, 3}, float32), t = random::randn({2, 2}, float32);
  models::MLP small({4, 2}), big({6, 2});
  O::Adam os, ob;
  os.setup(small);
  ob.setup(big);
  train(small, os, x, t, 2);
  train(big, ob, x, t, 1);
  const std::string p = (out_dir() / "small_state.npz").string();
  os.save_state(p);
  CHECK_THROWS_AS(ob.load_state(p), ShapeError);
  CHECK(ob.t() == 1);
  // the untouched state still trains identically to a twin that never saw the bad file
  const std::string wq = (out_dir() / "big_w.npz").string(), sq = (out_dir() / "big_state.npz").string();
  big.save_weights(wq);
  ob.save_state(sq);
  models::MLP twin({6, 2});
  twin.load_weights(wq);
  O::Adam ot;
  ot.setup(twin);
  ot.load_state(sq);
  train(big, ob, x, t, 2);
  train(twin, ot, x, t, 2);
  CHECK(snapshot(big) == snapshot(twin));
  O::SGD sgd;
  sgd.setup(big);
  CHECK_THROWS_AS(sgd.load_state(p), ValueError);  // SGD has no "p0/m"
}

TEST_CASE("Optimizer state: state_dict / load_state_dict in memory, checked before anything changes") {
  random::seed(13);
  Tensor x = random::randn({2, 3}, float32), t = random::randn({2, 2}, float32);
  models::MLP m({4, 2});
  O::Adam a;
  a.setup(m);
  train(m, a, x, t, 2);
  utils::NamedTensors sd = a.state_dict();
  REQUIRE(sd.size() == 1 + 4 * 2);  // t, and m/v of l0/W l0/b l1/W l1/b
  CHECK(sd[0].first == "t");
  CHECK(sd[0].second.item<std::int64_t>() == 2);
  CHECK(sd[1].first == "p0/m");
  // A negative step count, a repeated key and a stray array are refused; the state stays.
  auto with = [&](const std::string& key, const Tensor& v) {
    utils::NamedTensors bad = sd;
    bad.emplace_back(key, v);
    return bad;
  };
  utils::NamedTensors neg = sd;
  neg[0].second = array(std::int64_t{-1}, int64);
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { a.load_state_dict(neg, "mine"); }), "mine: 't' is -1"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { a.load_state_dict(with("t", sd[0].second)); }), "twice"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { a.load_state_dict(with("p9/m", sd[1].second)); }), "p9/m"));
  CHECK(a.t() == 2);
  O::Adam b;
  b.setup(m);
  b.load_state_dict(sd);
  CHECK(b.t() == 2);
  CHECK(b.state_dict().size() == sd.size());
}

// --- DeZero's one-line form: auto optimizer = SGD(lr).setup(model) -------------------------------
namespace {
// The one-line optimizer against one set up in two lines: same class, same steps,
// same weights, for every rule, with a hook added on the temporary as well.
template <class Opt, class... Args>
void check_one_line(Args... args) {
  random::seed(5);
  Tensor x = random::randn({4, 3}, float64), t = random::randn({4, 2}, float64);
  models::MLP a({5, 2}), b({5, 2});
  a(x);
  b(x);
  b.load_weights([&] {
    auto p = out_dir() / "one_line.npz";
    a.save_weights(p.string());
    return p.string();
  }());
  auto one = Opt(args...).setup(a).add_hook(O::WeightDecay(1e-3));
  static_assert(std::is_same_v<decltype(one), Opt>, "setup() on a temporary returns the rule by value");
  Opt two(args...);
  Opt& same = two.setup(b);
  CHECK(&same == &two);
  two.add_hook(O::WeightDecay(1e-3));
  train(a, one, x, t, 4);
  train(b, two, x, t, 4);
  CHECK(one.t() == 4);
  CHECK(snapshot(a) == snapshot(b));
}
}  // namespace

TEST_CASE("Optimizer: the one-line form owns its state, for every rule") {
  check_one_line<O::SGD>(0.1);
  check_one_line<O::MomentumSGD>(0.1, 0.9);
  check_one_line<O::AdaGrad>(0.1);
  check_one_line<O::AdaDelta>();
  check_one_line<O::Adam>(0.01);
  // A shared model and a parameter list work on a temporary too.
  auto shared = std::make_shared<models::MLP>(std::vector<std::int64_t>{2});
  auto o1 = O::Adam().setup(shared);
  Parameter p(array({1.0, 2.0}));
  auto o2 = O::SGD(0.5).setup(std::vector<Parameter>{p});
  p.set_grad(Variable(array({2.0, 2.0})));
  o2.update();
  CHECK(p.data().to_vector<double>() == std::vector<double>{0.0, 1.0});
  // A rule moved after steps keeps its state (Adam's t and moments).
  (*shared)(array({{1.0, 2.0}}));
  F::sum((*shared)(array({{1.0, 2.0}}))).backward();
  o1.update();
  O::Adam moved = std::move(o1);
  CHECK(moved.t() == 1);
  moved.update();
  CHECK(moved.t() == 2);
}

TEST_CASE("Optimizer: a model destroyed before update() is reported as such") {
  O::SGD opt(0.1);
  {
    models::MLP m({3});
    opt.setup(m);
    m(array({{1.0}}));
  }
  CHECK_THROWS_WITH_AS(opt.update(), doctest::Contains("the model given to setup(model) has been destroyed"),
                       ValueError);
  O::SGD none;
  CHECK_THROWS_WITH_AS(none.update(), doctest::Contains("call setup(model) before update()"), ValueError);
}

// --- multi-tensor updates: the same bits as one kernel per parameter ------------------------------
namespace {
// A rule updated one parameter at a time: the base's update_many (update_one for each,
// one fused kernel per parameter), the path every rule took before multi-tensor updates.
template <class Rule>
class PerParam : public Rule {
 public:
  using Rule::Rule;

 protected:
  void update_many(const O::Optimizer::UpdateItem* items, std::size_t n) override {
    O::Optimizer::update_many(items, n);
  }
};

// A rule that counts the parameters its update_one() was handed (the per-parameter path).
template <class Rule>
class Counting : public Rule {
 public:
  using Rule::Rule;
  int calls = 0;

 protected:
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>& state) override {
    ++calls;
    Rule::update_one(param, grad, state);
  }
};

// Parameters of the given shapes (0-d, one element, empty, above kParallelMin = 2^15 ...),
// random, of `dt` on `dev`.
std::vector<Parameter> make_params(const std::vector<Shape>& shapes, DType dt, Device dev) {
  std::vector<Parameter> ps;
  for (const auto& s : shapes) ps.emplace_back(random::randn(s, dt).to(dev));
  return ps;
}

std::vector<Parameter> clone(const std::vector<Parameter>& ps) {
  std::vector<Parameter> out;
  for (const auto& p : ps) out.emplace_back(p.data().copy());
  return out;
}

// Three steps of both optimizers on the same random gradients (b's parameters get copies of
// a's), each of the dtype dtype_of(i) on dev.
template <class DtypeOf>
void three_steps(O::Optimizer& multi, O::Optimizer& single, const std::vector<Parameter>& a,
                 const std::vector<Parameter>& b, DtypeOf dtype_of, Device dev = Device::cpu()) {
  for (int step = 0; step < 3; ++step) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      Tensor g = random::randn(a[i].data().shape(), dtype_of(i)).to(dev);
      Parameter pa = a[i], pb = b[i];
      pa.set_grad(Variable(g));
      pb.set_grad(Variable(g.copy()));
    }
    multi.update();
    single.update();
  }
}

// Every array of two state files, bit for bit.
void check_same_state(O::Optimizer& a, O::Optimizer& b, const std::string& tag) {
  const std::string pa = (out_dir() / (tag + "_a.npz")).string(), pb = (out_dir() / (tag + "_b.npz")).string();
  a.save_state(pa);
  b.save_state(pb);
  auto sa = utils::load_npz(pa), sb = utils::load_npz(pb);
  REQUIRE(sa.size() == sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    CAPTURE(sa[i].first);
    CHECK(sa[i].first == sb[i].first);
    CHECK(utils::array_equal(sa[i].second, sb[i].second));
  }
}

// `steps` updates of the same parameters through Opt (multi-tensor) and PerParam<Opt>,
// with the same random gradients and the hooks WeightDecay, ClipGrad (which clips) and
// FreezeParam (on the second parameter): the parameters and the state must match bit
// for bit, and the multi-tensor rule must not have gone through update_one.
template <class Opt, class... Args>
void check_multi(const char* name, const std::vector<Shape>& shapes, DType dt, Device dev, Args... args) {
  CAPTURE(name);
  CAPTURE(dtype_name(dt));
  random::seed(21);
  std::vector<Parameter> a = make_params(shapes, dt, dev), b = clone(a);
  Counting<Opt> multi(args...);
  PerParam<Opt> single(args...);
  multi.setup(a);
  single.setup(b);
  for (O::Optimizer* o : {static_cast<O::Optimizer*>(&multi), static_cast<O::Optimizer*>(&single)}) {
    o->add_hook(O::WeightDecay(1e-2));
    o->add_hook(O::ClipGrad(5.0));
  }
  multi.add_hook(O::FreezeParam(a[1]));
  single.add_hook(O::FreezeParam(b[1]));
  const Tensor frozen = a[1].data().copy(), first = a[0].data().copy();
  for (int step = 0; step < 4; ++step) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      Tensor g = random::randn(a[i].data().shape(), dt).to(dev);
      a[i].set_grad(Variable(g));
      b[i].set_grad(Variable(g.copy()));
    }
    multi.update();
    single.update();
  }
  CHECK(multi.calls == 0);  // no parameter went through update_one
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(utils::array_equal(a[i].data(), b[i].data()));
  }
  CHECK(utils::array_equal(a[1].data(), frozen));
  CHECK(!utils::array_equal(a[0].data(), first));  // the others did move
  check_same_state(multi, single, name);
}

// A 0-d, a one-element and an empty parameter, small ones and two above kParallelMin
// elements in all (the host splits that total over its threads, chunks cut in the middle).
const std::vector<Shape> kLarge{Shape{}, Shape{1}, Shape{7}, Shape{0}, Shape{3, 5}, Shape{300, 150}, Shape{20000}};
// W3's parameters: everything on the calling thread.
const std::vector<Shape> kSmall{Shape{2, 10}, Shape{10}, Shape{10, 1}, Shape{1}};

template <class Opt, class... Args>
void check_multi_all(const char* name, Device dev, Args... args) {
  for (DType dt : {float32, float64}) {
    check_multi<Opt>(name, kLarge, dt, dev, args...);
    check_multi<Opt>(name, kSmall, dt, dev, args...);
  }
}
}  // namespace

TEST_CASE("Optimizer: multi-tensor updates give the bits of one kernel per parameter, hooks included") {
  dzt::on_each_device([](Device dev) {
    check_multi_all<O::SGD>("SGD", dev, 0.1);
    check_multi_all<O::MomentumSGD>("MomentumSGD", dev, 0.1, 0.9);
    check_multi_all<O::AdaGrad>("AdaGrad", dev, 0.1);
    check_multi_all<O::AdaDelta>("AdaDelta", dev);
    check_multi_all<O::Adam>("Adam", dev, 0.01);
  });
}

TEST_CASE("Optimizer: more parameters than one multi-tensor launch takes (64 on a GPU)") {
  dzt::on_each_device([](Device dev) {
    std::vector<Shape> many;
    for (int i = 0; i < 150; ++i) many.push_back(Shape{1 + (i * 37) % 300});
    check_multi<O::Adam>("Adam, 150 parameters", many, float32, dev, 0.01);
    check_multi<O::MomentumSGD>("MomentumSGD, 150 parameters", many, float64, dev, 0.1, 0.9);
  });
}

TEST_CASE("Optimizer: a float64 gradient on float32 weights and a parameter listed twice go one at a time") {
  dzt::on_each_device([](Device dev) {
    random::seed(4);
    // p0: float32 weights with a float64 gradient (the widened copy, one at a time); p1 twice
    // (updated twice per step, in order: the multi-tensor kernel must not see it twice).
    std::vector<Parameter> a = make_params({Shape{5}, Shape{40000}, Shape{3}}, float32, dev), b = clone(a);
    std::vector<Parameter> la{a[0], a[1], a[2], a[1]}, lb{b[0], b[1], b[2], b[1]};
    Counting<O::Adam> multi(0.01);
    PerParam<O::Adam> single(0.01);
    multi.setup(la);
    single.setup(lb);
    three_steps(multi, single, a, b, [](std::size_t i) { return i == 0 ? float64 : float32; }, dev);
    CHECK(multi.calls == 3 * 4);  // the overlap sends every parameter through update_one
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(utils::array_equal(a[i].data(), b[i].data()));
    CHECK(a[0].data().dtype() == float32);

    // Without the duplicate: only the float64 gradient goes one at a time.
    std::vector<Parameter> c = make_params({Shape{5}, Shape{40000}, Shape{3}}, float32, dev), d = clone(c);
    Counting<O::Adam> multi2(0.01);
    PerParam<O::Adam> single2(0.01);
    multi2.setup(c);
    single2.setup(d);
    three_steps(multi2, single2, c, d, [](std::size_t i) { return i == 0 ? float64 : float32; }, dev);
    CHECK(multi2.calls == 3);
    for (std::size_t i = 0; i < c.size(); ++i) CHECK(utils::array_equal(c[i].data(), d[i].data()));
    check_same_state(multi2, single2, "mixed");
  });
}

TEST_CASE("Optimizer: float32 and float64 parameters in one model: one multi-tensor group each") {
  random::seed(8);
  std::vector<Parameter> a;
  for (int i = 0; i < 6; ++i) a.emplace_back(random::randn({3 + i}, i % 2 ? float64 : float32));
  std::vector<Parameter> b = clone(a);
  Counting<O::Adam> multi(0.01);
  PerParam<O::Adam> single(0.01);
  multi.setup(a);
  single.setup(b);
  multi.add_hook(O::WeightDecay(0.1));
  single.add_hook(O::WeightDecay(0.1));
  three_steps(multi, single, a, b, [&](std::size_t i) { return a[i].data().dtype(); });
  CHECK(multi.calls == 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i].data().dtype() == (i % 2 ? float64 : float32));
    CHECK(utils::array_equal(a[i].data(), b[i].data()));
  }
  check_same_state(multi, single, "two_dtypes");
}

TEST_CASE("Optimizer: the cached state follows a parameter that changes shape, node or device") {
  random::seed(6);
  Parameter p(random::randn({4}, float64)), q(random::randn({3}, float64));
  Parameter p2(p.data().copy()), q2(q.data().copy());
  Counting<O::MomentumSGD> multi(0.1, 0.9);
  PerParam<O::MomentumSGD> single(0.1, 0.9);
  multi.setup(std::vector<Parameter>{p, q});
  single.setup(std::vector<Parameter>{p2, q2});
  // One step of both on gradients of ones: x and y (multi's) against x2 and y2 (single's).
  auto step_pair = [&](Parameter& x, Parameter& y, Parameter& x2, Parameter& y2) {
    for (auto* v : {&x, &y, &x2, &y2}) v->set_grad(Variable(ones_like(v->data())));
    multi.update();
    single.update();
    CHECK(utils::array_equal(x.data(), x2.data()));
    CHECK(utils::array_equal(y.data(), y2.data()));
  };
  auto step = [&] { step_pair(p, q, p2, q2); };
  step();
  step();
  // new data of another shape: the state starts again from zeros (v = -lr g)
  p.set_data(zeros({2, 2}, float64));
  p2.set_data(zeros({2, 2}, float64));
  step();
  CHECK(p.data().to_vector<double>() == std::vector<double>(4, -0.1));
  // a new parameter list (other nodes) and a reset: the state follows
  Parameter r(array({1.0, 2.0}));
  Parameter r2(array({1.0, 2.0}));
  multi.setup(std::vector<Parameter>{r, q});
  single.setup(std::vector<Parameter>{r2, q2});
  auto step2 = [&] { step_pair(r, q, r2, q2); };
  step2();
  CHECK(r.data().to_vector<double>() == std::vector<double>{0.9, 1.9});
  multi.reset_state();
  single.reset_state();
  step2();
  step2();
  CHECK(multi.calls == 0);
  if (cuda::is_available()) {  // the state moves with the parameter
    r.to_gpu();
    r2.to_gpu();
    q.to_gpu();
    q2.to_gpu();
    step2();
    CHECK(r.data().device() == Device::cuda(0));
  }
}

TEST_CASE("detail::adam_update_multi_: each item checked first, errors name the parameter") {
  Tensor p0 = ones({3}), g0 = ones({3}), m0 = zeros({3}), v0 = zeros({3});
  Tensor p1 = ones({2, 2}), g1 = ones({2, 2}), m1 = zeros({2, 2}), v1 = zeros({2, 2});
  Tensor bad_shape = ones({4}), bad_dtype = ones({2, 2}, float64);
  auto run = [&](const Tensor& g1_) {
    detail::ParamUpdate items[2];
    items[0] = {&p0, &g0, &m0, &v0};
    items[1] = {&p1, &g1_, &m1, &v1};
    detail::adam_update_multi_(items, 2, 0.1, 0.9, 0.999, 1e-8);
  };
  CHECK_THROWS_WITH_AS(run(bad_shape), doctest::Contains("parameter 1: the gradient is (4,) float32"), ShapeError);
  CHECK_THROWS_WITH_AS(run(bad_dtype), doctest::Contains("parameter 1"), DtypeError);
  CHECK(p0.to_vector<double>() == std::vector<double>(3, 1.0));  // nothing changed before the throw
  detail::ParamUpdate missing[1] = {{&p0, &g0, &m0, nullptr}};
  CHECK_THROWS_AS(detail::adam_update_multi_(missing, 1, 0.1, 0.9, 0.999, 1e-8), ValueError);
  Tensor ints = ones({3}, int32);
  detail::ParamUpdate int_param[1] = {{&ints, &ints, nullptr, nullptr}};
  CHECK_THROWS_WITH_AS(detail::sgd_update_multi_(int_param, 1, 0.1), doctest::Contains("parameter 0"), DtypeError);
  run(g1);
  CHECK(p0.to_vector<double>() != std::vector<double>(3, 1.0));
  CHECK(p1.to_vector<double>() != std::vector<double>(4, 1.0));
}

// --- the host kernels' vector lanes and scalar tail (issue 36) ---------------------------------
// The update loops vectorise (cpu/nn.cpp); an element must get the same bits whether it
// falls in a vector lane, in the loop's scalar tail or at a thread boundary: one
// parameter of 70,001 elements (split over the threads) against the same elements cut
// into parameters of 1 to 37 elements, on gradients from denormal to 1e30 and states from
// 0 to huge (zeros of both signs included).
namespace {
template <class T>
std::vector<double> extreme_values(std::size_t n, unsigned seed, bool nonnegative) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> e(std::numeric_limits<T>::min_exponent - 20, 100);
  std::vector<double> v(n);
  for (auto& x : v) {
    switch (rng() % 6) {
      case 0: x = static_cast<double>(static_cast<T>(u(rng) * std::ldexp(1.0, e(rng)))); break;
      case 1: x = static_cast<double>(std::numeric_limits<T>::denorm_min()) * static_cast<double>(rng() % 1000); break;
      case 2: x = (rng() & 1) ? 0.0 : -0.0; break;
      default: x = u(rng);
    }
    if (nonnegative) x = std::fabs(x);
  }
  return v;
}

void check_lanes(const std::string& rule, DType dt) {
  const std::size_t n = 70001;
  const bool is_f32 = dt == float32;
  auto values = [&](unsigned seed, bool nonneg) {
    return is_f32 ? extreme_values<float>(n, seed, nonneg) : extreme_values<double>(n, seed, nonneg);
  };
  const std::vector<double> w = values(1, false), g = values(2, false), a = values(3, true), b = values(4, true);
  Tensor pw = array(w, dt), pg = array(g, dt), pa = array(a, dt), pb = array(b, dt);
  auto run = [&](detail::ParamUpdate* items, std::size_t k) {
    if (rule == "SGD") detail::sgd_update_multi_(items, k, 0.01);
    else if (rule == "MomentumSGD") detail::momentum_sgd_update_multi_(items, k, 0.01, 0.9);
    else if (rule == "AdaGrad") detail::adagrad_update_multi_(items, k, 0.001, 1e-8);
    else if (rule == "AdaDelta") detail::adadelta_update_multi_(items, k, 0.95, 1e-6);
    else detail::adam_update_multi_(items, k, 0.001, 0.9, 0.999, 1e-8);
  };
  detail::ParamUpdate whole{&pw, &pg, &pa, &pb};
  run(&whole, 1);

  std::vector<Tensor> cw, cg, ca, cb;
  for (std::size_t lo = 0, len = 1; lo < n; lo += len, len = len % 37 + 1) {
    const std::size_t hi = std::min(n, lo + len);
    auto cut = [&](const std::vector<double>& v) {
      return array(std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                       v.begin() + static_cast<std::ptrdiff_t>(hi)), dt);
    };
    cw.push_back(cut(w));
    cg.push_back(cut(g));
    ca.push_back(cut(a));
    cb.push_back(cut(b));
  }
  std::vector<detail::ParamUpdate> items;
  for (std::size_t i = 0; i < cw.size(); ++i) items.push_back({&cw[i], &cg[i], &ca[i], &cb[i]});
  run(items.data(), items.size());

  auto same_bits = [&](const std::vector<Tensor>& parts, const Tensor& all) {
    const Tensor joined = concatenate(parts, 0);
    return joined.nbytes() == all.nbytes() && std::memcmp(joined.raw_data(), all.raw_data(), all.nbytes()) == 0;
  };
  CHECK(same_bits(cw, pw));
  CHECK(same_bits(ca, pa));
  CHECK(same_bits(cb, pb));
}
}  // namespace

TEST_CASE("Optimizer kernels (host): vector lanes, scalar tail and thread splits give the same bits") {
  for (DType dt : {float32, float64})
    for (const char* rule : {"SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam"}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(rule);
      check_lanes(rule, dt);
    }
}

// A WeightDecay that is the only hook is fused into the rule's kernel on the host (issue 36):
// the same weights, state and decayed gradients, bit for bit, as the hook followed by the
// update (which a second, empty hook forces), for every rule, float32 and float64.
namespace {
template <class Opt, class... Args>
void check_fused_decay(const char* name, DType dt, Args... args) {
  CAPTURE(name);
  CAPTURE(dtype_name(dt));
  random::seed(3);
  std::vector<Parameter> a, b;
  for (const Shape& s : {Shape{3, 5}, Shape{1}, Shape{300, 150}, Shape{7}}) {
    Tensor w = random::randn(s, dt);
    a.emplace_back(w.copy());
    b.emplace_back(w.copy());
  }
  Opt fused(args...), plain(args...);
  fused.setup(a).add_hook(O::WeightDecay(1e-2));
  plain.setup(b).add_hook(O::WeightDecay(1e-2)).add_hook([](std::vector<Parameter>&) {});
  for (int step = 0; step < 3; ++step) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      Tensor g = random::randn(a[i].data().shape(), dt);
      a[i].set_grad(Variable(g));
      b[i].set_grad(Variable(g.copy()));
    }
    fused.update();
    plain.update();
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK(utils::array_equal(a[i].data(), b[i].data()));
      CHECK(utils::array_equal(a[i].grad().data(), b[i].grad().data()));
    }
  }
  const auto sa = fused.state_dict(), sb = plain.state_dict();
  REQUIRE(sa.size() == sb.size());
  for (std::size_t k = 0; k < sa.size(); ++k) CHECK(utils::array_equal(sa[k].second, sb[k].second));
}
}  // namespace

TEST_CASE("WeightDecay as the only hook: fused into the update on the host, the bits of the hook then the update") {
  for (DType dt : {float32, float64}) {
    check_fused_decay<O::SGD>("SGD", dt, 0.1);
    check_fused_decay<O::MomentumSGD>("MomentumSGD", dt, 0.1, 0.9);
    check_fused_decay<O::AdaGrad>("AdaGrad", dt, 0.1);
    check_fused_decay<O::AdaDelta>("AdaDelta", dt);
    check_fused_decay<O::Adam>("Adam", dt, 0.01);
  }
}
