// examples/common/example_util.hpp - what the book's programs need around them to be
// checked by CTest: an --epochs option, a CSV instead of a plot, and a loss target.
// (The book's code itself stays in each step's file.)
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace example {

// The integer after `flag` on the command line (e.g. --epochs 10), else `fallback`.
inline int int_arg(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

// Steps 59-60 plot the cos wave and the model's one-step-ahead prediction; we write them.
inline void write_prediction_csv(const std::string& path, const std::vector<double>& xs,
                                 const std::vector<double>& preds) {
  std::ofstream csv(path);
  csv << "i,cos,pred\n";
  for (std::size_t i = 0; i < xs.size() && i < preds.size(); ++i) csv << i << "," << xs[i] << "," << preds[i] << "\n";
  std::printf("wrote %zu predictions to %s\n", preds.size(), path.c_str());
}

// Prints how far the loss fell from the first epoch to the last; the exit code is 1
// unless it fell at least `factor` times.
inline int report_loss_fall(double first_loss, double last_loss, double factor = 10.0) {
  double ratio = first_loss / last_loss;
  bool ok = ratio >= factor;
  std::printf("loss fell by %.1fx\n", ratio);
  std::printf("loss fell >= %gx: %s\n", factor, ok ? "yes" : "no");
  return ok ? 0 : 1;
}

}  // namespace example
