/// \file
/// The functions of dezero::F for neural networks: activations, losses,
/// metrics, dropout, batch normalisation, embeddings (DeZero functions.py), and
/// convolution and pooling (functions_conv.py).
///
/// Floating results keep the dtype of the (first) floating input: float32 logits
/// give a float32 loss and float32 gradients, whatever the labels' dtype.
#pragma once

#include "dezero/core.hpp"
#include "dezero/functions/activation.hpp"
#include "dezero/functions/conv.hpp"
#include "dezero/functions/loss.hpp"
#include "dezero/functions/nn.hpp"
#include "dezero/functions/normalization.hpp"
#include "dezero/functions/pooling.hpp"
