// tests/test_cuda_training.cpp - the CUDA pieces a training loop uses together: a model, an
// optimizer with state and a DataLoader moved to the GPU and back,
// DataLoader::to_gpu's pinned, prefetching pipeline, cuda::reduce (CuPy's
// ReductionKernel) and the memory pool over a training run.
//
// Without a GPU the GPU cases print "skipped: no CUDA device"; the CPU halves of the
// comparisons (the reference runs) still run here so the harness itself is tested.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <string>
#include <vector>

#include "support/test_util.hpp"

using namespace dezero;

namespace {

using dzt::skip_without_gpu;

void check_same(const Tensor& cpu_result, const Tensor& gpu_result, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(gpu_result.device() == Device::cuda(0));
  CHECK(cpu_result.shape() == gpu_result.shape());
  CHECK(cpu_result.dtype() == gpu_result.dtype());
  CHECK(dzt::allclose(cpu_result, gpu_result.to_cpu(), rtol, atol));
}

// --- a small training run: Spiral, MLP(10, 3), MomentumSGD --------------------------------------
// Weights are created on the CPU (seeded) so that every run starts from the same values.
void init_on_cpu(models::MLP& m, const datasets::Dataset& ds) {
  random::seed(0);
  m(ds.get_batch({0, 1}).first);
}

// One epoch; returns the mean loss. The loss stays on the model's device until the end.
double train_epoch(models::MLP& m, optimizers::Optimizer& opt, DataLoader& loader) {
  Tensor sum;
  std::int64_t n = 0;
  for (auto& [x, t] : loader) {
    CHECK(x.device() == loader.device());
    Variable loss = F::softmax_cross_entropy(m(x), t);
    m.cleargrads();
    loss.backward();
    opt.update();
    Tensor l = loss.data().astype(float64) * static_cast<double>(t.len());
    sum = sum.defined() ? sum + l : l;
    n += t.len();
  }
  return sum.item<double>() / static_cast<double>(n);
}

// `epochs_first` epochs on `first`, then `epochs_then` on the CPU; losses per epoch.
std::vector<double> run(models::MLP& m, optimizers::Optimizer& opt, const datasets::Dataset& ds, Device first,
                        int epochs_first, int epochs_then) {
  random::seed(1);
  DataLoader loader(ds, 30);
  if (first.is_cuda()) {
    loader.to_gpu(first.index());
    m.to_gpu(first.index());
  }
  std::vector<double> losses;
  for (int e = 0; e < epochs_first; ++e) losses.push_back(train_epoch(m, opt, loader));
  loader.to_cpu();
  m.to_cpu();
  for (int e = 0; e < epochs_then; ++e) losses.push_back(train_epoch(m, opt, loader));
  return losses;
}

std::vector<Batch> epoch_batches(DataLoader& loader) {
  std::vector<Batch> out;
  for (auto& b : loader) out.push_back(b);  // all kept alive: later prefetches must not overwrite them
  return out;
}

void check_same_batches(const std::vector<Batch>& cpu, const std::vector<Batch>& gpu, Device dev) {
  REQUIRE(cpu.size() == gpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    CAPTURE(i);
    CHECK(gpu[i].first.device() == dev);
    CHECK(utils::array_equal(cpu[i].first, gpu[i].first.to_cpu()));
    CHECK(cpu[i].second.defined() == gpu[i].second.defined());
    if (cpu[i].second.defined()) {
      CHECK(gpu[i].second.device() == dev);
      CHECK(utils::array_equal(cpu[i].second, gpu[i].second.to_cpu()));
    }
  }
}

}  // namespace

// --- (a) model + optimizer + loader: GPU, then CPU ---------------------------------------------------
TEST_CASE("cuda training: the CPU reference run learns (the harness of the GPU case)") {
  datasets::Spiral ds;
  models::MLP m({10, 3});
  init_on_cpu(m, ds);
  optimizers::MomentumSGD opt(0.1);
  opt.setup(m);
  auto losses = run(m, opt, ds, Device::cpu(), 3, 3);
  REQUIRE(losses.size() == 6);
  CHECK(losses[2] < losses[0]);
  CHECK(losses.back() < losses[2]);
}

