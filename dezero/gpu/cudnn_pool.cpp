// dezero/gpu/cudnn_pool.cpp - the CUDA backend's pooling through cuDNN's legacy pooling
// API (cudnnPoolingForward / cudnnPoolingBackward), NCHW, float32 and float64:
//   average pooling (DeZero's average_pooling, padded zeros counted):
//     CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, where pool.cu's kernels are the fallback;
//   max pooling without padding (DeZero's pooling, step 57): CUDNN_POOLING_MAX_DETERMINISTIC,
//     no indexes; the backward finds each window's max again from x and y. Padded max
//     pooling is declined (cuDNN's max skips padded positions, DeZero's reads them as 0),
//     and so is everything below: the caller then uses pool.cu's kernels with indexes.
// Both are Backend's library_* entry points: tensor/conv.cpp calls them only while
// set_conv_library_path is on, so the tests that turn it off run pool.cu.
//
// Each entry point answers false, having done nothing, where cuDNN does not take the case:
// another dtype, a geometry detail/conv_algo.hpp's pool_geometry_fits_cudnn refuses,
// cuDNN missing, older than 8 or off (DEZERO_CUDNN=0: cuda::detail::cudnn_enabled(), shared
// with the convolutions), a handle that cannot be made, an output that is not 16-byte
// aligned, or a descriptor whose output size (cudnnGetPooling2dForwardOutputDim) is not
// g's. Inputs that are not 16-byte aligned (offset views) are copied first. The handle is
// bound to the current stream and used under library_mutex(device); every call is checked
// with file:line.
//
// Ties: the deterministic max sends a window's gradient to one of its maxima; the double
// backward (functions/pooling.cpp) computes indexes with pool.cu's first-max rule, so on
// exact ties the two may pick different (equal) elements.
// NaN: DeZero's rule on every path (NumPy's max and argmax over im2col): a NaN anywhere in
// a window makes its max NaN (CUDNN_PROPAGATE_NAN here; cpu/pool.cpp and pool.cu likewise),
// and the window's gradient goes to its first NaN (np.argmax's index). How cuDNN's backward
// routes the gradient of a NaN window is not documented, so it is not asked: the backward
// gives cuDNN gy with those windows' entries zeroed and then adds each such gy at its
// window's first NaN (pool.cu's max_pool_nan_mask / max_pool_nan_route), which is what the
// indexed kernels do.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <utility>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#include "dezero/gpu/cudnn.hpp"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/libs.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail::gpu {

namespace {

namespace cd = ::dezero::cuda::detail;

class PoolingDesc : public cd::CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                               cudnnDestroyPoolingDescriptor> {
 public:
  PoolingDesc(const ConvGeom& g, bool max) {
    DEZERO_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        *this, max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_PROPAGATE_NAN, int(g.kh), int(g.kw), int(g.ph), int(g.pw), int(g.sh), int(g.sw)));
  }
};

// The descriptors of one pooling: x (n, c, h, w), y (n, c, oh, ow) and the window.
struct PoolDescs {
  PoolDescs(DType dt, const ConvGeom& g, bool max)
      : x(dt, g.n, g.c, g.h, g.w), y(dt, g.n, g.c, g.oh, g.ow), pool(g, max) {}
  cd::CudnnTensorDesc x, y;
  PoolingDesc pool;
};

// cuDNN's output size for the descriptors, against g's (a mismatch means cuDNN would not
// compute DeZero's pooling: declined rather than wrong).
bool output_is_g(const PoolDescs& d, const ConvGeom& g) {
  int n = 0, c = 0, h = 0, w = 0;
  if (cudnnGetPooling2dForwardOutputDim(d.pool, d.x, &n, &c, &h, &w) != CUDNN_STATUS_SUCCESS) return false;
  return n == g.n && c == g.c && h == g.oh && w == g.ow;
}

std::size_t bytes_of(DType dt, std::int64_t count) { return static_cast<std::size_t>(count) * (dt == float32 ? 4u : 8u); }

