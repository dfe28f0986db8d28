// dezero/utils/image.cpp - load_image, save_image, resize_image over stb.
//
// JPEG files are decoded by libjpeg (utils/jpeg.cpp), the rest by stb.
// stb's single-file libraries are compiled here, once, with internal linkage
// (STB_*_STATIC): libdezero exports none of their symbols, so a program that uses its
// own copy of stb links without clashes. Debian's libstb-dev provides the headers (the
// build needs nothing at run time).
#include "dezero/image.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "dezero/error.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/utils/jpeg.hpp"

// The headers are system headers (-isystem or /usr/include): their code compiles without
// our warning flags.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_MAX_DIMENSIONS (1 << 16)
#define STBI_FAILURE_USERMSG
// stb decodes PNG and BMP only: less of its code reads untrusted bytes. (Fuzzing Debian's
// stb 2.27 found out-of-bounds Huffman table accesses in its JPEG decoder - JPEG goes to
// libjpeg instead, utils/jpeg.cpp - and signed overflow in its PNM header parser; its GIF
// and TGA readers have published bugs of their own.)
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#include <stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#define STB_IMAGE_RESIZE_STATIC
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb_image_resize.h>

namespace dezero::utils {
namespace {
using dezero::detail::fail;

std::atomic<std::int64_t> g_max_pixels{std::int64_t{1} << 27};

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

// stb_image keeps its failure reason in a global (thread-local where the compiler allows).
std::string stb_reason() {
  const char* r = stbi_failure_reason();
  return r ? r : "unknown error";
}

unsigned char to_byte(double v) {
  if (!(v == v)) return 0;  // NaN
  v = std::round(v);
  return static_cast<unsigned char>(std::clamp(v, 0.0, 255.0));
}

// The picture to write: 8-bit pixels, h rows of w * c bytes.
struct Picture {
  std::int64_t h = 0, w = 0, c = 0;
  std::vector<unsigned char> pixels;
};

// (N, C, H, W) -> one grid picture, tiles `pad` pixels apart on a black background.
Picture grid_picture(const std::vector<double>& v, const Shape& s, double scale, std::int64_t ncols,
                     const std::string& path) {
  const std::int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (c != 1 && c != 3)
    fail<ShapeError>("save_image", "a batch (N, C, H, W) needs C = 1 or 3, got ", s, " for '", path,
                     "' (hint: an (H, W, C) picture has its channels last)");
  if (n == 0 || h == 0 || w == 0)
    fail<ShapeError>("save_image", "nothing to write: the batch ", s, " for '", path, "' is empty");
  if (ncols < 0) fail<ValueError>("save_image", "ncols must be >= 0 (0 = ceil(sqrt(N))), got ", ncols);
  if (ncols == 0) ncols = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  ncols = std::min(ncols, n);
  const std::int64_t nrows = (n + ncols - 1) / ncols, pad = 2;
  Picture p;
  p.c = c;
  p.h = nrows * h + (nrows + 1) * pad;
  p.w = ncols * w + (ncols + 1) * pad;
  p.pixels.assign(static_cast<std::size_t>(p.h * p.w * p.c), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t y0 = pad + (i / ncols) * (h + pad), x0 = pad + (i % ncols) * (w + pad);
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t x = 0; x < w; ++x)
          p.pixels[static_cast<std::size_t>(((y0 + y) * p.w + (x0 + x)) * c + ch)] =
              to_byte(v[static_cast<std::size_t>(((i * c + ch) * h + y) * w + x)] * scale);
  }
  return p;
}

// stb_image reserves a PNG chunk's declared length before reading it: a few bytes can ask
// for 2 GB. A chunk that claims more bytes than the file has left is a truncated or
// corrupt file; say so before stb allocates anything. Empty IDAT chunks (legal, and they
// hold no data) are dropped into `cleaned`: stb copies an empty first IDAT into a null
// buffer, undefined behaviour (memcpy(NULL, p, 0), found by tests/fuzz/fuzz_image).
// `cleaned` is left empty when nothing was dropped.
std::string png_chunk_problem(const std::string& b, std::string& cleaned) {
  static const char kSig[] = "\x89PNG\r\n\x1a\n";
  if (b.size() < 8 || b.compare(0, 8, kSig, 8) != 0) return "";  // not a PNG
  std::size_t p = 8, kept = 8;  // b[0, kept) is already in `cleaned` (once it is used)
  while (p + 8 <= b.size()) {
    auto u8 = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(b[i])); };
    const std::uint64_t len = (u8(p) << 24) | (u8(p + 1) << 16) | (u8(p + 2) << 8) | u8(p + 3);
    const std::string type = b.substr(p + 4, 4);
    const std::uint64_t left = b.size() - (p + 8);
    if (len > left)
      return "truncated or corrupt PNG: its chunk '" + type + "' claims " + std::to_string(len) + " bytes but " +
             std::to_string(left) + " remain";
    if (type == "IEND") break;
    const std::size_t next = std::min(b.size(), p + 12 + static_cast<std::size_t>(len));
    if (type == "IDAT" && len == 0) {  // length, type and CRC only: drop the chunk
      if (cleaned.empty()) cleaned.assign(b, 0, p);
      else cleaned.append(b, kept, p - kept);
      kept = next;
    }
    p = next;
  }
  if (!cleaned.empty()) cleaned.append(b, kept, std::string::npos);
  return "";
}

}  // namespace

