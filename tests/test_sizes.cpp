// tests/test_sizes.cpp - sizes that do not fit are errors: a shape whose element count
// (or byte count) overflows int64 is a ShapeError naming the op and the shape at every
// allocation, reshape and broadcast; IDX and .npy headers that claim such sizes are
// IOErrors naming the file; an empty Variable's shape is a ValueError.
#include "support/test_util.hpp"

using namespace dezero;

using dzt::has;
using dzt::thrown;

namespace {

const Shape kBig{1LL << 62, 4};                        // 2^64 elements
const Shape kCube{1LL << 31, 1LL << 31, 1LL << 31};    // 2^93 elements
const char* kBigStr = "(4611686018427387904, 4)";
const char* kCubeStr = "(2147483648, 2147483648, 2147483648)";

// The 16-byte IDX images header 2^20 x 2^20 x 2^24 (a product that wraps to 0) and nothing else.
std::string overflowing_idx() {
  return std::string("\x00\x00\x08\x03\x00\x10\x00\x00\x00\x10\x00\x00\x01\x00\x00\x00", 16);
}
std::string labels_idx() { return std::string("\x00\x00\x08\x01\x00\x00\x00\x01\x07", 9); }
}  // namespace

#define CHECK_MSG(msg, ...)                                                  \
  do {                                                                       \
    const std::string m_ = (msg);                                            \
    for (const char* p_ : {__VA_ARGS__}) {                                   \
      INFO("message: ", m_, "\n  expected to contain: ", std::string(p_));   \
      CHECK(has(m_, p_));                                                    \
    }                                                                        \
  } while (0)

TEST_CASE("sizes: Shape::checked_numel and checked_nbytes") {
  CHECK(Shape{2, 3}.checked_numel("t") == 6);
  CHECK(Shape{}.checked_numel("t") == 1);
  CHECK(Shape{0, 1LL << 61, 2}.checked_numel("t") == 0);  // a zero extent, the others within int64
  CHECK(Shape{3, 0, 5}.checked_numel("t") == 0);
  // A zero extent does not excuse the others: every partial product (strides, a reduction's
  // outer size) must fit in int64, so (0, 2^62, 2^62) is refused, in either order.
  CHECK_MSG(thrown<ShapeError>([] { Shape{0, 1LL << 62, 1LL << 62}.checked_numel("op"); }),
            "op: shape (0, 4611686018427387904, 4611686018427387904)", "the zero extent left out", "hint");
  CHECK_MSG(thrown<ShapeError>([] { Shape{1LL << 62, 1LL << 62, 0}.checked_numel("op"); }), "op: shape ",
            "int64 can count");
  CHECK(Shape{2, 3}.checked_nbytes("t", 8) == 48);
  CHECK_MSG(thrown<ShapeError>([] { kBig.checked_numel("op"); }), "op: shape ", kBigStr, "more elements than int64",
            "hint");
  CHECK_MSG(thrown<ShapeError>([] { Shape{1LL << 61, 2}.checked_nbytes("op", 8); }), "op: shape ",
            "(2305843009213693952, 2)", "bytes");
  CHECK_MSG(thrown<ShapeError>([] { Shape{2, -1}.checked_numel("op"); }), "op: negative dimension in shape (2, -1)");
}

