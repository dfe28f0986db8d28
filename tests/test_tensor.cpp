// tests/test_tensor.cpp - the Tensor level (no autograd): creation, dtypes and promotion,
// broadcasting, reductions, argmax, matmul, transpose, broadcast_to / sum_to,
// NumPy indexing and scatter_add, concatenate / stack / take, astype, printing,
// and the seeded random stream. Reference values come from NumPy (tests/data,
// written by tools/make_fixtures.py). Op tests run on every available device.
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "dezero/tensor/fused.hpp"    // detail::sigmoid_grad
#include "support/fixtures.hpp"
#include "support/test_util.hpp"

using namespace dezero;
using dzt::close;

namespace {
Tensor T_(const std::string& name, Device dev = Device::cpu()) { return dzt::fx("tensor.txt", name).to(dev); }
}  // namespace

// --- Shape: a vector with 6 extents inside the object, more on the heap ------------------
TEST_CASE("shape: vector operations inline and past the inline capacity") {
  Shape s{2, 3};
  CHECK(s.size() == 2);
  CHECK(s.str() == "(2, 3)");
  for (std::int64_t d = 4; d <= 10; ++d) s.push_back(d);  // grows onto the heap at the 7th
  CHECK(s.size() == 9);
  CHECK(s == Shape{2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(s.numel() == 2 * 3 * 4 * 5 * 6 * 7 * 8 * 9 * 10);
  Shape copy = s;  // heap copy
  Shape moved = std::move(copy);
  CHECK(moved == s);
  CHECK(copy.empty());
  s.erase(s.begin() + 1, s.begin() + 8);
  CHECK(s == Shape{2, 10});
  s.insert(s.begin() + 1, 7);
  CHECK(s == Shape{2, 7, 10});
  s.insert(s.end(), s.begin(), s.end());  // from itself
  CHECK(s == Shape{2, 7, 10, 2, 7, 10});
  s.insert(s.begin(), s.begin(), s.begin() + 3);  // from itself, past the inline capacity
  CHECK(s == Shape{2, 7, 10, 2, 7, 10, 2, 7, 10});
  Shape small{1, 2};
  small = s;  // heap into inline
  CHECK(small == s);
  Shape inl{4, 5};
  Shape m2 = std::move(inl);  // inline move
  CHECK(m2 == Shape{4, 5});
  m2 = Shape{};
  CHECK(m2.empty());
  CHECK(m2.str() == "()");
  m2.resize(3, 1);
  CHECK(m2 == Shape{1, 1, 1});
  std::vector<std::int64_t> v = Shape{3, 4};
  CHECK(v == std::vector<std::int64_t>{3, 4});
  CHECK(Shape(v) == Shape{3, 4});
  CHECK(Shape(3, 2) == Shape{2, 2, 2});
  CHECK(Shape{1, 2} < Shape{1, 3});
  CHECK(Shape{5}.str() == "(5,)");
  CHECK_THROWS_AS(Shape{1}.at(1), std::out_of_range);
  std::vector<Shape> many(50, Shape{1, 2, 3, 4, 5, 6, 7});  // vector growth moves heap shapes
  many.push_back(Shape{9});
  CHECK(many.front() == Shape{1, 2, 3, 4, 5, 6, 7});
  CHECK(many.back() == Shape{9});
}

// --- creation -----------------------------------------------------------------------
TEST_CASE("tensor: creation defaults follow NumPy") {
  Tensor a = array(2.0);
  CHECK(a.ndim() == 0);
  CHECK(a.dtype() == float64);
  CHECK(a.item<double>() == 2.0);
  CHECK(array(3).dtype() == int64);
  CHECK(array({1, 2, 3}).dtype() == int64);
  CHECK(array({1.0, 2.0}).dtype() == float64);
  CHECK(array({1.0, 2.0}, float32).dtype() == float32);
  Tensor m = array({{1.0, 2.0}, {3.0, 4.0}});
  CHECK(m.shape() == Shape{2, 2});
  CHECK(m.to_vector<double>() == std::vector<double>{1, 2, 3, 4});
  CHECK(m.len() == 2);
  Tensor t3 = array({{{1.0, 2.0}, {3.0, 4.0}}, {{5.0, 6.0}, {7.0, 8.0}}});
  CHECK(t3.shape() == Shape{2, 2, 2});
  CHECK(t3[{1, 0, 1}].item<double>() == 6.0);
  CHECK(array(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3}).dtype() == float32);
  CHECK(array(std::vector<std::int32_t>{1, 2}).dtype() == int32);

  CHECK(zeros({2, 3}).dtype() == float32);
  CHECK(zeros({2, 3}).to_vector<double>() == std::vector<double>(6, 0.0));
  CHECK(ones({2}, int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 1});
  CHECK(full({2}, 7.5, float64).to_vector<double>() == std::vector<double>{7.5, 7.5});
  CHECK(zeros_like(m).shape() == m.shape());
  CHECK(ones_like(m).dtype() == float64);
  CHECK(arange(5).dtype() == int64);
  CHECK(arange(5).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(0.0, 1.0, 0.25).dtype() == float64);
  CHECK(arange(0.0, 1.0, 0.25).to_vector<double>() == std::vector<double>{0, 0.25, 0.5, 0.75});
  CHECK(arange(5.0, 0.0, -2.0).to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 3, 1});
  CHECK(linspace(0, 1, 5).to_vector<double>() == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  CHECK(eye(2, 3).to_vector<double>() == std::vector<double>{1, 0, 0, 0, 1, 0});
  CHECK_THROWS_AS(array({{1.0, 2.0}, {3.0}}), ShapeError);
  CHECK_THROWS_AS(array(std::vector<double>{1, 2, 3}, Shape{2, 2}), ShapeError);
  CHECK_THROWS_AS(array(2.0).len(), ShapeError);
  CHECK_THROWS_AS(array({1.0, 2.0}).item<double>(), ValueError);
}

TEST_CASE("tensor: reshape is a view; copy is not; in-place ops broadcast") {
  Tensor x = arange(6.0, float64);
  Tensor v = x.reshape({2, -1});
  CHECK(v.shape() == Shape{2, 3});
  CHECK(v.storage() == x.storage());
  Tensor c = x.copy();
  x += 1.0;
  CHECK(v.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(c.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});
  v *= array({1.0, 10.0, 100.0});
  CHECK(x.to_vector<double>() == std::vector<double>{1, 20, 300, 4, 50, 600});
  v -= array(std::vector<double>{1.0, 2.0}, Shape{2, 1});  // array({{1.0}, {2.0}}) is ambiguous in C++
  CHECK(x.to_vector<double>() == std::vector<double>{0, 19, 299, 2, 48, 598});
  v /= 2.0;
  CHECK(x.to_vector<double>() == std::vector<double>{0, 9.5, 149.5, 1, 24, 299});
  CHECK_THROWS_AS(v += ones({3, 3}, float64), ShapeError);
  CHECK_THROWS_AS(x.reshape({4, 2}), ShapeError);
  CHECK(x.flatten().shape() == Shape{6});
}

TEST_CASE("tensor: Storage::live_count / live_bytes follow allocations, views and frees") {
  const auto count0 = Storage::live_count();
  const auto bytes0 = Storage::live_bytes();
  {
    Tensor x = zeros({10, 10}, float64);
    CHECK(Storage::live_count() == count0 + 1);
    CHECK(Storage::live_bytes() == bytes0 + 800);
    Tensor v = x.reshape({100});  // a view shares the storage
    CHECK(Storage::live_count() == count0 + 1);
    Tensor y = x + 1.0;
    CHECK(Storage::live_count() == count0 + 2);
    CHECK(Storage::live_bytes() == bytes0 + 1600);
  }
  CHECK(Storage::live_count() == count0);
  CHECK(Storage::live_bytes() == bytes0);
}

// --- dtypes and promotion -------------------------------------------------------------
TEST_CASE("tensor: dtype promotion (NumPy 1.x rules)") {
  dzt::on_each_device([](Device dev) {
    Tensor f32 = ones({2}, float32, dev), f64 = ones({2}, float64, dev);
    Tensor i32 = ones({2}, int32, dev), i64 = ones({2}, int64, dev);
    CHECK((f32 + f64).dtype() == float64);
    CHECK((i32 + i64).dtype() == int64);
    CHECK((i64 + f32).dtype() == float64);
    CHECK((i32 + f32).dtype() == float64);
    CHECK((f32 * f32).dtype() == float32);
    CHECK((i64 * i64).dtype() == int64);
    // true division of integers gives float64
    Tensor q = array({1, 2, 3}, std::nullopt, dev) / array({2, 2, 2}, std::nullopt, dev);
    CHECK(q.dtype() == float64);
    CHECK(q.to_vector<double>() == std::vector<double>{0.5, 1.0, 1.5});
    // a 0-d operand of the same kind does not widen the array
    CHECK((f32 + array(2.0, std::nullopt, dev)).dtype() == float32);
    CHECK((array(2, std::nullopt, dev) + i32).dtype() == int32);
    CHECK((array(2.5, std::nullopt, dev) + i32).dtype() == float64);
    CHECK((array(2, std::nullopt, dev) + f32).dtype() == float32);
  });
}

TEST_CASE("tensor: a scalar takes the tensor's dtype") {
  dzt::on_each_device([](Device dev) {
    Tensor f32 = array({1.0, 2.0}, float32, dev);
    for (Tensor r : {f32 + 1.0, f32 - 1.0, f32 * 2.0, f32 / 2.0, 1.0 + f32, 1.0 - f32, 2.0 * f32, 2.0 / f32, -f32})
      CHECK(r.dtype() == float32);
    CHECK((f32 * 0.1).to_vector<float>() == std::vector<float>{0.1f, 0.2f});
    Tensor i64 = array({1, 2}, std::nullopt, dev);
    CHECK((i64 * 3.0).dtype() == int64);
    CHECK((i64 * 3.0).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 6});
    CHECK((i64 + 0.5).dtype() == float64);  // a fractional scalar needs a float result
    CHECK((i64 + 0.5).to_vector<double>() == std::vector<double>{1.5, 2.5});
    CHECK((i64 / 2.0).dtype() == float64);  // true division
    CHECK((i64 / 2.0).to_vector<double>() == std::vector<double>{0.5, 1.0});
    CHECK(exp(i64).dtype() == float64);
  });
}

