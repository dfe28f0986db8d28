// examples/onnx_export.cpp - train the MNIST MLP briefly, then write it as an ONNX model
// (dezero::onnx::export_model) that ONNX Runtime, OpenCV's dnn or examples/onnx_run can load.
//
//   MLP 784-100-10 with ReLU (models::MLP({100, 10}, F::relu)), Adam, batch 100, 300 iterations
//   (half an epoch, under a second on one core; 82% test accuracy on Fashion-MNIST), then export
//   and a check: the file is imported again (dezero::onnx::OnnxModel) and must give the trained
//   model's outputs on the whole test set.
//
//   onnx_export --dynamic-batch --out mlp.onnx
//   onnx_run mlp.onnx --input digit.png
//
// Options:
//   --out FILE.onnx                 where the model goes (default mlp.onnx)
//   --dynamic-batch                 the batch axis of input and output is the symbol "batch"
//                                   (else the file says 1, the batch it was traced with)
//   --opset N                       13 (default) to 17
//   --max-iters N                   training iterations (default 300; 0: none, the random model)
//   --batch-size N                  default 100
//   --dataset mnist|fashion-mnist   default: MNIST when its files are in the data directory or
//                                   can be downloaded, else Fashion-MNIST (Debian's
//                                   dataset-fashion-mnist package; examples/mnist.cpp does the same)
//   --data DIR                      data directory (else $DEZERO_HOME, else ~/.dezero)
//   --seed N                        the weights and the shuffling (default 0)
#include <dezero/dataloaders.hpp>
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/onnx.hpp>
#include <dezero/optimizers.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "common/mnist_train.hpp"
#include "common/options.hpp"
#include "common/report.hpp"

using namespace dezero;

namespace {

struct Options {
  std::string out = "mlp.onnx", dataset, data_dir;
  bool dynamic_batch = false;
  int opset = 13;
  std::int64_t max_iters = 300, batch_size = 100, seed = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  example::for_each_option(argc, argv, [&](const std::string& a, const std::function<std::string()>& value) {
    if (a == "--out") o.out = value();
    else if (a == "--dynamic-batch") o.dynamic_batch = true;
    else if (a == "--opset") o.opset = static_cast<int>(example::integer_option(a, value(), 1));
    else if (a == "--max-iters") o.max_iters = example::integer_option(a, value(), 0);
    else if (a == "--batch-size") o.batch_size = example::integer_option(a, value(), 1);
    else if (a == "--dataset") o.dataset = value();
    else if (a == "--data") o.data_dir = value();
    else if (a == "--seed") o.seed = example::integer_option(a, value(), 0);
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: onnx_export [--out FILE.onnx] [--dynamic-batch] [--opset N] [--max-iters N]\n"
                   "                   [--batch-size N] [--dataset mnist|fashion-mnist] [--data DIR] [--seed N]\n";
      std::exit(0);
    } else {
      throw ValueError("unknown option " + a + " (onnx_export --help lists them)");
    }
    return true;
  });
  example::check_dataset_and_device(o.dataset, "");
  return o;
}

// Loss and accuracy of `model` over `loader` (no_grad); when `other` is given, the largest
// |model - other| over the outputs and the largest |output| (its scale).
struct Eval {
  double loss = 0, acc = 0, max_diff = 0, max_abs = 0;
};
Eval evaluate(Model& model, DataLoader& loader, std::int64_t n, Model* other = nullptr) {
  auto g = no_grad();
  Eval e;
  for (auto& [x, t] : loader) {
    Variable y = model(x);
    const double bs = static_cast<double>(t.len());
    e.loss += F::softmax_cross_entropy(y, t).data().item<double>() * bs;
    e.acc += F::accuracy(y, t).data().item<double>() * bs;
    if (other) {
      const Tensor d = abs((*other)(x).data() - y.data());
      e.max_diff = std::max(e.max_diff, d.max().item<double>());
      e.max_abs = std::max(e.max_abs, abs(y.data()).max().item<double>());
    }
  }
  e.loss /= static_cast<double>(n);
  e.acc /= static_cast<double>(n);
  return e;
}

