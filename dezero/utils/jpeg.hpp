// dezero/utils/jpeg.hpp - internal: JPEG decoding (utils::decode_image) and encoding (save_image) with libjpeg
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

// Writes h rows of w * c bytes (c = 1 gray or 3 RGB) to `path` as a JPEG of `quality`
// (1-100). Throws an IOError when libjpeg cannot be loaded; false (and *why) when
// compressing or writing the file fails.
bool encode_jpeg(const std::string& path, const unsigned char* pixels, int w, int h, int c, int quality,
                 std::string* why);

}  // namespace dezero::utils::detail
