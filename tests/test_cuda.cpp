// tests/test_cuda.cpp - dezero::cuda (Chainer's chainer.backends.cuda) and the CUDA backend.
//
// The first cases run everywhere (no GPU: is_available() is false and every device
// request is a clear DeviceError). The GPU cases print "skipped: no CUDA device"
// without one; with one they compare every kind of kernel against the CPU backend.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <string>

#include "dezero/backend/backend.hpp"  // the fused softmax / loss / optimizer primitives, compared CPU vs GPU
#include "support/test_util.hpp"

using namespace dezero;

namespace {

using dzt::skip_without_gpu;

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DeviceError& e) {
    return e.what();
  }
  return "";
}

// x on the CPU and its copy on cuda:0 give the same result through `op`.
void check_same(const Tensor& cpu_result, const Tensor& gpu_result, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(gpu_result.device() == Device::cuda(0));
  CHECK(cpu_result.shape() == gpu_result.shape());
  CHECK(cpu_result.dtype() == gpu_result.dtype());
  CHECK(dzt::allclose(cpu_result, gpu_result.to_cpu(), rtol, atol));
}

Tensor bk_softmax(const Tensor& x, std::int64_t outer, std::int64_t c, std::int64_t inner, bool log_) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::backend_for(x.device()).softmax(x.dtype(), x.raw_data(), y.raw_data(), outer, c, inner, log_);
  return y;
}
Tensor bk_sce(const Tensor& x, const Tensor& t) {
  Tensor loss = Tensor::empty(Shape{}, x.dtype(), x.device());
  detail::backend_for(x.device())
      .softmax_cross_entropy(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(t.raw_data()), loss.raw_data(),
                             x.shape()[0], x.shape()[1]);
  return loss;
}
Tensor bk_sce_grad(const Tensor& x, const Tensor& t, const Tensor& gy) {
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::backend_for(x.device())
      .softmax_cross_entropy_grad(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(t.raw_data()),
                                  gy.raw_data(), gx.raw_data(), x.shape()[0], x.shape()[1]);
  return gx;
}
Tensor bk_adam(const Tensor& p0, const Tensor& g, int steps) {
  Tensor p = p0.copy(), m = zeros_like(p0), v = zeros_like(p0);
  detail::UpdateArgs args;
  args.lr = 0.01;
  args.beta1 = 0.9;
  args.beta2 = 0.999;
  args.eps = 1e-8;
  for (int i = 0; i < steps; ++i)
    detail::backend_for(p.device())
        .optimizer_update(detail::UpdateRule::Adam, p.dtype(), p.raw_data(), g.raw_data(), m.raw_data(), v.raw_data(),
                          p.size(), args);
  return p;
}

}  // namespace

// --- without a GPU ---------------------------------------------------------------------------
TEST_CASE("cuda: availability is reported without throwing") {
  bool avail = cuda::is_available();
  int n = cuda::device_count();
  CHECK((avail ? n > 0 : n == 0));
  if (!avail) {
    std::string msg = what_of([] { (void)array({1.0, 2.0}).to_gpu(); });
    CHECK(msg.find("no CUDA device is available on this machine") != std::string::npos);
    CHECK(msg.find("hint") != std::string::npos);
    CHECK_THROWS_AS((void)zeros(Shape{2}, float32, Device::cuda(0)), DeviceError);
    CHECK_THROWS_AS((void)cuda::to_gpu(array({1.0})), DeviceError);
    CHECK_THROWS_AS(cuda::check_cuda_available(), DeviceError);
    CHECK_THROWS_AS((void)cuda::get_device_from_id(0), DeviceError);
    CHECK_THROWS_AS((void)cuda::Stream(), DeviceError);
    CHECK_THROWS_AS((void)cuda::Event(), DeviceError);
    CHECK_THROWS_AS(cuda::DeviceGuard(0), DeviceError);
    CHECK(cuda::Device().is_cpu());
  }
}