// What the entry points share: checks, device, stream, handle, descriptors, aligned copies
// of the `inputs` (pointer, elements); `run(h, d, one, zero, s)` enqueues.
template <class Run>
bool with_cudnn_pooling(int device, DType dt, const ConvGeom& g, bool max, void* output,
                        std::initializer_list<std::pair<const void**, std::int64_t>> inputs, Run run) {
  if (dt != float32 && dt != float64) return false;
  if (!cd::pool_geometry_fits_cudnn(g, max) || !cd::cudnn_enabled()) return false;
  if (!cd::cudnn_aligned(output)) return false;
  cd::ScopedDevice sd(device);
  cudaStream_t s = cd::current_stream(device);
  std::lock_guard<std::mutex> lock(cd::library_mutex(device));
  cudnnHandle_t h = cd::cudnn_handle_or_null(device, s);
  if (h == nullptr) return false;
  PoolDescs d(dt, g, max);
  if (!output_is_g(d, g)) return false;
  cd::CudnnAlignedInputs aligned(device, s);
  for (const auto& in : inputs) aligned.add(*in.first, bytes_of(dt, in.second));
  cd::CudnnScalars k;
  run(h, d, k.get(dt, 1), k.get(dt, 0), s);
  return true;
}

}  // namespace

// --- the entry points (detail/launchers.hpp) ---------------------------------------------------
// x (n, c, h, w) -> y (n, c, oh, ow): each window's max (max; NaN when the window holds one)
// or mean (average)
bool cudnn_pool2d_forward(int device, bool max, DType dt, const void* x, void* y, const ConvGeom& g) {
  return with_cudnn_pooling(device, dt, g, max, y, {{&x, g.n * g.c * g.h * g.w}},
                            [&](cudnnHandle_t h, const PoolDescs& d, const void* one, const void* zero, cudaStream_t) {
                              DEZERO_CUDNN_CHECK(cudnnPoolingForward(h, d.pool, one, d.x, x, zero, d.y, y));
                            });
}

// x, y (the forward's), gy (n, c, oh, ow) -> gx (n, c, h, w), overwritten. Max: a window
// whose y is NaN sends its gy to its first NaN (see the file's header).
bool cudnn_pool2d_backward(int device, bool max, DType dt, const void* x, const void* y, const void* gy, void* gx,
                           const ConvGeom& g) {
  const std::int64_t nx = g.n * g.c * g.h * g.w, ny = g.n * g.c * g.oh * g.ow;
  return with_cudnn_pooling(
      device, dt, g, max, gx, {{&x, nx}, {&y, ny}, {&gy, ny}},
      [&](cudnnHandle_t h, const PoolDescs& d, const void* one, const void* zero, cudaStream_t s) {
        if (!max) {
          DEZERO_CUDNN_CHECK(cudnnPoolingBackward(h, d.pool, one, d.y, y, d.y, gy, d.x, x, zero, d.x, gx));
          return;
        }
        cd::DeviceBuffer gy_numbers(device, bytes_of(dt, ny), s);  // gy, 0 where y is NaN
        max_pool_nan_mask(device, dt, y, gy, gy_numbers.get(), ny);
        DEZERO_CUDNN_CHECK(
            cudnnPoolingBackward(h, d.pool, one, d.y, y, d.y, gy_numbers.get(), d.x, x, zero, d.x, gx));
        max_pool_nan_route(device, dt, x, y, gy, gx, g);
      });
}

}  // namespace dezero::detail::gpu

namespace dezero::cuda::detail {

// (conv_algo.hpp) No GPU, stream or handle: descriptors only.
bool cudnn_pooling_output(DType dt, const dezero::detail::ConvGeom& g, bool max, std::int64_t out[4]) {
  if (cudnn_version() == 0) return false;
  try {
    ::dezero::detail::gpu::PoolDescs d(dt, g, max);
    int n = 0, c = 0, h = 0, w = 0;
    if (cudnnGetPooling2dForwardOutputDim(d.pool, d.x, &n, &c, &h, &w) != CUDNN_STATUS_SUCCESS) return false;
    out[0] = n, out[1] = c, out[2] = h, out[3] = w;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

int cudnn_max_pooling_nan_propagation() {
  if (cudnn_version() == 0) return -1;
  try {
    dezero::detail::ConvGeom g;
    g.n = g.c = 1;
    g.h = g.w = g.kh = g.kw = 2;
    g.sh = g.sw = 2;
    g.oh = g.ow = 1;
    ::dezero::detail::gpu::PoolingDesc p(g, true);
    cudnnPoolingMode_t mode{};
    cudnnNanPropagation_t nan{};
    int wh = 0, ww = 0, ph = 0, pw = 0, sh = 0, sw = 0;
    if (cudnnGetPooling2dDescriptor(p, &mode, &nan, &wh, &ww, &ph, &pw, &sh, &sw) != CUDNN_STATUS_SUCCESS) return -1;
    if (mode != CUDNN_POOLING_MAX_DETERMINISTIC || wh != 2 || ww != 2 || sh != 2 || sw != 2) return -1;
    return nan == CUDNN_PROPAGATE_NAN ? 1 : 0;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace dezero::cuda::detail
