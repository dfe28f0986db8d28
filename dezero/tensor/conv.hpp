// dezero/tensor/conv.hpp - the convolutions and poolings of tensor/conv.cpp (functions/conv.cpp, pooling.cpp)
// (internal, not installed; the layers above the tensor reach it through tensor/fused.hpp).
// Each entry validates shapes, dtypes and devices, then calls the backend; no autograd here.
#pragma once

#include <cstdint>
#include <optional>

#include "dezero/pair.hpp"
#include "dezero/tensor.hpp"

namespace dezero::detail {

class Backend;         // backend/backend.hpp
class LibraryKernels;  // backend/backend.hpp

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
// It must be >= 1 (ValueError) and divide c and oc (ShapeError). LibraryKernels::conv2d_* with
// ConvGeom::groups, else one batched GEMM per group.

// Only the checks of im2col (for the composite functions: conv2d_simple, pooling_simple,
// average_pooling, so that their errors name them).
void check_window(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
// x (n, c, h, w) -> col (n, c, kh, kw, oh, ow) (Backend::im2col).
Tensor im2col(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
// col (n, c, kh, kw, oh, ow) -> x (n, c, h, w) of x_shape, the adjoint of im2col.
Tensor col2im(const char* op, const Tensor& col, const Shape& x_shape, Pair s, Pair p);

// y (n, oc, oh, ow) = x (n, c, h, w) * W (oc, c/groups, kh, kw) + b (oc,) (b may be undefined):
// LibraryKernels::conv2d_forward (the library path) when it takes the case, else im2col and
// one GEMM per image (and group), W (oc, c kh kw) @ col (c kh kw, oh ow), which lands in NCHW.
Tensor conv2d_forward(const char* op, const Tensor& x, const Tensor& W, const Tensor& b, Pair s, Pair p,
                      DType compute = DType::Float32, std::int64_t groups = 1);
// The convolution's gradient with respect to its input, and deconv2d's forward:
// gx (n, c, out.h, out.w) from gy (n, oc, oh, ow) and W (oc, c/groups, kh, kw), plus b (c,)
// when defined. out must give back (oh, ow) through the conv size formula.
// LibraryKernels::conv2d_backward_data, else W^T @ gy per image (and group), then col2im.
Tensor conv2d_backward_data(const char* op, const Tensor& gy, const Tensor& W, const Tensor& b, Pair s, Pair p,
                            Pair out, DType compute = DType::Float32, std::int64_t groups = 1);
// The convolution's gradient with respect to W: gW (oc, c/groups, kh, kw) from x (n, c, h, w)
// and gy (n, oc, oh, ow). LibraryKernels::conv2d_backward_filter, else gy @ col^T per image (and
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
// The backend's vendor library (Backend::library()), or null where it has none or the
// switch above is off.
LibraryKernels* library_of(Backend& be);

// Max pooling: y (n, c, oh, ow) and idx (n, c, oh, ow) int64, each window's first max
// and its position i * kw + j (the padding counts as zeros, as in DeZero). A window with
// a NaN has y NaN and idx its first NaN (NumPy's max and argmax), on every path.
std::pair<Tensor, Tensor> max_pool(const char* op, const Tensor& x, Pair k, Pair s, Pair p);
// gx (x_shape) = gy (n, c, oh, ow) added at each window's idx.
Tensor max_pool_backward(const Tensor& gy, const Tensor& idx, const Shape& x_shape, Pair k, Pair s, Pair p);
// y (n, c, oh, ow) = x (n, c, h, w) at each window's idx (0 on the padding).
Tensor max_pool_gather(const Tensor& x, const Tensor& idx, Pair k, Pair s, Pair p);
// max_pool, trying the backend's library first (cuDNN; LibraryKernels::max_pool_forward):
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

}  // namespace dezero::detail
