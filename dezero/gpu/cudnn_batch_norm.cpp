// dezero/gpu/cudnn_batch_norm.cpp - the CUDA backend's batch normalisation through cuDNN's
// legacy API (LibraryKernels::batch_norm_forward / _backward; backend.hpp gives the
// formulas): x (N, C) or NCHW (N, C, H, W), viewed as (n, c, hw, 1), CUDNN_BATCHNORM_SPATIAL
// (one mean and variance per channel over n * hw values: DeZero's per-channel statistics of
// a 4-d x, and of a 2-d one over N), float32 and float64; the parameters' descriptor comes
// from cudnnDeriveBNTensorDescriptor ((1, c, 1, 1), float for float32 data, double for
// float64).
//
//   train forward: cudnnBatchNormalizationForwardTraining. exponentialAverageFactor =
//     1 - decay, so running = running (1 - f) + batch f is DeZero's decay running +
//     (1 - decay) batch; cuDNN's running variance is the unbiased one, var m / (m - 1),
//     which is DeZero's m / max(m - 1, 1) for m >= 2 (m = 1 is declined: cuDNN's would be
//     NaN). It normalises with the biased var + eps, as DeZero. The running statistics are
//     updated in place (the layer's avg_mean / avg_var tensors stay the same objects).
//     resultSaveMean / resultSaveInvVariance are the mean and inv_std = 1 / sqrt(var + eps)
//     the backward takes (despite the name, cuDNN saves the inverse standard deviation).
//   test forward: cudnnBatchNormalizationForwardInference with the running statistics, then
//     batch_norm.cu's batch_norm_test_stats writes mean and inv_std for the backward.
//   train backward: cudnnBatchNormalizationBackward with the saved mean and inv_std, eps the
//     forward's; gx into a pool buffer when the caller does not want it.
//   test backward: declined (gx = gamma inv_std gy is not what cuDNN's backward computes):
//     batch_norm.cu's kernel.
// Declined (false, nothing done), so that batch_norm.cu runs: cuDNN missing or off
// (cuda::detail::cudnn_enabled(): DEZERO_CUDNN=0 among others), a handle that cannot be
// made, what conv_algo.hpp's batch_norm_fits_cudnn refuses (m < 2, eps below
// CUDNN_BN_MIN_EPSILON, sizes beyond int), an output or running statistic that is not
// 16-byte aligned, or cuDNN answering NOT_SUPPORTED before it starts. Inputs that are not
// aligned (offset views) are copied first.
//
// Only the first-order kernels live here: F::batch_norm's backward with create_graph stays
// the composite of Functions (functions/normalization.cpp), so double backprop is unchanged.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <mutex>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#include "dezero/gpu/cudnn.hpp"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail::gpu {

namespace {

namespace cd = ::dezero::cuda::detail;

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;

std::size_t bytes_of(DType dt, std::int64_t count) {
  return static_cast<std::size_t>(count) * (dt == float32 ? 4u : 8u);
}

// The parameters' descriptor (scale, bias, mean, variance, their gradients), derived from x's.
class BnParamDesc : public cd::CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                               cudnnDestroyTensorDescriptor> {
 public:
  explicit BnParamDesc(cudnnTensorDescriptor_t x) { DEZERO_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(*this, x, kMode)); }
};

// x, y, gy and gx: (n, c, hw, 1); the parameters: (1, c, 1, 1).
struct BnDescs {
  BnDescs(DType dt, std::int64_t n, std::int64_t c, std::int64_t hw) : x(dt, n, c, hw, 1), param(x) {}
  cd::CudnnTensorDesc x;
  BnParamDesc param;
};

bool not_supported(cudnnStatus_t s) { return s >= CUDNN_STATUS_NOT_SUPPORTED && s < CUDNN_STATUS_INTERNAL_ERROR; }

// What both entry points share: the checks, device, stream, handle and descriptors;
// `run(h, d, one, zero, aligned, s)` enqueues `call` and returns cuDNN's status
// (NOT_SUPPORTED: declined; any other failure is an error naming the call).
template <class Run>
bool with_cudnn_bn(const char* call, int device, DType dt, std::int64_t n, std::int64_t c, std::int64_t hw,
                   double eps, std::initializer_list<const void*> outputs, Run run) {
  if (!cd::batch_norm_fits_cudnn(dt, n, c, hw, eps, CUDNN_BN_MIN_EPSILON) || !cd::cudnn_enabled()) return false;
  for (const void* p : outputs)
    if (!cd::cudnn_aligned(p)) return false;
  cd::ScopedDevice sd(device);
  cudaStream_t s = cd::current_stream(device);
  std::lock_guard<std::mutex> lock(cd::library_mutex(device));
  cudnnHandle_t h = cd::cudnn_handle_or_null(device, s);
  if (h == nullptr) return false;
  BnDescs d(dt, n, c, hw);
  cd::CudnnScalars k;
  cd::CudnnAlignedInputs aligned(device, s);
  cudnnStatus_t st = run(h, d, k.get(dt, 1), k.get(dt, 0), aligned, s);
  if (not_supported(st)) {
    (void)cudaGetLastError();
    return false;
  }
  if (st != CUDNN_STATUS_SUCCESS) cd::throw_error("cuDNN", cudnnGetErrorString(st), call, __FILE__, __LINE__);
  return true;
}

}  // namespace

