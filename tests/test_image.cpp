// tests/test_image.cpp - utils::load_image / save_image / resize_image (dezero/image.hpp):
// exact round trips through PNG and BMP, JPEG within its loss, the (N, C, H, W) grid
// layout, scaling and clipping, and the errors for bad shapes, names and files.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include <dezero/image.hpp>
#include <dezero/tensor.hpp>

#include "support/test_util.hpp"

using namespace dezero;
namespace fs = std::filesystem;
using dzt::has;
using dzt::TempDir;

namespace {
// An (h, w, 3) picture whose every value is a distinct byte pattern.
Tensor pattern(std::int64_t h, std::int64_t w) {
  std::vector<float> v(static_cast<std::size_t>(h * w * 3));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>((k * 37 + 11) % 256);
  return array(v, Shape{h, w, 3});
}
std::vector<char> bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
}  // namespace

TEST_CASE("save_image / load_image: PNG and BMP round-trip exactly; JPEG within its loss") {
  TempDir dir;
  const Tensor img = pattern(5, 7);
  for (const char* name : {"a.png", "a.bmp", "A.PNG"}) {
    const std::string path = (dir.path / name).string();
    utils::save_image(path, img, 1.0);
    const Tensor back = utils::load_image(path);
    CHECK(back.shape() == Shape{5, 7, 3});
    CHECK(back.dtype() == float32);
    CHECK(dzt::vals(back) == dzt::vals(img));
  }
  // A smooth image survives JPEG (quality 95) to within a few levels.
  std::vector<float> smooth(16 * 16 * 3);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c) smooth[static_cast<std::size_t>((y * 16 + x) * 3 + c)] = 8.0f * x + 4.0f * y + 20.0f * c;
  const std::string jpg = (dir.path / "s.jpg").string();  // written by libjpeg
  utils::save_image(jpg, array(smooth, Shape{16, 16, 3}), 1.0);
  const std::vector<double> got = dzt::vals(utils::load_image(jpg));
  double worst = 0;
  for (std::size_t k = 0; k < got.size(); ++k) worst = std::max(worst, std::abs(got[k] - smooth[k]));
  CHECK(worst <= 8.0);
}

TEST_CASE("save_image: scale, rounding, clipping and NaN; gray pictures load as RGB") {
  TempDir dir;
  const std::string path = (dir.path / "g.png").string();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // (H, W) gray in [0, 1] with the default scale 255.
  utils::save_image(path, array({{0.0, 0.5, 1.0}, {-0.2, 2.0, nan}}));
  const Tensor back = utils::load_image(path);
  REQUIRE(back.shape() == Shape{2, 3, 3});
  const std::vector<double> v = dzt::vals(back);
  const std::vector<double> expect = {0, 128, 255, 0, 255, 0};  // 127.5 rounds to 128
  for (std::size_t p = 0; p < 6; ++p)
    for (std::size_t c = 0; c < 3; ++c) CHECK(v[p * 3 + c] == expect[p]);
  // (H, W, 1), int32 and float64 inputs are accepted too.
  utils::save_image(path, array(std::vector<int>{0, 100, 200, 300}, Shape{2, 2, 1}), 1.0);
  CHECK(dzt::vals(utils::load_image(path)[Index(0)]) == std::vector<double>{0, 0, 0, 100, 100, 100});
}