TEST_CASE("tensor: astype") {
  dzt::on_each_device([](Device dev) {
    Tensor f = T_("ast_f", dev);
    Tensor i = f.astype(int64);
    CHECK(i.dtype() == int64);
    CHECK(utils::array_equal(i, T_("ast_i64")));
    Tensor f32 = array({0.1, 1.0 / 3.0, 1e-40}, std::nullopt, dev).astype(float32);
    CHECK(f32.dtype() == float32);
    CHECK(utils::array_equal(f32.astype(float64), T_("ast_f32")));
    CHECK(i.astype(int32).astype(float64).to_vector<double>() == std::vector<double>{1, -1, 2, -2, 0});
    CHECK(!f.astype(float64).is_same(f));  // always a new tensor
  });
}

// --- broadcasting ----------------------------------------------------------------------
TEST_CASE("tensor: broadcasting element-wise ops vs NumPy") {
  dzt::on_each_device([](Device dev) {
    Tensor a = T_("bc_a", dev), b = T_("bc_b", dev);
    CHECK(close(a + b, T_("bc_add")));
    CHECK(close(a - b, T_("bc_sub")));
    CHECK(close(a * b, T_("bc_mul")));
    CHECK(close(a / b, T_("bc_div")));
    CHECK(close(b + a, T_("bc_add")));
    CHECK(close(2.5 - a, T_("bc_rsub_scalar")));
    CHECK(close(2.5 / b, T_("bc_rdiv_scalar")));
    CHECK((a + b).shape() == Shape{2, 3, 4});
    CHECK(broadcast_shapes({5, 1, 3}, {4, 1}) == Shape{5, 4, 3});
    CHECK(broadcast_shapes({}, {2}) == Shape{2});
    CHECK_THROWS_AS(a + ones({4, 3}, float64, dev), ShapeError);
  });
}

TEST_CASE("tensor: broadcast_to and sum_to") {
  dzt::on_each_device([](Device dev) {
    Tensor s = T_("bt_x", dev);
    CHECK(close(broadcast_to(s, {2, 3, 4}), T_("bt_234")));
    Tensor t = T_("tr_x", dev);
    CHECK(close(sum_to(t, {3, 1}), T_("st_31")));
    CHECK(close(sum_to(t, {1, 4}), T_("st_14")));
    CHECK(close(sum_to(t, {4}), T_("st_4")));
    CHECK(sum_to(t, {2, 3, 4}).is_same(t));
    CHECK_THROWS_AS(broadcast_to(s, {2, 2}), ShapeError);
    CHECK_THROWS_AS(sum_to(t, {3}), ShapeError);  // (3,) does not broadcast to (2, 3, 4)
    CHECK_THROWS_AS(sum_to(t, {1, 2, 3, 4}), ShapeError);
  });
}

