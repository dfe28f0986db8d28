// tests/fuzz/fuzz_onnx_run.cpp - libFuzzer target: arbitrary bytes as a .onnx model file that,
// when it loads, is run.
//
// The bytes go through a file as in fuzz_onnx.cpp (a private mkdtemp folder, the model made with
// mkstemps). A model that loads is run once under dezero::test_mode() and no_grad() on small
// inputs of its declared dtypes and shapes: a symbolic dimension ("batch") is 2, an unknown one 1,
// a fixed one as declared (models with more than 64 along an axis or 4096 input elements in all
// are skipped). The values are small and varied: floats in [-1, 1], integers 0, 1, 2. Running
// must return one defined Variable per output or throw a dezero::Error. The importer's cap on the
// elements an op may create from sizes in the file or in its inputs is lowered to 2^22 here, so
// a model that asks for more is refused before the allocation (libFuzzer's -malloc_limit_mb
// reports it otherwise), and the memory one run may hold (onnx::set_max_run_bytes) to 256 MiB,
// whatever op allocates.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dezero/dezero.hpp"
#include "dezero/error.hpp"
#include "dezero/onnx.hpp"
#include "dezero/onnx/import_util.hpp"
#include "fuzz_check.hpp"
#include "fuzz_model_file.hpp"

namespace {

// An input of `shape` and `dtype`: floats (i mod 5 - 2) / 2, integers i mod 3.
dezero::Tensor input_values(const dezero::Shape& shape, dezero::DType dtype) {
  const std::int64_t n = shape.numel();
  std::vector<double> v(static_cast<std::size_t>(n));
  const bool ints = dezero::is_integer(dtype);
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = ints ? static_cast<double>(i % 3) : static_cast<double>(i % 5 - 2) / 2.0;
  return dezero::array(v, shape, dtype);
}

constexpr std::int64_t kMaxExtent = 64;
constexpr std::int64_t kMaxInputElements = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dezero_fuzz::ModelFile file("fuzz_onnx_run");
  static const bool capped = (dezero::onnx::detail::set_max_output_elements(std::int64_t{1} << 22),
                               dezero::onnx::set_max_run_bytes(std::int64_t{256} << 20), true);
  (void)capped;
  file.write(data, size);
  try {
    dezero::onnx::OnnxModel model(file.path());
    dezero::VariableList xs;
    std::int64_t total = 0;
    for (const auto& info : model.input_info()) {
      dezero::Shape shape;
      std::int64_t n = 1;
      for (std::size_t i = 0; i < info.shape.size(); ++i) {
        std::int64_t d = info.shape[i];
        if (d < 0) d = info.dim_params[i].empty() ? 1 : 2;
        if (d > kMaxExtent) return 0;
        shape.push_back(d);
        n *= d;
      }
      total += n;
      if (total > kMaxInputElements) return 0;
      xs.emplace_back(input_values(shape, info.dtype));
    }
    auto train = dezero::test_mode();
    auto grad = dezero::no_grad();
    const dezero::VariableList ys = model.forward_multi(xs);
    DZ_FUZZ_CHECK(ys.size() == model.output_names().size());
    for (const auto& y : ys) DZ_FUZZ_CHECK(y.defined());
  } catch (const dezero::Error&) {
    return 0;  // refused with a message: at load time, or a run-time shape or value problem
  }
  return 0;
}
