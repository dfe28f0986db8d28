// examples/common/example_util.hpp - what the book's programs need around them to be
// checked by CTest: an --epochs option, a CSV and its plot, and a loss target.
// (The book's model and training code stay in each step's file.)
#pragma once

#include <dezero/dezero.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "plot.hpp"

namespace example {

// The integer after `flag` on the command line (e.g. --epochs 10), else `fallback`.
inline int int_arg(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

// Steps 59-60 end by predicting a cos wave one step ahead with the trained recurrent
// model and plotting it; we write (index, cos, prediction) to a CSV and draw it with
// gnuplot into the PNG of the same stem (step59.csv -> step59.png; plot.hpp).
template <class RecurrentModel>
void write_cos_prediction(RecurrentModel& model, const std::string& path) {
  const double pi = std::acos(-1.0);
  std::vector<double> xs = dezero::cos(dezero::linspace(0, 4 * pi, 1000)).to_vector<double>(), preds;
  model.reset_state();
  {
    auto guard = dezero::no_grad();
    for (double x : xs) preds.push_back(model(dezero::array(x).reshape({1, 1})).data().template item<double>());
  }
  std::ofstream csv(path);
  csv << "i,cos,pred\n";
  for (std::size_t i = 0; i < xs.size(); ++i) csv << i << "," << xs[i] << "," << preds[i] << "\n";
  csv.close();
  std::printf("wrote %zu predictions to %s\n", preds.size(), path.c_str());
  std::fflush(stdout);

  std::string stem = plot::stem_of(path), name = stem.substr(stem.find_last_of('/') + 1);
  plot::Panel panel{"the trained model fed cos(x) one sample at a time, reset_state() first",
                    "sample index (x = linspace(0, 4 pi, 1000))", "y", {}, ""};
  panel.layers = {{path, "1:2", "y = cos(x)", "lines lw 2 lc rgb '#1f77b4'"},
                  {path, "1:3", "predict", "lines lw 2 lc rgb '#ff7f0e'"}};
  panel.setup = "set xrange [0:" + std::to_string(xs.size() - 1) + "]\nset key outside right top";
  std::string title = name.rfind("step", 0) == 0 ? "Step " + name.substr(4) + ": " : std::string();
  plot::draw(stem + ".png", plot::Figure{title + "predicting the next value of a wave", {panel}, 1000, 480});
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
