// dezero/utils/atomic_file.cpp - AtomicFile (see the header): an unpredictable temp name next
// to the target, O_EXCL | O_NOFOLLOW, fsync, rename, folder sync.
#include "dezero/utils/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "dezero/error.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::detail {

namespace {

std::string random_suffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device rd;  // /dev/urandom: a name another user cannot guess
  std::string s(10, 'x');
  for (char& c : s) c = kChars[rd() % (sizeof kChars - 1)];
  return s;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string cause(int err) {
  std::string s = std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) s += "; hint: the disk (or the quota) is full";
  else if (err == ENOENT) s += "; hint: does the folder exist?";
  else if (err == EACCES || err == EPERM || err == EROFS) s += "; hint: check the folder's permissions";
  return s;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  if (path_.empty()) detail::fail<ValueError>(op_.c_str(), "the file name is empty");
  // A few tries in case a name is taken (EEXIST: someone planted it, or a stale temp file).
  for (int attempt = 0; attempt < 16; ++attempt) {
    tmp_ = path_ + "." + random_suffix() + ".tmp";
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno != EEXIST) break;
  }
  const int err = errno;
  const std::string t = tmp_;
  tmp_.clear();
  detail::fail<IOError>(op_.c_str(), "cannot create the temporary file '", t, "' for '", path_, "': ", cause(err));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  detail::fail<IOError>(op_.c_str(), what, " '", path_, "' failed: ", cause(err), "; the file was not changed");
}

void AtomicFile::write(const void* data, std::size_t n) {
  if (fd_ < 0) throw Error(op_ + ": AtomicFile::write after commit or failure");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    written_ += static_cast<std::size_t>(w);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(op_ + ": AtomicFile::commit twice or after a failure");
  if (::fsync(fd_) != 0) fail("writing", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    tmp_.clear();
    detail::fail<IOError>(op_.c_str(), "writing '", path_, "' failed: ", cause(err), "; the file was not changed");
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    const std::string t = tmp_;
    ::unlink(t.c_str());
    tmp_.clear();
    detail::fail<IOError>(op_.c_str(), "cannot rename '", t, "' to '", path_, "': ", cause(err),
                          "; the file was not changed");
  }
  committed_ = true;
  // The rename itself reaches the disk with the folder's metadata (best effort: some file
  // systems refuse to open or sync a folder).
  const int dfd = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& op) {
  AtomicFile f(path, op);
  f.write(bytes);
  f.commit();
}

}  // namespace dezero::detail
