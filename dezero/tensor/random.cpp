// dezero/tensor/random.cpp - dezero::random: seeded random tensors.
//
// The stream is NumPy's legacy one (np.random.seed / rand / randn / permutation),
// so a program seeded like the book's produces the book's numbers (step 42's
// regression data, the spiral dataset of steps 48-50). Device tensors are filled
// by their backend from this same seed.
#include <cmath>
#include <numeric>

#include "dezero/backend/generator.hpp"
#include "dezero/tensor/strided.hpp"

namespace dezero {

namespace detail {
Generator& global_generator() {
  static Generator g;
  return g;
}
}  // namespace detail

namespace random {

void seed(std::uint64_t s) {
  if (s > 0xffffffffULL) throw ValueError("random::seed: seed must be between 0 and 2**32 - 1, got " + std::to_string(s));
  auto& g = detail::global_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  g.reseed(static_cast<std::uint32_t>(s));
}

namespace {
void check_float(const char* op, DType dt) {
  if (!is_floating(dt))
    throw DtypeError(std::string("random::") + op + ": dtype must be float32 or float64, got " + dtype_name(dt));
}
}  // namespace

Tensor randn(const Shape& shape, DType dtype, Device device) {
  check_float("randn", dtype);
  Tensor t = Tensor::empty(shape, dtype, device, "random::randn");
  if (t.size()) detail::backend_for(device).random_normal(dtype, t.raw_data(), t.size());
  return t;
}

Tensor rand(const Shape& shape, DType dtype, Device device) {
  check_float("rand", dtype);
  Tensor t = Tensor::empty(shape, dtype, device, "random::rand");
  if (t.size()) detail::backend_for(device).random_uniform(dtype, t.raw_data(), t.size());
  return t;
}

Tensor uniform(double low, double high, const Shape& shape, DType dtype, Device device) {
  return rand(shape, dtype, device) * (high - low) + low;
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype, Device device) {
  if (high <= low) throw ValueError("random::randint: low >= high (" + std::to_string(low) + " >= " + std::to_string(high) + ")");
  auto& g = detail::global_generator();
  std::vector<std::int64_t> v(shape.checked_nbytes("random::randint", sizeof(std::int64_t)) / sizeof(std::int64_t));
  {
    std::lock_guard<std::mutex> lock(g.mutex());
    for (auto& x : v) x = low + static_cast<std::int64_t>(g.interval(static_cast<std::uint64_t>(high - low - 1)));
  }
  return array(v, shape, dtype, device);
}

Tensor permutation(std::int64_t n, Device device) {
  if (n < 0) throw ValueError("random::permutation: n must be non-negative, got " + std::to_string(n));
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  auto& g = detail::global_generator();
  {
    std::lock_guard<std::mutex> lock(g.mutex());
    for (std::int64_t i = n - 1; i >= 1; --i) {  // NumPy's legacy shuffle
      std::int64_t j = static_cast<std::int64_t>(g.interval(static_cast<std::uint64_t>(i)));
      std::swap(v[i], v[j]);
    }
  }
  return array(v, Shape{n}, int64, device);
}

double random_double() {
  auto& g = detail::global_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.uniform();
}
double gauss() {
  auto& g = detail::global_generator();
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.gauss();
}

}  // namespace random
}  // namespace dezero
