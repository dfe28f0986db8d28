// dezero/utils/jpeg.cpp - JPEG decoding and encoding through libjpeg(-turbo), loaded with dlopen.
//
// stb_image's JPEG decoder in Debian 12 (stb 2.27) reads and writes out of its Huffman
// tables on corrupt files (tests/fuzz/fuzz_image found three such inputs in minutes);
// libjpeg-turbo is the hardened, continuously fuzzed decoder every distribution ships.
// (stb_image_write's JPEG encoder shifts negative values left, undefined behaviour that
// UBSan reports; so libjpeg writes JPEG files too.)
// libjpeg reports errors through a callback that must not return: it longjmp()s back
// into decode_raw, whose frame holds only plain C data.
#include "dezero/utils/jpeg.hpp"

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include "dezero/error.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/utils/shared_library.hpp"

namespace dezero::utils::detail {
namespace {

struct Jpeg {
  decltype(&::jpeg_std_error) std_error = nullptr;
  decltype(&::jpeg_CreateDecompress) create_decompress = nullptr;
  decltype(&::jpeg_mem_src) mem_src = nullptr;
  decltype(&::jpeg_read_header) read_header = nullptr;
  decltype(&::jpeg_start_decompress) start_decompress = nullptr;
  decltype(&::jpeg_read_scanlines) read_scanlines = nullptr;
  decltype(&::jpeg_finish_decompress) finish_decompress = nullptr;
  decltype(&::jpeg_destroy_decompress) destroy_decompress = nullptr;
  decltype(&::jpeg_CreateCompress) create_compress = nullptr;
  decltype(&::jpeg_mem_dest) mem_dest = nullptr;
  decltype(&::jpeg_set_defaults) set_defaults = nullptr;
  decltype(&::jpeg_set_quality) set_quality = nullptr;
  decltype(&::jpeg_start_compress) start_compress = nullptr;
  decltype(&::jpeg_write_scanlines) write_scanlines = nullptr;
  decltype(&::jpeg_finish_compress) finish_compress = nullptr;
  decltype(&::jpeg_destroy_compress) destroy_compress = nullptr;
  std::string error;  // why libjpeg cannot be used ("" when it can)
};

Jpeg load_jpeg() {
  Jpeg j;
  dezero::detail::SharedLibrary lib = dezero::detail::SharedLibrary::open("DEZERO_LIBJPEG", {"libjpeg.so.62"});
  if (!lib.handle) {
    j.error = "JPEG files need libjpeg (" + lib.error +
              "); hint: install Debian's libjpeg62-turbo, or set DEZERO_LIBJPEG to a libjpeg.so.62 built with "
              "JPEG_LIB_VERSION " + std::to_string(JPEG_LIB_VERSION) + "; PNG and BMP files need nothing";
    return j;
  }
  lib.bind(j.std_error, "jpeg_std_error");
  lib.bind(j.create_decompress, "jpeg_CreateDecompress");
  lib.bind(j.mem_src, "jpeg_mem_src");
  lib.bind(j.read_header, "jpeg_read_header");
  lib.bind(j.start_decompress, "jpeg_start_decompress");
  lib.bind(j.read_scanlines, "jpeg_read_scanlines");
  lib.bind(j.finish_decompress, "jpeg_finish_decompress");
  lib.bind(j.destroy_decompress, "jpeg_destroy_decompress");
  lib.bind(j.create_compress, "jpeg_CreateCompress");
  lib.bind(j.mem_dest, "jpeg_mem_dest");
  lib.bind(j.set_defaults, "jpeg_set_defaults");
  lib.bind(j.set_quality, "jpeg_set_quality");
  lib.bind(j.start_compress, "jpeg_start_compress");
  lib.bind(j.write_scanlines, "jpeg_write_scanlines");
  lib.bind(j.finish_compress, "jpeg_finish_compress");
  lib.bind(j.destroy_compress, "jpeg_destroy_compress");
  if (!lib.missing.empty()) j.error = "the loaded " + lib.name + " has no symbol " + lib.missing;
  return j;
}

const Jpeg& jpeg_api() {
  static const Jpeg j = load_jpeg();  // the handle stays loaded
  if (!j.error.empty()) dezero::detail::fail<IOError>("load_image", j.error);
  return j;
}

// libjpeg's error manager with a way home and the first message kept.
struct ErrorMgr {
  jpeg_error_mgr pub;
  std::jmp_buf home;
  char message[JMSG_LENGTH_MAX];
  char warning[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorMgr*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->home, 1);
}

// Warnings (level -1: corrupt or truncated data that libjpeg pads over) are counted and
// the first kept; trace messages (level >= 0) are dropped.
void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  auto* e = reinterpret_cast<ErrorMgr*>(cinfo->err);
  if (cinfo->err->num_warnings++ == 0) (*cinfo->err->format_message)(cinfo, e->warning);
}

// libjpeg's standard error manager with our exit (longjmp home) and message (count
// warnings) handlers, and the messages cleared: what cinfo.err points to.
jpeg_error_mgr* install_errors(const Jpeg& api, ErrorMgr* err) {
  jpeg_error_mgr* mgr = api.std_error(&err->pub);
  mgr->error_exit = on_error;
  mgr->emit_message = on_message;
  err->message[0] = err->warning[0] = '\0';
  return mgr;
}

enum class Outcome { ok, error, too_big, cmyk, warning };

// Decodes into *rgb (h * w * 3 bytes). Plain C in this frame: longjmp may leave it.
Outcome decode_raw(const Jpeg& api, const unsigned char* data, unsigned long size, std::int64_t max_pixels,
                   std::vector<unsigned char>* rgb, long* w, long* h, ErrorMgr* err) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = install_errors(api, err);
  if (setjmp(err->home)) {
    api.destroy_decompress(&cinfo);
    return Outcome::error;
  }
  api.create_decompress(&cinfo, JPEG_LIB_VERSION, sizeof cinfo);
  api.mem_src(&cinfo, data, size);
  api.read_header(&cinfo, TRUE);
  *w = static_cast<long>(cinfo.image_width);
  *h = static_cast<long>(cinfo.image_height);
  if (static_cast<std::int64_t>(*w) * *h > max_pixels) {
    api.destroy_decompress(&cinfo);
    return Outcome::too_big;
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    api.destroy_decompress(&cinfo);
    return Outcome::cmyk;
  }
  cinfo.out_color_space = JCS_RGB;
  api.start_decompress(&cinfo);
  rgb->resize(static_cast<std::size_t>(cinfo.output_width) * cinfo.output_height * 3);
  const std::size_t stride = static_cast<std::size_t>(cinfo.output_width) * 3;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = rgb->data() + static_cast<std::size_t>(cinfo.output_scanline) * stride;
    api.read_scanlines(&cinfo, &row, 1);
  }
  api.finish_decompress(&cinfo);
  const bool warned = err->pub.num_warnings > 0;
  api.destroy_decompress(&cinfo);
  return warned ? Outcome::warning : Outcome::ok;
}

