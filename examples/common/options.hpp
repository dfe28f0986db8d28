// examples/common/options.hpp - the command lines of the example programs: walking the
// options, their integers (--epochs N, --batch-size N, --size S, ...: the whole text must
// be an integer of at least `lo`, else a dezero::ValueError that names the option and what
// it got, "--epochs needs an integer >= 1, got 'ten'", where std::stoi would say only
// "stoi"), and the --dataset / --device checks of the programs that train on MNIST.
#pragma once

#include <dezero/error.hpp>

#include <exception>
#include <functional>
#include <string>

namespace example {

inline long long integer_option(const std::string& flag, const std::string& text, long long lo) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || n < lo)
    throw dezero::ValueError(flag + " needs an integer >= " + std::to_string(lo) + ", got '" + text + "'");
  return n;
}

// Calls on(option, value) for each option after argv[0]; value() returns the argument that
// follows the option (a ValueError "option --x needs a value" where there is none). `on`
// returns false to stop there (--help).
inline void for_each_option(int argc, char** argv,
                            const std::function<bool(const std::string&, const std::function<std::string()>&)>& on) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::function<std::string()> value = [&]() -> std::string {
      if (i + 1 >= argc) throw dezero::ValueError("option " + a + " needs a value");
      return argv[++i];
    };
    if (!on(a, value)) return;
  }
}

// --dataset is mnist, fashion-mnist or empty (the program picks), --device cpu, cuda or empty.
inline void check_dataset_and_device(const std::string& dataset, const std::string& device) {
  if (!dataset.empty() && dataset != "mnist" && dataset != "fashion-mnist")
    throw dezero::ValueError("--dataset must be mnist or fashion-mnist, got " + dataset);
  if (!device.empty() && device != "cpu" && device != "cuda")
    throw dezero::ValueError("--device must be cpu or cuda, got " + device);
}

}  // namespace example
