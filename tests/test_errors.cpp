// tests/test_errors.cpp - every user mistake throws a dezero::Error subclass whose
// message names the operation and the operands (shapes, dtypes, devices) with a
// hint where one helps. Backward on an empty Variable or with a
// gradient of the wrong shape is an error, never a crash.
#include "dezero/tensor/checks.hpp"
#include "support/test_util.hpp"

using namespace dezero;

using dzt::has;
using dzt::thrown;

#define CHECK_MSG(msg, ...)                                      \
  do {                                                           \
    const std::string m_ = (msg);                                \
    for (const char* p_ : {__VA_ARGS__}) {                       \
      INFO("message: ", m_, "\n  expected to contain: ", std::string(p_));    \
      CHECK(has(m_, p_));                                        \
    }                                                            \
  } while (0)

TEST_CASE("errors: every kind derives from dezero::Error") {
  CHECK_THROWS_AS(zeros({2, 3}).reshape({4}), Error);
  CHECK_THROWS_AS(zeros({2, 3}).sum(5), Error);
  CHECK_THROWS_AS(zeros({2}).data<double>(), Error);
}

// --- shapes -------------------------------------------------------------------------------------------
TEST_CASE("errors: shape mistakes name the op, the shapes and the dtypes") {
  dzt::on_each_device([](Device dev) {
    Tensor a = zeros({2, 3}, float64, dev), b = zeros({4, 5}, float32, dev);
    CHECK_MSG(thrown<ShapeError>([&] { F::matmul(a, b); }), "matmul: shapes (2, 3) and (4, 5) are not aligned: 3 != 4");
    CHECK_MSG(thrown<ShapeError>([&] { matmul(a, b); }), "matmul", "(2, 3)", "(4, 5)", "3", "4");
    CHECK_MSG(thrown<ShapeError>([&] { matmul(zeros({2, 2, 3}, float64, dev), zeros({3, 4, 5}, float64, dev)); }),
              "matmul", "(2, 2, 3)", "(3, 4, 5)");
    CHECK_MSG(thrown<ShapeError>([&] { matmul(a, array(1.0, std::nullopt, dev)); }), "matmul", "()", "(2, 3)");
    Tensor c = zeros({4}, float32, dev);
    CHECK_MSG(thrown<ShapeError>([&] { a + c; }), "add", "(2, 3)", "(4,)", "float64", "float32", "hint");
    CHECK_MSG(thrown<ShapeError>([&] { a * c; }), "mul", "(2, 3)", "(4,)", "float64", "float32");
    CHECK_MSG(thrown<ShapeError>([&] { F::sub(Variable(a), Variable(c)); }), "sub", "(2, 3)", "(4,)", "float64");
    CHECK_MSG(thrown<ShapeError>([&] { F::div(Variable(a), Variable(c)); }), "div", "(2, 3)", "(4,)");
    CHECK_MSG(thrown<ShapeError>([&] { a.reshape({4, 2}); }), "reshape", "(2, 3)", "(4, 2)");
    CHECK_MSG(thrown<ShapeError>([&] { F::reshape(a, {5}); }), "reshape", "(2, 3)", "(5,)");
    CHECK_MSG(thrown<ShapeError>([&] { broadcast_to(a, {3, 3}); }), "broadcast_to", "(2, 3)", "(3, 3)", "hint");
    CHECK_MSG(thrown<ShapeError>([&] { F::broadcast_to(a, {3, 2}); }), "broadcast_to", "(2, 3)", "(3, 2)");
    CHECK_MSG(thrown<ShapeError>([&] { F::sum_to(zeros({10, 20, 20}, float64, dev), {10}); }), "sum_to", "(10, 20, 20)",
              "(10,)", "hint");
    CHECK_MSG(thrown<ShapeError>([&] { F::linear(a, b); }), "linear", "(2, 3)", "(4, 5)", "3 != 4");
    CHECK_MSG(thrown<ShapeError>([&] { F::linear(a, zeros({3, 5}, float64, dev), zeros({4}, float64, dev)); }),
              "linear", "(4,)", "(2, 5)");
    CHECK_MSG(thrown<ShapeError>([&] { concatenate({a, b}, 0); }), "concatenate", "(2, 3)", "(4, 5)");
    CHECK_MSG(thrown<ShapeError>([&] { stack({a, zeros({3, 2}, float64, dev)}); }), "stack", "(2, 3)", "(3, 2)");
    CHECK_MSG(thrown<ShapeError>([&] { a += zeros({3, 3}, float64, dev); }), "(2, 3)", "(3, 3)");
    CHECK_MSG(thrown<ShapeError>([&] { array(std::vector<double>{1, 2, 3}, Shape{2, 2}); }), "array", "(2, 2)");
    CHECK_MSG(thrown<ShapeError>([&] { F::flatten(array(1.0, std::nullopt, dev)); }), "flatten", "()");
  });
}

