// dezero/models/zoo_parts.hpp - internal: the layers VGG16 and ResNet are built from, with
// their parameters created at construction in the shapes of DeZero's weight files.
//
// `draw` = true draws W as the layer's first call would (randn, DeZero's scale);
// `draw` = false (pretrained = true) fills zeros of the same shape instead, since the
// weight file overwrites them: no random numbers are consumed, as in DeZero, where a
// pretrained model's lazy W is never drawn, and load_weights still checks every shape.
#pragma once

#include <cstdint>
#include <memory>

#include "dezero/models.hpp"

namespace dezero::models::detail {

// Conv2d(out, k, stride, pad, nobias) over `in` channels: W (out, in, k, k), b (out,).
std::shared_ptr<L::Conv2d> make_conv(std::int64_t in, std::int64_t out, int k, int stride, int pad, bool nobias,
                                     bool draw);
// Linear(out) over `in` inputs: W (in, out), b (out,).
std::shared_ptr<L::Linear> make_linear(std::int64_t in, std::int64_t out, bool draw);

}  // namespace dezero::models::detail
