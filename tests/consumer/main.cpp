// tests/consumer/main.cpp - proves that an installed dezero works through
// find_package(dezero) and the public names of API.md alone: the book's
// double-backprop results (steps 33, 35, 36) and a few of DeZero's unit tests
// (sum_to, broadcasting, get_item, matmul). Exits non-zero on any mismatch.
#include <dezero/dezero.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <iostream>
#include <string>
#include <vector>

namespace F = dezero::F;
using dezero::Tensor;
using dezero::Variable;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::cerr << "consumer: FAILED " << what << "\n";
  }
}

void check_near(double got, double want, const std::string& what, double tol = 1e-12) {
  bool ok = std::fabs(got - want) <= tol;
  if (!ok) std::cerr << "consumer: " << what << ": got " << got << ", want " << want << "\n";
  check(ok, what);
}

void check_tensor(const Tensor& got, const Tensor& want, const std::string& what) {
  bool ok = got.shape() == want.shape() && dezero::utils::array_allclose(got, want);
  if (!ok) std::cerr << "consumer: " << what << ": got " << got << ", want " << want << "\n";
  check(ok, what);
}

// --- step 33: Newton's method with the 2nd derivative by double backprop ---
void newton() {
  const std::vector<double> want = {2.0,
                                    1.4545454545454546,
                                    1.1510467893775467,
                                    1.0253259289766978,
                                    1.0009084519430513,
                                    1.0000012353089454,
                                    1.000000000002289,
                                    1.0};
  Variable x(dezero::array(2.0));
  for (std::size_t i = 0; i < want.size(); ++i) {
    check_near(x.data().item<double>(), want[i], "step33 Newton x" + std::to_string(i));
    Variable y = x.pow(4) - 2 * x.pow(2);
    x.cleargrad();
    y.backward(false, true);
    Variable gx = x.grad();
    x.cleargrad();
    gx.backward();
    Variable gx2 = x.grad();
    if (i == 0) {
      check_near(gx.data().item<double>(), 24.0, "step33 f'(2)");
      check_near(gx2.data().item<double>(), 44.0, "step33 f''(2)");
    }
    x.set_data(x.data() - gx.data() / gx2.data());
  }
}

// --- step 35: tanh and its derivatives of orders 1..4 at x = 1 ---
void tanh_derivatives() {
  const double want[] = {0.7615941559557649, 0.41997434161402614, -0.6397000084492246, 0.6216266807712962,
                         0.6650910447505024};
  Variable x(dezero::array(1.0));
  Variable y = F::tanh(x);
  check_near(y.data().item<double>(), want[0], "tanh(1)");
  y.backward(false, true);
  for (int order = 1; order <= 4; ++order) {
    Variable gx = x.grad();
    check_near(gx.data().item<double>(), want[order], "tanh derivative of order " + std::to_string(order), 1e-14);
    x.cleargrad();
    gx.backward(false, true);
  }
}

// --- step 36: z = (dy/dx)^3 + y with y = x^2; dz/dx at 2 is 100 ---
void double_backprop() {
  Variable x(dezero::array(2.0));
  Variable y = x.pow(2);
  y.backward(false, true);
  Variable gx = x.grad();
  x.cleargrad();
  Variable z = gx.pow(3) + y;
  z.backward();
  check_near(x.grad().data().item<double>(), 100.0, "step36 dz/dx");
}

// --- test_sum.py TestSumTo, test_broadcast.py, step 40 ---
void broadcasting() {
  Variable a(dezero::array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}));
  check_tensor(F::sum_to(a, {1, 3}).data(), dezero::array({{5.0, 7.0, 9.0}}), "sum_to (1, 3)");
  check_tensor(F::sum_to(a, {2, 1}).data(), dezero::array(std::vector<double>{6.0, 15.0}, {2, 1}), "sum_to (2, 1)");

  dezero::random::seed(0);
  Variable x(dezero::random::randn({1, 10}));
  Variable b(dezero::random::randn({10}));
  F::sum(x + b).backward();
  check(b.grad().shape() == b.shape(), "broadcast add: b.grad.shape == b.shape");
  check(x.grad().shape() == x.shape(), "broadcast add: x.grad.shape == x.shape");
  check_tensor(b.grad().data(), dezero::ones({10}, dezero::float64), "broadcast add: b.grad");

  Variable x0(dezero::array({1, 2, 3}));
  Variable x1(dezero::array({10}));
  Variable y = x0 + x1;
  check(dezero::utils::array_equal(y.data(), dezero::array({11, 12, 13})), "step40 [1 2 3] + [10]");
  y.backward();
  check(dezero::utils::array_equal(x1.grad().data(), dezero::array({3})), "step40 x1.grad == [3]");
}

