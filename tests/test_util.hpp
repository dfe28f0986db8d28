// test_util.hpp - shared helpers for the doctest suites.
//
// One test body, every device (DESIGN.md §3.9): ON_EACH_DEVICE runs the body as a
// "cpu" subcase and a "cuda" subcase; without a CUDA device the second prints
// "skipped: no CUDA device" and asserts nothing.
#pragma once

#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <functional>

namespace dzt {

inline void on_each_device(const std::function<void(dezero::Device)>& body) {
  SUBCASE("cpu") { body(dezero::Device::cpu()); }
  SUBCASE("cuda") {
    if (!dezero::cuda::is_available()) {
      MESSAGE("skipped: no CUDA device");
    } else {
      body(dezero::Device::cuda(0));
    }
  }
}

// GPU-only test cases start with `if (dzt::skip_without_gpu()) return;`.
inline bool skip_without_gpu() {
  if (dezero::cuda::is_available()) return false;
  MESSAGE("skipped: no CUDA device");
  return true;
}

// Host values of a tensor or variable, as doubles.
inline std::vector<double> vals(const dezero::Tensor& t) { return t.to_vector<double>(); }
inline std::vector<double> vals(const dezero::Variable& v) { return v.data().to_vector<double>(); }

inline bool allclose(const dezero::Tensor& a, const dezero::Tensor& b, double rtol = 1e-4, double atol = 1e-5) {
  return dezero::utils::array_allclose(a, b, rtol, atol);
}

}  // namespace dzt