TEST_CASE("cuda: CPU tensors answer numpy and the CPU device") {
  Tensor x = array({1.0, 2.0});
  ArrayModule xp = get_array_module(x);
  CHECK(xp.name() == "numpy");
  CHECK(xp.is_numpy());
  CHECK(xp.cuda_device().is_cpu());
  cuda::Device d = cuda::get_device_from_array(x);
  CHECK(d.is_cpu());
  CHECK(d.id() == -1);
  CHECK(d.name() == "cpu");
  d.use();          // no-ops for the CPU (Chainer's DummyDevice)
  d.synchronize();
  CHECK(cuda::get_device_from_id(-1).is_cpu());
  CHECK(cuda::get_device(Device::cpu()).is_cpu());
  cuda::DeviceGuard g(-1);
  CHECK(cuda::to_cpu(x).is_same(x));
}

TEST_CASE("cuda: memory pool statistics and workspace limit are callable anywhere") {
  auto pool = cuda::memory_pool();
  CHECK(pool.total_bytes() == pool.used_bytes() + pool.free_bytes());
  pool.free_all_blocks();
  CHECK(pool.free_bytes() == 0);
  (void)pool.n_free_blocks();
  (void)pool.n_malloc_calls();
  auto old = cuda::get_max_workspace_size();
  CHECK(old == 8u * 1024u * 1024u);
  cuda::set_max_workspace_size(1024);
  CHECK(cuda::get_max_workspace_size() == 1024);
  cuda::set_max_workspace_size(old);
}

TEST_CASE("cuda: memoize computes once per argument list; clear_memo empties it") {
  int calls = 0;
  auto sq = cuda::memoize([&calls](int x) {
    ++calls;
    return x * x;
  });
  CHECK(sq(3) == 9);
  CHECK(sq(3) == 9);
  CHECK(sq(4) == 16);
  CHECK(calls == 2);
  cuda::clear_memo();
  CHECK(sq(3) == 9);
  CHECK(calls == 3);
}

// --- with a GPU --------------------------------------------------------------------------------
TEST_CASE("cuda: device properties, DeviceGuard restores the device") {
  if (skip_without_gpu()) return;
  cuda::Device d0(0);
  CHECK(!d0.name().empty());
  CHECK(d0.compute_capability().size() >= 2);
  CHECK(d0.total_memory() > 0);
  d0.use();
  CHECK(cuda::Device().id() == 0);
  {
    cuda::DeviceGuard g(cuda::device_count() - 1);
    CHECK(cuda::Device().id() == cuda::device_count() - 1);
  }
  CHECK(cuda::Device().id() == 0);
  CHECK_THROWS_AS(cuda::DeviceGuard(cuda::device_count()), DeviceError);
  Tensor x = array({1.0}).to_gpu();
  CHECK(get_array_module(x).name() == "cupy");
  CHECK(cuda::get_device_from_array(array({1.0}), x).id() == 0);
}

TEST_CASE("cuda: to_gpu / to_cpu round trip keeps values for every dtype") {
  if (skip_without_gpu()) return;
  for (DType dt : {float32, float64, int32, int64}) {
    CAPTURE(dt);
    Tensor x = arange(0, 24, 1, dt).reshape(Shape{2, 3, 4}) - 7.0;
    Tensor g = cuda::to_gpu(x);
    CHECK(g.device() == Device::cuda(0));
    CHECK(cuda::to_gpu(g).is_same(g));
    Tensor back = cuda::to_cpu(g);
    CHECK(back.device().is_cpu());
    CHECK(utils::array_equal(x, back));
    CHECK(utils::array_equal(x, cuda::copy(g).to_cpu()));
    CHECK(utils::array_equal(x.astype(float64), g.astype(float64).to_cpu()));
  }
}

