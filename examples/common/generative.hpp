// examples/common/generative.hpp - what examples/gan.cpp (DeZero's gan.py) and
// examples/vae.cpp (DeZero's vae.py) share: the options, the device, the training set
// (MNIST, else Fashion-MNIST, saying which), a clock, and an image grid.
//
// Options:
//   --dataset mnist|fashion-mnist   default: MNIST when its files are in the data directory
//                                   or can be downloaded, else Fashion-MNIST (Debian's
//                                   dataset-fashion-mnist package, /usr/share/datasets/fashion-mnist)
//   --data DIR                      data directory (else $DEZERO_HOME, else ~/.dezero)
//   --epochs N  --batch-size N      defaults: each program's (DeZero's) values
//   --limit N                       at most N iterations per epoch (short runs, CTest)
//   --device cpu|cuda               default: cuda when a GPU is present
//   --out DIR                       where the PNG files go (default: the current directory)
//   --seed N                        dezero::random's seed (default 0)
#pragma once

#include <dezero/dataloaders.hpp>
#include <dezero/datasets.hpp>
#include <dezero/dezero.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "device.hpp"
#include "options.hpp"

namespace generative {

using namespace dezero;

struct Options {
  std::string dataset, data_dir, device, out = ".";
  int epochs = 0;
  std::int64_t batch_size = 0, limit = 0;  // limit 0: whole epochs
  std::uint64_t seed = 0;
};

inline void usage(const char* program) {
  std::cout << "usage: " << program
            << " [--dataset mnist|fashion-mnist] [--data DIR] [--epochs N] [--batch-size N] [--limit N]\n"
            << std::string(8 + std::string(program).size(), ' ')
            << "[--device cpu|cuda] [--out DIR] [--seed N]\n";
}

// The options after argv[0]; `epochs` and `batch_size` are the program's defaults.
// A bad option is a ValueError naming it. `help` is set (and the usage printed) for -h.
inline Options parse(int argc, char** argv, const char* program, int epochs, std::int64_t batch_size, bool& help) {
  Options o;
  o.epochs = epochs;
  o.batch_size = batch_size;
  help = false;
  example::for_each_option(argc, argv, [&](const std::string& a, const std::function<std::string()>& value) {
    if (a == "--dataset") o.dataset = value();
    else if (a == "--data") o.data_dir = value();
    else if (a == "--epochs") o.epochs = static_cast<int>(example::integer_option(a, value(), 1));
    else if (a == "--batch-size") o.batch_size = example::integer_option(a, value(), 1);
    else if (a == "--limit") o.limit = example::integer_option(a, value(), 1);
    else if (a == "--device") o.device = value();
    else if (a == "--out") o.out = value();
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(example::integer_option(a, value(), 0));
    else if (a == "-h" || a == "--help") help = true;
    else throw ValueError("unknown option " + a + "; hint: " + program + " --help");
    return !help;
  });
  if (help) {
    usage(program);
    return o;
  }
  example::check_dataset_and_device(o.dataset, o.device);
  return o;
}

// The device the options ask for (cuda when present and none was asked), printed.
inline Device pick_device(const Options& o, const char* program) {
  return example::pick_device(o.device, std::string("\nhint: run ") + program + " without --device (or with --device cpu)");
}

// The training images as (N, 1, 28, 28) float32 in [0, 1] (DeZero: x / 255 as float32):
// MNIST if its files are there (or can be downloaded), else Fashion-MNIST, saying which.
// Neither: a dezero::IOError saying where the files were looked for and what to install.
inline std::unique_ptr<datasets::Dataset> load_train_images(const Options& o) {
  transforms::Transform to_unit = transforms::Compose({transforms::ToFloat(), transforms::Normalize(0.0, 255.0)});
  std::string mnist_error;
  if (o.dataset != "fashion-mnist") {
    try {
      auto train = std::make_unique<datasets::MNIST>(true, to_unit, transforms::Transform{}, o.data_dir);
      std::cout << "dataset: MNIST (" << train->size() << " training images)\n";
      return train;
    } catch (const Error& e) {
      if (o.dataset == "mnist") throw;
      mnist_error = e.what();
      std::cout << "MNIST is not available (" << mnist_error << ")\n";
    }
  }
  try {
    auto train = std::make_unique<datasets::FashionMNIST>(true, to_unit, transforms::Transform{}, o.data_dir);
    std::cout << "dataset: Fashion-MNIST (" << train->size() << " training images)"
              << (o.dataset.empty() ? " instead of MNIST" : "") << "\n";
    return train;
  } catch (const Error& e) {
    throw IOError(std::string("no training data: ") +
                  (mnist_error.empty() ? std::string() : "MNIST: " + mnist_error + "; ") + "Fashion-MNIST: " +
                  e.what() +
                  "\nhint: put MNIST's train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz in --data DIR "
                  "(or $DEZERO_HOME), or install Debian's dataset-fashion-mnist package");
  }
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Iterations one epoch runs: the loader's, or --limit when that is smaller.
inline std::int64_t iterations(const DataLoader& loader, const Options& o) {
  std::int64_t n = loader.size();
  return o.limit > 0 && o.limit < n ? o.limit : n;
}

inline std::string out_path(const Options& o, const std::string& name) {
  return o.out.empty() || o.out == "." ? name : o.out + "/" + name;
}

}  // namespace generative