// --- reductions ------------------------------------------------------------------------------
TEST_CASE("tensor: sum / max / min / mean over axes, with keepdims") {
  dzt::on_each_device([](Device dev) {
    Tensor x = T_("red_x", dev);
    struct C { const char* name; Axes axes; };
    std::vector<C> cases = {{"all", Axes()}, {"0", 0}, {"1", 1}, {"2", 2}, {"m1", -1}, {"02", Axes{0, 2}},
                            {"12", Axes{2, 1}}};
    for (auto& c : cases) {
      for (bool kd : {false, true}) {
        std::string s = std::string(c.name) + (kd ? "_kd" : "");
        CAPTURE(s);
        CHECK(close(x.sum(c.axes, kd), T_("sum_" + s)));
        CHECK(close(x.max(c.axes, kd), T_("max_" + s)));
        CHECK(close(x.min(c.axes, kd), T_("min_" + s)));
        CHECK(close(x.mean(c.axes, kd), T_("mean_" + s)));
      }
    }
    Tensor xi = T_("red_xi", dev);
    CHECK(xi.sum(1).dtype() == int64);
    CHECK(utils::array_equal(xi.sum(1), T_("isum_1")));
    CHECK(xi.mean(1).dtype() == float64);
    CHECK(close(xi.mean(1), T_("imean_1")));
    CHECK(array(2.0, std::nullopt, dev).sum().item<double>() == 2.0);
    CHECK(zeros({0}, float64, dev).sum().item<double>() == 0.0);
  });
}

TEST_CASE("tensor: argmax / argmin") {
  dzt::on_each_device([](Device dev) {
    Tensor x = T_("red_x", dev);
    CHECK(utils::array_equal(x.argmax(), T_("argmax_all")));
    CHECK(x.argmax().dtype() == int64);
    CHECK(x.argmax().ndim() == 0);
    for (auto [name, ax] : std::vector<std::pair<std::string, int>>{{"0", 0}, {"1", 1}, {"2", 2}, {"m1", -1}}) {
      CAPTURE(name);
      CHECK(utils::array_equal(x.argmax(ax), T_("argmax_" + name)));
      CHECK(utils::array_equal(x.argmin(ax), T_("argmin_" + name)));
    }
    CHECK(utils::array_equal(x.argmin(), T_("argmin_all")));
    // ties: the first occurrence
    CHECK(array({1.0, 3.0, 3.0, 0.0}, std::nullopt, dev).argmax().item<std::int64_t>() == 1);
  });
}

// --- matmul ---------------------------------------------------------------------------------
TEST_CASE("tensor: matmul 2-d, 1-d and batched N-d vs NumPy") {
  dzt::on_each_device([](Device dev) {
    CHECK(close(matmul(T_("mm_a", dev), T_("mm_b", dev)), T_("mm_ab")));
    CHECK(close(matmul(T_("bmm_a", dev), T_("bmm_b", dev)), T_("bmm_ab")));
    Tensor y = matmul(T_("bmm2_a", dev), T_("bmm2_b", dev));
    CHECK(y.shape() == Shape{2, 3, 3, 2});
    CHECK(close(y, T_("bmm2_ab")));
    CHECK(close(matmul(T_("mv_v", dev), T_("mm_b", dev)), T_("mm_vb")));
    CHECK(close(matmul(T_("mm_a", dev), T_("mv_w", dev)), T_("mm_av")));
    CHECK(close(dot(T_("mv_v", dev), T_("mv_w", dev)), T_("mm_vv")));
    Tensor f32 = matmul(T_("mm_a", dev).astype(float32), T_("mm_b", dev).astype(float32));
    CHECK(f32.dtype() == float32);
    CHECK(close(f32, T_("mm_ab"), 1e-5, 1e-5));
    CHECK(matmul(zeros({2, 0}, float64, dev), zeros({0, 3}, float64, dev)).to_vector<double>() ==
          std::vector<double>(6, 0.0));
  });
}

// The host GEMM runs single-threaded below 2^21 multiply-adds and threaded above
// (cpu/gemm.cpp); both sides of that line, and a small product after a large
// one, give the naive product.
TEST_CASE("tensor: matmul below and above the host GEMM threading threshold") {
  random::seed(3);
  auto naive = [](const Tensor& a, const Tensor& b) {
    const std::int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
    std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), c(m * n, 0.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p)
        for (std::int64_t j = 0; j < n; ++j) c[i * n + j] += av[i * k + p] * bv[p * n + j];
    return array(c, Shape{m, n});
  };
  for (auto [m, k, n] : {std::array<std::int64_t, 3>{30, 100, 100}, {160, 128, 128}, {30, 100, 100}}) {
    CAPTURE(m * k * n);
    Tensor a = random::randn({m, k}), b = random::randn({k, n});
    CHECK(utils::array_allclose(matmul(a, b), naive(a, b), 1e-12, 1e-12));
    CHECK(utils::array_allclose(matmul(b.T(), a.T()), naive(a, b).T(), 1e-12, 1e-12));
  }
}

// --- transpose ------------------------------------------------------------------------------
// One product of the internal matmul_t (transpose flags, optional bias) or, batched,
// of matmul, in float32 against a naive double-precision loop.
struct GemmCase { std::int64_t batch, m, n, k; };
void check_float_product(GemmCase cs, bool ta, bool tb, bool with_bias) {
  bool batched = cs.batch > 1;
  auto shape = [&](std::int64_t r, std::int64_t c) { return batched ? Shape{cs.batch, r, c} : Shape{r, c}; };
  Tensor a = random::randn(ta ? shape(cs.k, cs.m) : shape(cs.m, cs.k)).astype(float32);
  Tensor b = random::randn(tb ? shape(cs.n, cs.k) : shape(cs.k, cs.n)).astype(float32);
  Tensor bias = random::randn({cs.n}).astype(float32);
  Tensor c = batched ? matmul(a, b) : detail::matmul_t(a, b, ta, tb, with_bias ? bias : Tensor());
  REQUIRE(c.shape() == shape(cs.m, cs.n));
  std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>(), cv = c.to_vector<float>();
  std::vector<float> biv = bias.to_vector<float>();
  double worst = 0;
  for (std::int64_t q = 0; q < cs.batch; ++q)
    for (std::int64_t i = 0; i < cs.m; ++i)
      for (std::int64_t j = 0; j < cs.n; ++j) {
        double acc = with_bias ? biv[j] : 0.0;
        for (std::int64_t l = 0; l < cs.k; ++l) {
          double x = ta ? av[(q * cs.k + l) * cs.m + i] : av[(q * cs.m + i) * cs.k + l];
          double y = tb ? bv[(q * cs.n + j) * cs.k + l] : bv[(q * cs.k + l) * cs.n + j];
          acc += x * y;
        }
        worst = std::max(worst, std::abs(acc - cv[(q * cs.m + i) * cs.n + j]));
      }
  INFO("batch " << cs.batch << " m " << cs.m << " n " << cs.n << " k " << cs.k << " ta " << ta << " tb " << tb
                << " bias " << with_bias);
  CHECK(worst < 1e-3 * std::sqrt(double(cs.k)));
}

// Products big enough to be split across threads (column or row slabs, batched), with
// every transpose flag of the internal matmul_t.
TEST_CASE("tensor: large and batched products, every transpose flag, vs a naive loop") {
  random::seed(3);
  for (GemmCase cs :
       {GemmCase{1, 100, 1000, 40}, GemmCase{1, 1000, 50, 60}, GemmCase{3, 130, 170, 90}, GemmCase{1, 33, 47, 2000}})
    for (int flags = 0; flags < 8; ++flags) {
      bool ta = flags & 1, tb = flags & 2, with_bias = flags & 4;
      if (cs.batch > 1 && (ta || tb || with_bias)) continue;  // matmul_t is 2-d; batched goes through matmul
      check_float_product(cs, ta, tb, with_bias);
    }
}

