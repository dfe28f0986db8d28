// dezero/tensor/fused.hpp - tensor-level operations that NumPy lacks (internal, not
// installed): fused neural-network kernels, the 2-D matmul with transpose flags, and
// the in-place optimizer updates (one parameter or many at once); and one host ->
// device copy for data/.
//
// The "xp" level under functions/ and optimizers/: each entry validates shapes,
// dtypes and devices, then makes one fused backend call, so that the layers above
// never touch raw pointers or a backend. This header includes no backend header; the
// layers above the tensor may include it (and tensor/checks.hpp), never
// tensor/strided.hpp or dezero/backend/. No autograd here. Defined in fused.cpp; the
// products with transpose flags, the convolutions and batch normalisation have headers of
// their own beside their sources (tensor/matmul.hpp for linalg.cpp, tensor/conv.hpp,
// tensor/batch_norm.hpp), included here for the layers above.
#pragma once

#include <cstddef>

#include <utility>

#include "dezero/pair.hpp"
#include "dezero/tensor.hpp"
#include "dezero/tensor/batch_norm.hpp"
#include "dezero/tensor/conv.hpp"
#include "dezero/tensor/matmul.hpp"

namespace dezero::detail {

// --- softmax and leaky relu ------------------------------------------------------------
// softmax (or log_softmax when `log`) along `axis` (negative counts from the end).
// Integer input is computed in float64 (NumPy's exp of ints). x: any shape of at
// least 1-d; y: x's shape.
Tensor softmax(const Tensor& x, int axis, bool log = false);

// x > 0 ? x : slope * x, and its derivative mask (1 or slope) in x's dtype; x: any
// shape, y: x's shape.
Tensor leaky_relu(const Tensor& x, double slope);
Tensor leaky_relu_mask(const Tensor& x, double slope);

// --- sigmoid and relu backward, squared difference -------------------------------------
// gy, y (or x): any shapes that broadcast; gx: their broadcast shape.
// The sigmoid's backward, gy * y * (1 - y), as one kernel when gy and y have the same
// shape and dtype (three kernels and two temporaries otherwise); the same arithmetic
// in the same order either way, so the bits match the unfused expression.
Tensor sigmoid_grad(const Tensor& gy, const Tensor& y);
// The relu's backward, gy * (x > 0), likewise one kernel instead of a mask and a product.
Tensor relu_grad(const Tensor& gy, const Tensor& x);
// square(a - b), mean_squared_error's terms, likewise one kernel for equal shapes and dtypes.
Tensor squared_difference(const Tensor& a, const Tensor& b);

// --- mean squared error (step 42) -------------------------------------------------------
// loss = sum((x0 - x1)^2) / N, N the first axis of the broadcast difference (at least
// 1-d): a 0-d tensor of the difference's dtype. One backend call (mse_forward) when x0
// and x1 have the same shape and dtype and the backend has one; squared_difference, sum
// and a division otherwise.
Tensor mean_squared_error(const Tensor& x0, const Tensor& x1);
// Its gradient with respect to x0 before sum_to: gy * (x0 - x1) * (2 / N), gy the loss's
// gradient (one element). One backend call (mse_backward) when x0, x1 and gy share a dtype,
// x0 and x1 a shape and gy has no more axes than they; the expression itself otherwise.
// The same arithmetic in the same order either way: the bits of the unfused expression.
Tensor mean_squared_error_grad(const Tensor& gy, const Tensor& x0, const Tensor& x1);

// --- row gather under the caller's name -------------------------------------------------
// take(x, indices) with errors naming `op` (embed_id); `hint` names the indices in the
// hint ("embed_id's ids"). x: (n, ...), indices: int32/int64 of any shape, each in
// [0, n), else IndexError (on a GPU the check costs one sync, see find_bad_index).
// Defined in shape.cpp, next to take.
Tensor take_rows(const char* op, const Tensor& x, const Tensor& indices, const char* hint);

// --- softmax cross entropy -------------------------------------------------------------
// Labels for the softmax cross entropy: t holds N int32/int64 class ids (any
// shape with N elements), returned as a contiguous int64 (N,) tensor on x's
// device. Every label is checked against [0, C) on both devices, an IndexError
// naming `op` and the first bad label otherwise (on a GPU one min / max reduction
// and one sync, see find_bad_index). x: (N, C) float32/float64.
Tensor sce_labels(const char* op, const Tensor& x, const Tensor& t);

// loss = -mean_n log_softmax(x)[n, t[n]]: a 0-d tensor of x's dtype (one fused call).
// x: (N, C), t: (N,) int64 from sce_labels.
Tensor softmax_cross_entropy(const Tensor& x, const Tensor& t);
// gx = (softmax(x) - onehot(t)) * gy / N, gy: one element read on x's device.
Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy);


