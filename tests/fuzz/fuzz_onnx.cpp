// tests/fuzz/fuzz_onnx.cpp - libFuzzer target: arbitrary bytes as a .onnx model file.
//
// dezero::onnx::OnnxModel reads a path, so each input is written to one file in a private folder
// made with mkdtemp (the file itself made with mkstemps, O_EXCL), and the model is loaded from it:
// protobuf parsing, the opset, every node against the op table, dtypes, names, the graph's order,
// initializers and external data (which can only name files in that folder: the model itself).
// Loading must succeed or throw a dezero::Error. A model that loads must describe itself
// consistently: one ValueInfo per input and output name, parameters with data, unique keys.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "dezero/error.hpp"
#include "dezero/onnx.hpp"
#include "fuzz_check.hpp"
#include "fuzz_model_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dezero_fuzz::ModelFile file("fuzz_onnx");
  file.write(data, size);
  try {
    dezero::onnx::OnnxModel model(file.path());
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
