// dezero/backend/generator.hpp - the process-wide generator behind dezero::random (NumPy's
// legacy RandomState: MT19937, 53-bit doubles, polar Box-Muller with a cached value).
#pragma once

#include <cstdint>
#include <mutex>
#include <random>
#include <sstream>

namespace dezero::detail {

class Generator {
 public:
  explicit Generator(std::uint32_t seed = 5489u) { reseed(seed); }
  void reseed(std::uint32_t seed) {
    mt_.seed(seed);
    has_gauss_ = false;
  }
  std::uint32_t next32() { return static_cast<std::uint32_t>(mt_()); }
  std::uint64_t next64() {
    std::uint64_t hi = next32();
    return (hi << 32) | next32();
  }
  // NumPy's random_double: (a >> 5) * 2^26 + (b >> 6), over 2^53.
  double uniform() {
    std::uint32_t a = next32() >> 5, b = next32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }
  // NumPy's legacy_gauss.
  double gauss() {
    if (has_gauss_) {
      has_gauss_ = false;
      return gauss_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * uniform() - 1.0;
      x2 = 2.0 * uniform() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }
  // NumPy's random_interval: uniform integer in [0, max] by masked rejection.
  std::uint64_t interval(std::uint64_t max) {
    if (max == 0) return 0;
    std::uint64_t mask = max;
    mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4;
    mask |= mask >> 8; mask |= mask >> 16; mask |= mask >> 32;
    std::uint64_t v;
    if (max <= 0xffffffffULL) {
      while ((v = (next32() & mask)) > max) {}
    } else {
      while ((v = (next64() & mask)) > max) {}
    }
    return v;
  }
  std::mutex& mutex() { return mu_; }
  // MT19937's words and position as NumPy's get_state() gives them (libstdc++ streams the 624
  // words and then the position, NumPy's key and pos), and the cached normal draw.
  void get_state(std::uint32_t* key, int& pos, bool& has_gauss, double& gauss) const {
    std::ostringstream os;
    os << mt_;
    std::istringstream is(os.str());
    unsigned long v = 0;
    for (int i = 0; i < 624; ++i) {
      is >> v;
      key[i] = static_cast<std::uint32_t>(v);
    }
    is >> v;
    pos = static_cast<int>(v);
    has_gauss = has_gauss_;
    gauss = gauss_;
  }
  void set_state(const std::uint32_t* key, int pos, bool has_gauss, double gauss) {
    std::ostringstream os;
    for (int i = 0; i < 624; ++i) os << key[i] << ' ';
    os << pos;
    std::istringstream is(os.str());
    is >> mt_;
    has_gauss_ = has_gauss;
    gauss_ = gauss;
  }

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0;
  std::mutex mu_;
};

Generator& global_generator();

}  // namespace dezero::detail
