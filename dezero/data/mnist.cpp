// dezero/data/mnist.cpp - the IDX reader (zlib) and the MNIST / Fashion-MNIST datasets: where their
// files are found, downloaded (utils::get_file) and checked.
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "dezero/data/files.hpp"
#include "dezero/datasets.hpp"
#include "dezero/download.hpp"
#include "dezero/tensor/checks.hpp"

namespace fs = std::filesystem;

namespace dezero::datasets {

// --- IDX ---------------------------------------------------------------------------------
namespace {
std::atomic<std::int64_t> g_max_idx_elements{std::int64_t{1} << 28};
}  // namespace

void set_max_idx_elements(std::int64_t elements) {
  if (elements <= 0)
    dezero::detail::fail<ValueError>("set_max_idx_elements", "the cap must be positive, got ", elements);
  g_max_idx_elements = elements;
}
std::int64_t get_max_idx_elements() { return g_max_idx_elements.load(); }

namespace {
class GzFile {
 public:
  explicit GzFile(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (!f_)
      dezero::detail::fail<IOError>("read_idx", "cannot open ", path,
                                    errno ? std::string(": ") + std::strerror(errno) : "");
    gzbuffer(f_, 1 << 18);
  }
  ~GzFile() {
    if (f_) gzclose(f_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to n bytes; returns how many. A zlib error (corrupt or truncated stream) throws.
  std::size_t read(void* buf, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      int got = gzread(f_, static_cast<char*>(buf) + done, chunk);
      if (got < 0) fail();
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    int err = Z_OK;
    gzerror(f_, &err);
    if (err != Z_OK && err != Z_STREAM_END) fail();
    return done;
  }
  [[noreturn]] void fail() {
    int err = Z_OK;
    const char* msg = gzerror(f_, &err);
    dezero::detail::fail<IOError>("read_idx", path_, " is corrupt or truncated (zlib: ", msg ? msg : "error",
                                  "); delete it so that it is downloaded again");
  }

 private:
  std::string path_;
  gzFile f_;
};

std::uint32_t big_endian(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}
}  // namespace

Tensor read_idx(const std::string& path) {
  errno = 0;
  GzFile f(path);
  unsigned char head[4];
  if (f.read(head, 4) != 4)
    dezero::detail::fail<IOError>("read_idx", path, " is truncated: it ends inside the IDX header");
  char magic[16];
  std::snprintf(magic, sizeof magic, "0x%08X", big_endian(head));
  if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] < 1 || head[3] > 4)
    dezero::detail::fail<IOError>("read_idx", path, " is not an IDX file of unsigned bytes: magic number ", magic,
                                  ", expected 0x00000801 (labels) or 0x00000803 (images)");
  int ndim = head[3];
  std::vector<unsigned char> dims_raw(static_cast<std::size_t>(4 * ndim));
  if (f.read(dims_raw.data(), dims_raw.size()) != dims_raw.size())
    dezero::detail::fail<IOError>("read_idx", path, " is truncated: it ends inside the IDX header");
  Shape shape;
  for (int d = 0; d < ndim; ++d) shape.push_back(big_endian(dims_raw.data() + 4 * d));
  // The declared size is checked against the cap before anything is read or allocated (a
  // small gzip can declare, and inflate to, gigabytes); each multiplication is checked first.
  // A zero extent makes the size 0, but the other extents must still multiply within int64
  // (Shape::checked_numel's rule for any tensor).
  std::int64_t nonzero = 1;
  bool overflow = false, zero = false;
  for (auto d : shape) {
    if (d == 0) zero = true;
    else overflow = overflow || __builtin_mul_overflow(nonzero, d, &nonzero);
  }
  const std::uint64_t total = zero ? 0 : static_cast<std::uint64_t>(nonzero);
  const std::int64_t cap = get_max_idx_elements();
  if (overflow || total > static_cast<std::uint64_t>(cap)) {
    // How much data there really is, counted up to 64 MiB (nothing is kept).
    constexpr std::uint64_t kCount = std::uint64_t(1) << 26;
    std::uint64_t present = 0;
    unsigned char buf[1 << 16];
    for (std::size_t got; present <= kCount && (got = f.read(buf, sizeof buf)) > 0;) present += got;
    std::string size_note;
    if (present <= kCount && (overflow || present < total))
      size_note = "; that does not match the file size (" + std::to_string(present) + " bytes after the header)";
    const std::string claim =
        !overflow ? std::to_string(total) + " elements, more than the cap of " + std::to_string(cap) +
                        " (datasets::set_max_idx_elements raises the cap)" + size_note
        : zero    ? std::string("0 elements, but its other extents multiply past 2^63, which no tensor may have")
                  : "more than 2^63 elements, more than the cap of " + std::to_string(cap) + size_note;
    dezero::detail::fail<IOError>("read_idx", path, " has a corrupt or hostile header: its dims ", shape, " claim ",
                                  claim, "; hint: delete the file so that it is downloaded again");
  }
  // The bytes are read by chunks (the data must really be there), then converted.
  std::vector<unsigned char> bytes;
  bytes.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(total, std::uint64_t(1) << 26)));
  while (bytes.size() < total) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(total - bytes.size(), 1 << 22));
    std::size_t old = bytes.size();
    bytes.resize(old + want);
    std::size_t got = f.read(bytes.data() + old, want);
    bytes.resize(old + got);
    if (got < want)
      dezero::detail::fail<IOError>("read_idx", path, " is truncated: its header ", shape, " promises ", total,
                                    " bytes of data but it holds ", bytes.size());
  }
  unsigned char extra;
  if (f.read(&extra, 1) != 0)
    dezero::detail::fail<IOError>("read_idx", path, " holds more data than its header ", shape, " says (", total,
                                  " bytes)");
  Tensor out = Tensor::empty(shape, int32);
  std::int32_t* dst = out.data<std::int32_t>();
  for (std::size_t k = 0; k < bytes.size(); ++k) dst[k] = bytes[k];
  return out;
}