TEST_CASE("cuda: pool bytes return to baseline after 100 iterations") {
  if (skip_without_gpu()) return;
  auto pool = cuda::memory_pool(0);
  // The null stream's cuBLAS workspace comes from the pool at its first matmul and stays.
  (void)matmul(ones({2, 2}, float32, Device::cuda(0)), ones({2, 2}, float32, Device::cuda(0)));
  std::size_t base = pool.used_bytes();
  std::size_t mallocs_after_first = 0;
  for (int it = 0; it < 100; ++it) {
    Tensor a = random::randn(Shape{64, 128}, float32, Device::cuda(0));
    Tensor b = random::randn(Shape{128, 32}, float32, Device::cuda(0));
    Tensor c = matmul(a, b).sum(Axes{0});
    Tensor d = exp(c) * 2.0 + c;
    (void)d;
    if (it == 0) mallocs_after_first = pool.n_malloc_calls();
  }
  cuda::Device(0).synchronize();
  CHECK(pool.used_bytes() == base);
  if (pool.caching()) CHECK(pool.n_malloc_calls() == mallocs_after_first);
  pool.free_all_blocks();
  CHECK(pool.free_bytes() == 0);
}

TEST_CASE("cuda: streams and events order work and time it") {
  if (skip_without_gpu()) return;
  cuda::Stream s1(true), s2(true);
  CHECK(!s1.is_null());
  CHECK(cuda::Stream::current().is_null());
  Tensor x, y;
  cuda::Event start, stop, done1;
  {
    cuda::StreamGuard g(s1);
    CHECK(cuda::Stream::current() == s1);
    start.record();
    x = ones(Shape{1 << 20}, float32, Device::cuda(0));
    for (int i = 0; i < 20; ++i) x = x * 1.0 + 1.0;  // 21 everywhere, in s1's order
    done1.record();
    stop.record();
  }
  CHECK(cuda::Stream::current().is_null());
  s2.wait_event(done1);
  {
    cuda::StreamGuard g(s2);
    y = x.sum();  // ordered after s1's work by the event
    CHECK(y.item<float>() == doctest::Approx(21.0 * (1 << 20)).epsilon(1e-5));
  }
  stop.synchronize();
  CHECK(stop.done());
  CHECK(s1.done());
  CHECK(cuda::get_elapsed_time(start, stop) >= 0.0f);
  s1.synchronize();
  x = Tensor();  // freed after the streams finished
}

// A destroyed stream leaves nothing keyed by its handle in the pool: its cached blocks,
// and those of its tensors freed later, are reused on the null stream, never by a new
// stream (which the driver may give the same handle).
TEST_CASE("cuda: a destroyed stream's cached blocks go to the null stream") {
  if (skip_without_gpu()) return;
  auto pool = cuda::memory_pool(0);
  if (!pool.caching()) return;  // DEZERO_CUDA_MEMORY_POOL=0: nothing is cached
  cuda::Device(0).synchronize();
  pool.free_all_blocks();
  const std::int64_t big = 1 << 20, small = 1 << 18;  // 4 MiB and 1 MiB of float32
  Tensor survivor;
  {
    cuda::Stream s(true);
    cuda::StreamGuard g(s);
    { Tensor t = zeros({big}, float32, Device::cuda(0)); }  // freed into s's list
    survivor = zeros({small}, float32, Device::cuda(0));    // allocated on s, alive past it
    s.synchronize();
    CHECK(pool.free_bytes() == std::size_t(4) << 20);
  }  // the guard restores the null stream, then s is destroyed
  CHECK(pool.free_bytes() == std::size_t(4) << 20);  // still cached, now for the null stream
  std::size_t mallocs = pool.n_malloc_calls();
  Tensor reused = zeros({big}, float32, Device::cuda(0));  // on the null stream
  CHECK(pool.n_malloc_calls() == mallocs);
  CHECK(pool.free_bytes() == 0);
  survivor = Tensor();  // allocated on the dead stream: goes to the null stream's list
  CHECK(pool.free_bytes() == std::size_t(1) << 20);
  {
    cuda::Stream s2(true);  // may get s's handle: must not see the null stream's blocks
    cuda::StreamGuard g(s2);
    Tensor t = zeros({small}, float32, Device::cuda(0));
    CHECK(pool.n_malloc_calls() == mallocs + 1);
    s2.synchronize();
  }
  mallocs = pool.n_malloc_calls();
  Tensor again = zeros({small}, float32, Device::cuda(0));  // either cached 1 MiB block
  CHECK(pool.n_malloc_calls() == mallocs);
  cuda::Device(0).synchronize();
}

