// tests/packaging/pkgconfig/main.cpp - a one-file program built with a plain Makefile and
// `pkg-config --cflags --libs dezero` against an installed dezero (no CMake): it prints the
// library's version and differentiates y = x^3 + 2x at x = 3 twice (step 33's double backprop).
// Exits non-zero on any mismatch.
#include <dezero/dezero.hpp>

#include <cmath>
#include <cstring>
#include <iostream>

int main() {
  // The headers this was compiled with and the libdezero it runs with are the same release.
  if (std::strcmp(dezero::version(), DEZERO_VERSION_STRING) != 0) {
    std::cerr << "pkgconfig consumer: dezero::version() is " << dezero::version() << ", the headers say "
              << DEZERO_VERSION_STRING << "\n";
    return 1;
  }
  std::cout << "pkgconfig consumer: dezero " << dezero::version() << " (DEZERO_VERSION " << DEZERO_VERSION << ")\n";

  dezero::Variable x(dezero::array(3.0));
  dezero::Variable y = x.pow(3) + 2 * x;  // 33
  y.backward(false, true);                // create_graph: dy/dx = 3x^2 + 2 = 29 keeps its graph
  dezero::Variable gx = x.grad();
  x.cleargrad();
  gx.backward();  // d2y/dx2 = 6x = 18
  const double got[] = {y.data().item<double>(), gx.data().item<double>(), x.grad().data().item<double>()};
  const double want[] = {33.0, 29.0, 18.0};
  for (int i = 0; i < 3; ++i) {
    if (std::fabs(got[i] - want[i]) > 1e-12) {
      std::cerr << "pkgconfig consumer: value " << i << " is " << got[i] << ", want " << want[i] << "\n";
      return 1;
    }
  }
  std::cout << "pkgconfig consumer: y(3) = 33, y'(3) = 29, y''(3) = 18: all checks passed\n";
  return 0;
}
