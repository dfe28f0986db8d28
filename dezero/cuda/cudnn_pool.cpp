// dezero/cuda/cudnn_pool.cpp - the CUDA backend's pooling through cuDNN's legacy pooling
// API (cudnnPoolingForward / cudnnPoolingBackward), NCHW, float32 and float64:
//   average pooling (DeZero's average_pooling, padded zeros counted):
//     CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, where pool.cu's kernels are the fallback;
//   max pooling without padding (DeZero's pooling, step 57): CUDNN_POOLING_MAX_DETERMINISTIC,
//     no indexes; the backward finds each window's max again from x and y. Padded max
//     pooling is declined (cuDNN's max skips padded positions, DeZero's reads them as 0),
//     and so is everything below: the caller then uses pool.cu's kernels with indexes.
//
// Each entry point answers false, having done nothing, where cuDNN does not take the case:
// another dtype, a geometry detail/conv_algo.hpp's pool_geometry_fits_cudnn refuses,
// cuDNN missing, older than 8 or off (DEZERO_CUDNN=0: cuda::detail::cudnn_enabled(), shared
// with the convolutions), a handle that cannot be made, or a descriptor whose output size
// (cudnnGetPooling2dForwardOutputDim) is not g's. The handle is bound to the current stream
// and used under library_mutex(device); every call is checked with file:line.
//
// Ties: the deterministic max sends a window's gradient to one of its maxima; the double
// backward (functions/pooling.cpp) computes indexes with pool.cu's first-max rule, so on
// exact ties the two may pick different (equal) elements. NaN: not propagated
// (CUDNN_NOT_PROPAGATE_NAN), as pool.cu's max, where a NaN never wins a comparison.
#include <cstdint>
#include <exception>
#include <mutex>

#include "dezero/backend/backend.hpp"
#include "dezero/cuda/detail/conv_algo.hpp"
#include "dezero/cuda/detail/cudnn.hpp"
#include "dezero/cuda/detail/launchers.hpp"
#include "dezero/cuda/detail/libs.hpp"
#include "dezero/cuda/detail/runtime.hpp"

namespace dezero::detail::gpu {

namespace {

namespace cd = ::dezero::cuda::detail;

class PoolingDesc : public cd::CudnnDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                                               cudnnDestroyPoolingDescriptor> {
 public:
  PoolingDesc(const ConvGeom& g, bool max) {
    DEZERO_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        *this, max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_NOT_PROPAGATE_NAN, int(g.kh), int(g.kw), int(g.ph), int(g.pw), int(g.sh), int(g.sw)));
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

// What the entry points share: checks, device, stream, handle, descriptors; `run` enqueues.
template <class Run>
bool with_cudnn_pooling(int device, DType dt, const ConvGeom& g, bool max, Run run) {
  if (dt != float32 && dt != float64) return false;
  if (!cd::pool_geometry_fits_cudnn(g, max) || !cd::cudnn_enabled()) return false;
  cd::ScopedDevice sd(device);
  cudaStream_t s = cd::current_stream(device);
  std::lock_guard<std::mutex> lock(cd::library_mutex(device));
  cudnnHandle_t h = cd::cudnn_handle_or_null(device, s);
  if (h == nullptr) return false;
  PoolDescs d(dt, g, max);
  if (!output_is_g(d, g)) return false;
  cd::CudnnScalars k;
  run(h, d, k.get(dt, 1), k.get(dt, 0));
  return true;
}

}  // namespace

// --- the entry points (detail/launchers.hpp) ---------------------------------------------------
// x (n, c, h, w) -> y (n, c, oh, ow): each window's max (max) or mean (average)
bool cudnn_pool2d_forward(int device, bool max, DType dt, const void* x, void* y, const ConvGeom& g) {
  return with_cudnn_pooling(device, dt, g, max,
                            [&](cudnnHandle_t h, const PoolDescs& d, const void* one, const void* zero) {
                              DEZERO_CUDNN_CHECK(cudnnPoolingForward(h, d.pool, one, d.x, x, zero, d.y, y));
                            });
}

// x, y (the forward's), gy (n, c, oh, ow) -> gx (n, c, h, w), overwritten
bool cudnn_pool2d_backward(int device, bool max, DType dt, const void* x, const void* y, const void* gy, void* gx,
                           const ConvGeom& g) {
  return with_cudnn_pooling(device, dt, g, max,
                            [&](cudnnHandle_t h, const PoolDescs& d, const void* one, const void* zero) {
                              DEZERO_CUDNN_CHECK(
                                  cudnnPoolingBackward(h, d.pool, one, d.y, y, d.y, gy, d.x, x, zero, d.x, gx));
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

}  // namespace dezero::cuda::detail