// "'image' (batch, 784) float32"
std::string describe(const onnx::ValueInfo& v) {
  std::string s = "'" + v.name + "' (";
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (i) s += ", ";
    const bool symbol = i < v.dim_params.size() && !v.dim_params[i].empty();
    s += symbol ? v.dim_params[i] : v.shape[i] < 0 ? std::string("?") : std::to_string(v.shape[i]);
  }
  return s + ") " + dtype_name(v.dtype);
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  if (!onnx::is_available()) throw NotImplementedError("this build of dezero has no dezero::onnx");
  random::seed(static_cast<std::uint64_t>(o.seed));

  mnist_train::Options data;
  data.dataset = o.dataset;
  data.data_dir = o.data_dir;
  auto [train_set, test_set] = mnist_train::load_data(data, datasets::MNIST::default_transform());
  std::cout << "training: " << train_set->size() << " images, test: " << test_set->size() << " images\n";

  // --- train briefly ------------------------------------------------------------------------------
  models::MLP model({100, 10}, F::relu);
  optimizers::Adam optimizer;
  optimizer.setup(model);
  DataLoader train_loader(*train_set, o.batch_size, true);
  std::int64_t iter = 0;
  double sum_loss = 0;
  if (train_set->size() == 0 || test_set->size() == 0) throw ValueError("the data set has no images");
  while (iter < o.max_iters) {
    for (auto& [x, t] : train_loader) {
      Variable loss = F::softmax_cross_entropy(model(x), t);
      model.cleargrads();
      loss.backward();
      optimizer.update();
      sum_loss += loss.data().item<double>();
      if (++iter % 100 == 0 || iter == o.max_iters) {
        std::printf("iter %lld: loss %.4f (mean of the last %lld)\n", static_cast<long long>(iter),
                    sum_loss / static_cast<double>((iter - 1) % 100 + 1), static_cast<long long>((iter - 1) % 100 + 1));
        sum_loss = 0;
      }
      if (iter == o.max_iters) break;
    }
  }
  DataLoader test_loader(*test_set, o.batch_size, false);
  const Eval trained = evaluate(model, test_loader, test_set->size());
  std::printf("test loss %.4f, accuracy %.4f\n", trained.loss, trained.acc);

  // --- export -------------------------------------------------------------------------------------
  // x: (1, 784), one test image: the trace runs the model once on it (in test mode).
  const Variable x(test_set->get_batch({0}).first);
  onnx::ExportOptions opts;
  opts.opset_version = o.opset;
  opts.dynamic_batch = o.dynamic_batch;
  opts.input_names = {"image"};
  opts.output_names = {"logits"};
  onnx::export_model(model, {x}, o.out, opts);

  // --- read it back -------------------------------------------------------------------------------
  onnx::OnnxModel imported(o.out);
  std::cout << "wrote " << o.out << ": opset " << imported.opset_version() << ", input "
            << describe(imported.input_info().at(0)) << ", output " << describe(imported.output_info().at(0)) << "\n";
  std::int64_t n_params = 0;
  for (const Parameter& p : imported.params()) n_params += p.size();
  std::cout << "imported " << o.out << ": " << imported.op_types().size() << " nodes, " << imported.params().size()
            << " parameter arrays (" << n_params << " values)\n";
  // Without --dynamic-batch the file's batch is 1: the check feeds one image at a time.
  DataLoader check_loader(*test_set, o.dynamic_batch ? o.batch_size : 1, false);
  const Eval again = evaluate(imported, check_loader, test_set->size(), &model);
  std::printf("imported model: test accuracy %.4f, largest |difference| from the trained model %.3g "
              "(logits up to %.3g)\n", again.acc, again.max_diff, again.max_abs);
  // float32: the two may sum in another order (Gemm against MatMul + Add).
  if (!(again.max_diff <= 1e-5 * std::max(1.0, again.max_abs)))
    throw ValueError("the imported model's outputs differ from the trained model's");
  std::cout << "the imported model matches the trained one\n";
  return 0;
} catch (const std::exception& e) {
  return example::report_error("onnx_export", e);
}