// --- the entry points (detail/launchers.hpp) ---------------------------------------------------
// x (n, c, hw), gamma, beta (c) -> y (x's shape), mean, inv_std (c); running_mean and
// running_var (c) updated in place (train) or read (test).
bool cudnn_batch_norm_forward(int device, DType dt, const void* x, const void* gamma, const void* beta, void* y,
                              void* mean, void* inv_std, void* running_mean, void* running_var, std::int64_t n,
                              std::int64_t c, std::int64_t hw, double decay, double eps, bool train) {
  return with_cudnn_bn(
      train ? "cudnnBatchNormalizationForwardTraining" : "cudnnBatchNormalizationForwardInference", device, dt, n,
      c, hw, eps, {y, mean, inv_std, running_mean, running_var},
      [&](cudnnHandle_t h, const BnDescs& d, const void* one, const void* zero, cd::CudnnAlignedInputs& aligned,
          cudaStream_t) {
        aligned.add(x, bytes_of(dt, n * c * hw));
        aligned.add(gamma, bytes_of(dt, c));
        aligned.add(beta, bytes_of(dt, c));
        if (train)
          return cudnnBatchNormalizationForwardTraining(h, kMode, one, zero, d.x, x, d.x, y, d.param, gamma, beta,
                                                        cd::cudnn_exponential_average_factor(decay), running_mean,
                                                        running_var, eps, mean, inv_std);
        cudnnStatus_t st = cudnnBatchNormalizationForwardInference(h, kMode, one, zero, d.x, x, d.x, y, d.param,
                                                                   gamma, beta, running_mean, running_var, eps);
        if (st == CUDNN_STATUS_SUCCESS) batch_norm_test_stats(device, dt, running_mean, running_var, mean, inv_std, c, eps);
        return st;
      });
}

// x, gy (n, c, hw), gamma, mean, inv_std (c; the forward's) -> gx (x's shape, or null: not
// wanted), ggamma, gbeta (c). Train mode only.
bool cudnn_batch_norm_backward(int device, DType dt, const void* x, const void* gy, const void* gamma,
                               const void* mean, const void* inv_std, void* gx, void* ggamma, void* gbeta,
                               std::int64_t n, std::int64_t c, std::int64_t hw, double eps, bool train) {
  if (!train) return false;
  return with_cudnn_bn(
      "cudnnBatchNormalizationBackward", device, dt, n, c, hw, eps, {gx, ggamma, gbeta},
      [&](cudnnHandle_t h, const BnDescs& d, const void* one, const void* zero, cd::CudnnAlignedInputs& aligned,
          cudaStream_t s) {
        aligned.add(x, bytes_of(dt, n * c * hw));
        aligned.add(gy, bytes_of(dt, n * c * hw));
        aligned.add(gamma, bytes_of(dt, c));
        aligned.add(mean, bytes_of(dt, c));
        aligned.add(inv_std, bytes_of(dt, c));
        std::unique_ptr<cd::DeviceBuffer> unwanted;  // gx that nobody reads (cuDNN always writes one)
        void* dx = gx;
        if (dx == nullptr) {
          unwanted = std::make_unique<cd::DeviceBuffer>(device, bytes_of(dt, n * c * hw), s);
          dx = unwanted->get();
        }
        return cudnnBatchNormalizationBackward(h, kMode, one, zero, one, zero, d.x, x, d.x, gy, d.x, dx, d.param,
                                               gamma, ggamma, gbeta, eps, mean, inv_std);
      });
}

}  // namespace dezero::detail::gpu

namespace dezero::cuda::detail {

double cudnn_bn_min_epsilon() noexcept { return CUDNN_BN_MIN_EPSILON; }

namespace {
bool read_back(cudnnTensorDescriptor_t desc, CudnnTensorShape& out) {
  cudnnDataType_t t{};
  int d[4] = {0, 0, 0, 0}, st[4] = {0, 0, 0, 0};
  if (cudnnGetTensor4dDescriptor(desc, &t, &d[0], &d[1], &d[2], &d[3], &st[0], &st[1], &st[2], &st[3]) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  for (int i = 0; i < 4; ++i) out.dims[i] = d[i], out.strides[i] = st[i];
  out.dtype_known = t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE;
  out.dtype = t == CUDNN_DATA_DOUBLE ? float64 : float32;
  return true;
}
}  // namespace

// (conv_algo.hpp) No GPU, stream or handle: descriptors only.
bool cudnn_batch_norm_descriptors(DType dt, std::int64_t n, std::int64_t c, std::int64_t hw, CudnnTensorShape& x,
                                  CudnnTensorShape& param) {
  if (cudnn_version() == 0) return false;
  try {
    ::dezero::detail::gpu::BnDescs d(dt, n, c, hw);
    return read_back(d.x, x) && read_back(d.param, param);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace dezero::cuda::detail
