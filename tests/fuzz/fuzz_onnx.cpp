// tests/fuzz/fuzz_onnx.cpp - libFuzzer target: arbitrary bytes as a .onnx model file.
//
// dezero::onnx::OnnxModel reads a path, so each input is written to one file in a private folder
// made with mkdtemp (the file itself made with mkstemps, O_EXCL), and the model is loaded from it:
// protobuf parsing, the opset, every node against the op table, dtypes, names, the graph's order,
// initializers and external data (which can only name files in that folder: the model itself).
// Loading must succeed or throw a dezero::Error. A model that loads must describe itself
// consistently: one ValueInfo per input and output name, parameters with data, unique keys.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "dezero/error.hpp"
#include "dezero/onnx.hpp"
#include "fuzz_check.hpp"

namespace {

struct ModelFile {
  std::string dir, path;
  ModelFile() {
    char dtmpl[] = "/tmp/dezero_fuzz_onnx_XXXXXX";
    if (!::mkdtemp(dtmpl)) {
      std::perror("fuzz_onnx: mkdtemp");
      std::abort();
    }
    dir = dtmpl;
    std::string ftmpl = dir + "/model_XXXXXX.onnx";
    int fd = ::mkstemps(&ftmpl[0], 5);
    if (fd < 0) {
      std::perror("fuzz_onnx: mkstemps");
      std::abort();
    }
    ::close(fd);
    path = ftmpl;
  }
  ~ModelFile() {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ModelFile file;
  {
    int fd = ::open(file.path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    DZ_FUZZ_CHECK(fd >= 0);
    std::size_t done = 0;
    while (done < size) {
      ssize_t w = ::write(fd, data + done, size - done);
      DZ_FUZZ_CHECK(w > 0);
      done += static_cast<std::size_t>(w);
    }
    ::close(fd);
  }
  try {
    dezero::onnx::OnnxModel model(file.path);
    DZ_FUZZ_CHECK(model.input_info().size() == model.input_names().size());
    DZ_FUZZ_CHECK(model.output_info().size() == model.output_names().size());
    DZ_FUZZ_CHECK(!model.output_names().empty());
    DZ_FUZZ_CHECK(model.opset_version() >= 7 && model.opset_version() <= 17);
    for (const auto& info : model.input_info()) DZ_FUZZ_CHECK(info.shape.size() == info.dim_params.size());
    std::set<std::string> keys;
    for (const auto& [key, p] : model.named_params()) {
      DZ_FUZZ_CHECK(keys.insert(key).second);
      DZ_FUZZ_CHECK(p.data().defined() && dezero::is_floating(p.dtype()));
    }
  } catch (const dezero::Error&) {
    return 0;  // refused with a message: the expected outcome for most inputs
  }
  return 0;
}
