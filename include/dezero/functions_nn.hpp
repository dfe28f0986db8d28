// dezero/functions_nn.hpp - dezero::F for neural networks: activations, losses,
// metrics, dropout, batch normalisation, embeddings (DeZero functions.py §3.5-3.7).
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

// --- activations (steps 43, 47) ---
Variable sigmoid(const Variable& x);  // stable: tanh(0.5 x) * 0.5 + 0.5
Variable relu(const Variable& x);     // gradient 0 at x == 0

}  // namespace dezero::F