// Each stream's GEMMs get their own cuBLAS workspace (32 MiB from sm_90 on, 4 MiB
// before) from the pool, given back when the stream is destroyed.
TEST_CASE("cuda: every stream has its own cuBLAS workspace, released with the stream") {
  if (skip_without_gpu()) return;
  auto pool = cuda::memory_pool(0);
  const std::size_t ws = (std::stoi(cuda::Device(0).compute_capability()) >= 90 ? 32u : 4u) << 20;
  random::seed(21);
  Tensor a = random::randn({64, 64}, float32, Device::cuda(0)), b = random::randn({64, 64}, float32, Device::cuda(0));
  Tensor c0 = matmul(a, b);  // the null stream has its workspace now
  cuda::Device(0).synchronize();
  const std::size_t base = pool.used_bytes();
  {
    cuda::Stream s1(true), s2(true);
    Tensor c1, c2;
    {
      cuda::StreamGuard g(s1);
      c1 = matmul(a, b);
    }
    {
      cuda::StreamGuard g(s2);
      c2 = matmul(a, b);
    }
    s1.synchronize();
    s2.synchronize();
    CHECK(pool.used_bytes() == base + 2 * ws + 2 * c0.nbytes());
    CHECK(utils::array_equal(c1.to_cpu(), c0.to_cpu()));
    CHECK(utils::array_equal(c2.to_cpu(), c0.to_cpu()));
    {
      cuda::StreamGuard g(s1);
      c1 = matmul(c1, b);  // the same workspace again
      s1.synchronize();
    }
    CHECK(pool.used_bytes() == base + 2 * ws + 2 * c0.nbytes());
    c1 = Tensor();
    c2 = Tensor();
  }
  CHECK(pool.used_bytes() == base);  // both workspaces are back in the pool
  Tensor c3 = matmul(a, b);          // and the null stream's still works
  CHECK(utils::array_equal(c3.to_cpu(), c0.to_cpu()));
  cuda::Device(0).synchronize();
}

