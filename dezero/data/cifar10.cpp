// dezero/data/cifar10.cpp - CIFAR-10 from its binary distribution, cifar-10-binary.tar.gz, read
// with libarchive (loaded at run time), validated whole before anything is kept.
//
// libarchive's gzip filter does not check the gzip trailer (CRC-32 and length), so once the
// members are read the stream is inflated again with zlib, which does: a flipped bit that
// still inflates is caught there.
//
// libdezero does not link libarchive: the first CIFAR10 dlopen()s libarchive.so.13 (or
// $DEZERO_LIBARCHIVE) and looks up the few entry points used here, as utils/download.cpp does
// with libcurl, so a program that reads no CIFAR-10 runs where libarchive is not installed.
// archive.h / archive_entry.h are used for the prototypes and constants only.
#include <archive.h>
#include <archive_entry.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dezero/data/files.hpp"
#include "dezero/datasets.hpp"
#include "dezero/download.hpp"
#include "dezero/utils/shared_library.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::datasets {

namespace {
// --- libarchive, loaded on first use ---------------------------------------------------------
struct Archive {
  decltype(&::archive_read_new) read_new = nullptr;
  decltype(&::archive_read_support_filter_gzip) support_filter_gzip = nullptr;
  decltype(&::archive_read_support_format_tar) support_format_tar = nullptr;
  decltype(&::archive_read_open_filename) open_filename = nullptr;
  decltype(&::archive_read_next_header) next_header = nullptr;
  decltype(&::archive_read_data) read_data = nullptr;
  decltype(&::archive_read_free) read_free = nullptr;
  decltype(&::archive_error_string) error_string = nullptr;
  decltype(&::archive_entry_pathname) entry_pathname = nullptr;
  decltype(&::archive_entry_size) entry_size = nullptr;
  decltype(&::archive_entry_size_is_set) entry_size_is_set = nullptr;
  decltype(&::archive_entry_filetype) entry_filetype = nullptr;
  std::string error;  // why libarchive cannot be used ("" when it can)
};

Archive load_archive() {
  Archive a;
  dezero::detail::SharedLibrary lib =
      dezero::detail::SharedLibrary::open("DEZERO_LIBARCHIVE", {"libarchive.so.13"});
  if (!lib.handle) {
    a.error = "CIFAR10 needs libarchive.so.13 to read cifar-10-binary.tar.gz, and it cannot be loaded (" + lib.error +
              "); hint: install it (Debian package libarchive13: apt-get install libarchive13), put the folder "
              "with libarchive.so.13 on LD_LIBRARY_PATH, or set DEZERO_LIBARCHIVE to its path";
    return a;
  }
  lib.bind(a.read_new, "archive_read_new");
  lib.bind(a.support_filter_gzip, "archive_read_support_filter_gzip");
  lib.bind(a.support_format_tar, "archive_read_support_format_tar");
  lib.bind(a.open_filename, "archive_read_open_filename");
  lib.bind(a.next_header, "archive_read_next_header");
  lib.bind(a.read_data, "archive_read_data");
  lib.bind(a.read_free, "archive_read_free");
  lib.bind(a.error_string, "archive_error_string");
  lib.bind(a.entry_pathname, "archive_entry_pathname");
  lib.bind(a.entry_size, "archive_entry_size");
  lib.bind(a.entry_size_is_set, "archive_entry_size_is_set");
  lib.bind(a.entry_filetype, "archive_entry_filetype");
  if (!lib.missing.empty())
    a.error = "CIFAR10 needs libarchive.so.13, and the loaded " + lib.name + " has no symbol " + lib.missing +
              "; hint: install libarchive13 (apt-get install libarchive13)";
  return a;
}

const Archive& archive_api(const std::string& path) {
  static const Archive a = load_archive();  // leaked handle: libarchive stays loaded; a failure is kept
  if (!a.error.empty()) dezero::detail::fail<IOError>("CIFAR10", "cannot read ", path, ": ", a.error);
  return a;
}

// One archive being read.
class ArchiveReader {
 public:
  // a_ owns the archive from here on: it is freed however the constructor or the reading ends.
  explicit ArchiveReader(const std::string& path)
      : api_(archive_api(path)), path_(path), a_(api_.read_new(), api_.read_free) {
    if (!a_)
      dezero::detail::fail<IOError>("CIFAR10", "cannot read ", path, ": archive_read_new failed (out of memory?)");
    if (api_.support_filter_gzip(a_.get()) < ARCHIVE_WARN || api_.support_format_tar(a_.get()) < ARCHIVE_WARN)
      dezero::detail::fail<IOError>("CIFAR10", "cannot read ", path,
                                    ": the loaded libarchive reads no gzip or no tar (libarchive: ", message(), ")");
    errno = 0;
    if (!std::ifstream(path, std::ios::binary).good())
      dezero::detail::fail<IOError>("CIFAR10", "cannot open ", path,
                                    errno ? std::string(": ") + std::strerror(errno) : "");
    // Opening reads the start of the archive: a short or damaged one already fails here.
    if (api_.open_filename(a_.get(), path.c_str(), 1 << 16) < ARCHIVE_WARN) fail("when opening it");
  }

