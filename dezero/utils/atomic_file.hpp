// dezero/utils/atomic_file.hpp - internal: a file written in full or not at all, and never
// through a name someone else could have planted.
//
// AtomicFile("dir/model.npz", "save_npz") creates "dir/model.npz.<random>.tmp" with
// O_CREAT | O_EXCL | O_NOFOLLOW (mkstemp's rule: a name nobody can predict, created afresh,
// never a symlink followed), takes the bytes, and commit() flushes them to the disk
// (fsync), renames the temp file onto the real name and syncs the folder. The previous
// file under the real name stays whole until the rename. Any failure (a full disk, a
// missing folder, no permission) is an IOError naming the operation and the path; the
// temp file is removed on every way out that is not a commit.
//
// Users: save_npz (weights, optimizer state), get_file's download, onnx::export, snapshots.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dezero::detail {

class AtomicFile {
 public:
  // `op` names the operation in error messages ("save_npz", "get_file", ...).
  AtomicFile(std::string path, std::string op);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t n);  // all of it, or an IOError
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  void commit();  // fsync, close, rename onto path(), sync the folder

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }
  std::size_t bytes_written() const { return written_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  std::string path_, op_, tmp_;
  int fd_ = -1;
  std::size_t written_ = 0;
  bool committed_ = false;
};

// The whole of `bytes` under `path`, through an AtomicFile.
void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& op);

}  // namespace dezero::detail
