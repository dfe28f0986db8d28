// dezero/layers/embed_id.cpp - L::EmbedID: y = W[ids] (DeZero layers.py).
#include "dezero/layers/embed_id.hpp"

#include <string>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::L {

// --- EmbedID -------------------------------------------------------------------------------------
EmbedID::EmbedID(std::int64_t in_size, std::int64_t out_size, DType dtype, random::Generator gen) {
  if (in_size <= 0 || out_size <= 0)
    detail::fail<ValueError>("EmbedID", "sizes must be positive, got (", in_size, ", ", out_size, ")");
  W = register_parameter("W", Parameter(gen.randn({in_size, out_size}, float64).astype(dtype), "W"));
}

// ids: integer (any shape) in [0, in_size) -> (*ids.shape, out_size). F::embed_id checks
// the range, so an id out of range is an IndexError naming embed_id on every device.
Variable EmbedID::forward(const Variable& ids) {
  if (!is_integer(ids.dtype()))
    detail::fail<DtypeError>("EmbedID", "ids must be int32 or int64, got ", ids.dtype(),
                             "; hint: astype(dezero::int64)");
  return F::embed_id(ids, W);
}

}  // namespace dezero::L