TEST_CASE("sizes: creators refuse shapes whose size overflows") {
  dzt::on_each_device([](Device dev) {
    CHECK_MSG(thrown<ShapeError>([&] { zeros(kBig, float32, dev); }), "zeros: shape ", kBigStr,
              "more elements than int64 can count", "hint");
    CHECK_MSG(thrown<ShapeError>([&] { zeros(kCube, float32, dev); }), "zeros: shape ", kCubeStr);
    CHECK_MSG(thrown<ShapeError>([&] { ones(kBig, float64, dev); }), "ones: shape ", kBigStr);
    CHECK_MSG(thrown<ShapeError>([&] { full(kCube, 2.0, int32, dev); }), "full: shape ", kCubeStr);
    CHECK_MSG(thrown<ShapeError>([&] { Tensor::empty(kBig, float32, dev); }), "empty: shape ", kBigStr);
    // The element count fits, the byte count does not.
    CHECK_MSG(thrown<ShapeError>([&] { zeros(Shape{1LL << 61, 2}, float64, dev); }), "zeros: shape ",
              "(2305843009213693952, 2)", "bytes");
    CHECK_MSG(thrown<ShapeError>([&] { random::randn(kBig, float32, dev); }), "random::randn: shape ", kBigStr);
    CHECK_MSG(thrown<ShapeError>([&] { random::rand(kCube, float32, dev); }), "random::rand: shape ", kCubeStr);
    CHECK_MSG(thrown<ShapeError>([&] { random::randint(0, 3, kBig, int64, dev); }), "random::randint: shape ",
              kBigStr);
    CHECK_MSG(thrown<ShapeError>([&] { zeros(Shape{2, -3}, float32, dev); }), "negative dimension", "(2, -3)");
    // No elements, but extents whose product wraps: refused (fuzz_idx found the unchecked product).
    CHECK_MSG(thrown<ShapeError>([&] { Tensor::empty(Shape{4294967295LL, 4294967295LL, 0}, int32, dev); }),
              "empty: shape (4294967295, 4294967295, 0)", "zero extent left out");
    CHECK(zeros(Shape{0, 1LL << 40, 1LL << 20}, float32, dev).size() == 0);  // within int64: a valid empty tensor
  });
}

TEST_CASE("sizes: reshape and broadcasting to an overflowing shape") {
  dzt::on_each_device([](Device dev) {
    Tensor z = zeros({0}, float32, dev);  // 0 elements: a wrapped product of 0 must not pass
    CHECK_MSG(thrown<ShapeError>([&] { z.reshape(kBig); }), "reshape: shape ", kBigStr);
    CHECK_MSG(thrown<ShapeError>([&] { z.reshape(Shape{1LL << 62, 4, -1}); }), "reshape: shape (4611686018427387904, 4, -1)",
              "more elements than int64");
    Tensor a = zeros({1, 1}, float32, dev);
    CHECK_MSG(thrown<ShapeError>([&] { broadcast_to(a, kBig); }), "broadcast_to: shape ", kBigStr);
    CHECK_MSG(thrown<ShapeError>([&] { broadcast_to(Tensor(a), kCube); }), "broadcast_to: shape ", kCubeStr);
    CHECK_MSG(thrown<ShapeError>([&] { broadcast_shapes(Shape{1LL << 62, 1}, Shape{1, 4}, "add"); }),
              "add: shape ", kBigStr);
    CHECK_MSG(thrown<ShapeError>([&] { F::broadcast_to(Variable(a), kBig); }), "broadcast_to", kBigStr);
  });
}

TEST_CASE("sizes: an IDX header with a zero extent beside extents whose product wraps is an IOError") {
  // fuzz_idx's find (tests/fuzz/regressions/idx): dims (2^32 - 1, 2^32 - 1, 0) and no data.
  dzt::TempDir dir;
  const auto path = dir.path / "zero-idx3-ubyte";
  dzt::write_bytes(path, std::string("\x00\x00\x08\x03", 4) + std::string(8, '\xff') + std::string(4, '\0'));
  const std::string where = path.string();
  const std::string e = thrown<IOError>([&] { datasets::read_idx(where); });
  CHECK_MSG(e, "read_idx: ", where.c_str(), "(4294967295, 4294967295, 0) claim 0 elements, but its other extents multiply past 2^63");
  CHECK_FALSE(dzt::has(e, "set_max_idx_elements"));  // no cap would let it through
}

