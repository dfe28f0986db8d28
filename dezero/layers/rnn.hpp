// dezero/layers/rnn.hpp - L::RNN (step 59) and L::LSTM (step 60), recurrent layers that keep their state.
#pragma once

#include <cstdint>

#include "dezero/layers/layer.hpp"
#include "dezero/layers/linear.hpp"

namespace dezero::L {

// --- RNN (step 59) ------------------------------------------------------------------------------
// h = tanh(x2h(x) + h2h(h)); the first step after reset_state() has no h2h term.
// h2h's weight is (hidden_size, hidden_size) (DeZero built it from in_size: a bug).
class RNN : public Layer {
 public:
  explicit RNN(std::int64_t hidden_size, std::int64_t in_size = 0, random::Generator gen = random::Generator::global());
  Variable forward(const Variable& x) override;
  void reset_state();

  LayerRef<Linear> x2h, h2h;
  Variable h;  // the hidden state (empty after reset_state)
};

// --- LSTM (step 60) -----------------------------------------------------------------------------
// f, i, o = sigmoid(x2* (x) + h2* (h)), u = tanh(x2u(x) + h2u(h)); c = f*c + i*u; h = o*tanh(c).
class LSTM : public Layer {
 public:
  explicit LSTM(std::int64_t hidden_size, std::int64_t in_size = 0, random::Generator gen = random::Generator::global());
  Variable forward(const Variable& x) override;
  void reset_state();

  LayerRef<Linear> x2f, x2i, x2o, x2u, h2f, h2i, h2o, h2u;
  Variable h, c;
};

}  // namespace dezero::L