TEST_CASE("cuda training: MLP + MomentumSGD + DataLoader to the GPU and back keep identities and state") {
  if (skip_without_gpu()) return;
  datasets::Spiral ds;
  models::MLP ref({10, 3}), m({10, 3});
  init_on_cpu(ref, ds);
  init_on_cpu(m, ds);
  optimizers::MomentumSGD ref_opt(0.1), opt(0.1);
  ref_opt.setup(ref);
  opt.setup(m);

  std::vector<const VariableNode*> nodes;
  for (auto& p : m.params()) nodes.push_back(p.node().get());
  std::vector<double> ref_losses, losses;
  CHECK_NOTHROW(ref_losses = run(ref, ref_opt, ds, Device::cpu(), 3, 3));
  CHECK_NOTHROW(losses = run(m, opt, ds, Device::cuda(0), 3, 3));

  // Same Parameter objects, now on the CPU again.
  auto params = m.params();
  REQUIRE(params.size() == nodes.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    CHECK(params[i].node().get() == nodes[i]);
    CHECK(params[i].data().device().is_cpu());
  }
  // The loss fell on the GPU and kept falling on the CPU, as in the CPU-only run: the
  // momentum state moved with the parameters (a reset state would change the trajectory).
  REQUIRE(losses.size() == ref_losses.size());
  CHECK(losses[2] < losses[0]);
  CHECK(losses.back() < losses[2]);
  for (std::size_t e = 0; e < losses.size(); ++e) CHECK(losses[e] == doctest::Approx(ref_losses[e]).epsilon(1e-3));
  auto ref_params = ref.params();
  for (std::size_t i = 0; i < params.size(); ++i)
    CHECK(dzt::allclose(params[i].data(), ref_params[i].data(), 1e-3, 1e-4));
  // And it goes on training on the GPU from there.
  random::seed(2);
  DataLoader loader(ds, 30);
  loader.to_gpu();
  m.to_gpu();
  double again = train_epoch(m, opt, loader);
  CHECK(again < losses[0]);
  for (std::size_t i = 0; i < params.size(); ++i) CHECK(m.params()[i].node().get() == nodes[i]);
}

// --- (b) DataLoader::to_gpu yields the CPU loader's batches -------------------------------------------
TEST_CASE("cuda training: DataLoader::to_gpu gives the CPU loader's batches (same seed)") {
  if (skip_without_gpu()) return;
  datasets::Spiral ds;
  for (std::int64_t bs : {30, 7, 300}) {
    CAPTURE(bs);
    random::seed(11);
    DataLoader cpu(ds, bs);
    auto c1 = epoch_batches(cpu);
    auto c2 = epoch_batches(cpu);
    random::seed(11);
    DataLoader gpu(ds, bs);
    gpu.to_gpu();
    auto g1 = epoch_batches(gpu);
    auto g2 = epoch_batches(gpu);
    check_same_batches(c1, g1, Device::cuda(0));
    check_same_batches(c2, g2, Device::cuda(0));
  }
  // Unshuffled, drop_last, a loop left early, reset(), next() by hand.
  DataLoader cpu(ds, 40, false, true), gpu(ds, 40, false, true);
  gpu.to_gpu();
  auto a = cpu.next(), b = gpu.next();
  check_same_batches({*a}, {*b}, Device::cuda(0));
  cpu.reset();
  gpu.reset();  // drops the prefetched batch 1
  check_same_batches(epoch_batches(cpu), epoch_batches(gpu), Device::cuda(0));
  int n = 0;
  for (auto& bt : gpu) {
    (void)bt;
    if (++n == 3) break;
  }
  CHECK(gpu.iteration() == 3);
  std::vector<Batch> rest_g, rest_c;
  for (int i = 0; i < 3; ++i) (void)cpu.next();
  while (auto bt = cpu.next()) rest_c.push_back(*bt);
  while (auto bt = gpu.next()) rest_g.push_back(*bt);
  check_same_batches(rest_c, rest_g, Device::cuda(0));
  // SeqDataLoader (float64, unshuffled) and per-sample transforms take the same path.
  datasets::SinCurve sc;
  SeqDataLoader sc_cpu(sc, 30), sc_gpu(sc, 30);
  sc_gpu.to_gpu();
  check_same_batches(epoch_batches(sc_cpu), epoch_batches(sc_gpu), Device::cuda(0));
  datasets::Spiral tds(true, transforms::Transform([](const Tensor& x) { return x * 2.0 + 1.0; }));
  random::seed(3);
  DataLoader t_cpu(tds, 16);
  auto tc = epoch_batches(t_cpu);
  random::seed(3);
  DataLoader t_gpu(tds, 16);
  t_gpu.to_gpu();
  check_same_batches(tc, epoch_batches(t_gpu), Device::cuda(0));
}

