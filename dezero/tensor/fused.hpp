// dezero/tensor/fused.hpp - tensor-level operations that NumPy lacks (internal, not
// installed): fused neural-network kernels, the 2-D matmul with transpose flags, and
// the in-place optimizer updates (one parameter or many at once); and one host ->
// device copy for data/.
//
// The "xp" level under functions/ and optimizers/: each entry validates shapes,
// dtypes and devices, then makes one fused backend call, so that the layers above
// never touch raw pointers or a backend. This header includes no backend header; the
// layers above the tensor may include it (and tensor/checks.hpp), never
// tensor/strided.hpp or dezero/backend/. No autograd here. Defined in fused.cpp,
// except matmul_t (linalg.cpp, next to matmul), the convolution section (conv.cpp) and
// batch normalisation (batch_norm.cpp).
#pragma once

#include <cstddef>

#include <utility>

#include "dezero/pair.hpp"
#include "dezero/tensor.hpp"

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

// The type autocast's products compute in on `device`: `requested` (bfloat16 or float16), or
// float32 on a host without such products (cpu_supports_bf16() / cpu_supports_fp16() false: AVX2,
// plain AVX-512), where rounding the operands would cost float32 time and more; with
// DEZERO_AUTOCAST_EMULATE=1 there the operands are rounded anyway (bfloat16 hardware's values).
// One line on stderr, once per process and type, says which. Anything else passes through.
DType autocast_compute(DType requested, const Device& device);

// --- matmul with transpose flags -------------------------------------------------------
// 2-D matmul with transpose flags: op(a) @ op(b), op = transpose when the flag is set.
// If bias is defined, y = op(a) @ op(b) + bias (bias broadcast over rows).
// a: (m, k), or (k, m) when ta; b: (k, n), or (n, k) when tb; bias: (n,) or broadcastable to (m, n).
// compute: bfloat16 or float16 (autocast) makes a float32 product round a and b to that type
// and sum in float32 (Backend::gemm_lowp, or rounded copies and the float32 gemm where the
// backend has no such kernel); float32, the default, and every other dtype: no rounding.
Tensor matmul_t(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias = Tensor(),
                DType compute = DType::Float32);
// The mixed-precision product itself, float32 y whatever the operands: a and b 2-d, each
// float32 (rounded to `compute` here) or already of type `compute` (bfloat16 / float16: a
// copy rounded once and used twice, as F::linear keeps its forward's for its backward).
Tensor matmul_lowp(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& bias, DType compute);

// --- convolution and pooling (conv.cpp; functions/conv.cpp and pooling.cpp) -------------
// NCHW, zero padding, DeZero's output size (h + 2 ph - kh) / sh + 1. Each entry checks
// its operands and throws a dezero::Error naming `op` (the user's function), the
// shapes and a hint: a non-4-d input, an integer dtype or mixed dtypes, two devices,
// a kernel or stride < 1, a pad < 0, a kernel larger than the padded input, a channel
// mismatch. Floating dtypes only, x and W alike: float32, float64, and bfloat16 / float16,
// which are computed in float32 and stored back in their dtype.
//
// `compute` (the three products; issue 31's autocast): bfloat16 or float16 on float32
// operands asks for the products in that type with float32 sums and a float32 result:
// the backend's low-precision kernel (ConvGeom::compute; oneDNN's bf16 convolutions on
// the host), else the two operands rounded to `compute` and back, then the float32 path.
// The bias stays float32. Other dtypes ignore it.
//
// `groups` (the three products; PyTorch's groups, ONNX's group): the channels split into
// that many independent convolutions, W (oc, c/groups, kh, kw); groups == c is depthwise.
// It must be >= 1 (ValueError) and divide c and oc (ShapeError). Backend::conv2d_* with
// ConvGeom::groups, else one batched GEMM per group.

