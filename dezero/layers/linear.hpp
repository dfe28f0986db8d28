// dezero/layers/linear.hpp - L::Linear, the fully connected layer (step 44).
#pragma once

#include <cstdint>

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- Linear (step 44) --------------------------------------------------------------------------
// y = x @ W + b. x: (N, in_size), W: (in_size, out_size), b: (out_size,).
// W = randn(in, out) * sqrt(1/in) drawn on the host from `gen` (by default
// dezero::random's global stream, so seeds reproduce DeZero's numbers), created on
// the first call from x.shape[1] when in_size is 0, on x's device; b = zeros.
class Linear : public Layer {
 public:
  explicit Linear(std::int64_t out_size, bool nobias = false, DType dtype = float32, std::int64_t in_size = 0,
                  random::Generator gen = random::Generator::global());
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