// Compresses h rows of w * c bytes (c = 1 gray or 3 RGB) into *out / *out_size (malloc'ed by
// libjpeg; the caller frees it). Plain C in this frame: longjmp may leave it.
bool encode_raw(const Jpeg& api, const unsigned char* pixels, int w, int h, int c, int quality, unsigned char** out,
                unsigned long* out_size, ErrorMgr* err) {
  jpeg_compress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = install_errors(api, err);
  if (setjmp(err->home)) {
    api.destroy_compress(&cinfo);
    return false;
  }
  api.create_compress(&cinfo, JPEG_LIB_VERSION, sizeof cinfo);
  api.mem_dest(&cinfo, out, out_size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  api.set_defaults(&cinfo);
  api.set_quality(&cinfo, quality, TRUE);
  api.start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(w) * static_cast<std::size_t>(c);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(pixels) + static_cast<std::size_t>(cinfo.next_scanline) * stride;
    api.write_scanlines(&cinfo, &row, 1);
  }
  api.finish_compress(&cinfo);
  api.destroy_compress(&cinfo);
  return true;
}

}  // namespace

bool is_jpeg(const std::string& b) {
  return b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xFF && static_cast<unsigned char>(b[1]) == 0xD8 &&
         static_cast<unsigned char>(b[2]) == 0xFF;
}

Tensor decode_jpeg(const std::string& bytes, const std::string& name, std::int64_t max_pixels) {
  const Jpeg& api = jpeg_api();
  std::vector<unsigned char> rgb;
  long w = 0, h = 0;
  ErrorMgr err;
  const Outcome r = decode_raw(api, reinterpret_cast<const unsigned char*>(bytes.data()),
                               static_cast<unsigned long>(bytes.size()), max_pixels, &rgb, &w, &h, &err);
  const std::string what = "load_image: cannot decode '" + name + "': ";
  switch (r) {
    case Outcome::ok: break;
    case Outcome::error: throw IOError(what + "corrupt JPEG (libjpeg: " + err.message + ")");
    case Outcome::warning:
      throw IOError(what + "corrupt or truncated JPEG (libjpeg: " + err.warning + ")");
    case Outcome::too_big:
      dezero::detail::fail<IOError>("load_image", "'", name, "' claims ", w, " x ", h,
                                    " pixels, more than the limit of ", max_pixels,
                                    " (hint: utils::set_max_image_pixels raises it)");
    case Outcome::cmyk:
      throw IOError(what + "a CMYK JPEG; hint: convert it to RGB first (e.g. convert in.jpg -colorspace sRGB out.jpg)");
  }
  if (w <= 0 || h <= 0) throw IOError(what + "a JPEG with no pixels");
  Tensor out = Tensor::empty(Shape{h, w, 3}, float32, Device::cpu(), "load_image");
  float* dst = out.data<float>();
  for (std::size_t k = 0; k < rgb.size(); ++k) dst[k] = static_cast<float>(rgb[k]);
  return out;
}

bool encode_jpeg(const std::string& path, const unsigned char* pixels, int w, int h, int c, int quality,
                 std::string* why) {
  const Jpeg& api = jpeg_api();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  ErrorMgr err;
  if (!encode_raw(api, pixels, w, h, c, quality, &buf, &size, &err)) {
    std::free(buf);
    *why = std::string("libjpeg: ") + err.message;
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(buf, 1, size, f) == size;
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  std::free(buf);
  if (!ok) *why = std::strerror(errno);
  return ok;
}

}  // namespace dezero::utils::detail
