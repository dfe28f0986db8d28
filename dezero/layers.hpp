/// \file
/// The namespace dezero::L, layers: objects that own Parameters (DeZero layers.py,
/// steps 44-45, 58-60). One header per layer family under `dezero/layers/`; this umbrella
/// includes them all.
///
/// ```cpp
/// class TwoLayerNet : public dezero::Model {            // step 45
///  public:
///   TwoLayerNet(int hidden, int out) {
///     l1 = register_layer("l1", std::make_shared<L::Linear>(hidden));
///     l2 = register_layer("l2", std::make_shared<L::Linear>(out));
///   }
///   Variable forward(const Variable& x) override { return l2(F::sigmoid(l1(x))); }
///   L::LayerRef<L::Linear> l1, l2;   // std::shared_ptr<L::Linear> works too, called as (*l1)(x)
/// };
/// ```
#pragma once

#include "dezero/layers/layer.hpp"
#include "dezero/layers/linear.hpp"
#include "dezero/layers/conv.hpp"
#include "dezero/layers/embed_id.hpp"
#include "dezero/layers/batch_norm.hpp"
#include "dezero/layers/layer_norm.hpp"
#include "dezero/layers/rnn.hpp"