// --- axes and indices ----------------------------------------------------------------------------------------
TEST_CASE("errors: axis and index mistakes") {
  dzt::on_each_device([](Device dev) {
    Tensor a = zeros({2, 3}, float64, dev);
    CHECK_MSG(thrown<IndexError>([&] { a.sum(2); }), "sum", "axis 2", "dimension 2");
    CHECK_MSG(thrown<IndexError>([&] { F::sum(a, -3); }), "sum", "axis -3");
    CHECK_MSG(thrown<IndexError>([&] { F::max(a, 4); }), "max", "axis 4");
    CHECK_MSG(thrown<IndexError>([&] { a.argmax(3); }), "argmax", "axis 3");
    CHECK_MSG(thrown<ValueError>([&] { a.sum({0, 0}); }), "sum", "duplicate");
    CHECK_MSG(thrown<IndexError>([&] { F::expand_dims(a, 4); }), "expand_dims", "axis 4");
    CHECK_MSG(thrown<IndexError>([&] { concatenate({a, a}, 2); }), "concatenate", "axis 2");
    CHECK_MSG(thrown<ValueError>([&] { a.transpose({0}); }), "transpose", "(2, 3)");
    CHECK_MSG(thrown<ValueError>([&] { F::transpose(a, {1, 1}); }), "transpose", "repeated");
    CHECK_MSG(thrown<IndexError>([&] { a[5]; }), "get_item", "index 5", "axis 0", "size 2");
    CHECK_MSG(thrown<IndexError>([&] { a[{1, -4}]; }), "get_item", "index -4", "axis 1", "(2, 3)");
    CHECK_MSG(thrown<IndexError>([&] { F::get_item(a, {0, 0, 0}); }), "get_item", "too many indices", "2-dimensional");
    CHECK_MSG(thrown<IndexError>([&] { a[array({0, 2}, std::nullopt, dev)]; }), "get_item", "index 2", "size 2");
    CHECK_MSG(thrown<IndexError>([&] { a[array({0.0}, std::nullopt, dev)]; }), "get_item", "integer", "float64");
    CHECK_MSG(thrown<IndexError>([&] { a[{Ellipsis, Ellipsis}]; }), "get_item", "ellipsis");
    CHECK_MSG(thrown<ValueError>([&] { a[Slice(0, 2, 0)]; }), "get_item", "step");
    CHECK_MSG(thrown<IndexError>([&] { take(a, array({3}, std::nullopt, dev)); }), "take", "index 3", "size 2");
    CHECK_MSG(thrown<ShapeError>([&] { array(2.0, std::nullopt, dev).len(); }), "len", "()");
    CHECK_MSG(thrown<ValueError>([&] { a.item<double>(); }), "item", "(2, 3)");
    CHECK_MSG(thrown<ValueError>([&] { zeros({0}, float64, dev).max(); }), "max", "(0,)");
  });
}

