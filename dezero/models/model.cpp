// layers/models.cpp - Model::plot, models::Sequential, models::MLP (DeZero models.py).
#include "dezero/models.hpp"

#include "dezero/utils.hpp"

namespace dezero {

std::string Model::plot(const Variable& x, const std::string& to_file) { return plot(VariableList{x}, to_file); }

std::string Model::plot(const VariableList& xs, const std::string& to_file) {
  VariableList ys = forward_multi(xs);
  if (ys.empty()) throw ValueError("Model::plot: forward returned no output");
  return utils::plot_dot_graph(ys[0], true, to_file);
}

namespace models {

// --- Sequential ----------------------------------------------------------------------------------
Sequential::Sequential(std::initializer_list<Item> items) {
  for (const auto& item : items) append(item);
}

void Sequential::append(const Item& item) {
  if (!item.layer_ && !item.fn_) throw ValueError("Sequential: an item is neither a layer nor a callable");
  if (item.layer_) register_layer("l" + std::to_string(items_.size()), item.layer_);
  items_.push_back(item);
}

Variable Sequential::forward(const Variable& x) {
  Variable h = x;
  for (auto& item : items_) h = item.layer_ ? (*item.layer_)(h) : item.fn_(h);
  return h;
}

// --- MLP -----------------------------------------------------------------------------------------
MLP::MLP(const std::vector<std::int64_t>& fc_output_sizes, Activation activation_)
    : activation(std::move(activation_)) {
  if (fc_output_sizes.empty()) throw ValueError("MLP: give at least one layer size");
  if (!activation) throw ValueError("MLP: the activation is empty");
  for (std::size_t i = 0; i < fc_output_sizes.size(); ++i)
    layers.push_back(register_layer("l" + std::to_string(i), std::make_shared<L::Linear>(fc_output_sizes[i])));
}

Variable MLP::forward(const Variable& x) {
  Variable h = x;
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) h = activation((*layers[i])(h));
  return (*layers.back())(h);
}

}  // namespace models
}  // namespace dezero