// --- MNIST -------------------------------------------------------------------------------
namespace {
const char* image_file(bool train) { return train ? "train-images-idx3-ubyte.gz" : "t10k-images-idx3-ubyte.gz"; }
const char* label_file(bool train) { return train ? "train-labels-idx1-ubyte.gz" : "t10k-labels-idx1-ubyte.gz"; }

const char* image_sha256(bool train, bool fashion) {
  return fashion ? detail::sha256_of(detail::kFashionMnistFiles, image_file(train))
                 : detail::sha256_of(detail::kMnistFiles, image_file(train));
}
const char* label_sha256(bool train, bool fashion) {
  return fashion ? detail::sha256_of(detail::kFashionMnistFiles, label_file(train))
                 : detail::sha256_of(detail::kMnistFiles, label_file(train));
}

using detail::fetch;
using detail::pick_mirror;
}  // namespace

Transform MNIST::default_transform() {
  return transforms::Compose({transforms::Flatten(), transforms::ToFloat(), transforms::Normalize(0.0, 255.0)});
}

Transform MNIST::image_transform() {
  return transforms::Compose({transforms::ToFloat(), transforms::Normalize(0.0, 255.0)});
}

const char* MNIST::default_mirror() { return "https://ossci-datasets.s3.amazonaws.com/mnist/"; }

std::map<int, std::string> MNIST::labels() {
  std::map<int, std::string> m;
  for (int i = 0; i < 10; ++i) m[i] = std::to_string(i);
  return m;
}

MNIST::MNIST(bool train, Transform transform, Transform target_transform, const std::string& dir,
             const std::string& mirror)
    : Dataset(train, std::move(transform), std::move(target_transform)) {
  std::string m = pick_mirror(mirror, "DEZERO_MNIST_MIRROR", default_mirror());
  std::string images = fetch(dir, "", image_file(train), m, image_sha256(train, false));
  load(Files{images, fetch(dir, "", label_file(train), m, label_sha256(train, false))});
}

MNIST::MNIST(bool train, Transform transform, Transform target_transform, const Files& files)
    : Dataset(train, std::move(transform), std::move(target_transform)) {
  load(files);
}

void MNIST::load(const Files& files) {
  Tensor images = read_idx(files.images);
  Tensor labels = read_idx(files.labels);
  if (images.ndim() != 3)
    dezero::detail::fail<IOError>("MNIST", files.images, " holds an array of shape ", images.shape(),
                                  ", expected (N, rows, cols) images");
  if (labels.ndim() != 1)
    dezero::detail::fail<IOError>("MNIST", files.labels, " holds an array of shape ", labels.shape(),
                                  ", expected (N,) labels");
  if (images.len() != labels.len())
    dezero::detail::fail<IOError>("MNIST", files.images, " holds ", images.len(), " images but ", files.labels,
                                  " holds ", labels.len(), " labels");
  data_ = images.reshape(Shape{images.shape()[0], 1, images.shape()[1], images.shape()[2]});
  label_ = labels.astype(int64);
  apply_batchable_transforms();
}

// --- Fashion-MNIST -----------------------------------------------------------------------
// Zalando's S3 bucket serves its website over plain http only; the repository's data/fashion/
// holds the same files (same SHA-256) over https.
const char* FashionMNIST::default_mirror() {
  return "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/";
}
const char* FashionMNIST::system_dir() { return "/usr/share/datasets/fashion-mnist"; }

std::map<int, std::string> FashionMNIST::labels() {
  return {{0, "T-shirt/top"}, {1, "Trouser"}, {2, "Pullover"}, {3, "Dress"}, {4, "Coat"},
          {5, "Sandal"},      {6, "Shirt"},   {7, "Sneaker"},  {8, "Bag"},   {9, "Ankle boot"}};
}

namespace {
// The explicit `dir`; else the cache's copy (checked against its SHA-256); else Debian's package
// (installed by root, recompressed: not checked against Zalando's hashes); else a download into the cache.
std::string fashion_file(const std::string& dir, const char* name, const std::string& mirror, const char* sha256) {
  if (!dir.empty()) return fetch(dir, "", name, mirror, sha256);
  if (!fs::exists(fs::path(utils::cache_dir()) / "fashion-mnist" / name)) {
    fs::path sys = fs::path(FashionMNIST::system_dir()) / name;
    if (fs::exists(sys)) return sys.string();
  }
  return fetch("", "fashion-mnist", name, mirror, sha256);
}
}  // namespace

FashionMNIST::FashionMNIST(bool train, Transform transform, Transform target_transform, const std::string& dir,
                           const std::string& mirror)
    : MNIST(train, std::move(transform), std::move(target_transform),
            [&] {
              std::string m = pick_mirror(mirror, "DEZERO_FASHION_MNIST_MIRROR", default_mirror());
              std::string images = fashion_file(dir, image_file(train), m, image_sha256(train, true));
              return Files{images, fashion_file(dir, label_file(train), m, label_sha256(train, true))};
            }()) {}

}  // namespace dezero::datasets
