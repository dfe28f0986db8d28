// dezero/models/mlp.cpp - models::MLP (step 45): Linear layers l0, l1, ... with an
// activation between them (DeZero models.py).
#include <string>

#include "dezero/models.hpp"

namespace dezero::models {

// --- MLP -----------------------------------------------------------------------------------------
MLP::MLP(const std::vector<std::int64_t>& fc_output_sizes, Activation activation_, random::Generator gen)
    : activation(std::move(activation_)) {
  if (fc_output_sizes.empty()) throw ValueError("MLP: give at least one layer size");
  if (!activation) throw ValueError("MLP: the activation is empty");
  for (std::size_t i = 0; i < fc_output_sizes.size(); ++i)
    layers.push_back(register_layer("l" + std::to_string(i), std::make_shared<L::Linear>(fc_output_sizes[i], false, float32, 0, gen)));
}

Variable MLP::forward(const Variable& x) {
  Variable h = x;
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) h = activation(layers[i](h));
  return layers.back()(h);
}

}  // namespace dezero::models