// --- optimizer updates (optimizers/rules.cpp, hooks.cpp) -------------------------------
// In place on param and its state tensors, one fused Backend::optimizer_update kernel
// each; nothing is allocated. param, grad and the state tensors must share shape (any),
// dtype and device (a ShapeError names the one that differs); param must be float32 or
// float64 (DtypeError). The arithmetic per element, in the backends' order:

// param -= lr * grad
void sgd_update_(Tensor& param, const Tensor& grad, double lr);
// v = momentum * v - lr * grad; param += v
void momentum_sgd_update_(Tensor& param, const Tensor& grad, Tensor& v, double lr, double momentum);
// h += grad * grad; param -= lr * grad / (sqrt(h) + eps)
void adagrad_update_(Tensor& param, const Tensor& grad, Tensor& h, double lr, double eps);
// msg = rho msg + (1-rho) grad^2; dx = sqrt((msdx+eps)/(msg+eps)) grad;
// msdx = rho msdx + (1-rho) dx^2; param -= dx
void adadelta_update_(Tensor& param, const Tensor& grad, Tensor& msg, Tensor& msdx, double rho, double eps);
// m += (1-beta1)(grad-m); v += (1-beta2)(grad^2-v); param -= lr m / (sqrt(v) + eps),
// lr already bias-corrected by the caller (Adam::lr()).
void adam_update_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, double lr, double beta1, double beta2,
                  double eps);
// y += a * x (same shape, dtype and device): WeightDecay's grad += rate * param, run as
// sgd_update_(y, x, -a).
void axpy_(Tensor& y, double a, const Tensor& x);

// --- multi-tensor optimizer updates (optimizers/rules.cpp, hooks.cpp) ------------------
// The updates above for n parameters at once (PyTorch's "foreach" step): one
// OptimizerKernels::update_multi per (device, dtype) group instead of one kernel per
// parameter, bit for bit the same results as n single calls. Every item is checked as
// the single functions check theirs, all of them before anything changes: the state
// tensors the rule needs present, a float32 / float64 parameter (DtypeError), grad and
// state of the parameter's shape (ShapeError), dtype (DtypeError) and device
// (DeviceError), each message naming the item's index. An empty parameter is skipped.
// The items must not share memory (the same parameter twice): their elements are
// updated concurrently. Nothing is allocated once the scratch lists have grown.
//
// One parameter of such an update: the rule's state in s1, s2 (unused ones nullptr):
// MomentumSGD v, AdaGrad h in s1; AdaDelta msg, msdx and Adam m, v in s1, s2.
struct ParamUpdate {
  Tensor* param = nullptr;
  const Tensor* grad = nullptr;
  Tensor* s1 = nullptr;
  Tensor* s2 = nullptr;
};
//
// decay != 0 fuses WeightDecay(decay) into the same pass (issue 36): each gradient first
// becomes grad + decay * param, with the bits axpy_multi_ gives and written back to the
// gradient as the hook writes it, then the rule runs on it. Only where
// fuses_weight_decay(items, n) is true (the host; a ValueError otherwise).
void sgd_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double decay = 0);
void momentum_sgd_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double momentum,
                                double decay = 0);
void adagrad_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double eps, double decay = 0);
void adadelta_update_multi_(const ParamUpdate* items, std::size_t n, double rho, double eps, double decay = 0);
void adam_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double beta1, double beta2, double eps,
                        double decay = 0);
// Whether every item's device fuses WeightDecay into the update (OptimizerKernels::fuses_weight_decay).
bool fuses_weight_decay(const ParamUpdate* items, std::size_t n);
// ys[i] += a * xs[i] for every i (axpy_ for n pairs: WeightDecay over a step's gradients).
void axpy_multi_(Tensor* const* ys, double a, const Tensor* const* xs, std::size_t n);

// --- host -> device copy (data/dataloaders.cpp) ----------------------------------------
// Copies nbytes of host memory into dst's storage through Backend::copy_from_host: on
// a CUDA device an asynchronous copy on the current stream (host_src must stay valid
// and unchanged until that stream has run it; pinned memory makes it truly async),
// on the CPU a memcpy. nbytes must be dst.nbytes() (ValueError otherwise), host_src
// holds dst's elements in dst's dtype, row-major. dst: any shape, defined.
void copy_from_host_(Tensor& dst, const void* host_src, std::size_t nbytes);

}  // namespace dezero::detail