TEST_CASE("cuda: element-wise, reduce, matmul, indexing, softmax equal the CPU") {
  if (skip_without_gpu()) return;
  random::seed(0);
  for (DType dt : {float32, float64}) {
    CAPTURE(dt);
    Tensor a = random::randn(Shape{3, 4, 5}, dt), b = random::randn(Shape{4, 1}, dt);
    Tensor ga = a.to_gpu(), gb = b.to_gpu();
    check_same(a + b, ga + gb);
    check_same(a * b - a / (b * b + 1.0), ga * gb - ga / (gb * gb + 1.0));
    check_same(exp(a), exp(ga));
    check_same(tanh(a), tanh(ga));
    check_same(sigmoid(a), sigmoid(ga));
    check_same(pow(abs(a), 1.5), pow(abs(ga), 1.5));
    check_same(maximum(a, b), maximum(ga, gb));
    check_same(where(greater(a, 0.0), a, b), where(greater(ga, 0.0), ga, gb));
    check_same(a.transpose({2, 0, 1}).copy(), ga.transpose({2, 0, 1}).copy());
    check_same(a.astype(int32), ga.astype(int32));
    for (const Axes& ax : {Axes{}, Axes{0}, Axes{1}, Axes{2}, Axes{0, 2}}) {
      check_same(a.sum(ax), ga.sum(ax), 1e-4, 1e-5);
      check_same(a.max(ax), ga.max(ax));
      check_same(a.min(ax, true), ga.min(ax, true));
    }
    check_same(a.argmax(1), ga.argmax(1));
    check_same(a.argmin(), ga.argmin());
    Tensor big = random::randn(Shape{3, 70000}, dt);  // split (two-pass) reductions
    check_same(big.sum(Axes{1}), big.to_gpu().sum(Axes{1}), 1e-4, 1e-2);
    check_same(big.T().copy().sum(Axes{0}), big.T().copy().to_gpu().sum(Axes{0}), 1e-4, 1e-2);
    check_same(big.max(), big.to_gpu().max());
    Tensor m1 = random::randn(Shape{7, 5}, dt), m2 = random::randn(Shape{5, 3}, dt);
    check_same(matmul(m1, m2), matmul(m1.to_gpu(), m2.to_gpu()), 1e-4, 1e-5);
    Tensor m3 = random::randn(Shape{5, 2}, dt);
    check_same(matmul(a, m3), matmul(ga, m3.to_gpu()), 1e-4, 1e-5);
    check_same(matmul(m1.T(), m1), matmul(m1.to_gpu().T(), m1.to_gpu()), 1e-4, 1e-5);
    Tensor bm = random::randn(Shape{3, 5, 6}, dt);
    check_same(matmul(a, bm), matmul(ga, bm.to_gpu()), 1e-4, 1e-5);
    Tensor idx = array({0, 2, 2, 1}, int64);
    check_same(a[idx], ga[idx.to_gpu()]);
    check_same(a[{Slice(), Slice(1, 3), Slice(std::nullopt, std::nullopt, 2)}],
               ga[{Slice(), Slice(1, 3), Slice(std::nullopt, std::nullopt, 2)}]);
    Tensor gi = random::randn(Shape{4, 4, 5}, dt);
    check_same(scatter_add(gi, a.shape(), {idx}), scatter_add(gi.to_gpu(), a.shape(), {idx.to_gpu()}));
    check_same(bk_softmax(a, 3, 4, 5, false), bk_softmax(ga, 3, 4, 5, false));  // axis 1 of (3, 4, 5)
    check_same(bk_softmax(a, 3, 4, 5, true), bk_softmax(ga, 3, 4, 5, true));
    Tensor logits = random::randn(Shape{6, 100}, dt);
    Tensor t = array({1, 0, 99, 3, 3, 7}, int64);
    check_same(bk_softmax(logits, 6, 100, 1, false), bk_softmax(logits.to_gpu(), 6, 100, 1, false));
    check_same(bk_softmax(logits, 6, 100, 1, true), bk_softmax(logits.to_gpu(), 6, 100, 1, true));
    check_same(bk_sce(logits, t), bk_sce(logits.to_gpu(), t.to_gpu()));
    Tensor gy = full(Shape{}, 0.5, dt);
    check_same(bk_sce_grad(logits, t, gy), bk_sce_grad(logits.to_gpu(), t.to_gpu(), gy.to_gpu()));
    Tensor p = random::randn(Shape{1000}, dt), g = random::randn(Shape{1000}, dt);
    check_same(bk_adam(p, g, 3), bk_adam(p.to_gpu(), g.to_gpu(), 3));
  }
  for (DType dt : {int32, int64}) {
    CAPTURE(dt);
    Tensor a = arange(0, 12, 1, dt).reshape(Shape{3, 4}) - 5.0, b = arange(0, 8, 1, dt).reshape(Shape{4, 2});
    check_same(a * a + a, a.to_gpu() * a.to_gpu() + a.to_gpu());
    check_same(a.sum(Axes{0}), a.to_gpu().sum(Axes{0}));
    check_same(matmul(a, b), matmul(a.to_gpu(), b.to_gpu()));
  }
}

TEST_CASE("cuda: random numbers are reproducible with random::seed") {
  if (skip_without_gpu()) return;
  random::seed(7);
  Tensor a = random::randn(Shape{1001}, float32, Device::cuda(0));
  Tensor u = random::rand(Shape{1000}, float64, Device::cuda(0));
  random::seed(7);
  Tensor b = random::randn(Shape{1001}, float32, Device::cuda(0));
  CHECK(utils::array_equal(a.to_cpu(), b.to_cpu()));
  CHECK(std::abs(a.mean().item<float>()) < 0.2f);
  CHECK(u.min().item<double>() >= 0.0);
  CHECK(u.max().item<double>() < 1.0);
  // float32 in [0, 1) too: 1 - x of cuRAND's (0, 1] rounds to 1 for x < 2^-25, which 2^26
  // draws hit about twice on average
  Tensor big = random::rand(Shape{std::int64_t(1) << 26}, float32, Device::cuda(0));
  CHECK(big.max().item<float>() < 1.0f);
  CHECK(big.min().item<float>() >= 0.0f);
}

