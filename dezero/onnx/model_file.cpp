// dezero/onnx/model_file.cpp - the importer's file access: a .onnx file is read whole (at most
// protobuf's 2 GiB) and parsed; external data is read with pread from a file that must lie in the
// model's folder.
//
// Not here: what the model means (import.cpp), TensorProto decoding (proto.cpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dezero/error.hpp"
#include "dezero/onnx/model_file.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::onnx::detail {
namespace {
using dezero::detail::fail;

// protobuf parses at most 2 GiB; larger weights belong in external data.
constexpr std::int64_t kMaxModelBytes = (std::int64_t(1) << 31) - 1;

std::string errno_text() { return std::strerror(errno); }

// Reads a whole regular file, refusing one larger than `cap` bytes.
std::string read_file(const std::string& path, std::int64_t cap, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail<IOError>("onnx import", "cannot open ", what, " '", path, "': ", errno_text());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail<IOError>("onnx import", "cannot stat ", what, " '", path, "': ", errno_text());
  if (!S_ISREG(st.st_mode)) fail<IOError>("onnx import", what, " '", path, "' is not a regular file");
  if (st.st_size > cap)
    fail<IOError>("onnx import", what, " '", path, "' has ", st.st_size, " bytes, more than the ", cap,
                  " a model file may have; hint: keep large weights in external data");
  std::string buf(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < buf.size()) {
    ssize_t r = ::read(fd, &buf[got], buf.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail<IOError>("onnx import", "cannot read ", what, " '", path, "': ", errno_text());
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  buf.resize(got);
  return buf;
}

bool parse_decimal(const std::string& s, std::uint64_t& out) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoull(s);
  return true;
}

std::string dirname_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

// --- the model file -------------------------------------------------------------------------------
void read_model_file(const std::string& path, const std::string& where, ::onnx::ModelProto& proto) {
  std::string bytes = read_file(path, kMaxModelBytes, "model file");
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw IOError(where + " is not a valid ONNX model (protobuf parsing failed: truncated or corrupt file)");
  if (!proto.has_graph() || proto.ir_version() <= 0)
    throw IOError(where + " is not an ONNX model (no " + (proto.has_graph() ? "ir_version" : "graph") +
                  "); hint: is it a .onnx file?");
}

std::string model_folder(const std::string& path, const std::string& where) {
  char resolved[PATH_MAX];
  std::string dir = dirname_of(path);
  if (!::realpath(dir.c_str(), resolved))
    fail<IOError>(where.c_str(), "cannot resolve the model's folder '", dir, "': ", errno_text());
  return resolved;
}

// --- external data --------------------------------------------------------------------------------
std::string read_external_data(const ::onnx::TensorProto& t, const std::string& dir_real, const std::string& where,
                               std::uint64_t bytes) {
  std::string location;
  std::uint64_t offset = 0, length = 0;
  bool has_length = false;
  const std::string who = where + ": tensor '" + t.name() + "'";
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      if (!parse_decimal(kv.value(), offset))
        fail<ValueError>(who.c_str(), "external data offset '", kv.value(), "' is not a number");
    } else if (kv.key() == "length") {
      if (!parse_decimal(kv.value(), length))
        fail<ValueError>(who.c_str(), "external data length '", kv.value(), "' is not a number");
      has_length = true;
    }
  }
  if (location.empty()) fail<ValueError>(who.c_str(), "external data without a location");
  if (location.find('\0') != std::string::npos) fail<ValueError>(who.c_str(), "external data location holds a NUL");
  if (location[0] == '/' || location[0] == '\\')
    fail<ValueError>(who.c_str(), "external data location '", location,
                     "' is an absolute path; hint: external data must lie in the model's folder");
  std::size_t start = 0;
  while (start <= location.size()) {
    std::size_t end = location.find_first_of("/\\", start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2)
      fail<ValueError>(who.c_str(), "external data location '", location,
                       "' contains '..'; hint: external data must lie in the model's folder");
    start = end + 1;
  }
  // One component at a time from the model's folder, each opened with O_NOFOLLOW relative to the
  // one before (no path is resolved twice, so a folder swapped for a symbolic link meanwhile is
  // refused, not followed); O_NONBLOCK, so that a FIFO is refused below rather than waited on.
  auto refuse_link = [&](const std::string& part) {
    return ValueError(who + ": external data '" + location + "': '" + part + "' is a symbolic link; refused (hint: "
                      "external data must lie in the model's folder, as plain files and folders)");
  };
  int fd = ::open(dir_real.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail<IOError>(who.c_str(), "cannot open the model's folder '", dir_real, "': ", errno_text());
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd};
  std::vector<std::string> parts;
  for (std::size_t b = 0; b <= location.size();) {
    std::size_t e = location.find_first_of("/\\", b);
    if (e == std::string::npos) e = location.size();
    const std::string part = location.substr(b, e - b);
    if (!part.empty() && part != ".") parts.push_back(part);
    b = e + 1;
  }
  if (parts.empty()) fail<ValueError>(who.c_str(), "external data location '", location, "' names no file");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    const int next = ::openat(closer.fd, parts[i].c_str(), flags);
    if (next < 0) {
      const int err = errno;
      struct stat ls {};
      if (err == ELOOP || (err == ENOTDIR && ::fstatat(closer.fd, parts[i].c_str(), &ls, AT_SYMLINK_NOFOLLOW) == 0 &&
                           S_ISLNK(ls.st_mode)))
        throw refuse_link(parts[i]);
      errno = err;
      fail<IOError>(who.c_str(), "cannot open external data '", location, "': ", errno_text());
    }
    ::close(closer.fd);
    closer.fd = next;
  }
  const std::string real = dir_real + "/" + location;
  fd = closer.fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    fail<IOError>(who.c_str(), "external data '", real, "' is not a regular file (a pipe, a device or a folder)");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (offset > size)
    fail<ValueError>(who.c_str(), "external data offset ", offset, " is past the end of '", real, "' (", size,
                     " bytes)");
  if (has_length && length != bytes)
    fail<ValueError>(who.c_str(), "external data length ", length, " differs from the ", bytes,
                     " bytes its dims and type need");
  length = bytes;  // without a length: what the dims need, never the rest of the file
  if (length > size - offset)
    fail<ValueError>(who.c_str(), "external data [", offset, ", +", length, ") runs past the end of '", real, "' (",
                     size, " bytes)");
  if (length > (std::uint64_t(8) << 30)) fail<ValueError>(who.c_str(), "external data of more than 8 GiB");
  std::string buf(static_cast<std::size_t>(length), '\0');
  std::size_t got = 0;
  while (got < buf.size()) {
    ssize_t r = ::pread(fd, &buf[got], buf.size() - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      fail<IOError>(who.c_str(), "cannot read external data '", real, "': ", r < 0 ? errno_text() : "short file");
    got += static_cast<std::size_t>(r);
  }
  return buf;
}

}  // namespace dezero::onnx::detail
