// tests/consumer/onnx.cpp - an installed dezero::onnx (libdezero_onnx) through find_package(dezero):
// built when the package has it (the target dezero::onnx). A round trip: an MLP exported with
// export_model (dynamic batch), imported as an OnnxModel, the same outputs at two batch sizes, the
// same keys in named_params(), and one SGD step on the import. Exits non-zero on any mismatch.
#include <dezero/dezero.hpp>
#include <dezero/onnx.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

int main() try {
  namespace F = dezero::F;
  dezero::random::seed(0);
  dezero::models::MLP model({8, 3});
  dezero::Variable x(dezero::random::randn({2, 4}, dezero::float32));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("dezero_consumer_" + std::to_string(getpid()) + ".onnx")).string();
  dezero::onnx::ExportOptions opts;
  opts.dynamic_batch = true;
  dezero::onnx::export_model(model, {x}, path, opts);

  dezero::onnx::OnnxModel m(path);
  bool ok = dezero::onnx::is_available() && m.input_names().size() == 1 && m.output_names().size() == 1;
  for (std::int64_t n : {2, 5}) {
    dezero::Variable xn(dezero::random::randn({n, 4}, dezero::float32));
    dezero::Variable y0 = model(xn), y1 = m(xn);
    ok = ok && dezero::utils::array_allclose(y0.data(), y1.data(), 1e-5, 1e-6);
  }
  auto a = model.named_params(), b = m.named_params();
  ok = ok && a.size() == b.size();
  for (std::size_t i = 0; ok && i < a.size(); ++i) ok = a[i].first == b[i].first;

  dezero::optimizers::SGD sgd(0.1);
  sgd.setup(m);
  dezero::Variable t(dezero::array(std::vector<std::int64_t>{0, 2}, {2}));
  dezero::Variable loss0 = F::softmax_cross_entropy(m(x), t);
  m.cleargrads();
  loss0.backward();
  sgd.update();
  dezero::Variable loss1 = F::softmax_cross_entropy(m(x), t);
  ok = ok && loss1.data().item<float>() < loss0.data().item<float>();
  std::remove(path.c_str());
  if (!ok) {
    std::cerr << "consumer_onnx: FAILED\n";
    return 1;
  }
  std::cout << "consumer_onnx: all checks passed (" << m.op_types().size() << " nodes, loss "
            << loss0.data().item<float>() << " -> " << loss1.data().item<float>() << ")\n";
  return 0;
} catch (const std::exception& e) {
  std::cout.flush();
  std::cerr << "consumer_onnx: " << e.what() << "\n";
  return 1;
}