// Tiny float32 products take their own kernel on the host (cpu/gemm_small.cpp: 16-lane
// rows masked at the edge, a packed B^T, dot products for one output column): W3's
// shapes, extents of 1, 15-17 and 33 around the lane count, and shapes just past it.
TEST_CASE("tensor: tiny products (every transpose flag, single rows and columns) vs a naive loop") {
  random::seed(4);
  for (GemmCase cs : {GemmCase{1, 100, 10, 2}, GemmCase{1, 100, 1, 10}, GemmCase{1, 100, 10, 1},
                      GemmCase{1, 10, 1, 100}, GemmCase{1, 2, 10, 100}, GemmCase{1, 1, 1, 1}, GemmCase{1, 1, 17, 5},
                      GemmCase{1, 17, 1, 33}, GemmCase{1, 9, 16, 15}, GemmCase{1, 33, 3, 40}, GemmCase{1, 3, 40, 37},
                      GemmCase{1, 8, 33, 17}, GemmCase{1, 16, 32, 32}, GemmCase{1, 17, 31, 31}, GemmCase{2, 7, 5, 3},
                      // depths 1-8 keep op(B)'s rows in registers, one 16-column chunk at a time
                      GemmCase{1, 12, 18, 4}, GemmCase{1, 9, 7, 6}, GemmCase{1, 30, 17, 7}, GemmCase{1, 20, 40, 8},
                      GemmCase{1, 50, 33, 1}, GemmCase{1, 64, 16, 9}})
    for (int flags = 0; flags < 8; ++flags) {
      bool ta = flags & 1, tb = flags & 2, with_bias = flags & 4;
      if (cs.batch > 1 && (ta || tb || with_bias)) continue;
      check_float_product(cs, ta, tb, with_bias);
    }
}

// Reductions over a leading block of axes fold each column in row order, a few
// columns at a time in registers (the last group overlapping the one before): every
// width from 2 to 130 columns (one column is a vectorised sum, checked for closeness), and a block large enough to stream rows instead. The
// result is compared bit for bit with the same fold written as a plain loop.
TEST_CASE("tensor: sum / max / min over axis 0 for every column count match a row-order loop bit for bit") {
  random::seed(11);
  std::vector<std::int64_t> widths;
  for (std::int64_t w = 1; w <= 130; ++w) widths.push_back(w);
  widths.push_back(1000);  // (300, 1000): 1.2 MB, streamed row by row
  for (std::int64_t inner : widths) {
    const std::int64_t rows = inner == 1000 ? 300 : 37;
    Tensor x32 = random::randn({rows, inner}).astype(float32);
    std::vector<float> xv = x32.to_vector<float>();
    std::vector<float> s(inner, 0.f), mx(inner, -INFINITY), mn(inner, INFINITY);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < inner; ++j) {
        float v = xv[i * inner + j];
        s[j] = s[j] + v;
        mx[j] = v > mx[j] ? v : mx[j];
        mn[j] = v < mn[j] ? v : mn[j];
      }
    INFO("shape (" << rows << ", " << inner << ")");
    if (inner == 1) {  // one column is a vectorised dot-style sum: close, not the same order
      CHECK(sum(x32, Axes(0)).item<double>() == doctest::Approx(s[0]).epsilon(1e-5));
      CHECK(max(x32, Axes(0)).to_vector<float>() == mx);
      continue;
    }
    CHECK(sum(x32, Axes(0)).to_vector<float>() == s);
    CHECK(max(x32, Axes(0)).to_vector<float>() == mx);
    CHECK(min(x32, Axes(0)).to_vector<float>() == mn);
    CHECK(sum_to(x32, Shape{inner}).to_vector<float>() == s);
    CHECK(sum_to(x32, Shape{1, inner}).shape() == Shape{1, inner});
    CHECK(sum_to(x32, Shape{1, inner}).to_vector<float>() == s);
  }
  // A middle block with an outer axis: (3, 5, 7) summed over axis 1.
  Tensor x = random::randn({3, 5, 7});
  std::vector<double> xv = x.to_vector<double>(), want(21, 0.0);
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 7; ++j) want[o * 7 + j] += xv[(o * 5 + i) * 7 + j];
  CHECK(sum(x, Axes(1)).to_vector<double>() == want);
}

// The column groups of up to 128 bytes go through the rows two at a time (reduce_cols); the
// float32 widths above cover them, this float64 loop the double-width groups (W <= 16 doubles)
// and a middle block with an outer axis.
TEST_CASE("tensor: float64 sum / max / min over axis 0 in paired column groups match a row-order loop") {
  random::seed(12);
  for (std::int64_t inner = 2; inner <= 40; ++inner) {
    const std::int64_t rows = 9;
    Tensor x = random::randn({3, rows, inner});
    std::vector<double> xv = x.to_vector<double>();
    std::vector<double> s(3 * inner, 0.0), mx(3 * inner, -INFINITY), mn(3 * inner, INFINITY);
    for (std::int64_t o = 0; o < 3; ++o)
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < inner; ++j) {
          double v = xv[(o * rows + i) * inner + j];
          s[o * inner + j] = s[o * inner + j] + v;
          mx[o * inner + j] = v > mx[o * inner + j] ? v : mx[o * inner + j];
          mn[o * inner + j] = v < mn[o * inner + j] ? v : mn[o * inner + j];
        }
    INFO("shape (3, " << rows << ", " << inner << ")");
    CHECK(sum(x, Axes(1)).to_vector<double>() == s);
    CHECK(max(x, Axes(1)).to_vector<double>() == mx);
    CHECK(min(x, Axes(1)).to_vector<double>() == mn);
  }
}

