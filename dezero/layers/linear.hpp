/// \file
/// L::Linear, the fully connected layer (step 44).
#pragma once

#include <cstdint>
#include <type_traits>

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- LinearOptions: DeZero's keywords of L.Linear ------------------------------------------------
/// DeZero's keywords of L.Linear, an aggregate for `L::Linear(out_size, options)`.
///
/// With C++20 designated initializers it reads as DeZero's keyword arguments (in this
/// field order); in C++17 set the fields by name:
/// ```cpp
/// L::Linear(10, {.in_size = 784})                          // C++20
/// L::LinearOptions o; o.nobias = true; L::Linear(10, o);   // C++17
/// ```
struct LinearOptions {
  bool nobias = false;        ///< no bias b (Linear::b stays an empty Parameter)
  DType dtype = float32;      ///< of W and b: float32 or float64
  std::int64_t in_size = 0;   ///< 0: taken from the first input's x.shape[1]
  random::Generator gen = random::Generator::global();  ///< the stream W is drawn from
};

// --- Linear (step 44) --------------------------------------------------------------------------
/// The fully connected layer (step 44): `y = x @ W + b`.
///
/// x: (N, in_size), W: (in_size, out_size), b: (out_size,), y: (N, out_size).
/// W = randn(in, out) * sqrt(1/in) drawn on the host from `gen` (by default
/// dezero::random's global stream, so seeds reproduce DeZero's numbers), created on
/// the first call from x.shape[1] when in_size is 0, on x's device; b = zeros.
class Linear : public Layer {
 public:
  /// Makes a layer of `out_size` outputs (DeZero's `L.Linear(out_size, nobias, dtype, in_size)`).
  ///
  /// With in_size > 0, W is drawn now (on the host; move the layer with to_gpu()); with
  /// in_size = 0 it is drawn on the first call. b is zeros(out_size) in `dtype`, or
  /// absent with nobias. Throws ValueError when out_size <= 0 or in_size < 0,
  /// DtypeError when dtype is not float32 or float64.
  explicit Linear(std::int64_t out_size, bool nobias = false, DType dtype = float32, std::int64_t in_size = 0,
                  random::Generator gen = random::Generator::global());
  /// The same with DeZero's keywords gathered in a LinearOptions: `L::Linear(10, {.nobias = true})`.
  Linear(std::int64_t out_size, const LinearOptions& options);
  /// Linear(10, 784) would make 784 the nobias flag: refused at compile time.
  ///
  /// Write `L::Linear(10, {.in_size = 784})` (C++20) or set LinearOptions::in_size.
  template <class Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  Linear(std::int64_t, Int) {
    static_assert(!std::is_integral_v<Int>, "L::Linear(out_size, n): the second argument is nobias (a bool); "
                                            "for the input size write L::Linear(out_size, {.in_size = n})");
  }
  /// x: (N, in_size) -> (N, out_size), F::linear(x, W, b).
  ///
  /// The first call of a lazy layer draws W with in_size = x.shape[1] on x's device;
  /// an x with fewer than 2 axes is then a ShapeError. A shape that does not match W
  /// is an error of F::linear (ShapeError).
  Variable forward(const Variable& x) override;

  /// The input and output sizes (in_size is 0 until the first call of a lazy layer).
  ///@{
  std::int64_t in_size, out_size;
  ///@}
  DType dtype;  ///< The dtype of W and b.
  Parameter W;  ///< The weight, (in_size, out_size); no data until the first call of a lazy layer.
  Parameter b;  ///< The bias, (out_size,); no node (defined() == false) with nobias.
  random::Generator gen;  ///< The stream W is drawn from (kept for the lazy first call).

 private:
  void init_W(Device device);
};

}  // namespace dezero::L