// --- test_getitem.py ---
void get_item() {
  Variable x(dezero::arange(12, dezero::float64).reshape({2, 2, 3}));
  check_tensor(F::get_item(x, {0}).data(), dezero::array({{0.0, 1.0, 2.0}, {3.0, 4.0, 5.0}}), "get_item x[0]");
  check_tensor(x[0].data(), dezero::array({{0.0, 1.0, 2.0}, {3.0, 4.0, 5.0}}), "x[0]");
  check_tensor(F::get_item(x, {0, 0, dezero::Slice(0, 2, 1)}).data(), dezero::array({0.0, 1.0}),
               "get_item x[0, 0, 0:2:1]");
  check_tensor(F::get_item(x, {dezero::Ellipsis, 2}).data(), dezero::array({{2.0, 5.0}, {8.0, 11.0}}),
               "get_item x[..., 2]");

  Variable a(dezero::array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}));
  F::sum(F::get_item(a, {1})).backward();
  check_tensor(a.grad().data(), dezero::array({{0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}}), "get_item backward a[1]");

  auto slice_rows = [](const Variable& v) { return F::get_item(v, {dezero::Slice(1, 3)}); };
  check(dezero::utils::gradient_check(slice_rows, dezero::arange(12, dezero::float64).reshape({4, 3})),
        "gradient_check x[1:3]");

  Variable W(dezero::array({1.0, 2.0, 3.0, 4.0, 5.0}));
  F::sum(F::get_item(W, {dezero::array({1, 1, 3})})).backward();
  check_tensor(W.grad().data(), dezero::array({0.0, 2.0, 0.0, 1.0, 0.0}), "get_item W[[1, 1, 3]] backward");
}

// --- test_matmul.py, step 41 ---
void matmul() {
  Variable x(dezero::array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}));
  Variable w = x.T();
  check_tensor(F::matmul(x, w).data(), dezero::array({{14.0, 32.0}, {32.0, 77.0}}), "matmul x x^T");

  dezero::random::seed(0);
  Tensor w_data = dezero::random::randn({2, 3});
  auto f = [&](const Variable& v) { return F::matmul(v, Variable(w_data)); };
  check(dezero::utils::gradient_check(f, dezero::random::randn({3, 2})), "gradient_check matmul");

  Variable a(dezero::random::randn({2, 3}));
  Variable b(dezero::random::randn({3, 4}));
  F::matmul(a, b).backward();
  check(a.grad().shape() == dezero::Shape{2, 3}, "step41 x.grad.shape == (2, 3)");
  check(b.grad().shape() == dezero::Shape{3, 4}, "step41 w.grad.shape == (3, 4)");
}

// --- step 2 and step 45: a user Function through dezero::call, a model through LayerRef ---
class Square : public dezero::Function {
 public:
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * xs[0]}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {2.0 * input(0) * gys[0]}; }
};

class TwoLayerNet : public dezero::Model {
 public:
  TwoLayerNet(std::int64_t hidden, std::int64_t out) {
    l1 = register_layer("l1", std::make_shared<dezero::L::Linear>(hidden));
    l2 = register_layer("l2", std::make_shared<dezero::L::Linear>(out));
  }
  Variable forward(const Variable& x) override { return l2(F::sigmoid(l1(x))); }
  dezero::L::LayerRef<dezero::L::Linear> l1, l2;
};

void user_code() {
  Variable x(dezero::array(3.0));
  Variable y = dezero::call<Square>({x});
  y.backward();
  check_near(y.data().item<double>(), 9.0, "call<Square> forward");
  check_near(x.grad().data().item<double>(), 6.0, "call<Square> backward");

  TwoLayerNet model(5, 1);
  Variable out = model(dezero::random::randn({4, 2}));
  check(out.shape() == dezero::Shape{4, 1}, "TwoLayerNet (4, 2) -> (4, 1)");
  check(model.params().size() == 4, "TwoLayerNet has 4 parameters");
}

// A float32 convolution (oneDNN's, where the installed library has it: no oneDNN header
// or package is needed here). 16 channels of ones, 3x3 kernels of ones, padding 1: an
// inner output pixel sums 16 x 9 ones, a corner 16 x 4.
void float32_conv() {
  Variable x(dezero::ones({2, 16, 5, 5}, dezero::float32)), W(dezero::ones({16, 16, 3, 3}, dezero::float32));
  Variable y = F::conv2d(x, W, Variable(), 1, 1);
  check(y.shape() == dezero::Shape{2, 16, 5, 5}, "conv2d float32 shape");
  std::vector<float> v = y.data().to_vector<float>();
  check(v.size() == 800, "conv2d float32 size");
  if (v.size() != 800) return;
  check_near(v[((1 * 16 + 3) * 5 + 2) * 5 + 2], 144.0, "conv2d float32 inner pixel");
  check_near(v[0], 64.0, "conv2d float32 corner");
  std::cout << "consumer: is_onednn_available() = " << std::boolalpha << dezero::is_onednn_available() << "\n";
}

// The version: the headers' macros and the linked libdezero's dezero::version() agree.
void version_check() {
  check(std::string(dezero::version()) == DEZERO_VERSION_STRING, "dezero::version() == DEZERO_VERSION_STRING");
  std::cout << "consumer: dezero " << dezero::version() << "\n";
}

}  // namespace

int main() {
  try {
    version_check();
    newton();
    tanh_derivatives();
    double_backprop();
    broadcasting();
    get_item();
    matmul();
    user_code();
    float32_conv();
  } catch (const std::exception& e) {
    std::cerr << "consumer: exception: " << e.what() << "\n";
    return 1;
  }
  if (failures) {
    std::cerr << "consumer: " << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "consumer: all checks passed\n";
  return 0;
}