  // The next entry, or nullptr at the end of the archive. A gzip or tar error throws.
  archive_entry* next() {
    archive_entry* e = nullptr;
    int rc = api_.next_header(a_.get(), &e);
    if (rc == ARCHIVE_EOF) return nullptr;
    if (rc < ARCHIVE_WARN) fail(member_ ? "after member " + current_ : "at its first member");
    member_ = true;
    current_ = strip_dot(api_.entry_pathname(e) ? api_.entry_pathname(e) : "");
    return e;
  }
  const std::string& current() const { return current_; }
  const Archive& api() const { return api_; }

  // The whole data of the current entry, read by chunks (its header's size is not trusted):
  // `over(n)` throws when n bytes would be more than the caller allows.
  template <class Over>
  std::vector<unsigned char> read_all(std::uint64_t limit, Over over) {
    std::vector<unsigned char> out;
    unsigned char buf[1 << 16];
    for (;;) {
      la_ssize_t got = api_.read_data(a_.get(), buf, sizeof buf);
      if (got < 0) {
        if (got >= ARCHIVE_WARN) continue;  // a warning; the data goes on
        fail("inside member " + current_);
      }
      if (got == 0) break;
      if (out.size() + static_cast<std::uint64_t>(got) > limit) over(out.size() + static_cast<std::uint64_t>(got));
      out.insert(out.end(), buf, buf + got);
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& where) {
    std::string why = message();
    dezero::detail::fail<IOError>("CIFAR10", path_, " is truncated or corrupt", where.empty() ? "" : " (" + where + ")",
                                  ": libarchive: ", why, "; hint: delete the file so that it is downloaded again");
  }

 private:
  std::string message() const {
    const char* m = api_.error_string(a_.get());
    return m && *m ? m : "unknown error";
  }
  static std::string strip_dot(std::string name) {
    while (name.rfind("./", 0) == 0) name.erase(0, 2);
    return name;
  }

  const Archive& api_;
  std::string path_;
  std::unique_ptr<archive, int (*)(archive*)> a_;
  bool member_ = false;
  std::string current_;
};

// zlib checks what libarchive does not: the gzip trailer's CRC-32 and length (a plain tar
// file reads through unchanged).
void check_gzip_trailer(const std::string& path) {
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    dezero::detail::fail<IOError>("CIFAR10", "cannot open ", path,
                                  errno ? std::string(": ") + std::strerror(errno) : "");
  gzbuffer(f, 1 << 18);
  std::vector<char> buf(1 << 20);
  int got = 0;
  while ((got = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) {
  }
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  std::string why = msg && *msg ? msg : "read error";
  gzclose(f);
  if (got < 0 || (err != Z_OK && err != Z_STREAM_END))
    dezero::detail::fail<IOError>("CIFAR10", path, " is truncated or corrupt: its gzip stream fails its check (zlib: ",
                                  why, "); hint: delete the file so that it is downloaded again");
}

// --- the binary format -----------------------------------------------------------------------
constexpr std::size_t kPixels = 3 * 32 * 32;     // R plane, G plane, B plane; each 32x32 row-major
constexpr std::size_t kRecord = 1 + kPixels;     // label byte + pixels
constexpr std::size_t kMaxMembers = 10000;      // the real archive holds 8 (a folder, 6 batches, 2 notes)

std::atomic<std::int64_t> g_max_samples{60000};

std::vector<std::string> members(bool train) {
  const std::string dir = "cifar-10-batches-bin/";
  if (!train) return {dir + "test_batch.bin"};
  std::vector<std::string> m;
  for (int i = 1; i <= 5; ++i) m.push_back(dir + "data_batch_" + std::to_string(i) + ".bin");
  return m;
}

// The wanted members' bytes, in `wanted` order; every check is made here, before anything is kept.
// The wanted members' data, repeats included, may not pass get_max_cifar_samples() records: a
// declared size beyond that is refused before it is read, and the reading stops at the cap.
std::vector<std::vector<unsigned char>> read_members(const std::string& path, const std::vector<std::string>& wanted) {
  const std::int64_t cap = get_max_cifar_samples();
  const std::uint64_t budget = static_cast<std::uint64_t>(cap) * kRecord;
  std::uint64_t used = 0;
  auto too_big = [&](const std::string& name, std::uint64_t bytes, const char* how) {
    dezero::detail::fail<IOError>("CIFAR10", path, ": member ", name, " ", how, " ", bytes, " bytes (", bytes / kRecord,
                                  " records), which with the ", used / kRecord,
                                  " records read before it passes the cap of ", cap,
                                  " samples (datasets::set_max_cifar_samples raises it); CIFAR-10's batches hold "
                                  "10,000 records each; hint: delete the file so that it is downloaded again");
  };
  std::map<std::string, std::vector<unsigned char>> found;
  std::vector<std::string> seen;  // the first names, for messages
  std::size_t members = 0;
  ArchiveReader r(path);
  while (archive_entry* e = r.next()) {
    const std::string& name = r.current();
    if (++members > kMaxMembers)
      dezero::detail::fail<IOError>("CIFAR10", path, " holds more than ", kMaxMembers,
                                    " members (cifar-10-binary.tar.gz holds 8); hint: delete the file so that it is "
                                    "downloaded again");
    if (seen.size() < 13) seen.push_back(name);
    if (std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    // A directory or link with a member's name is not the member.
    const Archive& api = r.api();
    if (api.entry_filetype(e) != AE_IFREG)
      dezero::detail::fail<IOError>("CIFAR10", path, ": member ", name,
                                    " is not a regular file; hint: delete the file so that it is downloaded again");
    if (api.entry_size_is_set(e) && api.entry_size(e) > 0 &&
        static_cast<std::uint64_t>(api.entry_size(e)) > budget - used)
      too_big(name, static_cast<std::uint64_t>(api.entry_size(e)), "declares");
    std::vector<unsigned char> bytes = r.read_all(budget - used, [&](std::uint64_t n) { too_big(name, n, "holds"); });
    used += bytes.size();
    found[name] = std::move(bytes);  // a later member of the same name replaces an earlier one (tar's rule)
  }
  check_gzip_trailer(path);
  std::vector<std::vector<unsigned char>> out;
  for (const std::string& name : wanted) {
    auto it = found.find(name);
    if (it == found.end()) {
      std::string list;
      for (std::size_t i = 0; i < seen.size() && i < 12; ++i) list += (i ? ", " : "") + seen[i];
      if (members > 12) list += ", ...";
      dezero::detail::fail<IOError>("CIFAR10", path, " has no member ", name, " (it holds ",
                                    members == 0 ? std::string("no members") : std::to_string(members) + ": " + list,
                                    "); expected cifar-10-batches-bin/data_batch_1.bin .. data_batch_5.bin and "
                                    "test_batch.bin (the binary distribution, not cifar-10-python.tar.gz); hint: "
                                    "delete the file so that it is downloaded again");
    }
    const std::vector<unsigned char>& bytes = it->second;
    if (bytes.empty() || bytes.size() % kRecord != 0)
      dezero::detail::fail<IOError>("CIFAR10", path, ": member ", name, " holds ", bytes.size(),
                                    " bytes, which is not a whole, non-zero number of ", kRecord,
                                    "-byte records (1 label byte + 3072 pixel bytes); hint: delete the file so that "
                                    "it is downloaded again");
    for (std::size_t k = 0; k < bytes.size() / kRecord; ++k) {
      unsigned label = bytes[k * kRecord];
      if (label > 9)
        dezero::detail::fail<IOError>("CIFAR10", path, ": member ", name, ", record ", k, " has label ", label,
                                      "; CIFAR-10 labels are 0-9; hint: delete the file so that it is "
                                      "downloaded again");
    }
    out.push_back(std::move(it->second));
  }
  return out;
}
}  // namespace

// --- CIFAR10 ---------------------------------------------------------------------------------
Transform CIFAR10::default_transform() {
  return transforms::Compose({transforms::ToFloat(), transforms::Normalize(127.5, 127.5)});
}

const char* CIFAR10::default_mirror() { return "https://www.cs.toronto.edu/~kriz/"; }
const char* CIFAR10::file_name() { return "cifar-10-binary.tar.gz"; }

std::map<int, std::string> CIFAR10::labels() {
  // DeZero's datasets.py has 'ariplane' for 0, a typo.
  return {{0, "airplane"}, {1, "automobile"}, {2, "bird"},  {3, "cat"},  {4, "deer"},
          {5, "dog"},      {6, "frog"},       {7, "horse"}, {8, "ship"}, {9, "truck"}};
}

void set_max_cifar_samples(std::int64_t samples) {
  if (samples <= 0)
    dezero::detail::fail<ValueError>("set_max_cifar_samples", "the cap must be positive, got ", samples);
  g_max_samples = samples;
}
std::int64_t get_max_cifar_samples() { return g_max_samples.load(); }

namespace detail {
std::pair<Tensor, Tensor> read_cifar10_archive(const std::string& path, bool train) {
  std::vector<std::vector<unsigned char>> batches = read_members(path, members(train));
  std::int64_t n = 0;
  for (const auto& b : batches) n += static_cast<std::int64_t>(b.size() / kRecord);
  Tensor images = Tensor::empty(Shape{n, 3, 32, 32}, int32);  // x: (N, 3, 32, 32), channels R, G, B
  Tensor labels = Tensor::empty(Shape{n}, int64);              // t: (N,)
  std::int32_t* x = images.data<std::int32_t>();
  std::int64_t* t = labels.data<std::int64_t>();
  for (auto& b : batches) {
    for (std::size_t k = 0; k < b.size() / kRecord; ++k) {
      const unsigned char* rec = b.data() + k * kRecord;
      *t++ = rec[0];
      for (std::size_t p = 0; p < kPixels; ++p) *x++ = rec[1 + p];
    }
    std::vector<unsigned char>().swap(b);  // the bytes go as soon as they are copied
  }
  return {std::move(images), std::move(labels)};
}
}  // namespace detail

CIFAR10::CIFAR10(bool train, Transform transform, Transform target_transform, const std::string& dir,
                 const std::string& mirror)
    : Dataset(train, std::move(transform), std::move(target_transform)) {
  std::string m = detail::pick_mirror(mirror, "DEZERO_CIFAR10_MIRROR", default_mirror());
  std::string path;
  try {
    path = detail::fetch(dir, "", file_name(), m, detail::sha256_of(detail::kCifar10Files, file_name()));
  } catch (const IOError& e) {
    const std::string d = dir.empty() ? utils::cache_dir() : dir;
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(d) / file_name(), ec))
      dezero::detail::fail<IOError>("CIFAR10", e.what());  // there, but refused (its checksum, the folder)
    dezero::detail::fail<IOError>("CIFAR10", file_name(), " is not in ", d, " and could not be downloaded: ", e.what(),
                                  "; hint: put ", file_name(), " (", default_mirror(), file_name(), ") in ", d,
                                  ", or set DEZERO_CIFAR10_MIRROR to a URL that has it");
  }
  auto [images, labels] = detail::read_cifar10_archive(path, train);
  data_ = std::move(images);
  label_ = std::move(labels);
  apply_batchable_transforms();
}

}  // namespace dezero::datasets