// Out-of-range integer indices are NumPy's IndexError on every device, before any
// kernel reads or writes (a GPU checks an index array with one min / max reduction and
// one sync): the message names the function called, the bad value, the axis size and a
// hint. In-range negative indices still count from the end.
TEST_CASE("errors: out-of-range integer indices on every device") {
  dzt::on_each_device([](Device dev) {
    Tensor a = arange(0, 6, 1, float64, dev).reshape({2, 3});
    Tensor wrap = a[array({-1, -2, 1}, int64, dev)];
    CHECK(wrap.shape() == Shape{3, 3});
    CHECK(wrap.to_vector<double>() == std::vector<double>{3, 4, 5, 0, 1, 2, 3, 4, 5});
    CHECK(a[{Slice(), array({-3, 2}, int32, dev)}].to_vector<double>() == std::vector<double>{0, 2, 3, 5});

    // get_item: an index equal to the size, and one below -size.
    CHECK_MSG(thrown<IndexError>([&] { a[array({0, 2}, int64, dev)]; }), "get_item", "index 2", "axis 0", "size 2",
              "hint");
    CHECK_MSG(thrown<IndexError>([&] { a[array({1, -3}, int64, dev)]; }), "get_item", "index -3", "size 2", "hint");
    CHECK_MSG(thrown<IndexError>([&] { a[{Slice(), array({3}, int32, dev)}]; }), "get_item", "index 3", "axis 1",
              "size 3");
    CHECK_MSG(thrown<IndexError>([&] { a[{Slice(), array({-4}, int64, dev)}]; }), "get_item", "index -4", "axis 1");
    CHECK_MSG(thrown<IndexError>([&] { F::get_item(Variable(a), {array({7}, int64, dev)}); }), "get_item", "index 7");

    // take: indices in [0, n), no wrapping.
    CHECK_MSG(thrown<IndexError>([&] { take(a, array({1, 2}, int64, dev)); }), "take", "index 2", "position 1",
              "size 2", "hint");
    CHECK_MSG(thrown<IndexError>([&] { take(a, array({-1}, int32, dev)); }), "take", "index -1", "size 2");

    // scatter_add (get_item's gradient) never writes outside the result.
    Tensor gy = ones({2, 3}, float64, dev);
    CHECK_MSG(thrown<IndexError>([&] { scatter_add(gy, Shape{2, 3}, {array({0, 2}, int64, dev)}); }), "scatter_add",
              "index 2", "size 2", "hint");
    CHECK_MSG(thrown<IndexError>([&] { scatter_add(gy, Shape{2, 3}, {array({-3, 0}, int64, dev)}); }), "scatter_add",
              "index -3");
    Tensor g = scatter_add(gy, Shape{2, 3}, {array({-1, -1}, int64, dev)});
    CHECK(g.to_vector<double>() == std::vector<double>{0, 0, 0, 2, 2, 2});
    Variable x(a);
    Variable y = F::get_item(x, {array({1, -1, 0}, int64, dev)});
    y.backward();
    CHECK(x.grad().data().to_vector<double>() == std::vector<double>{1, 1, 1, 2, 2, 2});

    // embed_id: ids are rows of W.
    Variable W(zeros({5, 3}, float64, dev));
    CHECK_MSG(thrown<IndexError>([&] { F::embed_id(Variable(array({0, 5}, int64, dev)), W); }), "embed_id", "index 5",
              "position 1", "size 5", "hint");
    CHECK_MSG(thrown<IndexError>([&] { F::embed_id(Variable(array({-1}, int32, dev)), W); }), "embed_id", "index -1");

    // softmax_cross_entropy: labels are class ids in [0, C).
    Variable logits(zeros({2, 4}, float32, dev));
    CHECK_MSG(thrown<IndexError>([&] { F::softmax_cross_entropy(logits, Variable(array({0, 4}, int64, dev))); }),
              "softmax_cross_entropy", "label 4", "position 1", "4 classes", "hint");
    CHECK_MSG(thrown<IndexError>([&] { F::softmax_cross_entropy(logits, Variable(array({-1, 0}, int32, dev))); }),
              "softmax_cross_entropy", "label -1", "position 0");
  });
}

// --- dtypes -----------------------------------------------------------------------------------------------------
TEST_CASE("errors: dtype mistakes") {
  Tensor a = zeros({2, 3}, float64);
  CHECK_MSG(thrown<DtypeError>([&] { a.data<float>(); }), "float32", "float64", "hint");
  CHECK_MSG(thrown<DtypeError>([&] { take(a, array({0.0})); }), "take", "float64");
  CHECK_MSG(thrown<DtypeError>([&] { random::randn({2}, int64); }), "randn", "int64");
  CHECK_MSG(thrown<DtypeError>([&] { random::rand({2}, int32); }), "rand", "int32");
}