// max / min start from -inf / +inf and let a NaN through in every layout, as NumPy
// does: rows (axis 1), columns of many widths (axis 0: the CPU's register groups and
// its streamed path for (300, 1000), the GPU's split columns), all axes (the GPU's
// split rows for 100000 elements); argmax / argmin give the first NaN's index.
TEST_CASE("tensor: max / min / argmax with NaN and infinities match NumPy on every device") {
  dzt::on_each_device([](Device dev) {
    const double inf = INFINITY, nan = std::nan("");
    auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
      return true;
    };
    random::seed(13);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{37, 1},  {37, 2},   {37, 5},    {37, 16}, {37, 33},
                                                            {37, 64}, {37, 130}, {300, 1000}, {200, 3}};
    for (DType dt : {float32, float64}) {
      for (auto [rows, cols] : shapes) {
        // Column j by j % 5: randn; one NaN (row j % rows); all -inf; all +inf; -inf, +inf and a NaN last.
        std::vector<double> v = random::randn({rows, cols}).to_vector<double>();
        for (std::int64_t j = 0; j < cols; ++j)
          for (std::int64_t i = 0; i < rows; ++i) {
            double& e = v[i * cols + j];
            switch (j % 5) {
              case 1: if (i == j % rows) e = nan; break;
              case 2: e = -inf; break;
              case 3: e = inf; break;
              case 4: e = i == rows - 1 ? nan : (i % 2 ? inf : -inf); break;
              default: break;
            }
          }
        Tensor x = array(v, Shape{rows, cols}, dt, dev);
        std::vector<double> xv = x.to_vector<double>();  // the values in dt
        std::vector<double> mx(cols, -inf), mn(cols, inf);
        std::vector<std::int64_t> amx(cols, 0), amn(cols, 0);
        for (std::int64_t j = 0; j < cols; ++j)
          for (std::int64_t i = 0; i < rows; ++i) {
            double e = xv[i * cols + j];
            if (std::isnan(e) || e > mx[j]) mx[j] = std::isnan(mx[j]) ? mx[j] : e;
            if (std::isnan(e) || e < mn[j]) mn[j] = std::isnan(mn[j]) ? mn[j] : e;
            double a = xv[amx[j] * cols + j], b = xv[amn[j] * cols + j];
            if (!std::isnan(a) && (std::isnan(e) || e > a)) amx[j] = i;
            if (!std::isnan(b) && (std::isnan(e) || e < b)) amn[j] = i;
          }
        INFO("shape (" << rows << ", " << cols << ") " << dtype_name(dt));
        CHECK(same(max(x, Axes(0)).to_vector<double>(), mx));
        CHECK(same(min(x, Axes(0)).to_vector<double>(), mn));
        CHECK(x.argmax(0).to_vector<std::int64_t>() == amx);
        CHECK(x.argmin(0).to_vector<std::int64_t>() == amn);
        Tensor xt = x.T().copy();  // (cols, rows): the same folds along rows
        CHECK(same(max(xt, Axes(1)).to_vector<double>(), mx));
        CHECK(same(min(xt, Axes(1)).to_vector<double>(), mn));
        CHECK(xt.argmax(1).to_vector<std::int64_t>() == amx);
        CHECK(xt.argmin(1).to_vector<std::int64_t>() == amn);
      }
      // All axes, 100000 elements: all -inf, all +inf, one NaN at the end, one +inf.
      const Shape big{5, 20000};
      CHECK(full(big, -inf, dt, dev).max().item<double>() == -inf);
      CHECK(full(big, -inf, dt, dev).min().item<double>() == -inf);
      CHECK(full(big, inf, dt, dev).min().item<double>() == inf);
      CHECK(full(big, inf, dt, dev).max().item<double>() == inf);
      std::vector<double> r = random::randn(big).to_vector<double>();
      r.back() = nan;
      Tensor xr = array(r, big, dt, dev);
      CHECK(std::isnan(xr.max().item<double>()));
      CHECK(std::isnan(xr.min().item<double>()));
      CHECK(xr.argmax().item<std::int64_t>() == 99999);
      CHECK(std::isnan(max(xr, Axes({0, 1}), true).item<double>()));
      r.back() = inf;
      r[7] = -inf;
      Tensor xi = array(r, big, dt, dev);
      CHECK(xi.max().item<double>() == inf);
      CHECK(xi.min().item<double>() == -inf);
      CHECK(xi.argmin().item<std::int64_t>() == 7);
      // A short row: NaN first, in the middle, last; argmax / argmin take the first NaN.
      Tensor a = array({1.0, nan, 3.0, nan, -2.0}, dt, dev);
      CHECK(std::isnan(a.max().item<double>()));
      CHECK(std::isnan(a.min().item<double>()));
      CHECK(a.argmax().item<std::int64_t>() == 1);
      CHECK(a.argmin().item<std::int64_t>() == 1);
      CHECK(array({nan, 5.0}, dt, dev).argmin().item<std::int64_t>() == 0);
      CHECK(array({-inf, -inf}, dt, dev).max().item<double>() == -inf);
      CHECK(array({-inf, -inf}, dt, dev).argmax().item<std::int64_t>() == 0);
    }
    // Integers keep their lowest / highest value as the identity.
    Tensor i64v = array({std::numeric_limits<std::int64_t>::min(), std::int64_t(-3)}, int64, dev);
    CHECK(i64v.max().item<std::int64_t>() == -3);
    CHECK(i64v.min().item<std::int64_t>() == std::numeric_limits<std::int64_t>::min());
    Tensor i32v = array({std::numeric_limits<std::int32_t>::max(), 4}, int32, dev).reshape({2, 1});
    CHECK(max(i32v, Axes(0)).item<std::int32_t>() == std::numeric_limits<std::int32_t>::max());
    CHECK(min(i32v, Axes(0)).item<std::int32_t>() == 4);
  });
}

// The sigmoid's and relu's backwards are one kernel each, gy * y * (1 - y) and
// gy * (x > 0) in that order: the same bits as the unfused expressions, on every
// device (zeros, -0 and NaN included), and a broadcast gy still works.
TEST_CASE("tensor: fused sigmoid and relu gradients match the unfused expressions bit for bit") {
  dzt::on_each_device([](Device dev) {
    random::seed(12);
    for (DType dt : {float32, float64}) {
      Tensor y = sigmoid(random::randn({37, 29})).astype(dt).to(dev), gy = random::randn({37, 29}).astype(dt).to(dev);
      Tensor fused = detail::sigmoid_grad(gy, y);
      CHECK(fused.dtype() == dt);
      CHECK(fused.device() == dev);
      CHECK(fused.to_vector<double>() == (gy * y * (1.0 - y)).to_vector<double>());
      Tensor g1 = random::randn({1, 29}).astype(dt).to(dev);
      Tensor bcast = detail::sigmoid_grad(g1, y);
      CHECK(bcast.shape() == Shape{37, 29});
      CHECK(bcast.to_vector<double>() == (g1 * y * (1.0 - y)).to_vector<double>());

      std::vector<double> xv = random::randn({37, 29}).to_vector<double>(), gv = gy.to_vector<double>();
      for (std::size_t i = 0; i < xv.size(); i += 5) xv[i] = 0.0;  // x == 0 gives a zero gradient, like x < 0
      xv[1] = 0.5, xv[2] = -0.5, xv[3] = 0.5;
      gv[1] = std::nan(""), gv[2] = std::nan(""), gv[3] = -0.0;
      Tensor x = array(xv, Shape{37, 29}, dt, dev), g = array(gv, Shape{37, 29}, dt, dev);
      auto bits = [](const Tensor& t) {  // NaN != NaN: compare the printed values instead of ==
        std::vector<std::string> out;
        for (double v : t.to_vector<double>()) out.push_back(std::to_string(v) + (std::signbit(v) ? "-" : "+"));
        return out;
      };
      Tensor relu_fused = detail::relu_grad(g, x);
      CHECK(relu_fused.dtype() == dt);
      CHECK(bits(relu_fused) == bits(g * greater(x, 0.0)));
      CHECK(bits(detail::relu_grad(g1, x)) == bits(g1 * greater(x, 0.0)));
    }
  });
}