TEST_CASE("cuda training: DataLoader::to_gpu on a user stream, copies and moves between devices") {
  if (skip_without_gpu()) return;
  datasets::Spiral ds;
  random::seed(4);
  DataLoader cpu(ds, 25);
  auto c = epoch_batches(cpu);
  random::seed(4);
  DataLoader gpu(ds, 25);
  gpu.to_gpu();
  std::vector<Batch> g;
  cuda::Stream user(true);
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (i == 4) {  // the batch prefetched for the null stream is dropped and fetched again on `user`
      cuda::StreamGuard sg(user);
      g.push_back(*gpu.next());
      Tensor s = g.back().first.sum();  // computed on `user`, after the copy
      CHECK(s.item<float>() == doctest::Approx(c[i].first.sum().item<float>()).epsilon(1e-5));
    } else {
      g.push_back(*gpu.next());
    }
  }
  user.synchronize();
  check_same_batches(c, g, Device::cuda(0));
  CHECK(!gpu.next());  // end of the epoch
  DataLoader copy = gpu;  // starts without the pipeline
  CHECK(copy.device() == Device::cuda(0));
  CHECK(copy.next()->first.device() == Device::cuda(0));
  gpu.to_cpu();
  CHECK(gpu.next()->first.device().is_cpu());
}

// --- (c) cuda::reduce --------------------------------------------------------------------------------
TEST_CASE("cuda::reduce: kernels are built anywhere, launched only on a GPU") {
  auto k = cuda::reduce("T x", "T y", "x", "a + b", "y = a", "0", "dz_test_rsum0");
  CHECK(k.name() == "dz_test_rsum0");
  if (!cuda::is_available()) {
    CHECK_THROWS_AS(k({array({1.0, 2.0})}), DeviceError);
    MESSAGE("skipped: no CUDA device");
  }
}

