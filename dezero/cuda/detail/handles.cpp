// dezero/cuda/detail/handles.cpp - the per-device cuBLAS handle, cuRAND generator
// and cuDNN handle, made on first use and kept for the whole process, and the number
// of SMs each device has (reduce.cu sizes its grids by it).
//
// One mutex per device guards them: a handle is bound to the caller's stream and used
// under library_mutex(device), so threads with different current streams take turns.
#include <memory>
#include <mutex>
#include <vector>

#include "dezero/cuda/detail/cudnn.hpp"
#include "dezero/cuda/detail/runtime.hpp"

namespace dezero::cuda::detail {

namespace {
struct Handles {
  std::mutex mu;
  cublasHandle_t cublas = nullptr;
  curandGenerator_t curand = nullptr;
  cudnnHandle_t cudnn = nullptr;
  int sms = 0;
};
Handles& handles(int device) {
  static std::mutex mu;
  static auto* all = new std::vector<std::unique_ptr<Handles>>();  // leaked on purpose
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<std::size_t>(device) >= all->size()) all->resize(device + 1);
  auto& h = (*all)[device];
  if (!h) h = std::make_unique<Handles>();
  return *h;
}
}  // namespace

std::mutex& library_mutex(int device) { return handles(device).mu; }

cublasHandle_t cublas_handle(int device, cudaStream_t stream) {
  Handles& h = handles(device);
  if (!h.cublas) {
    ScopedDevice g(device);
    DEZERO_CUBLAS_CHECK(cublasCreate(&h.cublas));
  }
  DEZERO_CUBLAS_CHECK(cublasSetStream(h.cublas, stream));
  return h.cublas;
}

curandGenerator_t curand_generator(int device, cudaStream_t stream) {
  Handles& h = handles(device);
  if (!h.curand) {
    ScopedDevice g(device);
    DEZERO_CURAND_CHECK(curandCreateGenerator(&h.curand, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  }
  DEZERO_CURAND_CHECK(curandSetStream(h.curand, stream));
  return h.curand;
}

cudnnHandle_t cudnn_handle(int device, cudaStream_t stream) {
  Handles& h = handles(device);
  if (!h.cudnn) {
    ScopedDevice g(device);
    DEZERO_CUDNN_CHECK(cudnnCreate(&h.cudnn));
  }
  DEZERO_CUDNN_CHECK(cudnnSetStream(h.cudnn, stream));
  return h.cudnn;
}

int sm_count(int device) {
  Handles& h = handles(device);
  if (!h.sms) DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&h.sms, cudaDevAttrMultiProcessorCount, device));
  return h.sms;
}

}  // namespace dezero::cuda::detail
