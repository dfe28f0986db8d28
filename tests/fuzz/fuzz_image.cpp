// tests/fuzz/fuzz_image.cpp - libFuzzer target: arbitrary bytes as a picture for
// utils::decode_image (what load_image reads a file with; stb_image underneath).
//
// decode_image returns an (H, W, 3) float32 tensor of whole values 0-255 or throws a
// dezero::Error, never more. Pictures over 4 megapixels are refused (set_max_image_pixels).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dezero/error.hpp"
#include "dezero/image.hpp"

// 4 megapixels: a tiny file that claims a bigger picture is refused before decoding, so
// no input runs past the 10 s limit under ASan decoding gigabytes.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dezero::utils::set_max_image_pixels(std::int64_t{1} << 22);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dezero::Tensor t;
  try {
    t = dezero::utils::decode_image(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const dezero::Error&) {
    return 0;
  }
  const dezero::Shape& s = t.shape();
  if (t.dtype() != dezero::float32 || s.ndim() != 3 || s[2] != 3 || s[0] <= 0 || s[1] <= 0) {
    std::fprintf(stderr, "fuzz_image: decoded to %s %s\n", dezero::dtype_name(t.dtype()), s.str().c_str());
    std::abort();
  }
  const float* p = t.data<float>();
  for (std::int64_t k = 0; k < t.size(); ++k) {
    if (!(p[k] >= 0.0f && p[k] <= 255.0f && std::floor(p[k]) == p[k])) {
      std::fprintf(stderr, "fuzz_image: value %g at %lld\n", static_cast<double>(p[k]), static_cast<long long>(k));
      std::abort();
    }
  }
  return 0;
}