// mean_squared_error's terms, square(a - b), are one kernel for equal shapes and dtypes:
// the same bits as the two-kernel expression on every device; broadcast operands and
// mixed dtypes take the expression itself.
TEST_CASE("tensor: squared_difference matches square(a - b) bit for bit") {
  dzt::on_each_device([](Device dev) {
    random::seed(13);
    for (DType dt : {float32, float64}) {
      Tensor a = random::randn({41, 3}).astype(dt).to(dev), b = random::randn({41, 3}).astype(dt).to(dev);
      Tensor fused = detail::squared_difference(a, b);
      CHECK(fused.dtype() == dt);
      CHECK(fused.device() == dev);
      CHECK(fused.shape() == Shape{41, 3});
      CHECK(fused.to_vector<double>() == square(a - b).to_vector<double>());
      Tensor b1 = random::randn({1, 3}).astype(dt).to(dev);
      CHECK(detail::squared_difference(a, b1).to_vector<double>() == square(a - b1).to_vector<double>());
    }
    Tensor a = array({1.5, -2.0}, float32, dev), b = array({0.25, 1.0}, float64, dev);
    Tensor mixed = detail::squared_difference(a, b);
    CHECK(mixed.dtype() == float64);
    CHECK(mixed.to_vector<double>() == std::vector<double>{1.5625, 9.0});
  });
}

// mean_squared_error's loss and gradient, fused on the host for equal shapes: the loss
// within rounding of sum(square(x0 - x1)) / N (the sum may be taken in another order),
// the gradient bit for bit gy * (x0 - x1) * (2 / N); shapes past the host's threading
// size (2^15 elements), broadcasts and a gy with more axes take the expression itself.
TEST_CASE("tensor: fused mean_squared_error and its gradient match the unfused expressions") {
  dzt::on_each_device([](Device dev) {
    random::seed(14);
    for (DType dt : {float32, float64}) {
      for (std::int64_t n : {1, 100, 40000}) {
        CAPTURE(n);
        Tensor a = random::randn({n, 2}).astype(dt).to(dev), b = random::randn({n, 2}).astype(dt).to(dev);
        Tensor loss = detail::mean_squared_error(a, b);
        CHECK(loss.ndim() == 0);
        CHECK(loss.dtype() == dt);
        const double want = (sum(square(a - b)) / static_cast<double>(n)).item<double>();
        CHECK(loss.item<double>() == doctest::Approx(want).epsilon(dt == float32 ? 1e-5 : 1e-12));
        Tensor gy = array(0.7, dt, dev);
        Tensor g = detail::mean_squared_error_grad(gy, a, b);
        CHECK(g.shape() == a.shape());
        CHECK(g.to_vector<double>() == (gy * (a - b) * (2.0 / static_cast<double>(n))).to_vector<double>());
      }
      Tensor a = random::randn({6, 3}).astype(dt).to(dev), b1 = random::randn({1, 3}).astype(dt).to(dev);
      CHECK(detail::mean_squared_error(a, b1).item<double>() ==
            doctest::Approx((sum(square(a - b1)) / 6.0).item<double>()));
      Tensor gy3 = array(0.7, dt, dev).reshape({1, 1, 1});  // more axes than x0: broadcast to (1, 6, 3)
      CHECK(detail::mean_squared_error_grad(gy3, a, a * 0.5).shape() == Shape{1, 6, 3});
    }
    CHECK_THROWS_AS(detail::mean_squared_error(array(1.0, float64, dev), array(2.0, float64, dev)), ShapeError);
  });
}

// sum_to takes one backend call when the summed axes form a block, and the general
// path otherwise; both give DeZero's shapes and NumPy's sums.
TEST_CASE("tensor: sum_to with blocks of summed axes and with scattered ones") {
  dzt::on_each_device([](Device dev) {
    Tensor x = arange(0, 24).reshape({2, 3, 4}).astype(float64).to(dev);
    struct Case { Shape to; std::vector<double> want; };
    for (const Case& c : {Case{{4}, {60, 66, 72, 78}}, Case{{1, 4}, {60, 66, 72, 78}},
                          Case{{3, 4}, {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}},
                          Case{{1}, {276}}, Case{{1, 1, 1}, {276}}, Case{{2, 1, 1}, {66, 210}},
                          Case{{3, 1}, {60, 92, 124}}, Case{{2, 1, 4}, {12, 15, 18, 21, 48, 51, 54, 57}}}) {
      Tensor y = sum_to(x, c.to);
      INFO("to " << c.to.str());
      CHECK(y.shape() == c.to);
      CHECK(y.device() == dev);
      CHECK(y.to_vector<double>() == c.want);
    }
    CHECK(sum_to(x, Shape{2, 3, 4}).to_vector<double>() == x.to_vector<double>());
    CHECK_THROWS_AS(sum_to(x, Shape{5}), ShapeError);
    CHECK_THROWS_AS(sum_to(x, Shape{1, 2, 3, 4}), ShapeError);
  });
}

// float32 exp / log / tanh / sigmoid take a SIMD path on the host: they stay within a
// few float32 ulp of the float64 (libm) values, over the whole range and at the ends.
TEST_CASE("tensor: float32 transcendental functions match float64 to float32 precision") {
  std::vector<double> xs;
  for (int i = 0; i <= 4000; ++i) xs.push_back(-40.0 + 80.0 * i / 4000.0);
  Tensor x64 = array(xs), x32 = x64.astype(float32);
  Tensor pos64 = abs(x64) + 1e-3, pos32 = pos64.astype(float32);
  struct Op { const char* name; Tensor y32, y64; };
  for (const Op& op : {Op{"exp", exp(x32 * 0.5f), exp(x32.astype(float64) * 0.5)},
                       Op{"tanh", tanh(x32), tanh(x32.astype(float64))},
                       Op{"sigmoid", sigmoid(x32), sigmoid(x32.astype(float64))},
                       Op{"log", log(pos32), log(pos32.astype(float64))}}) {
    CHECK(op.y32.dtype() == float32);
    std::vector<float> a = op.y32.to_vector<float>();
    std::vector<double> b = op.y64.to_vector<double>();
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, std::abs(a[i] - b[i]) / (std::abs(b[i]) * 1.2e-7 + 1e-7));
    INFO(op.name << ": worst error " << worst << " (units of 1.2e-7 relative + 1e-7 absolute)");
    CHECK(worst <= 8.0);
  }
  // An element's value does not depend on where it falls: the last 5 of 37 (past the last
  // whole 16 of the SIMD path) get the same bits as inside a longer array.
  Tensor x48 = x32[Slice(2000, 2048)].copy(), x37 = x32[Slice(2000, 2037)].copy();
  for (auto f : {+[](const Tensor& t) { return exp(t); }, +[](const Tensor& t) { return tanh(t); },
                 +[](const Tensor& t) { return sigmoid(t); }, +[](const Tensor& t) { return log(abs(t) + 1e-3); }}) {
    std::vector<float> whole = f(x48).to_vector<float>(), part = f(x37).to_vector<float>();
    whole.resize(37);
    CHECK(part == whole);
  }
}

