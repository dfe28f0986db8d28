// tensor_optim.hpp - tensor-level entry points of the fused optimizer kernels
// (not installed). optimizers.cpp calls these with Tensors; only this file and
// the backends see raw pointers. All updates are in place: nothing is allocated.
#pragma once

#include "dezero/backend/backend.hpp"
#include "dezero/tensor.hpp"

namespace dezero::detail {

// param -= update(grad, state) in place through Backend::optimizer_update; s1/s2
// are the rule's state tensors (nullptr when the rule has fewer). All tensors
// must share shape, dtype (float32 or float64) and device.
void optimizer_update(UpdateRule rule, Tensor& param, const Tensor& grad, Tensor* s1, Tensor* s2,
                      const UpdateArgs& args);

// y += a * x in place (same shape, dtype and device): WeightDecay's grad += rate * param.
void axpy_(Tensor& y, double a, const Tensor& x);

}  // namespace dezero::detail
