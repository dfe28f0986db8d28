// examples/common/mnist_train.hpp - what examples/mnist.cpp (the MLP of step 51) and
// examples/mnist_cnn.cpp (a small CNN) share: the options, the data sets (MNIST, else
// Fashion-MNIST), the progress line and the training loop with its per-epoch lines, the
// learning curves (PNG) and their CSV, and snapshots to resume a killed run from.
// Each program keeps its model and optimizer.
//
// Options:
//   --dataset mnist|fashion-mnist   default: MNIST when its files are in the data
//                                   directory or can be downloaded, else Fashion-MNIST
//                                   (Debian's dataset-fashion-mnist package)
//   --data DIR                      data directory (else $DEZERO_HOME, else ~/.dezero)
//   --epochs N  --batch-size N
//   --device cpu|cuda               default: cuda when a GPU is present
//   --save FILE.npz  --load FILE.npz   weights (DeZero's key scheme)
//   --plot FILE.png                 learning curves (the CSV goes next to it, FILE.csv)
//   --out DIR                       snapshots of the whole training state (training::Snapshot):
//                                   DIR/snapshot_iter_<N>.npz at each epoch's end, the last 3 kept
//   --snapshot-every N              also every N iterations (implies --out result)
//   --resume                        continue from the newest snapshot in --out (implies --out
//                                   result); without one, start from the beginning and say so
//   --quiet                         no progress line
// The loss and accuracy are summed on the device and read once per epoch (and every 20
// batches for the progress line, and at each snapshot), so a GPU step never waits for the host.
#pragma once

#include <dezero/dataloaders.hpp>
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>
#include <dezero/models.hpp>
#include <dezero/optimizers.hpp>
#include <dezero/training.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "options.hpp"
#include "plot.hpp"

namespace mnist_train {

using namespace dezero;

struct Options {
  std::string dataset, data_dir, device, save, load, plot, out;
  std::string precision = "fp32";  // fp32, or bf16 / fp16: mixed precision (dezero::autocast)
  int epochs = 5;
  std::int64_t batch_size = 100;
  std::int64_t snapshot_every = 0;  // iterations; 0: at epoch ends only (when --out is given)
  bool resume = false, quiet = false;
};

inline void usage(const char* program) {
  const std::string pad(8 + std::string(program).size(), ' ');
  std::cerr << "usage: " << program << " [--dataset mnist|fashion-mnist] [--data DIR] [--epochs N] [--batch-size N]\n"
            << pad << "[--device cpu|cuda] [--save FILE.npz] [--load FILE.npz] [--plot FILE.png]\n"
            << pad << "[--out DIR] [--snapshot-every N] [--resume] [--quiet] [--precision fp32|bf16|fp16]\n";
}

// `plot` is the default --plot file. `extra`, when given, sees every option first and returns
// true for one it took (a program's own, such as mnist_mn's --communicator).
using ExtraOption = std::function<bool(const std::string& flag, const std::function<std::string()>& value)>;
inline Options parse(int argc, char** argv, const char* program, const std::string& plot,
                     const ExtraOption& extra = {}) {
  Options o;
  o.plot = plot;
  example::for_each_option(argc, argv, [&](const std::string& a, const std::function<std::string()>& value) {
    if (extra && extra(a, value)) return true;
    if (a == "--dataset") o.dataset = value();
    else if (a == "--data") o.data_dir = value();
    // --epochs 0: no training (gpu-check's smoke test loads the data so)
    else if (a == "--epochs") o.epochs = static_cast<int>(example::integer_option(a, value(), 0));
    else if (a == "--batch-size") o.batch_size = example::integer_option(a, value(), 1);
    else if (a == "--device") o.device = value();
    else if (a == "--save") o.save = value();
    else if (a == "--load") o.load = value();
    else if (a == "--plot") o.plot = value();
    else if (a == "--out") o.out = value();
    else if (a == "--snapshot-every") o.snapshot_every = example::integer_option(a, value(), 1);
    else if (a == "--resume") o.resume = true;
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--precision") {
      o.precision = value();
      if (o.precision != "fp32" && o.precision != "bf16" && o.precision != "fp16")
        throw ValueError("--precision must be fp32, bf16 or fp16, got '" + o.precision + "'");
    }
    else if (a == "-h" || a == "--help") { usage(program); std::exit(0); }
    else throw ValueError("unknown option " + a);
    return true;
  });
  example::check_dataset_and_device(o.dataset, o.device);
  if (o.out.empty() && (o.resume || o.snapshot_every > 0)) o.out = "result";  // Chainer's default --out
  return o;
}