TEST_CASE("tensor: transpose with and without axes") {
  dzt::on_each_device([](Device dev) {
    Tensor t = T_("tr_x", dev);
    CHECK(close(t.transpose(), T_("tr_rev")));
    CHECK(close(t.T(), T_("tr_rev")));
    CHECK(close(t.transpose({1, 0, 2}), T_("tr_102")));
    CHECK(close(transpose(t, {2, 0, 1}), T_("tr_201")));
    CHECK(close(t.transpose({-1, 0, 1}), T_("tr_m101")));
    Tensor v = array({1.0, 2.0, 3.0}, std::nullopt, dev);
    CHECK(v.transpose().to_vector<double>() == std::vector<double>{1, 2, 3});
    CHECK_THROWS_AS(t.transpose({0, 1}), ValueError);
    CHECK_THROWS_AS(t.transpose({0, 0, 1}), ValueError);
    CHECK_THROWS_AS(t.transpose({0, 1, 3}), IndexError);
  });
}

// --- indexing ----------------------------------------------------------------------------------
TEST_CASE("tensor: a slice step far past the axis picks one element, as NumPy's x[::2**62]") {
  // The step is clamped to the axis length before it is multiplied by the stride: without the clamp
  // step * stride overflows (UBSan in the sanitizer build) and the offset of the result is garbage.
  const std::int64_t huge = std::int64_t(1) << 62;
  Tensor x = arange(12.0).reshape({3, 4});
  Tensor a = get_item(x, {Slice(), Slice(std::nullopt, std::nullopt, huge)});
  CHECK(a.shape() == Shape{3, 1});
  CHECK(a.to_vector<double>() == std::vector<double>{0, 4, 8});
  Tensor b = get_item(x, {Slice(std::nullopt, std::nullopt, -huge), Slice(1, 3)});
  CHECK(b.shape() == Shape{1, 2});
  CHECK(b.to_vector<double>() == std::vector<double>{9, 10});
  Tensor c = get_item(x, {Slice(1, std::nullopt, std::numeric_limits<std::int64_t>::max())});
  CHECK(c.shape() == Shape{1, 4});
  CHECK(c.to_vector<double>() == std::vector<double>{4, 5, 6, 7});
}

TEST_CASE("tensor: NumPy indexing (ints, slices, negative steps, Ellipsis, newaxis, arrays)") {
  dzt::on_each_device([](Device dev) {
    Tensor x = arange(60, std::nullopt, dev).reshape({3, 4, 5});
    auto A = [&](std::initializer_list<int> v) { return array(v, std::nullopt, dev); };
    auto chk = [&](const Tensor& got, const std::string& name) {
      CAPTURE(name);
      Tensor want = T_("ix_" + name);
      CHECK(got.shape() == want.shape());
      CHECK(utils::array_equal(got, want));
    };
    const auto none = std::nullopt;
    chk(x[1], "i1");
    chk(x[-1], "im1");
    chk(x[{1, 2}], "i1_2");
    chk(x[{1, 2, 3}], "i1_2_3");
    chk(x[{Slice(), Slice(1, 3)}], "s_13");
    chk(x[Slice(none, none, -1)], "s_rev");
    chk(x[{Slice(), Slice(none, none, -2), 1}], "s_m2_1");
    chk(x[{Slice(-2, none), Slice(-3, -1), Slice(none, none, -3)}], "s_neg");
    chk(x[{Slice(2, 0, -1), Slice(3, none, -2)}], "s_rev_stop");
    chk(x[{Slice(1, 100), Slice(-100, 2)}], "s_oob");
    chk(x[{Ellipsis, 2}], "ell_2");
    chk(x[{0, Ellipsis, 1}], "ell_mid");
    chk(x[{newaxis, 1}], "new_1");
    chk(x[{Slice(), newaxis, Slice(), 0}], "new_mid");
    chk(x[{1, Ellipsis, newaxis}], "new_end");
    chk(x[A({0, 2})], "a_02");
    chk(x[{A({2, 0, 2}), 1}], "a_rep_1");
    chk(x[{Slice(), A({3, 0})}], "a_col");
    chk(x[{A({0, 1}), A({1, 2})}], "a_pair");
    chk(x[{Slice(1, none), A({0, 0, 3}), Slice(none, none, 2)}], "a_mixed");
    chk(x[array({{0, 1}, {2, 0}}, std::nullopt, dev)], "a_2d");
    chk(x[A({-1, 0})], "a_neg");
    chk(x[{A({0, 2}), Slice(), A({1, 4})}], "a_sep");
    chk(x[{array(std::vector<std::int64_t>{0, 2}, Shape{2, 1}, std::nullopt, dev), Slice(), A({1, 4})}], "a_bcast");
    CHECK(x[{1, 2, 3}].item<std::int64_t>() == 33);
    CHECK(get_item(x, {Slice(), 1}).shape() == Shape{3, 5});
  });
}

TEST_CASE("tensor: scatter_add accumulates repeated indices (np.add.at)") {
  dzt::on_each_device([](Device dev) {
    Tensor g = T_("sa_g", dev);
    Tensor r = scatter_add(g, {5, 3}, {array({1, 1, 3}, std::nullopt, dev)});
    CHECK(close(r, T_("sa_rows_113")));
    Tensor g2 = T_("sa_g2", dev);
    Tensor r2 = scatter_add(g2, {3, 4}, {array({0, 0}, std::nullopt, dev), array({1, 1}, std::nullopt, dev)});
    CHECK(close(r2, T_("sa_pairs")));
    // basic indices: a strided slice gets the gradient, the rest stays zero
    Tensor r3 = scatter_add(ones({2, 2}, float64, dev), {3, 4}, {Slice(1, std::nullopt), Slice(std::nullopt, std::nullopt, 2)});
    CHECK(r3.to_vector<double>() == std::vector<double>{0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0});
    CHECK_THROWS_AS(scatter_add(ones({2}, float64, dev), {5, 3}, {array({1, 1, 3}, std::nullopt, dev)}), ShapeError);
  });
}

