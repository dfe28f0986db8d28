// dezero/utils/jpeg.hpp - internal: JPEG decoding for utils::decode_image with libjpeg
// (Debian's libjpeg62-turbo), dlopen()ed on first use so that libdezero has no NEEDED
// entry for it (a machine without libjpeg.so.62 reads PNG and BMP, and says so for JPEG).
#pragma once

#include <cstdint>
#include <string>

#include "dezero/tensor.hpp"

namespace dezero::utils::detail {

// libjpeg's own test: the bytes start with FF D8 (SOI) followed by another marker.
bool is_jpeg(const std::string& bytes);

// (H, W, 3) float32 0-255 RGB; grayscale is converted to RGB. Corrupt, truncated (libjpeg
// warns and pads: refused, as PIL refuses truncated files), CMYK and oversized pictures
// (more than max_pixels) are IOErrors that name `name`.
Tensor decode_jpeg(const std::string& bytes, const std::string& name, std::int64_t max_pixels);

}  // namespace dezero::utils::detail