TEST_CASE("cuda::reduce: sum, max, sum of squares, mean over axes equal the CPU") {
  if (skip_without_gpu()) return;
  auto ksum = cuda::reduce("T x", "T y", "x", "a + b", "y = a", "0", "dz_test_rsum");
  auto kmax = cuda::reduce("T x", "T y", "x", "max(a, b)", "y = a", "", "dz_test_rmax");  // no identity
  auto kssq = cuda::reduce("T x", "T y", "x * x", "a + b", "y = a", "0", "dz_test_rssq");
  auto kmean = cuda::reduce("T x", "T y", "x", "a + b", "y = a / (_in_ind.size() / _out_ind.size())", "0",
                            "dz_test_rmean");
  CHECK(cuda::reduce("T x", "T y", "x", "a + b", "y = a", "0", "dz_test_rsum").name() == "dz_test_rsum");
  random::seed(0);
  for (DType dt : {float32, float64}) {
    CAPTURE(dt);
    Tensor a = random::randn(Shape{3, 4, 5}, dt);
    Tensor ga = a.to_gpu();
    for (const Axes& ax : {Axes(), Axes(0), Axes(1), Axes(2), Axes(-1), Axes({0, 2}), Axes({1, 2})}) {
      for (bool kd : {false, true}) {
        CAPTURE(ax.str());
        CAPTURE(kd);
        check_same(a.sum(ax, kd), ksum({ga}, ax, kd)[0], 1e-5, 1e-5);
        check_same(a.max(ax, kd), kmax({ga}, ax, kd)[0]);
        check_same((a * a).sum(ax, kd), kssq({ga}, ax, kd)[0], 1e-5, 1e-5);
        check_same(a.mean(ax, kd), kmean({ga}, ax, kd)[0], 1e-5, 1e-5);
      }
    }
    // Long rows: many elements per thread, then the tree.
    Tensor big = random::randn(Shape{3, 70000}, dt);
    check_same(big.sum(Axes(1)), ksum({big.to_gpu()}, Axes(1))[0], 1e-4, 1e-2);
    check_same(big.max(Axes(1)), kmax({big.to_gpu()}, Axes(1))[0]);
    check_same(big.T().copy().sum(Axes(0)), ksum({big.T().copy().to_gpu()}, Axes(0))[0], 1e-4, 1e-2);
    // Many outputs (more than one per block in the grid-stride loop is not needed for that).
    Tensor wide = random::randn(Shape{2000, 3}, dt);
    check_same(wide.max(Axes(1)), kmax({wide.to_gpu()}, Axes(1))[0]);
    // Reducing no axis is a copy through map / post_map.
    check_same(a * a, kssq({ga}, Axes(std::vector<int>{}))[0]);
  }
  // Integers; a given output; a scalar and a broadcast (one-element) input; reduce_type.
  Tensor ia = arange(0, 24, 1, int32).reshape(Shape{2, 3, 4}) - 9.0;
  check_same(ia.sum(Axes(1)), ksum({ia.to_gpu()}, Axes(1))[0]);
  check_same(ia.max(Axes({0, 2}), true), kmax({ia.to_gpu()}, Axes({0, 2}), true)[0]);
  Tensor out = zeros(Shape{2, 4}, int32, Device::cuda(0));
  auto r = ksum({ia.to_gpu()}, Axes(1), false, {out});
  CHECK(r[0].is_same(out));
  check_same(ia.sum(Axes(1)), out);
  auto kw = cuda::reduce("T x, T w, float64 c", "T y", "x * w", "a + b", "y = a + c", "0", "dz_test_rwsum", "float64");
  Tensor x = random::randn(Shape{4, 6}, float32);
  check_same((x * 0.5).sum(Axes(1)) + 2.0, kw({x.to_gpu(), full(Shape{}, 0.5, float32, Device::cuda(0)), 2.0},
                                              Axes(1))[0],
             1e-5, 1e-5);
  // Errors name the kernel.
  CHECK_THROWS_AS(ksum({x}), DeviceError);
  CHECK_THROWS_AS(ksum({x.to_gpu()}, Axes(2)), IndexError);
  CHECK_THROWS_AS(ksum({x.to_gpu()}, Axes(1), false, {zeros(Shape{3}, float32, Device::cuda(0))}), ShapeError);
  CHECK_THROWS_AS(kmax({zeros(Shape{2, 0}, float32, Device::cuda(0))}, Axes(1)), ValueError);
  check_same(zeros(Shape{2}, float32), ksum({zeros(Shape{2, 0}, float32, Device::cuda(0))}, Axes(1))[0]);
  CHECK_THROWS_AS(cuda::reduce("T x", "T y", "x", "a + b", "y = a", "0", "not a name"), ValueError);
  CHECK_THROWS_AS(cuda::reduce("raw T x", "T y", "x[0]", "a + b", "y = a", "0", "dz_test_rraw"), ValueError);
}

// --- (d) memory over a training run with a GPU loader ---------------------------------------------------
TEST_CASE("cuda training: pool bytes return to baseline after 100 steps with a GPU loader") {
  if (skip_without_gpu()) return;
  datasets::Spiral ds;
  models::MLP m({10, 3});
  init_on_cpu(m, ds);
  m.to_gpu();
  optimizers::MomentumSGD opt(0.1);
  opt.setup(m);
  auto pool = cuda::memory_pool(0);
  std::size_t pinned_base = cuda::pinned_memory_pool_stats().used_bytes;
  {
    random::seed(5);
    DataLoader loader(ds, 30);
    loader.to_gpu();
    auto step = [&](const Batch& b) {
      Variable loss = F::softmax_cross_entropy(m(b.first), b.second);
      m.cleargrads();
      loss.backward();
      opt.update();
    };
    step(*loader.next());  // creates the optimizer state
    loader.reset();        // drops the batch in flight
    m.cleargrads();
    cuda::Device(0).synchronize();
    std::size_t base = pool.used_bytes();
    std::size_t mallocs_at_20 = 0;
    int steps = 0;
    while (steps < 100) {
      for (auto& b : loader) {
        step(b);
        if (++steps == 20) mallocs_at_20 = pool.n_malloc_calls();
        if (steps == 100) break;
      }
    }
    loader.reset();
    m.cleargrads();
    cuda::Device(0).synchronize();
    CHECK(pool.used_bytes() == base);
    if (pool.caching()) CHECK(pool.n_malloc_calls() == mallocs_at_20);
    CHECK(cuda::pinned_memory_pool_stats().used_bytes > pinned_base);  // the two staging buffers
  }
  CHECK(cuda::pinned_memory_pool_stats().used_bytes == pinned_base);  // released with the loader
}
