// dezero/utils/gradient_check.cpp - numerical_grad, gradient_check, array_allclose,
// array_equal (DeZero utils.py and its tests).
#include <cmath>
#include <iostream>

#include "dezero/utils.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::utils {

Tensor numerical_grad(const std::function<Variable(const Variable&)>& f, const Tensor& x0, double eps) {
  detail::check_defined("numerical_grad", x0);
  Device dev = x0.device();
  Tensor x = x0.to_cpu().astype(float64);
  std::vector<double> g(static_cast<std::size_t>(x.size()));
  double* p = x.data<double>();
  // f runs with backprop on, as in DeZero: a function that differentiates inside
  // (a gradient computed by backward(create_graph), step 33) needs its graph.
  auto eval = [&]() {
    Variable y = f(Variable(x.to(dev)));
    return y.data().astype(float64).sum().item<double>();
  };
  for (std::int64_t i = 0; i < x.size(); ++i) {
    double v = p[i];
    p[i] = v + eps;
    double y1 = eval();
    p[i] = v - eps;
    double y2 = eval();
    p[i] = v;
    g[i] = (y1 - y2) / (2 * eps);
  }
  return array(g, x.shape(), float64, dev);
}

bool gradient_check(const std::function<Variable(const Variable&)>& f, const Tensor& x0, double rtol, double atol) {
  detail::check_defined("gradient_check", x0);
  Tensor x = x0.astype(float64);
  Tensor num = numerical_grad(f, x);
  Variable xv(x);
  Variable y = f(xv);
  y.backward();
  if (!xv.has_grad()) {
    std::cerr << "gradient_check: no gradient reached x (shape " << x.shape() << ")\n";
    return false;
  }
  Tensor bp = xv.grad().data();
  if (bp.shape() != num.shape()) {
    std::cerr << "gradient_check: shapes differ: backprop " << bp.shape() << " numerical " << num.shape() << "\n";
    return false;
  }
  if (array_allclose(bp, num, rtol, atol)) return true;
  auto a = bp.to_vector<double>(), b = num.to_vector<double>();
  std::size_t worst = 0;
  double wd = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double d = std::fabs(a[i] - b[i]);
    if (d > wd) { wd = d; worst = i; }
  }
  std::cerr << "gradient_check failed (shape " << x.shape() << "): element " << worst << " backprop " << a[worst]
            << " numerical " << b[worst] << " |diff| " << wd << "\n";
  return false;
}

bool array_allclose(const Tensor& a0, const Tensor& b0, double rtol, double atol) {
  detail::check_defined("array_allclose", a0);
  detail::check_defined("array_allclose", b0);
  Shape s = broadcast_shapes(a0.shape(), b0.shape(), "array_allclose");
  auto a = broadcast_to(a0.to_cpu().astype(float64), s).to_vector<double>();
  auto b = broadcast_to(b0.to_cpu().astype(float64), s).to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return false;
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return false;
      continue;
    }
    if (std::fabs(a[i] - b[i]) > atol + rtol * std::fabs(b[i])) return false;
  }
  return true;
}

bool array_equal(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.shape() != b.shape()) return false;
  if (is_integer(a.dtype()) && is_integer(b.dtype()))
    return a.to_vector<std::int64_t>() == b.to_vector<std::int64_t>();
  return a.to_vector<double>() == b.to_vector<double>();
}

}  // namespace dezero::utils