TEST_CASE("save_image: an (N, C, H, W) batch is one grid, tiles 2 pixels apart") {
  TempDir dir;
  const std::string path = (dir.path / "grid.png").string();
  // 5 gray 3x4 tiles, tile i filled with (i + 1) * 40: ceil(sqrt(5)) = 3 columns, 2 rows.
  std::vector<float> v;
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 12; ++k) v.push_back(static_cast<float>((i + 1) * 40));
  utils::save_image(path, array(v, Shape{5, 1, 3, 4}), 1.0);
  const Tensor g = utils::load_image(path);
  CHECK(g.shape() == Shape{2 * 3 + 3 * 2, 3 * 4 + 4 * 2, 3});
  auto px = [&](std::int64_t y, std::int64_t x) { return g[{Index(y), Index(x), Index(0)}].item<double>(); };
  CHECK(px(0, 0) == 0);                    // padding
  CHECK(px(2, 2) == 40);                   // tile 0, top-left
  CHECK(px(4, 5) == 40);                   // tile 0, bottom-right
  CHECK(px(2, 6) == 0);                    // the gap between tiles 0 and 1
  CHECK(px(2, 8) == 80);                   // tile 1
  CHECK(px(2, 14) == 120);                 // tile 2
  CHECK(px(7, 2) == 160);                  // tile 3 (second row)
  CHECK(px(7, 8) == 200);                  // tile 4
  CHECK(px(7, 14) == 0);                   // no sixth tile
  // Explicit columns: 5 in one row.
  utils::save_image(path, array(v, Shape{5, 1, 3, 4}), 1.0, 5);
  CHECK(utils::load_image(path).shape() == Shape{3 + 4, 5 * 4 + 6 * 2, 3});
  // RGB tiles keep their channels.
  std::vector<float> rgb(2 * 3 * 2 * 2);
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k) rgb[static_cast<std::size_t>((i * 3 + c) * 4 + k)] = static_cast<float>(c == i ? 1 : 0);
  utils::save_image(path, array(rgb, Shape{2, 3, 2, 2}));
  const Tensor c = utils::load_image(path);
  CHECK(dzt::vals(c[{Index(2), Index(2)}]) == std::vector<double>{255, 0, 0});
  CHECK(dzt::vals(c[{Index(2), Index(6)}]) == std::vector<double>{0, 255, 0});
}

TEST_CASE("save_image: errors name the file, the shape and a hint; nothing is left behind") {
  TempDir dir;
  const std::string png = (dir.path / "x.png").string();
  CHECK(has(dzt::thrown<ValueError>([&] { utils::save_image((dir.path / "x.gif").string(), pattern(2, 2)); }),
            "'.gif'"));
  CHECK(has(dzt::thrown<ValueError>([&] { utils::save_image((dir.path / "noext").string(), pattern(2, 2)); }),
            ".png"));
  CHECK(has(dzt::thrown<ShapeError>([&] { utils::save_image(png, zeros(Shape{3, 4, 5})); }), "(3, 4, 5)"));
  CHECK(has(dzt::thrown<ShapeError>([&] { utils::save_image(png, zeros(Shape{2, 2, 4, 4})); }), "C = 1 or 3"));
  CHECK(has(dzt::thrown<ShapeError>([&] { utils::save_image(png, zeros(Shape{5})); }), "(5,)"));
  CHECK(has(dzt::thrown<ShapeError>([&] { utils::save_image(png, zeros(Shape{0, 1, 2, 2})); }), "empty"));
  CHECK(has(dzt::thrown<ValueError>([&] { utils::save_image(png, Tensor()); }), "undefined"));
  CHECK(has(dzt::thrown<IOError>([&] { utils::save_image((dir.path / "no" / "x.png").string(), pattern(2, 2)); }),
            "cannot write"));
  CHECK(dir.entries() == 0);
}