// Only the checks of im2col (for the composite functions: conv2d_simple, pooling_simple,
// average_pooling, so that their errors name them).
void check_window(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
// x (n, c, h, w) -> col (n, c, kh, kw, oh, ow) (Backend::im2col).
Tensor im2col(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
// col (n, c, kh, kw, oh, ow) -> x (n, c, h, w) of x_shape, the adjoint of im2col.
Tensor col2im(const char* op, const Tensor& col, const Shape& x_shape, Pair s, Pair p);

// y (n, oc, oh, ow) = x (n, c, h, w) * W (oc, c/groups, kh, kw) + b (oc,) (b may be undefined):
// Backend::conv2d_forward (the library path) when it takes the case, else im2col and
// one GEMM per image (and group), W (oc, c kh kw) @ col (c kh kw, oh ow), which lands in NCHW.
Tensor conv2d_forward(const char* op, const Tensor& x, const Tensor& W, const Tensor& b, Pair s, Pair p,
                      DType compute = DType::Float32, std::int64_t groups = 1);
// The convolution's gradient with respect to its input, and deconv2d's forward:
// gx (n, c, out.h, out.w) from gy (n, oc, oh, ow) and W (oc, c/groups, kh, kw), plus b (c,)
// when defined. out must give back (oh, ow) through the conv size formula.
// Backend::conv2d_backward_data, else W^T @ gy per image (and group), then col2im.
Tensor conv2d_backward_data(const char* op, const Tensor& gy, const Tensor& W, const Tensor& b, Pair s, Pair p,
                            Pair out, DType compute = DType::Float32, std::int64_t groups = 1);
// The convolution's gradient with respect to W: gW (oc, c/groups, kh, kw) from x (n, c, h, w)
// and gy (n, oc, oh, ow). Backend::conv2d_backward_filter, else gy @ col^T per image (and
// group), summed over the batch.
Tensor conv2d_backward_filter(const char* op, const Tensor& x, const Tensor& gy, Pair k, Pair s, Pair p,
                              DType compute = DType::Float32, std::int64_t groups = 1);

// Whether the three products, max and average pooling and batch normalisation try the
// backend's library path (default true: cuDNN on a GPU, where it takes the case). false
// makes every device use im2col + GEMM, the indexed max pooling and its own average
// pooling and batch normalisation kernels (pool.cu, batch_norm.cu on a GPU): for tests
// that compare the two paths.
void set_conv_library_path(bool enabled);
bool conv_library_path();

// Max pooling: y (n, c, oh, ow) and idx (n, c, oh, ow) int64, each window's first max
// and its position i * kw + j (the padding counts as zeros, as in DeZero). A window with
// a NaN has y NaN and idx its first NaN (NumPy's max and argmax), on every path.
std::pair<Tensor, Tensor> max_pool(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
// gx (x_shape) = gy (n, c, oh, ow) added at each window's idx.
Tensor max_pool_backward(const Tensor& gy, const Tensor& idx, const Shape& x_shape, Pair k, Pair s, Pair p);
// y (n, c, oh, ow) = x (n, c, h, w) at each window's idx (0 on the padding).
Tensor max_pool_gather(const Tensor& x, const Tensor& idx, Pair k, Pair s, Pair p);
// max_pool, trying the backend's library first (cuDNN; Backend::library_max_pool_forward):
// y and an undefined idx where the library took the case, else max_pool's y and idx (the
// host, padding, the switch above off). After the library, the backward needs the
// forward's x and y: gx (x's shape), or undefined where the library declines it (then
// make the indexes with max_pool and use max_pool_backward).
std::pair<Tensor, Tensor> max_pool_library_first(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
Tensor library_max_pool_backward(const Tensor& gy, const Tensor& x, const Tensor& y, Pair k, Pair s, Pair p);

// Average pooling, the padded zeros counted (DeZero's mean of im2col): y (n, c, oh, ow).
// The backward: gx (x's shape) = gy / (kh * kw) spread over each window; x and y are the
// forward's (cuDNN's backward reads them).
Tensor avg_pool(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
Tensor avg_pool_backward(const Tensor& gy, const Tensor& x, const Tensor& y, Pair k, Pair s, Pair p);

// --- batch normalisation (batch_norm.cpp; functions/normalization.cpp) ----------------
// The fused kernels of F::batch_norm over the channel axis 1 of x (N, C) or NCHW
// (N, C, H, W), without moving C last (Backend::batch_norm_forward / _backward give the
// formulas). batch_norm_fusable: whether they take the case: x float32 or float64, 2-d
// or 4-d, and gamma, beta, running_mean and running_var defined, of shape (C,), of x's
// dtype and on x's device (the caller, which has checked its operands, takes the
// composite formula otherwise).
bool batch_norm_fusable(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                        const Tensor& running_var);
// y (x's shape), and the channels' mean and inv_std (C,) for the backward; train: the batch's
// statistics, running_mean / running_var updated in place (decay, unbiased var); test: the
// running statistics, only read. Through the backend's library (cuDNN) where it takes the
// case and the library path is on (set_conv_library_path), else its own kernels: the same
// formulas either way.
struct BatchNormForward {
  Tensor y, mean, inv_std;
};
BatchNormForward batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                                    Tensor& running_var, double decay, double eps, bool train);
// gx (x's shape; undefined unless want_gx), ggamma and gbeta (C,) from gy (x's shape) and
// the forward's mean and inv_std; eps is the forward's (cuDNN's backward takes it).
struct BatchNormBackward {
  Tensor gx, ggamma, gbeta;
};
BatchNormBackward batch_norm_backward(const Tensor& x, const Tensor& gy, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& inv_std, bool train, bool want_gx, double eps = 2e-5);

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
// Backend::optimizer_update_multi per (device, dtype) group instead of one kernel per
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
// Whether every item's device fuses WeightDecay into the update (Backend::fuses_weight_decay).
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
