// dezero/tensor/random.cpp - dezero::random: seeded random tensors.
//
// The stream is NumPy's legacy one (np.random.seed / rand / randn / permutation),
// so a program seeded like the book's produces the book's numbers (step 42's
// regression data, the spiral dataset of steps 48-50). Device tensors are filled
// by their backend from the same stream. The free functions use the process-wide
// generator; a random::Generator owns another, with the same algorithm.
#include <cmath>
#include <numeric>

#include "dezero/backend/generator.hpp"
#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero {

namespace detail {
Generator& global_generator() {
  static Generator g;
  return g;
}
}  // namespace detail

namespace random {

namespace {

std::uint32_t checked_seed(const char* op, std::uint64_t s) {
  if (s > 0xffffffffULL)
    detail::fail<ValueError>(op, "seed must be between 0 and 2**32 - 1 (NumPy's limit), got ", std::to_string(s));
  return static_cast<std::uint32_t>(s);
}

void check_float(const char* op, DType dt) {
  if (!is_floating(dt))
    throw DtypeError(std::string("random::") + op + ": dtype must be a floating dtype, got " + dtype_name(dt) +
                     "; hint: draw float64 and call astype(), or use randint for integers");
}

}  // namespace

// --- Generator: a handle to one stream -------------------------------------------------------
Generator::Generator(std::uint64_t s)
    : impl_(std::make_shared<detail::Generator>(checked_seed("random::Generator", s))) {}

Generator Generator::global() {
  // Aliasing constructor: a handle that does not own the static stream.
  return Generator(std::shared_ptr<detail::Generator>(std::shared_ptr<void>(), &detail::global_generator()));
}

bool Generator::is_global() const { return impl_.get() == &detail::global_generator(); }

GeneratorState Generator::get_state() const {
  GeneratorState st;
  std::lock_guard<std::mutex> lock(impl_->mutex());
  impl_->get_state(st.key.data(), st.pos, st.has_gauss, st.cached_gaussian);
  return st;
}

void Generator::set_state(const GeneratorState& st) {
  const char* op = is_global() ? "random::set_state" : "Generator::set_state";
  if (st.pos < 0 || st.pos > 624)
    detail::fail<ValueError>(op, "pos must be between 0 and 624, got ", std::to_string(st.pos),
                             "; hint: pass a state that get_state() returned");
  bool all_zero = true;
  for (std::uint32_t k : st.key) all_zero = all_zero && k == 0;
  if (all_zero)
    detail::fail<ValueError>(op, "the 624 key words are all zero, a state MT19937 never reaches; hint: pass "
                     "a state that get_state() returned");
  std::lock_guard<std::mutex> lock(impl_->mutex());
  impl_->set_state(st.key.data(), st.pos, st.has_gauss, st.cached_gaussian);
}

GeneratorState get_state() { return Generator::global().get_state(); }
void set_state(const GeneratorState& st) { Generator::global().set_state(st); }

void Generator::seed(std::uint64_t s) {
  std::uint32_t v = checked_seed(is_global() ? "random::seed" : "Generator::seed", s);
  std::lock_guard<std::mutex> lock(impl_->mutex());
  impl_->reseed(v);
}

Tensor Generator::randn(const Shape& shape, DType dtype, Device device) {
  check_float("randn", dtype);
  if (is_half(dtype)) return randn(shape, float32, device).astype(dtype);  // drawn in float32, rounded
  Tensor t = Tensor::empty(shape, dtype, device, "random::randn");
  if (t.size()) detail::backend_for(device).random_normal(*impl_, dtype, t.raw_data(), t.size());
  return t;
}

Tensor Generator::rand(const Shape& shape, DType dtype, Device device) {
  check_float("rand", dtype);
  if (is_half(dtype)) return rand(shape, float32, device).astype(dtype);
  Tensor t = Tensor::empty(shape, dtype, device, "random::rand");
  if (t.size()) detail::backend_for(device).random_uniform(*impl_, dtype, t.raw_data(), t.size());
  return t;
}

Tensor Generator::uniform(double low, double high, const Shape& shape, DType dtype, Device device) {
  return rand(shape, dtype, device) * (high - low) + low;
}

Tensor Generator::randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype, Device device) {
  if (high <= low)
    detail::fail<ValueError>("random::randint", "low >= high (", low, " >= ", high,
                             "); hint: the range is [low, high), high excluded");
  std::vector<std::int64_t> v(shape.checked_nbytes("random::randint", sizeof(std::int64_t)) / sizeof(std::int64_t));
  {
    std::lock_guard<std::mutex> lock(impl_->mutex());
    for (auto& x : v) x = low + static_cast<std::int64_t>(impl_->interval(static_cast<std::uint64_t>(high - low - 1)));
  }
  return array(v, shape, dtype, device);
}

Tensor Generator::permutation(std::int64_t n, Device device) {
  if (n < 0) detail::fail<ValueError>("random::permutation", "n must be non-negative, got ", n);
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex());
    for (std::int64_t i = n - 1; i >= 1; --i) {  // NumPy's legacy shuffle
      std::int64_t j = static_cast<std::int64_t>(impl_->interval(static_cast<std::uint64_t>(i)));
      std::swap(v[i], v[j]);
    }
  }
  return array(v, Shape{n}, int64, device);
}

double Generator::random_double() {
  std::lock_guard<std::mutex> lock(impl_->mutex());
  return impl_->uniform();
}

double Generator::gauss() {
  std::lock_guard<std::mutex> lock(impl_->mutex());
  return impl_->gauss();
}

// --- the process-wide stream (DeZero's np.random) -------------------------------------------
void seed(std::uint64_t s) { Generator::global().seed(s); }
Tensor randn(const Shape& shape, DType dtype, Device device) { return Generator::global().randn(shape, dtype, device); }
Tensor rand(const Shape& shape, DType dtype, Device device) { return Generator::global().rand(shape, dtype, device); }
Tensor uniform(double low, double high, const Shape& shape, DType dtype, Device device) {
  return Generator::global().uniform(low, high, shape, dtype, device);
}
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype, Device device) {
  return Generator::global().randint(low, high, shape, dtype, device);
}
Tensor permutation(std::int64_t n, Device device) { return Generator::global().permutation(n, device); }
double random_double() { return Generator::global().random_double(); }
double gauss() { return Generator::global().gauss(); }

}  // namespace random
}  // namespace dezero