// --- devices --------------------------------------------------------------------------------------------------
TEST_CASE("errors: device mistakes") {
  Tensor a = zeros({2, 3}, float64);
  if (!cuda::is_available()) {
    CHECK_MSG(thrown<DeviceError>([&] { a.to_gpu(); }), "cuda:0");
    CHECK_MSG(thrown<DeviceError>([&] { zeros({2}, float32, Device::cuda(0)); }), "cuda:0");
    Variable v(a);
    CHECK_THROWS_AS(v.to_gpu(), DeviceError);
  } else {
    Tensor g = a.to_gpu();
    CHECK_MSG(thrown<DeviceError>([&] { a + g; }), "add", "cpu", "cuda:0", "(2, 3)", "hint");
    CHECK_MSG(thrown<DeviceError>([&] { matmul(a, g.T()); }), "matmul", "cpu", "cuda:0");
    CHECK_MSG(thrown<DeviceError>([&] { F::mul(Variable(a), Variable(g)); }), "mul", "cpu", "cuda:0");
    CHECK_MSG(thrown<DeviceError>([&] { g.data<double>(); }), "cuda:0", "to_cpu");
    CHECK_MSG(thrown<DeviceError>([&] { a.to(Device::cuda(cuda::device_count())); }), "cuda");
  }
}

// --- values ------------------------------------------------------------------------------------------------------
TEST_CASE("errors: invalid argument values") {
  CHECK_MSG(thrown<ValueError>([] { F::clip(Variable(array({1.0})), 1.0, 0.0); }), "clip");
  CHECK_MSG(thrown<ValueError>([] { arange(0.0, 1.0, 0.0); }), "arange", "step");
  CHECK_MSG(thrown<ValueError>([] { auto g = using_config("trian", false); }), "using_config", "trian", "hint");
  CHECK_MSG(thrown<ValueError>([] { random::seed(1ULL << 40); }), "seed");
  CHECK_MSG(thrown<ValueError>([] { concatenate({}); }), "concatenate");
}

// --- backward -------------------------------------------------------------------------------------------------------
namespace {
struct WrongShape : Function {
  TensorList forward(const TensorList& xs) override { return {xs[0] * 2.0}; }
  VariableList backward(const VariableList&) override { return {Variable(ones({7}, float64))}; }
};
struct WrongCount : Function {
  TensorList forward(const TensorList& xs) override { return {xs[0] * 2.0}; }
  VariableList backward(const VariableList& gys) override { return {gys[0], gys[0]}; }
};
}  // namespace

TEST_CASE("errors: backward on a Variable with no data, or with a mismatched gradient") {
  CHECK_MSG(thrown<ValueError>([] { Variable().backward(); }), "backward", "no data", "hint");
  CHECK_MSG(thrown<ValueError>([] { Variable v; v.set_name("x"); v.backward(); }), "backward", "no data");

  Variable x(zeros({2, 3}, float64));
  Variable y = x * 2.0;
  y.set_grad(Variable(ones({3}, float64)));
  CHECK_MSG(thrown<ShapeError>([&] { y.backward(); }), "backward", "(2, 3)", "(3,)", "hint");
  CHECK(!x.has_grad());
  y.set_grad(Variable(ones({2, 3}, float64)));
  y.backward();
  CHECK(x.has_grad());

  Variable z = (*std::make_shared<WrongShape>())(x);
  CHECK_MSG(thrown<ShapeError>([&] { z.backward(); }), "backward", "WrongShape", "(7,)", "(2, 3)");
  Variable w = (*std::make_shared<WrongCount>())(x);
  CHECK_MSG(thrown<ValueError>([&] { w.backward(); }), "backward", "WrongCount", "2 gradients", "1 input");

  // an empty Variable used as an operand
  CHECK_MSG(thrown<ValueError>([&] { F::add(Variable(), x); }), "Add", "input 0", "no data");
  CHECK_MSG(thrown<Error>([&] { F::exp(Variable()); }), "no data");
  CHECK_MSG(thrown<ValueError>([&] { Variable().set_grad(x); }), "set_grad");
}

