// dezero/models/sequential.cpp - models::Sequential: layers and plain callables applied
// in order (DeZero models.py). Layers are registered as l0, l1, ... by position.
#include <string>

#include "dezero/models.hpp"

namespace dezero::models {

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

}  // namespace dezero::models
