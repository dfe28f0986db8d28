// dezero/layers/linear.hpp - L::Linear, the fully connected layer (step 44).
#pragma once

#include <cstdint>
#include <type_traits>

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- LinearOptions: DeZero's keywords of L.Linear ------------------------------------------------
//   L::Linear(10, {.in_size = 784})                          // C++20
//   L::LinearOptions o; o.nobias = true; L::Linear(10, o);   // C++17
struct LinearOptions {
  bool nobias = false;        // no bias b
  DType dtype = float32;      // of W and b
  std::int64_t in_size = 0;   // 0: taken from the first input's x.shape[1]
  random::Generator gen = random::Generator::global();  // the stream W is drawn from
};

// --- Linear (step 44) --------------------------------------------------------------------------
// y = x @ W + b. x: (N, in_size), W: (in_size, out_size), b: (out_size,).
// W = randn(in, out) * sqrt(1/in) drawn on the host from `gen` (by default
// dezero::random's global stream, so seeds reproduce DeZero's numbers), created on
// the first call from x.shape[1] when in_size is 0, on x's device; b = zeros.
class Linear : public Layer {
 public:
  explicit Linear(std::int64_t out_size, bool nobias = false, DType dtype = float32, std::int64_t in_size = 0,
                  random::Generator gen = random::Generator::global());
  Linear(std::int64_t out_size, const LinearOptions& options);
  // Linear(10, 784) would make 784 the nobias flag: refused at compile time.
  template <class Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  Linear(std::int64_t, Int) {
    static_assert(!std::is_integral_v<Int>, "L::Linear(out_size, n): the second argument is nobias (a bool); "
                                            "for the input size write L::Linear(out_size, {.in_size = n})");
  }
  Variable forward(const Variable& x) override;

  std::int64_t in_size, out_size;
  DType dtype;
  Parameter W;
  Parameter b;  // no node (defined() == false) with nobias
  random::Generator gen;  // the stream W is drawn from (kept for the lazy first call)

 private:
  void init_W(Device device);
};

}  // namespace dezero::L