TEST_CASE("cuda: elementwise kernels compile with NVRTC and run") {
  if (skip_without_gpu()) return;
  auto k = cuda::elementwise("T x, T y, float64 c", "T z", "z = x * y + c", "dz_test_fma");
  Tensor x = arange(0, 6, 1, float32).to_gpu(), y = full(Shape{6}, 2.0, float32).to_gpu();
  Tensor z = k({x, y, 1.0})[0];
  CHECK(z.dtype() == float32);
  CHECK(utils::array_equal(z.to_cpu(), array({1.0, 3.0, 5.0, 7.0, 9.0, 11.0}, float32)));
  auto r = cuda::raw(R"(extern "C" __global__ void dz_add1(double* p, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) p[i] += 1.0; })",
                     "dz_add1");
  Tensor w = zeros(Shape{100}, float64, Device::cuda(0));
  r({1, 1, 1}, {128, 1, 1}, {w, std::int64_t(100)});
  CHECK(w.sum().item<double>() == 100.0);
}

namespace {
Tensor g_static_gpu_tensor;  // constructed before main, given a GPU tensor by a test, freed at exit
}

TEST_CASE("cuda: a GPU tensor held by a static object is freed at exit") {
  if (skip_without_gpu()) return;
  g_static_gpu_tensor = ones(Shape{256}, float32, Device::cuda(0));  // its free runs during static destruction
  CHECK(g_static_gpu_tensor.sum().item<float>() == 256.0f);
}

#ifdef DEZERO_WITH_CUDA
#include <filesystem>

#include "dezero/gpu/libs.hpp"

namespace {
namespace fs = std::filesystem;
namespace cd = cuda::detail;
}  // namespace

TEST_CASE("cuda: GPU libraries are looked for in DEZERO_CUDA_LIB_PATH, by soname, then next to the build's folder") {
  auto c = cd::library_candidates("libx.so.1", "/opt/cuda/lib/", "/a:/b/::/a");
  REQUIRE(c.size() == 6);
  CHECK(c[0] == "/a/libx.so.1");
  CHECK(c[1] == "/b/libx.so.1");
  CHECK(c[2] == "libx.so.1");
  CHECK(c[3] == "/opt/cuda/lib/libx.so.1");
  CHECK(c[4] == "/opt/cuda/lib64/libx.so.1");
  CHECK(c[5].rfind("/opt/cuda/targets/", 0) == 0);
  CHECK(c[5].find("-linux/lib/libx.so.1") != std::string::npos);
  CHECK(cd::library_candidates("libx.so.1", "", nullptr) == std::vector<std::string>{"libx.so.1"});
  // A relative folder would be looked up from the working directory: it is skipped (dezero/env.hpp).
  CHECK(cd::library_candidates("libx.so.1", "", "rel:/a:./b:../c") ==
        std::vector<std::string>{"/a/libx.so.1", "libx.so.1"});
}

TEST_CASE("cuda: a GPU library that cannot be loaded names every path tried and the hint") {
  dzt::TempDir tmp;
  dzt::ScopedEnv env("DEZERO_CUDA_LIB_PATH", (tmp.path / "nowhere").string());
  std::string e = what_of([&] { cd::open_library("libdezero-missing", "libdezero-missing.so.1", tmp.str()); });
  INFO(e);
  CHECK(e.find("cannot load libdezero-missing") != std::string::npos);
  for (const std::string& c : cd::library_candidates("libdezero-missing.so.1", tmp.str(), (tmp.path / "nowhere").c_str()))
    CHECK(e.find(c) != std::string::npos);
  CHECK(e.find("DEZERO_CUDA_LIB_PATH") != std::string::npos);
  CHECK(e.find("LD_LIBRARY_PATH") != std::string::npos);
}

