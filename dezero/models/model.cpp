// dezero/models/model.cpp - dezero::Model: a Layer that can plot its graph (step 45;
// DeZero models.py).
#include "dezero/models.hpp"

#include "dezero/utils.hpp"

namespace dezero {

std::string Model::plot(const Variable& x, const std::string& to_file) { return plot(VariableList{x}, to_file); }

std::string Model::plot(const VariableList& xs, const std::string& to_file) {
  VariableList ys = forward_multi(xs);
  if (ys.empty()) throw ValueError("Model::plot: forward returned no output");
  return utils::plot_dot_graph(ys[0], true, to_file);
}

}  // namespace dezero