// The device the options ask for (cuda when present and none was asked), printed.
inline Device pick_device(const Options& o) { return example::pick_device(o.device); }

// Loads train and test sets: MNIST if possible, else Fashion-MNIST, saying which and why.
// `transform`: MNIST::default_transform() (flat (784,) rows) for the MLP, no Flatten for a CNN.
inline std::pair<std::unique_ptr<datasets::Dataset>, std::unique_ptr<datasets::Dataset>> load_data(
    const Options& o, const transforms::Transform& transform) {
  if (o.dataset != "fashion-mnist") {
    try {
      auto train = std::make_unique<datasets::MNIST>(true, transform, transforms::Transform{}, o.data_dir);
      auto test = std::make_unique<datasets::MNIST>(false, transform, transforms::Transform{}, o.data_dir);
      std::cout << "dataset: MNIST" << (o.dataset.empty() ? " (its files are in the data directory or were downloaded)" : "") << "\n";
      return {std::move(train), std::move(test)};
    } catch (const Error& e) {
      if (o.dataset == "mnist") throw;
      std::cout << "MNIST is not available (" << e.what() << ")\n"
                << "dataset: Fashion-MNIST instead\n";
    }
  } else {
    std::cout << "dataset: Fashion-MNIST (--dataset fashion-mnist)\n";
  }
  auto train = std::make_unique<datasets::FashionMNIST>(true, transform, transforms::Transform{}, o.data_dir);
  auto test = std::make_unique<datasets::FashionMNIST>(false, transform, transforms::Transform{}, o.data_dir);
  return {std::move(train), std::move(test)};
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Curves {
  std::vector<double> train_loss, train_acc, test_loss, test_acc, seconds;
};

// Trains `model` with `optimizer` for o.epochs on `dev`, printing one line per epoch;
// --load before, --save and the curves (PNG and CSV) after; with --out, a snapshot of the
// whole state at each epoch's end (and every --snapshot-every iterations), and --resume
// continues from the newest one: a run killed at any moment and resumed prints the same
// losses and ends with the same weights as one never stopped.
// `title` names the model and optimizer in the figure's title.
inline Curves train(Model& model, optimizers::Optimizer& optimizer, datasets::Dataset& train_set,
                    datasets::Dataset& test_set, const Options& o, Device dev, const std::string& title) {
  DataLoader train_loader(train_set, o.batch_size, true);
  DataLoader test_loader(test_set, o.batch_size, false);
  if (!o.load.empty() || !o.out.empty()) model(train_set.get_batch({0}).first);  // the lazily-initialised weights
  if (!o.load.empty()) {
    model.load_weights(o.load);
    std::cout << "loaded weights from " << o.load << "\n";
  }
  if (dev.is_cuda()) {
    train_loader.to_gpu();
    test_loader.to_gpu();
    model.to_gpu();
  }

  // The state of the loop that a snapshot keeps besides the model, the optimizer, the loader
  // and the random streams: where it is, this epoch's sums so far, the curves.
  Curves c;
  std::int64_t it = 0, n = 0;
  int epochs_done = 0;
  double loss_sum = 0, acc_sum = 0;
  training::Snapshot snap;
  snap.model(model).optimizer(optimizer).loader("train", train_loader);
  snap.value("iteration", it).value("epoch", epochs_done).value("epoch_loss_sum", loss_sum)
      .value("epoch_acc_sum", acc_sum).value("epoch_samples", n);
  snap.value("train_loss", c.train_loss).value("train_acc", c.train_acc).value("test_loss", c.test_loss)
      .value("test_acc", c.test_acc).value("seconds", c.seconds);
  std::optional<training::Checkpointer> ckpt;
  if (!o.out.empty()) {
    training::CheckpointOptions co;
    co.every = o.snapshot_every;
    ckpt.emplace(o.out, snap, co);
    if (o.resume) ckpt->resume();
  }

  // Mixed precision (--precision bf16|fp16): the products in 16 bits with float32 sums, all
  // else float32; float16 with Chainer's dynamic loss scaling, since its gradients underflow.
  auto amp = autocast(o.precision == "bf16" ? bfloat16 : o.precision == "fp16" ? float16 : float32);
  if (o.precision == "fp16") optimizer.loss_scaling();
  if (o.precision != "fp32") std::printf("precision: %s (autocast)\n", o.precision.c_str());

  const std::int64_t per_epoch = train_loader.size();
  training::ProgressOptions po;
  po.quiet = o.quiet;
  training::Progress progress(o.epochs * per_epoch, per_epoch, it, po);
  while (epochs_done < o.epochs) {
    const int epoch = epochs_done + 1;
    double t0 = now_s();
    Tensor sum_loss = full({}, loss_sum, float64, dev), sum_acc = full({}, acc_sum, float64, dev);
    std::int64_t batch = train_loader.iteration();
    for (auto& [x, t] : train_loader) {
      Variable y = model(x);
      Variable loss = F::softmax_cross_entropy(y, t);
      Variable acc = F::accuracy(y, t);
      model.cleargrads();
      optimizer.backward(loss);  // loss.backward(), scaled when loss scaling is on
      optimizer.update();
      double bs = static_cast<double>(t.len());
      sum_loss += loss.data().astype(float64) * bs;
      sum_acc += acc.data().astype(float64) * bs;
      n += t.len();
      ++it;
      if (++batch % 20 == 0 || batch == per_epoch) progress.update(it, sum_loss.item<double>() / n);
      // Due at the epoch's last batch: the epoch-end snapshot below (with the test figures) is that one.
      if (ckpt && ckpt->due(it) && batch != per_epoch) {
        loss_sum = sum_loss.item<double>();
        acc_sum = sum_acc.item<double>();
        ckpt->save(it);
      }
    }
    c.train_loss.push_back(sum_loss.item<double>() / n);
    c.train_acc.push_back(sum_acc.item<double>() / n);

    Tensor tl = zeros({}, float64, dev), ta = zeros({}, float64, dev);
    std::int64_t tn = 0;
    {
      auto g = no_grad();
      for (auto& [x, t] : test_loader) {
        Variable y = model(x);
        double bs = static_cast<double>(t.len());
        tl += F::softmax_cross_entropy(y, t).data().astype(float64) * bs;
        ta += F::accuracy(y, t).data().astype(float64) * bs;
        tn += t.len();
      }
    }
    c.test_loss.push_back(tl.item<double>() / tn);
    c.test_acc.push_back(ta.item<double>() / tn);
    c.seconds.push_back(now_s() - t0);
    progress.finish();
    std::printf("epoch %d: train loss %.4f, accuracy %.4f | test loss %.4f, accuracy %.4f | %.1f s\n", epoch,
                c.train_loss.back(), c.train_acc.back(), c.test_loss.back(), c.test_acc.back(), c.seconds.back());
    std::fflush(stdout);
    epochs_done = epoch;
    loss_sum = acc_sum = 0;
    n = 0;
    if (ckpt) ckpt->save(it);
  }

  if (!o.save.empty()) {
    model.save_weights(o.save);
    std::cout << "saved weights to " << o.save << "\n";
  }
  if (!o.plot.empty() && !c.train_loss.empty()) {
    const std::string dataset = dynamic_cast<const datasets::FashionMNIST*>(&train_set) ? "Fashion-MNIST"
                                : dynamic_cast<const datasets::CIFAR10*>(&train_set)    ? "CIFAR-10"
                                                                                        : "MNIST";
    plot::line_chart(o.plot,
                     {{{"train loss", c.train_loss, {31, 119, 180}}, {"test loss", c.test_loss, {255, 127, 14}}},
                      {{"train accuracy", c.train_acc, {31, 119, 180}}, {"test accuracy", c.test_acc, {255, 127, 14}}}},
                     {{"loss", "epoch", "softmax cross entropy"}, {"accuracy", "epoch", "accuracy"}},
                     dataset + ": " + title + ", " + std::to_string(c.train_loss.size()) +
                         (c.train_loss.size() == 1 ? " epoch" : " epochs"));
  }
  return c;
}

}  // namespace mnist_train