TEST_CASE("load_image: missing, empty, corrupt and truncated files are IOErrors naming the file") {
  TempDir dir;
  const fs::path missing = dir.path / "missing.png";
  CHECK(has(dzt::thrown<IOError>([&] { utils::load_image(missing.string()); }), "missing.png"));
  const fs::path text = dir.path / "text.png";
  std::ofstream(text) << "this is not a picture";
  CHECK(has(dzt::thrown<IOError>([&] { utils::load_image(text.string()); }), "cannot decode"));
  const fs::path empty = dir.path / "empty.jpg";
  std::ofstream(empty).close();
  CHECK(has(dzt::thrown<IOError>([&] { utils::load_image(empty.string()); }), "empty.jpg"));
  // A PNG cut in half.
  const fs::path good = dir.path / "good.png";
  utils::save_image(good.string(), pattern(32, 32), 1.0);
  std::vector<char> b = bytes_of(good);
  b.resize(b.size() / 2);
  const fs::path cut = dir.path / "cut.png";
  std::ofstream(cut, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
  CHECK(has(dzt::thrown<IOError>([&] { utils::load_image(cut.string()); }), "cut.png"));
}

TEST_CASE("resize_image: shapes, constants stay constant, same size is the identity, errors") {
  const Tensor img = pattern(6, 8);
  const Tensor same = utils::resize_image(img, 6, 8);
  CHECK(utils::array_allclose(same, img, 0, 1e-3));
  const Tensor big = utils::resize_image(img, 224, 224);
  CHECK(big.shape() == Shape{224, 224, 3});
  CHECK(big.dtype() == float32);
  Tensor flat = zeros(Shape{10, 12, 3});
  flat.fill_(42.0);
  for (const Tensor& r : {utils::resize_image(flat, 5, 6), utils::resize_image(flat, 31, 7)})
    for (double x : dzt::vals(r)) CHECK(x == doctest::Approx(42.0).epsilon(1e-5));
  // Down-sampling a left-dark / right-bright image keeps the halves.
  Tensor halves = zeros(Shape{8, 8, 3});
  for (int y = 0; y < 8; ++y)
    for (int x = 4; x < 8; ++x) halves[{Index(y), Index(x)}].fill_(200.0);
  const Tensor small = utils::resize_image(halves, 4, 4);
  CHECK(small[{Index(1), Index(0), Index(0)}].item<double>() < 20);
  CHECK(small[{Index(1), Index(3), Index(0)}].item<double>() > 180);
  CHECK(has(dzt::thrown<ShapeError>([&] { utils::resize_image(zeros(Shape{3, 4}), 2, 2); }), "(H, W, C)"));
  CHECK(has(dzt::thrown<DtypeError>([&] { utils::resize_image(zeros(Shape{3, 4, 3}, float64), 2, 2); }), "float64"));
  CHECK(has(dzt::thrown<ValueError>([&] { utils::resize_image(img, 0, 2); }), "(0, 2)"));
}

TEST_CASE("decode_image: the bytes of a file decode to what load_image reads; the name is in the errors") {
  TempDir dir;
  const fs::path p = dir.path / "p.png";
  utils::save_image(p.string(), pattern(3, 5), 1.0);
  const std::vector<char> b = bytes_of(p);
  const Tensor t = utils::decode_image(std::string(b.begin(), b.end()), "in-memory");
  CHECK(dzt::vals(t) == dzt::vals(utils::load_image(p.string())));
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image("GIF89a", "upload #3"); }), "upload #3"));
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image("", "nothing"); }), "nothing"));
}

TEST_CASE("decode_image: empty IDAT chunks are dropped (stb copied the first into a null buffer)") {
  TempDir dir;
  const fs::path p = dir.path / "p.png";
  utils::save_image(p.string(), pattern(3, 5), 1.0);
  const std::vector<char> v = bytes_of(p);
  const std::string b(v.begin(), v.end());
  const std::size_t idat = b.find("IDAT");
  REQUIRE(idat != std::string::npos);
  // length 0, "IDAT", the CRC of "IDAT": a legal chunk with no data, before the real one and after it
  const std::string empty("\x00\x00\x00\x00IDAT\x35\xaf\x06\x1e", 12);
  std::string twice = b.substr(0, idat - 4) + empty + b.substr(idat - 4);
  const std::size_t iend = twice.find("IEND");
  REQUIRE(iend != std::string::npos);
  twice.insert(iend - 4, empty);
  const std::vector<double> want = dzt::vals(utils::load_image(p.string()));
  CHECK(dzt::vals(utils::decode_image(twice, "empty-idat.png")) == want);
  // and the fuzzer's input: an empty IDAT as the only one, no IEND: corrupt, an IOError (not UB)
  std::string only = b.substr(0, idat - 4) + empty;
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image(only, "only-empty.png"); }), "only-empty.png"));
}

TEST_CASE("decode_image: formats left out and damaged PNG / JPEG headers are IOErrors before stb decodes") {
  // PNM and TGA are not read (a PNM header of height 0 once decoded to an empty tensor).
  const std::string ppm = std::string("P6\n4 2\n255\n") + std::string(24, '\x7f');
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image(ppm, "p.ppm"); }), "PNG, JPEG and BMP"));
  CHECK(has(dzt::thrown<ValueError>([&] { utils::save_image("x.tga", zeros(Shape{2, 2})); }), "'.tga'"));
  // A PNG chunk that claims more bytes than the file holds.
  std::string png("\x89PNG\r\n\x1a\n\x7f\xff\xff\xffIHDR", 16);
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image(png, "big.png"); }), "claims 2147483647 bytes"));
  // A JPEG Huffman table of 16 x 255 codes (Debian's stb 2.27 wrote past its table; libjpeg refuses it).
  std::string jpg("\xff\xd8\xff\xc4\x00\x13\x00", 7);
  jpg += std::string(16, '\xff');
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image(jpg, "h.jpg"); }), "corrupt JPEG (libjpeg: "));
}