// --- concatenate / stack / take ---------------------------------------------------------------------
TEST_CASE("tensor: concatenate, stack, take") {
  dzt::on_each_device([](Device dev) {
    Tensor a = T_("cat_a", dev), b = T_("cat_b", dev);
    CHECK(close(concatenate({a, b}, 0), T_("cat_0")));
    CHECK(close(concatenate({a, a}, 1), T_("cat_1")));
    CHECK(close(stack({a, a * 2.0}, 0), T_("stack_0")));
    CHECK(close(stack({a, a * 2.0}, 1), T_("stack_1")));
    CHECK(close(stack({a, a * 2.0}, -1), T_("stack_m1")));
    CHECK(close(take(concatenate({a, b}), T_("take_idx", dev)), T_("take_r")));
    CHECK(concatenate({array({1, 2}, std::nullopt, dev), array({0.5}, std::nullopt, dev)}).dtype() == float64);
    CHECK_THROWS_AS(concatenate({a, ones({2, 2}, float64, dev)}, 0), ShapeError);
    CHECK_THROWS_AS(stack({a, b}), ShapeError);
    CHECK_THROWS_AS(take(a, array({0, 2}, std::nullopt, dev)), IndexError);
  });
}

// --- printing -------------------------------------------------------------------------------------
TEST_CASE("tensor: str() and repr() equal NumPy's") {
  const char* names[] = {"int1d", "int_neg", "float1d", "float_integral", "float_0d", "float_0d_frac", "int_0d",
                         "float32_0d", "float2d", "int3d", "float3d", "summ_int", "summ_int1001", "summ_float2d",
                         "summ_3d", "sci", "sci_big", "float32", "wrap", "wrap_int", "randn", "zeros2d",
                         "neg_zero_mix", "int32", "empty"};
  for (const char* n : names) {
    std::string name = n;
    CAPTURE(name);
    Tensor t = dzt::fx("print.txt", "print_" + name);
    CHECK(t.str() == dzt::fx_text("print.txt", "str_" + name));
    CHECK(t.repr() == dzt::fx_text("print.txt", "repr_" + name));
  }
  std::ostringstream os;
  os << array({1.0, 2.0});
  CHECK(os.str() == "[1. 2.]");
}

// --- random -------------------------------------------------------------------------------------
TEST_CASE("tensor: random reproduces NumPy's np.random.seed stream") {
  auto R = [](const std::string& n) { return dzt::fx("random.txt", n); };
  random::seed(0);
  CHECK(utils::array_equal(random::randn({2, 3}), R("seed0_randn_2x3")));
  CHECK(utils::array_equal(random::rand({4}), R("seed0_then_rand_4")));
  CHECK(utils::array_equal(random::randn({3}), R("seed0_then_randn_3")));
  CHECK(utils::array_equal(random::rand({2}), R("seed0_then_rand_2")));
  CHECK(utils::array_equal(random::randn({1}), R("seed0_then_randn_1")));
  CHECK(utils::array_equal(random::permutation(10), R("seed0_then_permutation_10")));
  CHECK(utils::array_equal(random::randint(0, 10, {6}), R("seed0_then_randint_0_10_6")));
  random::seed(42);
  Tensor r32 = random::rand({3}, float32);
  CHECK(r32.dtype() == float32);
  CHECK(utils::array_equal(r32, R("seed42_rand_3_f32")));
  random::seed(1);
  CHECK(utils::array_equal(random::permutation(7), R("seed1_permutation_7")));
  CHECK(random::randn({2, 2}).dtype() == float64);
}

TEST_CASE("array: a column literal is 2-d") {
  dezero::Tensor c = dezero::array({{1.0}, {2.0}});
  CHECK(c.shape() == dezero::Shape{2, 1});
  CHECK(c.dtype() == dezero::float64);
  dezero::Tensor i = dezero::array({{0}, {2}});
  CHECK(i.shape() == dezero::Shape{2, 1});
  CHECK(i.dtype() == dezero::int64);
  CHECK(dezero::array({1, 2, 3}).dtype() == dezero::int64);
  CHECK(dezero::array({1.5, 2.0}).dtype() == dezero::float64);
}

// x / scalar divides by the scalar in x's dtype (not x * (1 / scalar)): the same bits
// as dividing by a tensor of that value, as NumPy does.
TEST_CASE("tensor: division by a scalar rounds like division by a tensor") {
  random::seed(6);
  for (DType dt : {float32, float64}) {
    Tensor x = random::randn({1000}).astype(dt);
    for (double s : {3.0, 0.1, 7.0, -1e-3}) {
      CAPTURE(s);
      Tensor by_scalar = x / s, by_tensor = x / full({1000}, s, dt);
      CHECK(by_scalar.dtype() == dt);
      CHECK(by_scalar.to_vector<double>() == by_tensor.to_vector<double>());
    }
  }
  Tensor ints = arange(5).astype(int64);
  CHECK((ints / 2.0).dtype() == float64);
  CHECK((ints / 2.0).to_vector<double>() == std::vector<double>{0.0, 0.5, 1.0, 1.5, 2.0});
}

// binary_op's flat paths (tensor/elementwise.cpp): equal shapes, and a one-element operand with
// no more axes than the other; everything else through broadcast views. The result's shape is
// NumPy's broadcast and each element is a[i] - b[j] of the broadcast positions.
TEST_CASE("tensor: one-element operands broadcast as NumPy does, flat or through views") {
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {{{}, {3}, {3}},          {{1}, {}, {1}},       {{1, 1}, {1}, {1, 1}}, {{1}, {2, 3}, {2, 3}},
                        {{1, 1, 1}, {4}, {1, 1, 4}}, {{0}, {}, {0}},   {{2, 1}, {1}, {2, 1}}, {{3}, {1, 3}, {1, 3}},
                        {{2, 3}, {2, 3}, {2, 3}}};
  for (const Case& c : cases) {
    CAPTURE(c.a.str());
    CAPTURE(c.b.str());
    Tensor a = arange(0.0, static_cast<double>(c.a.numel()), 1.0, float64).reshape(c.a) + 1.0;
    Tensor b = arange(0.0, static_cast<double>(c.b.numel()), 1.0, float64).reshape(c.b) * 10.0 + 5.0;
    for (bool swap : {false, true}) {
      Tensor y = swap ? b - a : a - b;
      CHECK(y.shape() == c.out);
      std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), yv = y.to_vector<double>();
      REQUIRE(static_cast<std::int64_t>(yv.size()) == c.out.numel());
      for (std::size_t i = 0; i < yv.size(); ++i) {
        // the position of element i of the output in each operand (right-aligned broadcast)
        auto pick = [&](const Shape& s, const std::vector<double>& v) {
          std::int64_t rem = static_cast<std::int64_t>(i), idx = 0, stride = 1;
          for (int d = c.out.ndim() - 1, e = s.ndim() - 1; d >= 0; --d, --e) {
            const std::int64_t k = rem % c.out[d];
            rem /= c.out[d];
            if (e >= 0) {
              if (s[e] != 1) idx += k * stride;
              stride *= s[e];
            }
          }
          return v[static_cast<std::size_t>(idx)];
        };
        const double want = swap ? pick(c.b, bv) - pick(c.a, av) : pick(c.a, av) - pick(c.b, bv);
        CHECK(yv[i] == want);
      }
    }
  }
}
