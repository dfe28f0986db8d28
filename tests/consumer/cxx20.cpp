// tests/consumer/cxx20.cpp - DeZero's keyword arguments as C++20 designated
// initializers, against the installed package, compiled with -Wall -Wextra -Wpedantic
// -Wshadow -Werror: y.backward({.create_graph = true}) (step 33), L::Linear(10,
// {.in_size = 3}), L::Conv2d(4, 3, {.pad = 1}), DataLoader(data, 10, {.shuffle =
// false}), and DeZero's one-line optimizer. Exits non-zero on any mismatch.
#include <dezero/dezero.hpp>

#include <iostream>

namespace F = dezero::F;
namespace L = dezero::L;
using dezero::Variable;

int main() try {
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) {
      ++failures;
      std::cerr << "consumer_cxx20: FAILED " << what << "\n";
    }
  };

  // Step 33: f(x) = x^4 - 2x^2; f'(2) = 24, f''(2) = 44.
  Variable x(dezero::array(2.0));
  Variable y = x.pow(4) - 2.0 * x.pow(2);
  y.backward({.create_graph = true});
  Variable gx = x.grad();
  x.cleargrad();
  gx.backward();
  check(gx.data().item<double>() == 24.0, "backward({.create_graph = true}): f'(2) = 24");
  check(x.grad().data().item<double>() == 44.0, "backward({.create_graph = true}): f''(2) = 44");

  L::Linear fc(10, {.in_size = 3});
  check(fc.W.data().shape() == dezero::Shape{3, 10}, "Linear(10, {.in_size = 3}) draws W (3, 10) at once");
  L::Linear nb(10, {.nobias = true, .dtype = dezero::float64});
  check(!nb.b.defined() && nb.dtype == dezero::float64, "Linear(10, {.nobias = true, .dtype = float64})");
  L::Conv2d conv(4, 3, {.pad = 1});
  Variable c = conv(dezero::random::randn({1, 2, 5, 5}, dezero::float32));
  check(c.shape() == dezero::Shape{1, 4, 5, 5}, "Conv2d(4, 3, {.pad = 1}) keeps 5 x 5");

  dezero::datasets::Spiral spiral;
  dezero::DataLoader loader(spiral, 10, {.shuffle = false});
  auto [bx, bt] = *loader.begin();
  auto [wx, wt] = spiral.get_batch({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  check(dezero::utils::array_equal(bx, wx) && dezero::utils::array_equal(bt, wt), "DataLoader(..., {.shuffle = false})");

  dezero::models::MLP model({5, 3});
  auto optimizer = dezero::optimizers::SGD(0.1).setup(model);
  Variable loss = F::softmax_cross_entropy(model(bx), bt);
  model.cleargrads();
  loss.backward();
  optimizer.update();
  check(optimizer.t() == 1, "auto optimizer = SGD(lr).setup(model) updates");

  if (failures) return 1;
  std::cout << "consumer_cxx20: all checks passed\n";
  return 0;
} catch (const std::exception& e) {
  std::cout.flush();
  std::cerr << "consumer_cxx20: " << e.what() << "\n";
  return 1;
}