// Also run alone by CTest (cuda_lib_path), where nothing has loaded cuRAND before it.
TEST_CASE("cuda: a library in DEZERO_CUDA_LIB_PATH is the one loaded") {
  if (!cd::loaded_library_path("curand").empty()) {
    MESSAGE("skipped: cuRAND was loaded earlier in this process (from " << cd::loaded_library_path("curand") << ")");
    return;
  }
  dzt::TempDir tmp, planted;
  // `planted`, written relative to the working directory, holds the library too: it is not used.
  const std::string relative = fs::relative(planted.path).string();
  REQUIRE(relative[0] != '/');
  dzt::ScopedEnv env("DEZERO_CUDA_LIB_PATH", "/nonexistent-dezero-dir:" + relative + ":" + tmp.str());
  std::vector<std::string> c = cd::library_search_paths("curand");
  REQUIRE(c.size() >= 4);
  std::string soname = c[2];
  CHECK(soname.find('/') == std::string::npos);
  CHECK(c[0] == "/nonexistent-dezero-dir/" + soname);
  CHECK(c[1] == (tmp.path / soname).string());
  std::string real;
  for (std::size_t i = 3; i < c.size() && real.empty(); ++i)
    if (fs::exists(c[i])) real = fs::canonical(c[i]).string();
  if (real.empty()) {
    MESSAGE("skipped: " << soname << " is not in the folder the build found it in");
    return;
  }
  fs::create_symlink(real, tmp.path / soname);
  fs::create_symlink(real, planted.path / soname);
  CHECK(cd::load_gpu_library("curand") == (tmp.path / soname).string());
  CHECK(cd::loaded_library_path("curand") == (tmp.path / soname).string());
}

TEST_CASE("cuda: an empty DEZERO_CUDA_LIB_PATH folder falls back to the soname and the build's folder") {
  dzt::TempDir tmp;
  dzt::ScopedEnv env("DEZERO_CUDA_LIB_PATH", tmp.str());
  std::string path = cd::load_gpu_library("cublas");
  CHECK(!path.empty());
  CHECK(path.rfind(tmp.str(), 0) != 0);
  CHECK(cd::loaded_library_path("cublas") == path);
}

TEST_CASE("cuda: NVRTC's builtins are loaded from NVRTC's folder") {
  std::string nvrtc = cd::load_gpu_library("nvrtc");
  std::string builtins = cd::loaded_library_path("nvrtc-builtins");
  INFO("NVRTC: " << nvrtc << ", builtins: " << builtins);
  REQUIRE(!builtins.empty());
  CHECK(fs::path(builtins).filename().string().rfind("libnvrtc-builtins.so.", 0) == 0);
  CHECK(fs::canonical(builtins).parent_path() == fs::canonical(nvrtc).parent_path());
}

// cuBLAS, cuRAND and NVRTC are dlopen()ed on first use: every entry point the backend
// forwards to must exist in the installed libraries. cuDNN is checked only where it
// loads (nothing requires it yet). Needs no GPU.
TEST_CASE("cuda: the run-time-loaded GPU libraries have every entry point dezero calls") {
  auto lines = [](const std::vector<std::string>& v) {
    std::string all;
    for (const auto& p : v) all += p + "\n";
    return all;
  };
  std::vector<std::string> problems = cd::check_gpu_libraries();
  CHECK_MESSAGE(problems.empty(), lines(problems));
  for (std::string lib : {"cublas", "curand", "nvrtc", "nvrtc-builtins"})
    MESSAGE(lib << ": " << cd::loaded_library_path(lib));
  try {
    cd::load_gpu_library("cudnn");
  } catch (const DeviceError& e) {
    MESSAGE("skipped cuDNN's entry points (cuDNN does not load): " << e.what());
    return;
  }
  MESSAGE("cudnn: " << cd::loaded_library_path("cudnn"));
  std::vector<std::string> cudnn = cd::check_library_entry_points("cudnn");
  CHECK_MESSAGE(cudnn.empty(), lines(cudnn));
}
#endif