Tensor decode_image(const std::string& bytes, const std::string& name) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    fail<IOError>("load_image", "'", name, "' is larger than 2 GiB");
  // JPEG goes to libjpeg (utils/jpeg.cpp); PNG and BMP to stb.
  if (detail::is_jpeg(bytes)) return detail::decode_jpeg(bytes, name, g_max_pixels.load());
  std::string cleaned;
  const std::string png = png_chunk_problem(bytes, cleaned);
  if (!png.empty()) fail<IOError>("load_image", "cannot decode '", name, "': ", png);
  if (!cleaned.empty()) return decode_image(cleaned, name);  // without its empty IDAT chunks
  int w = 0, h = 0, channels_in_file = 0;
  // The header's size first: a few bytes of RLE or deflate can claim a huge picture. A
  // header stb cannot read is refused here too. stb's info reports a top-down BMP's height
  // as negative, which its loader then uses as |h|: a 10240 x -65536 header made it
  // allocate 2 GB (found by tests/fuzz/fuzz_image), so the limit is on |w| |h|.
  if (!stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()), static_cast<int>(bytes.size()), &w,
                             &h, &channels_in_file))
    fail<IOError>("load_image", "cannot decode '", name, "': ", stb_reason(),
                  " (hint: PNG, JPEG and BMP files are read)");
  const long long aw = std::llabs(static_cast<long long>(w)), ah = std::llabs(static_cast<long long>(h));
  if (aw * ah > g_max_pixels.load())
    fail<IOError>("load_image", "'", name, "' claims ", aw, " x ", ah, " pixels, more than the limit of ",
                  g_max_pixels.load(), " (hint: utils::set_max_image_pixels raises it)");
  unsigned char* px = stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                                            static_cast<int>(bytes.size()), &w, &h, &channels_in_file, 3);
  if (!px)
    fail<IOError>("load_image", "cannot decode '", name, "': ", stb_reason(),
                  " (hint: PNG, JPEG and BMP files are read)");
  Tensor out;
  try {
    // stb's PNM reader took a zero height (found by tests/fuzz/fuzz_image); kept as a check.
    if (w <= 0 || h <= 0)
      fail<IOError>("load_image", "'", name, "' is a ", w, " x ", h, " picture: it has no pixels");
    out = Tensor::empty(Shape{h, w, 3}, float32, Device::cpu(), "load_image");
  } catch (...) {
    stbi_image_free(px);
    throw;
  }
  float* dst = out.data<float>();
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w) * 3;
  for (std::size_t k = 0; k < n; ++k) dst[k] = static_cast<float>(px[k]);
  stbi_image_free(px);
  return out;
}

void set_max_image_pixels(std::int64_t pixels) {
  if (pixels <= 0) fail<ValueError>("set_max_image_pixels", "the limit must be positive, got ", pixels);
  g_max_pixels.store(pixels);
}
std::int64_t get_max_image_pixels() { return g_max_pixels.load(); }

