// dezero/gpu/batch_norm.cu - the CUDA backend's fused batch normalisation and its
// launchers (backend/backend.hpp gives the contract): float32 and float64, x viewed as
// (n, c, hw), i.e. (N, C) with hw = 1 or NCHW with hw = H * W.
//
// Twin of cpu/batch_norm.cpp, with the same passes: one 256-thread block per channel
// walks the channel's m = n * hw values (element k at x + ((k / hw) * c + ch) * hw +
// k % hw), block-reduces the sums in double (block_allreduce), then writes y or gx. Thread
// 0 writes the channel's mean and inv_std and updates the running statistics in place.
// Simple rather than fast (few blocks on the large early layers of a ResNet): where cuDNN
// loads, its batch normalisation takes the cases it computes as DeZero does
// (cudnn_batch_norm.cpp); these kernels take the rest (m = 1, the test-mode backward,
// DEZERO_CUDNN=0, set_conv_library_path(false)). batch_norm_test_stats writes the test
// mode's mean and inv_std after cuDNN's inference forward, as the forward kernel does.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

__device__ __forceinline__ i64 bn_index(i64 k, i64 c, i64 hw, i64 ch) { return ((k / hw) * c + ch) * hw + k % hw; }

template <class T>
__global__ void bn_forward_kernel(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* inv_std, T* rm, T* rv,
                                  i64 n, i64 c, i64 hw, double decay, double eps, bool train) {
  const i64 ch = blockIdx.x, m = n * hw;
  __shared__ T s_mu, s_inv;
  if (train) {
    double s = 0;
    for (i64 k = threadIdx.x; k < m; k += blockDim.x) s += static_cast<double>(x[bn_index(k, c, hw, ch)]);
    const double md = block_allreduce(ReduceOp::Sum, s) / static_cast<double>(m);
    double q = 0;
    for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
      double d = static_cast<double>(x[bn_index(k, c, hw, ch)]) - md;
      q += d * d;
    }
    const double var = block_allreduce(ReduceOp::Sum, q) / static_cast<double>(m);
    if (threadIdx.x == 0) {
      const double adjust = static_cast<double>(m) / fmax(static_cast<double>(m) - 1.0, 1.0);
      s_mu = static_cast<T>(md);
      s_inv = static_cast<T>(1.0 / sqrt(var + eps));
      rm[ch] = static_cast<T>(static_cast<double>(rm[ch]) * decay + md * (1.0 - decay));
      rv[ch] = static_cast<T>(static_cast<double>(rv[ch]) * decay + var * ((1.0 - decay) * adjust));
    }
  } else if (threadIdx.x == 0) {
    s_mu = rm[ch];
    s_inv = T(1) / sqrt(rv[ch] + static_cast<T>(eps));
  }
  __syncthreads();
  const T mu = s_mu, inv = s_inv;
  if (threadIdx.x == 0) {
    mean[ch] = mu;
    inv_std[ch] = inv;
  }
  const T a = gamma[ch] * inv, b = beta[ch] - mu * a;
  for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
    i64 e = bn_index(k, c, hw, ch);
    y[e] = x[e] * a + b;
  }
}

template <class T>
__global__ void bn_backward_kernel(const T* x, const T* gy, const T* gamma, const T* mean, const T* inv_std, T* gx,
                                   T* ggamma, T* gbeta, i64 n, i64 c, i64 hw, bool train) {
  const i64 ch = blockIdx.x, m = n * hw;
  const double mu = static_cast<double>(mean[ch]), inv = static_cast<double>(inv_std[ch]);
  double r1 = 0, r2 = 0;
  for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
    i64 e = bn_index(k, c, hw, ch);
    double g = static_cast<double>(gy[e]);
    r1 += g;
    r2 += (static_cast<double>(x[e]) - mu) * g;
  }
  const double sg = block_allreduce(ReduceOp::Sum, r1);
  const double gg = block_allreduce(ReduceOp::Sum, r2) * inv;
  if (threadIdx.x == 0) {
    gbeta[ch] = static_cast<T>(sg);
    ggamma[ch] = static_cast<T>(gg);
  }
  if (!gx) return;
  const double dm = static_cast<double>(m);
  const double k1d = static_cast<double>(gamma[ch]) * inv;
  const double k2d = train ? -k1d * inv * gg / dm : 0.0;
  const double k0d = train ? -k1d * sg / dm - k2d * mu : 0.0;
  const T k1 = static_cast<T>(k1d), k2 = static_cast<T>(k2d), k0 = static_cast<T>(k0d);
  for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
    i64 e = bn_index(k, c, hw, ch);
    gx[e] = train ? k1 * gy[e] + k2 * x[e] + k0 : k1 * gy[e];
  }
}

// Test mode's statistics for the backward, the forward kernel's test branch.
template <class T>
__global__ void bn_test_stats_kernel(const T* rm, const T* rv, T* mean, T* inv_std, i64 c, double eps) {
  DEZERO_GRID_LOOP(ch, c) {
    mean[ch] = rm[ch];
    inv_std[ch] = T(1) / sqrt(rv[ch] + static_cast<T>(eps));
  }
}

}  // namespace

namespace gpu {

void batch_norm_test_stats(int device, DType dt, const void* running_mean, const void* running_var, void* mean,
                           void* inv_std, std::int64_t c, double eps) {
  if (c <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(bn_test_stats_kernel<float>, c, s, static_cast<const float*>(running_mean),
                  static_cast<const float*>(running_var), static_cast<float*>(mean), static_cast<float*>(inv_std), c,
                  eps);
  else
    DEZERO_LAUNCH(bn_test_stats_kernel<double>, c, s, static_cast<const double*>(running_mean),
                  static_cast<const double*>(running_var), static_cast<double*>(mean), static_cast<double*>(inv_std),
                  c, eps);
}

void batch_norm_forward(int device, DType dt, const void* x, const void* gamma, const void* beta, void* y, void* mean,
                        void* inv_std, void* running_mean, void* running_var, std::int64_t n, std::int64_t c,
                        std::int64_t hw, double decay, double eps, bool train) {
  if (c <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    bn_forward_kernel<T><<<static_cast<unsigned>(c), kBlock, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta), static_cast<T*>(y),
        static_cast<T*>(mean), static_cast<T*>(inv_std), static_cast<T*>(running_mean), static_cast<T*>(running_var),
        n, c, hw, decay, eps, train);
    DEZERO_CUDA_CHECK_LAUNCH();
  };
  if (dt == float32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

void batch_norm_backward(int device, DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                         const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n, std::int64_t c,
                         std::int64_t hw, bool train) {
  if (c <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    bn_backward_kernel<T><<<static_cast<unsigned>(c), kBlock, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(gy), static_cast<const T*>(gamma),
        static_cast<const T*>(mean), static_cast<const T*>(inv_std), static_cast<T*>(gx), static_cast<T*>(ggamma),
        static_cast<T*>(gbeta), n, c, hw, train);
    DEZERO_CUDA_CHECK_LAUNCH();
  };
  if (dt == float32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

}  // namespace gpu

}  // namespace dezero::detail
