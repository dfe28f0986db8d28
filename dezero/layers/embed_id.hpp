/// \file
/// L::EmbedID, a lookup table of row vectors (DeZero layers.py).
#pragma once

#include <cstdint>

#include "dezero/layers/layer.hpp"

namespace dezero::L {

// --- EmbedID ------------------------------------------------------------------------------------
/// A lookup table of row vectors (DeZero's L.EmbedID): `y = W[ids]`.
///
/// W: (in_size, out_size) = randn. ids: integer tensor of any shape, each
/// in [0, in_size) (checked by F::embed_id: IndexError naming embed_id, no wrapping).
/// (DeZero keeps W float64; here it is `dtype`, float32 by default like Linear.)
class EmbedID : public Layer {
 public:
  /// Makes a table of `in_size` rows of `out_size` values, W = randn(in_size, out_size) drawn from `gen`.
  ///
  /// W is drawn now, on the host, in float64 and cast to `dtype`. Throws ValueError when
  /// in_size or out_size is not positive.
  EmbedID(std::int64_t in_size, std::int64_t out_size, DType dtype = float32, random::Generator gen = random::Generator::global());
  /// ids: integer, any shape -> (*ids.shape, out_size), the rows W[ids].
  ///
  /// ids that are not int32 / int64 are a DtypeError; an id outside [0, in_size) is
  /// an IndexError (F::embed_id). The gradient goes to the rows of W that were looked up.
  Variable forward(const Variable& ids) override;
  Parameter W;  ///< The table, (in_size, out_size).
};

}  // namespace dezero::L