Tensor load_image(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail<IOError>("load_image", "cannot open '", path, "': ", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail<IOError>("load_image", "cannot read '", path, "': ", std::strerror(errno));
  return decode_image(bytes, path);
}

void save_image(const std::string& path, const Tensor& image, double scale, std::int64_t ncols) {
  if (!image.defined()) fail<ValueError>("save_image", "the tensor for '", path, "' is undefined");
  const std::string ext = lower_extension(path);
  if (ext != ".png" && ext != ".jpg" && ext != ".jpeg" && ext != ".bmp")
    fail<ValueError>("save_image", "cannot tell the format of '", path, "' from its extension '", ext,
                     "' (hint: use .png, .jpg, .jpeg or .bmp)");
  const Shape& s = image.shape();
  const std::vector<double> v = image.to_cpu().astype(float64).to_vector<double>();
  Picture p;
  if (s.ndim() == 4) {
    p = grid_picture(v, s, scale, ncols, path);
  } else if (s.ndim() == 2 || s.ndim() == 3) {
    p.h = s[0];
    p.w = s[1];
    p.c = s.ndim() == 2 ? 1 : s[2];
    if (p.c != 1 && p.c != 3 && p.c != 4)
      fail<ShapeError>("save_image", "an (H, W, C) picture needs C = 1, 3 or 4, got ", s, " for '", path,
                       "' (hint: a (C, H, W) image needs transpose({1, 2, 0}); a batch is (N, C, H, W))");
    if (p.h == 0 || p.w == 0) fail<ShapeError>("save_image", "nothing to write: ", s, " for '", path, "'");
    p.pixels.resize(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) p.pixels[k] = to_byte(v[k] * scale);
  } else {
    fail<ShapeError>("save_image", "cannot write a tensor of shape ", s, " to '", path,
                     "' (hint: (H, W), (H, W, C) or a batch (N, C, H, W))");
  }
  if (p.w > 65535 || p.h > 65535)
    fail<ShapeError>("save_image", "the picture for '", path, "' is ", p.w, " x ", p.h,
                     " pixels, more than the 65535 a side these formats allow");
  const int w = static_cast<int>(p.w), h = static_cast<int>(p.h), c = static_cast<int>(p.c);
  int ok = 0;
  if (ext == ".png") ok = stbi_write_png(path.c_str(), w, h, c, p.pixels.data(), w * c);
  else if (ext == ".bmp") ok = stbi_write_bmp(path.c_str(), w, h, c, p.pixels.data());
  else {
    // JPEG has no alpha: RGBA drops it (what stb_image_write and PIL's RGB conversion do).
    if (c == 4) {
      std::vector<unsigned char> rgb(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
      for (std::size_t k = 0, n = rgb.size() / 3; k < n; ++k)
        for (std::size_t ch = 0; ch < 3; ++ch) rgb[k * 3 + ch] = p.pixels[k * 4 + ch];
      p.pixels.swap(rgb);
    }
    std::string why;
    ok = detail::encode_jpeg(path, p.pixels.data(), w, h, c == 1 ? 1 : 3, 95, &why);
    if (!ok) {
      std::error_code ec;
      std::filesystem::remove(path, ec);
      fail<IOError>("save_image", "cannot write '", path, "': ", why,
                    " (hint: does its folder exist and is it writable?)");
    }
  }
  if (!ok) {
    std::error_code ec;
    std::filesystem::remove(path, ec);  // no half-written picture left behind
    fail<IOError>("save_image", "cannot write '", path, "' (hint: does its folder exist and is it writable?)");
  }
}

Tensor resize_image(const Tensor& image, std::int64_t height, std::int64_t width) {
  const Shape& s = image.shape();
  if (s.ndim() != 3 || s[2] < 1 || s[2] > 64)
    fail<ShapeError>("resize_image", "expects an (H, W, C) image, got ", s,
                     " (hint: load_image returns (H, W, 3); a (C, H, W) tensor needs transpose({1, 2, 0}))");
  if (image.dtype() != float32)
    fail<DtypeError>("resize_image", "expects float32, got ", image.dtype(), " (hint: image.astype(float32))");
  if (!image.device().is_cpu())
    fail<DeviceError>("resize_image", "the image is on ", image.device(), " (hint: image.to_cpu())");
  if (height <= 0 || width <= 0 || height > (1 << 16) || width > (1 << 16))
    fail<ValueError>("resize_image", "the size (", height, ", ", width, ") must be within 1-65536 on each side");
  if (s[0] == 0 || s[1] == 0 || s[0] > (1 << 16) || s[1] > (1 << 16))
    fail<ShapeError>("resize_image", "cannot resample an image of shape ", s);
  const int c = static_cast<int>(s[2]);
  Tensor out = Tensor::empty(Shape{height, width, s[2]}, float32, Device::cpu(), "resize_image");
  const int ok = stbir_resize_float_generic(image.data<float>(), static_cast<int>(s[1]), static_cast<int>(s[0]), 0,
                                            out.data<float>(), static_cast<int>(width), static_cast<int>(height), 0,
                                            c, STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                                            STBIR_FILTER_CATMULLROM, STBIR_COLORSPACE_LINEAR, nullptr);
  if (!ok) throw Error("resize_image: stb_image_resize could not allocate its work buffer for " + s.str() + " -> (" +
                      std::to_string(height) + ", " + std::to_string(width) + ")");
  return out;
}

}  // namespace dezero::utils
