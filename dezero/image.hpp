/// \file
/// Images in and out (dezero::utils): load_image, save_image,
/// resize_image. PNG and BMP are decoded and encoded by stb (stb_image, stb_image_write,
/// from Debian's libstb-dev), which also resamples (stb_image_resize); stb is compiled into
/// libdezero with internal linkage, so users need neither its headers nor a library. JPEG
/// goes through libjpeg (libjpeg.so.62, loaded on first use).
///
/// \code{.cpp}
///   Tensor img = dezero::utils::load_image("zebra.jpg");        // (H, W, 3) float32, 0-255, RGB
///   Tensor x = dezero::models::VGG16::preprocess(img);          // step 58
///   dezero::utils::save_image("samples.png", fake.data(), 255); // (N, 1, 28, 28) in [0, 1] -> a grid
/// \endcode
#pragma once

#include <cstdint>
#include <string>

#include "dezero/tensor.hpp"

namespace dezero::utils {

/// Loads a PNG, JPEG or BMP file as an (H, W, 3) float32 RGB host tensor of values 0-255.
/// Decodes a PNG, JPEG or BMP file (JPEG through libjpeg, libjpeg.so.62, loaded on first
/// use: Debian's libjpeg62-turbo; without it a JPEG is an IOError saying so) into an
/// (H, W, 3) float32 host tensor of values 0-255 in RGB order. Gray and alpha images are
/// converted to RGB the way PIL's convert("RGB") does (gray replicated, alpha dropped).
/// An unreadable, truncated or unsupported file is an IOError naming the file and the
/// decoder's reason.
Tensor load_image(const std::string& path);
/// The same from the file's bytes in memory; `name` is what the errors call it.
Tensor decode_image(const std::string& bytes, const std::string& name = "image");
/// Sets the largest picture load_image and decode_image accept, in pixels.
/// A picture whose header claims more than this many pixels (width x height; default
/// 2^27 = 134,217,728, a 1.6 GB tensor; at most 65535 a side in any case) is refused with
/// an IOError before it is decoded: a few bytes of a compressed file can claim gigabytes
/// (PIL's MAX_IMAGE_PIXELS guards the same). Process-wide; thread-safe. A limit below 1
/// is a dezero::ValueError.
void set_max_image_pixels(std::int64_t pixels);
/// The largest picture load_image and decode_image accept, in pixels (see set_max_image_pixels()).
std::int64_t get_max_image_pixels();

/// Writes `image` as an 8-bit picture: pixel = value * scale, rounded, clipped to 0-255
/// (NaN -> 0). Accepted shapes:
///  - (H, W)          gray;
///  - (H, W, C)       C = 1 (gray), 3 (RGB) or 4 (RGBA);
///  - (N, C, H, W)    a batch (C = 1 or 3) written as one grid of `ncols` columns
///                    (0: ceil(sqrt(N))), tiles separated by 2 black pixels, like
///                    torchvision's make_grid.
///
/// Any dtype and device (the values are copied to the host). The format follows the
/// extension: .png, .jpg / .jpeg (quality 95, written by libjpeg; RGBA drops its alpha) or
/// .bmp. Other extensions are a
/// ValueError; a file that cannot be written is an IOError. Returns nothing; the file is
/// complete when the call returns. Another shape, an empty picture or a batch of another
/// C is a dezero::ShapeError, an undefined tensor or a negative `ncols` a ValueError.
void save_image(const std::string& path, const Tensor& image, double scale = 255, std::int64_t ncols = 0);

/// Resamples an (H, W, C) float32 host image to (height, width, C) with a bicubic
/// (Catmull-Rom) filter and clamped edges, what PIL's Image.resize does by default.
/// Values are not clipped (bicubic overshoots slightly at sharp edges). Another rank is a
/// dezero::ShapeError, another dtype a dezero::DtypeError, a device tensor a
/// dezero::DeviceError (resize `image.to_cpu()`) and a size outside 1-65536 a dezero::ValueError.
Tensor resize_image(const Tensor& image, std::int64_t height, std::int64_t width);

}  // namespace dezero::utils