TEST_CASE("JPEG: truncated files are refused (libjpeg's warning), gray JPEGs load as RGB, the pixel limit holds") {
  TempDir dir;
  std::vector<float> smooth(24 * 32 * 3);
  for (std::size_t k = 0; k < smooth.size(); ++k) smooth[k] = static_cast<float>((k / 3) % 32 * 6);
  const fs::path p = dir.path / "s.jpg";
  utils::save_image(p.string(), array(smooth, Shape{24, 32, 3}), 1.0);
  std::vector<char> b = bytes_of(p);
  CHECK(utils::decode_image(std::string(b.begin(), b.end()), "whole").shape() == Shape{24, 32, 3});
  // Cut in the image data: libjpeg pads and warns ("Premature end of JPEG file"); in the headers: an error.
  const std::string cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() * 9 / 10));
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image(cut, "cut.jpg"); }), "truncated JPEG"));
  const std::string half(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() / 2));
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image(half, "half.jpg"); }), "corrupt JPEG (libjpeg: "));
  const fs::path g = dir.path / "g.jpg";
  utils::save_image(g.string(), zeros(Shape{4, 4}) + 0.5);
  const std::vector<double> v = dzt::vals(utils::load_image(g.string()));
  CHECK(v.size() == 48);
  CHECK(v[0] == v[1]);
  CHECK(v[1] == v[2]);
  const std::int64_t old = utils::get_max_image_pixels();
  utils::set_max_image_pixels(24 * 32 - 1);
  CHECK(has(dzt::thrown<IOError>([&] { utils::load_image(p.string()); }), "32 x 24"));
  utils::set_max_image_pixels(old);
}

TEST_CASE("load_image without libjpeg: reading or writing a JPEG is an IOError naming it, PNG still works") {
  const char* lib = std::getenv("DEZERO_LIBJPEG");
  if (!lib || std::string(lib).find("missing") == std::string::npos) {
    MESSAGE("skipped: run by CTest's image_without_libjpeg (DEZERO_LIBJPEG names a missing library)");
    return;
  }
  TempDir dir;
  const fs::path j = dzt::data_dir() + "/images/small.jpg", p = dir.path / "a.png";
  utils::save_image(p.string(), pattern(4, 4), 1.0);
  const std::string e = dzt::thrown<IOError>([&] { utils::load_image(j.string()); });
  INFO(e);
  CHECK(has(e, "JPEG files need libjpeg"));
  CHECK(has(e, lib));
  CHECK(has(e, "libjpeg62-turbo"));
  CHECK(has(dzt::thrown<IOError>([&] { utils::save_image((dir.path / "b.jpg").string(), pattern(4, 4), 1.0); }),
            "JPEG files need libjpeg"));
  CHECK(!fs::exists(dir.path / "b.jpg"));
  CHECK(utils::load_image(p.string()).shape() == Shape{4, 4, 3});
}

TEST_CASE("set_max_image_pixels: a header claiming more pixels is refused before decoding") {
  TempDir dir;
  const fs::path p = dir.path / "p.bmp";
  utils::save_image(p.string(), pattern(30, 40), 1.0);
  const std::int64_t old = utils::get_max_image_pixels();
  CHECK(old == (std::int64_t{1} << 27));
  utils::set_max_image_pixels(1199);
  CHECK(has(dzt::thrown<IOError>([&] { utils::load_image(p.string()); }), "40 x 30"));
  utils::set_max_image_pixels(1200);
  CHECK(utils::load_image(p.string()).shape() == Shape{30, 40, 3});
  // a top-down BMP (negative height in the header, which stb's info passes on) counts |h|
  std::vector<char> b = bytes_of(p);
  const std::int32_t neg = -30;
  std::memcpy(b.data() + 22, &neg, 4);  // BITMAPINFOHEADER height (little-endian)
  const std::string top_down(b.begin(), b.end());
  utils::set_max_image_pixels(1199);
  CHECK(has(dzt::thrown<IOError>([&] { utils::decode_image(top_down, "top-down.bmp"); }), "40 x 30"));
  utils::set_max_image_pixels(1200);
  CHECK(utils::decode_image(top_down, "top-down.bmp").shape() == Shape{30, 40, 3});
  utils::set_max_image_pixels(old);
  CHECK(has(dzt::thrown<ValueError>([&] { utils::set_max_image_pixels(0); }), "positive"));
}