TEST_CASE("sizes: an IDX header whose size wraps is an IOError naming the file and its dims") {
  dzt::TempDir dir;
  const auto path = dir.path / "train-images-idx3-ubyte.gz";
  dzt::write_bytes(path, overflowing_idx());
  dzt::write_bytes(dir.path / "train-labels-idx1-ubyte.gz", labels_idx());
  const char* dims = "(1048576, 1048576, 16777216)";
  const std::string where = path.string();
  CHECK_MSG(thrown<IOError>([&] { datasets::read_idx(where); }), "read_idx: ", where.c_str(), dims,
            "does not match the file size", "0 bytes after the header");
  CHECK_MSG(thrown<IOError>([&] { datasets::MNIST(true, {}, {}, dir.str()); }), "read_idx", dims,
            "does not match the file size");
  CHECK_MSG(thrown<IOError>([&] { datasets::FashionMNIST(true, {}, {}, dir.str()); }), "read_idx", dims,
            "does not match the file size");
}

// The .npy bytes of a (1, 4) float64 array whose header claims shape (2^62, 4), the
// header length unchanged (padding spaces traded for the longer tuple).
std::string overflowing_npy() {
  std::string bytes = utils::serialize_npy(zeros({1, 4}, float64));
  const std::string from = "(1, 4), }", to = std::string("(") + "4611686018427387904, 4), }";
  auto at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, from.size(), to);
  auto nl = bytes.find('\n', at);
  REQUIRE(nl != std::string::npos);
  bytes.erase(nl - (to.size() - from.size()), to.size() - from.size());
  return bytes;
}
std::uint32_t crc32_of(const std::string& s) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

TEST_CASE("sizes: an .npy header whose size overflows is an IOError, alone and inside an .npz") {
  const std::string npy = overflowing_npy();
  CHECK_MSG(thrown<IOError>([&] { utils::parse_npy(npy, "x.npy"); }), "x.npy", kBigStr);

  // The same entry in a stored .npz: the original entry's bytes and CRC swapped for the
  // overflowing ones (same length), so that only the shape is wrong.
  const std::string good = utils::serialize_npy(zeros({1, 4}, float64));
  REQUIRE(good.size() == npy.size());
  std::string zip = utils::serialize_npz({{"x", zeros({1, 4}, float64)}});
  auto at = zip.find(good);
  REQUIRE(at != std::string::npos);
  zip.replace(at, good.size(), npy);
  auto le32 = [](std::uint32_t v) {
    std::string b(4, '\0');
    for (int k = 0; k < 4; ++k) b[k] = static_cast<char>((v >> (8 * k)) & 0xFF);
    return b;
  };
  const std::string old_crc = le32(crc32_of(good)), new_crc = le32(crc32_of(npy));
  int swapped = 0;
  for (auto p = zip.find(old_crc); p != std::string::npos; p = zip.find(old_crc, p + 4), ++swapped)
    zip.replace(p, 4, new_crc);
  CHECK(swapped == 2);  // local header and central directory
  dzt::TempDir dir;
  const std::string path = (dir.path / "big.npz").string();
  dzt::write_bytes(path, zip);
  CHECK_MSG(thrown<IOError>([&] { utils::load_npz(path); }), "big.npz", kBigStr);
}

TEST_CASE("sizes: an empty Variable's shape, ndim, size, dtype and len are ValueErrors") {
  Variable v;
  CHECK_MSG(thrown<ValueError>([&] { v.shape(); }), "shape: the variable is empty (Variable())", "hint");
  CHECK_MSG(thrown<ValueError>([&] { v.ndim(); }), "ndim: the variable is empty");
  CHECK_MSG(thrown<ValueError>([&] { v.size(); }), "size: the variable is empty");
  CHECK_MSG(thrown<ValueError>([&] { v.dtype(); }), "dtype: the variable is empty");
  CHECK_MSG(thrown<ValueError>([&] { v.len(); }), "len: the variable is empty");
  CHECK(Variable(zeros({2, 3})).shape() == Shape{2, 3});
}