// --- errors that name the function the user called --------------------------------------------
TEST_CASE("errors: mean_squared_error checks its inputs' shapes itself") {
  dzt::on_each_device([](Device dev) {
    Variable x0(zeros({2, 3}, float32, dev)), x1(zeros({4}, float32, dev));
    const std::string m = thrown<ShapeError>([&] { F::mean_squared_error(x0, x1); });
    CHECK_MSG(m, "mean_squared_error: ", "(2, 3)", "(4,)", "hint: x0 and x1 must have the same shape or broadcast");
    CHECK_FALSE(has(m, "sub:"));
    CHECK_THROWS_AS(F::mean_squared_error(x0, x1), ShapeError);
    // Broadcasting shapes are still accepted.
    Variable y = F::mean_squared_error(Variable(ones({2, 3}, float32, dev)), Variable(zeros({3}, float32, dev)));
    CHECK(y.data().to_vector<double>() == std::vector<double>{3.0});  // sum(1 * 6) / N with N = 2
  });
}

TEST_CASE("errors: an EmbedID id out of range names embed_id") {
  dzt::on_each_device([](Device dev) {
    L::EmbedID emb(5, 3);
    emb.to(dev);
    CHECK_THROWS_AS(emb(Variable(array({1, 7}, int64, dev))), IndexError);
    const std::string m = thrown<IndexError>([&] { emb(Variable(array({1, 7}, int64, dev))); });
    CHECK_MSG(m, "embed_id: ", "index 7", "size 5", "(5, 3)", "hint:");
    CHECK_FALSE(has(m, "get_item"));
  });
}

TEST_CASE("errors: load_weights on a directory, a missing or an unreadable file says which") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "dezero_test_errors_load";
  fs::create_directories(dir);
  random::seed(1);
  L::Linear model(2);
  model(Variable(ones({1, 3})));
  const std::vector<double> before = model.W.data().to_vector<double>();

  const std::string d = dir.string();
  CHECK_THROWS_AS(model.load_weights(d), IOError);
  const std::string is_dir = "load_weights: '" + d + "' is a directory";
  CHECK_MSG(thrown<IOError>([&] { model.load_weights(d); }), is_dir.c_str(), "not an .npz file", "hint:");
  CHECK_FALSE(has(thrown<IOError>([&] { model.load_weights(d); }), "0 bytes"));

  const std::string missing = (dir / "nothing_here.npz").string();
  fs::remove(missing);
  CHECK_THROWS_AS(model.load_weights(missing), IOError);
  const std::string lw_missing = "load_weights: '" + missing + "' does not exist";
  const std::string ln_missing = "load_npz: '" + missing + "' does not exist";
  CHECK_MSG(thrown<IOError>([&] { model.load_weights(missing); }), lw_missing.c_str(), "hint:");
  CHECK_MSG(thrown<IOError>([&] { utils::load_npz(missing); }), ln_missing.c_str(), "hint:");

  const std::string locked = (dir / "locked.npz").string();
  model.save_weights(locked);
  fs::permissions(locked, fs::perms::none);
  if (std::ifstream(locked)) {
    MESSAGE("skipped the unreadable-file check: this user can read a file with no permissions (root)");
  } else {
    CHECK_THROWS_AS(model.load_weights(locked), IOError);
    const std::string unreadable = "load_weights: '" + locked + "' cannot be opened for reading";
    CHECK_MSG(thrown<IOError>([&] { model.load_weights(locked); }), unreadable.c_str(), "hint:");
  }
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_write);
  fs::remove(locked);

  CHECK(model.W.data().to_vector<double>() == before);  // untouched by every failed load
}

