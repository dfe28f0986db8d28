// examples/step52.cpp - Step 52: GPU support. The step 51 training (MLP((1000, 10)),
// sigmoid, SGD, batch 100), with the data loader and the model moved to the GPU,
// timing each epoch. to_gpu() swaps the storage of every parameter in place, so the
// optimizer set up before keeps working on the same Parameters.
//
// The DeZero Python it mirrors (steps/step52.py):
//   max_epoch = 5
//   batch_size = 100
//   train_set = dezero.datasets.MNIST(train=True)
//   train_loader = DataLoader(train_set, batch_size)
//   model = MLP((1000, 10))
//   optimizer = optimizers.SGD().setup(model)
//   # GPU mode
//   if dezero.cuda.gpu_enable:
//       train_loader.to_gpu()
//       model.to_gpu()
//   for epoch in range(max_epoch):
//       start = time.time()
//       sum_loss = 0
//       for x, t in train_loader:
//           y = model(x)
//           loss = F.softmax_cross_entropy(y, t)
//           model.cleargrads()
//           loss.backward()
//           optimizer.update()
//           sum_loss += float(loss.data) * len(t)
//       elapsed_time = time.time() - start
//       print('epoch: {}, loss: {:.4f}, time: {:.4f}[sec]'.format(
//           epoch + 1, sum_loss / len(train_set), elapsed_time))
//
// Which device (a decision of this port, documented in README.md):
//   no --device     like the book: the GPU when dezero::cuda::is_available(), else the CPU,
//                   and the first line says which (exit code 0 either way);
//   --device cuda   the GPU, or, on a machine without one, an error that says so
//                   ("no CUDA device ...") and exit code 1: nothing is timed on the CPU
//                   when the GPU was asked for;
//   --device cpu    the CPU (to compare the times).
// The loss is summed on the device and read once per epoch: the book's float(loss.data)
// in every iteration would make each GPU step wait for the host.
// Other options as in step 51: --epochs N, --data DIR, --dataset mnist|fashion-mnist,
// --limit N (first N training samples), --seed N.
#include <dezero/cuda.hpp>
#include <dezero/dataloaders.hpp>
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>

#include "common/options.hpp"
#include "common/report.hpp"

using dezero::DataLoader;
using dezero::Device;
using dezero::Tensor;
using dezero::Variable;
namespace F = dezero::F;
namespace datasets = dezero::datasets;

namespace {

struct Options {
  int max_epoch = 5;
  std::string data_dir, dataset = "mnist", device;
  std::int64_t limit = 0;
  long long seed = -1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) throw dezero::ValueError("step52: option " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--epochs") o.max_epoch = static_cast<int>(example::integer_option(a, v, 0));
    else if (a == "--data") o.data_dir = v;
    else if (a == "--dataset") o.dataset = v;
    else if (a == "--device") o.device = v;
    else if (a == "--limit") o.limit = example::integer_option(a, v, 0);
    else if (a == "--seed") o.seed = example::integer_option(a, v, 0);
    else throw dezero::ValueError("step52: unknown option " + a +
                                  "; usage: step52 [--device cpu|cuda] [--epochs N] [--data DIR]"
                                  " [--dataset mnist|fashion-mnist] [--limit N] [--seed N]");
  }
  if (o.dataset != "mnist" && o.dataset != "fashion-mnist")
    throw dezero::ValueError("step52: --dataset must be mnist or fashion-mnist, got " + o.dataset);
  if (!o.device.empty() && o.device != "cpu" && o.device != "cuda")
    throw dezero::ValueError("step52: --device must be cpu or cuda, got " + o.device);
  return o;
}

datasets::Dataset load(const Options& o, bool train) {
  auto tf = datasets::MNIST::default_transform();
  datasets::Dataset full = o.dataset == "mnist" ? datasets::MNIST(train, tf, {}, o.data_dir)
                                                : datasets::FashionMNIST(train, tf, {}, o.data_dir);
  if (o.limit <= 0 || o.limit >= full.size()) return full;
  dezero::Slice first(0, o.limit);
  return datasets::Dataset(full.data()[first], full.label()[first]);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  const bool gpu_enable = dezero::cuda::is_available();  // dezero.cuda.gpu_enable
  if (o.device == "cuda" && !gpu_enable)
    throw dezero::DeviceError(
        "--device cuda: no CUDA device is available on this machine (dezero::cuda::is_available() is false); "
        "hint: run step52 without --device (it trains on the CPU then) or with --device cpu");
  const bool use_gpu = o.device == "cuda" || (o.device.empty() && gpu_enable);
  if (use_gpu)
    std::cout << "device: cuda:0 (" << dezero::cuda::Device(0).name() << ")\n";
  else
    std::cout << "device: cpu" << (o.device.empty() ? " (no CUDA device: dezero::cuda::is_available() is false)" : "")
              << "\n";
  if (o.seed >= 0) dezero::random::seed(static_cast<std::uint64_t>(o.seed));

  const int max_epoch = o.max_epoch;
  const std::int64_t batch_size = 100;

  datasets::Dataset train_set = load(o, true);
  DataLoader train_loader(train_set, batch_size);
  dezero::models::MLP model({1000, 10});
  auto optimizer = dezero::optimizers::SGD().setup(model);  // DeZero's one line

  // GPU mode
  if (use_gpu) {
    train_loader.to_gpu();
    model.to_gpu();
  }
  const Device dev = use_gpu ? Device::cuda(0) : Device::cpu();

  for (int epoch = 0; epoch < max_epoch; ++epoch) {
    double start = now_s();
    Tensor sum_loss = dezero::zeros({}, dezero::float64, dev);
    for (auto& [x, t] : train_loader) {
      Variable y = model(x);
      Variable loss = F::softmax_cross_entropy(y, t);
      model.cleargrads();
      loss.backward();
      optimizer.update();
      sum_loss += loss.data().astype(dezero::float64) * static_cast<double>(t.len());
    }
    double mean_loss = sum_loss.item<double>() / static_cast<double>(train_set.size());  // waits for the device
    double elapsed_time = now_s() - start;
    std::printf("epoch: %d, loss: %.4f, time: %.4f[sec]\n", epoch + 1, mean_loss, elapsed_time);
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  return example::report_error("step52", e);
}
