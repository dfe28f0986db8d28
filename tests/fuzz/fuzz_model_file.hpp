// tests/fuzz/fuzz_model_file.hpp - the file that the ONNX fuzz targets (fuzz_onnx, fuzz_onnx_run)
// hand to dezero::onnx::OnnxModel, which reads a path: one file in a private folder made with
// mkdtemp, the file itself made with mkstemps (O_EXCL); each input overwrites it.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_check.hpp"

namespace dezero_fuzz {

class ModelFile {
 public:
  // `who` names the target in the messages of a failed set-up (which ends the fuzzing run).
  explicit ModelFile(const char* who) {
    std::string dtmpl = std::string("/tmp/dezero_") + who + "_XXXXXX";
    if (!::mkdtemp(&dtmpl[0])) {
      std::perror(who);
      std::abort();
    }
    dir_ = dtmpl;
    std::string ftmpl = dir_ + "/model_XXXXXX.onnx";
    int fd = ::mkstemps(&ftmpl[0], 5);
    if (fd < 0) {
      std::perror(who);
      std::abort();
    }
    ::close(fd);
    path_ = ftmpl;
  }
  ~ModelFile() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  ModelFile(const ModelFile&) = delete;
  ModelFile& operator=(const ModelFile&) = delete;

  const std::string& path() const { return path_; }
  // Replaces the file's contents with the input's bytes.
  void write(const std::uint8_t* data, std::size_t size) const {
    int fd = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    DZ_FUZZ_CHECK(fd >= 0);
    std::size_t done = 0;
    while (done < size) {
      ssize_t w = ::write(fd, data + done, size - done);
      DZ_FUZZ_CHECK(w > 0);
      done += static_cast<std::size_t>(w);
    }
    ::close(fd);
  }

 private:
  std::string dir_, path_;
};

}  // namespace dezero_fuzz
