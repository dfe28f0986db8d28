// dezero/layers/embed_id.hpp - L::EmbedID, a lookup table of row vectors (DeZero layers.py).
#pragma once

#include <cstdint>

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- EmbedID ------------------------------------------------------------------------------------
// y = W[ids]. W: (in_size, out_size) = randn. ids: integer tensor of any shape, each
// in [0, in_size) (checked by F::embed_id: IndexError naming embed_id, no wrapping).
// (DeZero keeps W float64; here it is `dtype`, float32 by default like Linear.)
class EmbedID : public Layer {
 public:
  EmbedID(std::int64_t in_size, std::int64_t out_size, DType dtype = float32, random::Generator gen = random::Generator::global());
  Variable forward(const Variable& ids) override;
  Parameter W;
};

}  // namespace dezero::L
