// dezero/layers/rnn.cpp - L::RNN (step 59) and L::LSTM (step 60): recurrent layers that
// keep their state between calls; reset_state() starts a new sequence.
#include "dezero/layers/rnn.hpp"

#include "dezero/functions.hpp"

namespace dezero::L {

// --- RNN -----------------------------------------------------------------------------------------
RNN::RNN(std::int64_t hidden_size, std::int64_t in_size, random::Generator gen) {
  x2h = register_layer("x2h", std::make_shared<Linear>(hidden_size, false, float32, in_size, gen));
  // DeZero passed in_size here (bug: h2h maps h, of hidden_size). Left lazy, it takes
  // its in_size from h - always hidden_size - and draws its weights at the same point
  // of the random stream as DeZero does with in_size=None.
  h2h = register_layer("h2h", std::make_shared<Linear>(hidden_size, true, float32, 0, gen));
}

void RNN::reset_state() { h = Variable(); }

// x: (N, in_size) -> h: (N, hidden_size)
Variable RNN::forward(const Variable& x) {
  Variable h_new = h.defined() ? F::tanh(x2h(x) + h2h(h)) : F::tanh(x2h(x));
  h = h_new;
  return h_new;
}

// --- LSTM ----------------------------------------------------------------------------------------
LSTM::LSTM(std::int64_t hidden_size, std::int64_t in_size, random::Generator gen) {
  const std::int64_t H = hidden_size, I = in_size;
  x2f = register_layer("x2f", std::make_shared<Linear>(H, false, float32, I, gen));
  x2i = register_layer("x2i", std::make_shared<Linear>(H, false, float32, I, gen));
  x2o = register_layer("x2o", std::make_shared<Linear>(H, false, float32, I, gen));
  x2u = register_layer("x2u", std::make_shared<Linear>(H, false, float32, I, gen));
  h2f = register_layer("h2f", std::make_shared<Linear>(H, true, float32, H, gen));
  h2i = register_layer("h2i", std::make_shared<Linear>(H, true, float32, H, gen));
  h2o = register_layer("h2o", std::make_shared<Linear>(H, true, float32, H, gen));
  h2u = register_layer("h2u", std::make_shared<Linear>(H, true, float32, H, gen));
}

void LSTM::reset_state() {
  h = Variable();
  c = Variable();
}

// x: (N, in_size) -> h: (N, hidden_size)
Variable LSTM::forward(const Variable& x) {
  Variable f, i, o, u;
  if (!h.defined()) {
    f = F::sigmoid(x2f(x));
    i = F::sigmoid(x2i(x));
    o = F::sigmoid(x2o(x));
    u = F::tanh(x2u(x));
  } else {
    f = F::sigmoid(x2f(x) + h2f(h));
    i = F::sigmoid(x2i(x) + h2i(h));
    o = F::sigmoid(x2o(x) + h2o(h));
    u = F::tanh(x2u(x) + h2u(h));
  }
  Variable c_new = c.defined() ? f * c + i * u : i * u;
  Variable h_new = o * F::tanh(c_new);
  h = h_new;
  c = c_new;
  return h_new;
}

}  // namespace dezero::L
