/// \file
/// L::RNN (step 59) and L::LSTM (step 60), recurrent layers that keep their state.
#pragma once

#include <cstdint>

#include "dezero/layers/layer.hpp"
#include "dezero/layers/linear.hpp"

namespace dezero::L {

// --- RNN (step 59) ------------------------------------------------------------------------------
/// The simple recurrent layer (step 59), which keeps its hidden state h between calls.
///
/// `h = tanh(x2h(x) + h2h(h))`; the first step after reset_state() has no h2h term.
/// h2h's weight is (hidden_size, hidden_size) (DeZero built it from in_size: a bug).
/// Weight keys: "x2h/W", "x2h/b", "h2h/W".
class RNN : public Layer {
 public:
  /// Makes x2h = Linear(hidden_size, in_size) and h2h = Linear(hidden_size, nobias), float32, drawn from `gen`.
  ///
  /// in_size = 0 takes it from the first input's x.shape[1]. Throws ValueError when
  /// hidden_size is not positive or in_size is negative (from L::Linear).
  explicit RNN(std::int64_t hidden_size, std::int64_t in_size = 0, random::Generator gen = random::Generator::global());
  /// One time step: x: (N, in_size) -> the new hidden state h: (N, hidden_size).
  ///
  /// The state is kept for the next call (keep N the same until reset_state()); the
  /// graph through it grows with every step until backward, unchain_backward or
  /// reset_state (truncated BPTT, as in step 59).
  Variable forward(const Variable& x) override;
  /// Forgets the hidden state: the next call starts a new sequence.
  void reset_state();

  /// The input-to-hidden and hidden-to-hidden Linear layers ("x2h", "h2h"; h2h has no bias).
  ///@{
  LayerRef<Linear> x2h, h2h;
  ///@}
  Variable h;  ///< The hidden state (empty after reset_state).
};

// --- LSTM (step 60) -----------------------------------------------------------------------------
/// The LSTM layer (step 60), which keeps its hidden state h and cell state c between calls.
///
/// `f, i, o = sigmoid(x2*(x) + h2*(h))`, `u = tanh(x2u(x) + h2u(h))`; `c = f*c + i*u`;
/// `h = o*tanh(c)`. The first step after reset_state() has no `h2*` terms and `c = i*u`.
class LSTM : public Layer {
 public:
  /// Makes the eight Linear layers of the gates, float32, drawn from `gen`.
  ///
  /// In the order x2f, x2i, x2o, x2u, h2f, h2i, h2o, h2u (the weight keys "x2f/W",
  /// "x2f/b", ..., "h2u/W"): `x2* = Linear(hidden_size, in_size)` (in_size = 0 takes it from the first input's
  /// x.shape[1]); `h2* = Linear(hidden_size, nobias, in_size = hidden_size)`. Throws
  /// ValueError when hidden_size is not positive or in_size is negative (from L::Linear).
  explicit LSTM(std::int64_t hidden_size, std::int64_t in_size = 0, random::Generator gen = random::Generator::global());
  /// One time step: x: (N, in_size) -> the new hidden state h: (N, hidden_size).
  ///
  /// h and c are kept for the next call (keep N the same until reset_state()).
  Variable forward(const Variable& x) override;
  /// Forgets h and c: the next call starts a new sequence.
  void reset_state();

  /// The Linear layers of the gates f, i, o and u: `x2*` from the input (with bias), `h2*` from h (no bias).
  ///@{
  LayerRef<Linear> x2f, x2i, x2o, x2u, h2f, h2i, h2o, h2u;
  ///@}
  /// The hidden state h and the cell state c, each (N, hidden_size) (empty after reset_state).
  ///@{
  Variable h, c;
  ///@}
};

}  // namespace dezero::L