TEST_CASE("errors: transpose and axis mistakes name the function, the axes, the ndim and a hint") {
  dzt::on_each_device([](Device dev) {
    Tensor a = zeros({2, 3}, float64, dev);
    const char* perm = "hint: axes must be a permutation of 0..ndim-1";
    // wrong length, out of range, repeated: Tensor method and F::
    CHECK_THROWS_AS(a.transpose({0}), ValueError);
    CHECK_MSG(thrown<ValueError>([&] { a.transpose({0}); }), "transpose: ", "axes (0,)", "(2, 3)", perm);
    CHECK_MSG(thrown<ValueError>([&] { F::transpose(a, {0, 1, 2}); }), "transpose: ", "axes (0, 1, 2)", "(2, 3)", perm);
    CHECK_THROWS_AS(a.transpose({0, 2}), IndexError);
    CHECK_MSG(thrown<IndexError>([&] { a.transpose({0, 2}); }), "transpose: ", "axis 2", "axes (0, 2)", "(2, 3)", perm);
    CHECK_MSG(thrown<IndexError>([&] { F::transpose(a, {-3, 0}); }), "transpose: ", "axis -3", "(2, 3)", perm);
    CHECK_THROWS_AS(F::transpose(a, {1, 1}), ValueError);
    CHECK_MSG(thrown<ValueError>([&] { F::transpose(a, {1, 1}); }), "transpose: ", "repeated axis 1", "axes (1, 1)",
              "(2, 3)", perm);
    CHECK_MSG(thrown<ValueError>([&] { a.transpose({0, -1}).transpose({1, -1}); }), "transpose: ", "axes (1, -1)",
              perm);

    const char* range = "hint: axis must be in [-ndim, ndim), here [-2, 2)";
    CHECK_THROWS_AS(a.sum(2), IndexError);
    CHECK_MSG(thrown<IndexError>([&] { a.sum(2); }), "sum: ", "axis 2", "dimension 2", range);
    CHECK_MSG(thrown<IndexError>([&] { F::sum(a, Axes{0, -3}); }), "sum: ", "axis -3", "axes (0, -3)", "dimension 2",
              range);
    CHECK_MSG(thrown<ValueError>([&] { a.sum({0, -2}); }), "sum: ", "duplicate", "dimension 2", "hint:");
    CHECK_MSG(thrown<IndexError>([&] { a.max(2); }), "max: ", "axis 2", "dimension 2", range);
    CHECK_MSG(thrown<IndexError>([&] { F::max(a, -3); }), "max: ", "axis -3", "dimension 2", range);
    CHECK_MSG(thrown<IndexError>([&] { a.min(5); }), "min: ", "axis 5", "dimension 2", range);
    CHECK_MSG(thrown<IndexError>([&] { F::min(a, 2); }), "min: ", "axis 2", "dimension 2", range);
    CHECK_THROWS_AS(F::expand_dims(a, 3), IndexError);
    CHECK_MSG(thrown<IndexError>([&] { F::expand_dims(a, 3); }), "expand_dims: ", "axis 3", "dimension 3",
              "hint: axis must be in [-ndim, ndim), here [-3, 3)");
    CHECK_MSG(thrown<IndexError>([&] { expand_dims(a, -4); }), "expand_dims: ", "axis -4", "dimension 3", "hint:");
    CHECK_THROWS_AS(F::softmax(a, 2), IndexError);
    CHECK_MSG(thrown<IndexError>([&] { F::softmax(a, 2); }), "softmax: ", "axis 2", "dimension 2", range);
    CHECK_MSG(thrown<IndexError>([&] { F::log_softmax(a, -3); }), "log_softmax: ", "axis -3", "dimension 2", range);
    CHECK_MSG(thrown<IndexError>([&] { array(1.0, std::nullopt, dev).sum(0); }), "sum: ", "axis 0", "dimension 0",
              "hint: a 0-d array has no axes");
  });
}

TEST_CASE("errors: detail::fail and detail::require build '<op>: <parts>; hint: <hint>' in one line") {
  const Tensor x = zeros({2, 3}, float32);
  const std::string msg = dzt::thrown<ShapeError>([&] {
    detail::fail<ShapeError>("op", "x ", x, " and ", Shape{4}, " in ", float64, ", axis ", std::int64_t{-1}, " of ", 3,
                             detail::Hint{"say why"});
  });
  CHECK(msg == "op: x (2, 3) float32 and (4,) in float64, axis -1 of 3; hint: say why");
  CHECK_NOTHROW(detail::require<ValueError>(true, "op", "never built"));
  CHECK(dzt::thrown<ValueError>([] { detail::require<ValueError>(false, "op", "what ", 'c'); }) == "op: what c");
  // the error's type is the one asked for, an Error like every other
  CHECK_THROWS_AS(detail::fail<DtypeError>("op", "x"), DtypeError);
  CHECK_THROWS_AS(detail::fail<DtypeError>("op", "x"), Error);
}
