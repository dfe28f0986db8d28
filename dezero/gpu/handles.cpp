// dezero/gpu/handles.cpp - the per-device cuBLAS handle, cuRAND generator
// and cuDNN handle, made on first use and kept for the whole process, and the number
// of SMs each device has (reduce.cu sizes its grids by it).
//
// One mutex per device guards them: a handle is bound to the caller's stream and used
// under library_mutex(device), so threads with different current streams take turns.
// cuBLAS's math mode follows cuda::get_allow_tf32() at each use.
// The calls only enqueue work, though: GEMMs on two streams may still run at the same
// time, so each (device, stream) has its own cuBLAS workspace, a pool block allocated
// on that stream at its first GEMM and kept until the stream is destroyed
// (cublasSetStream resets the handle to cuBLAS's default workspace, which the streams
// would otherwise share).
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "dezero/gpu/cudnn.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::cuda::detail {

namespace {
struct Handles {
  std::mutex mu;
  cublasHandle_t cublas = nullptr;
  curandGenerator_t curand = nullptr;
  cudnnHandle_t cudnn = nullptr;
  int sms = 0;
  std::size_t workspace_bytes = 0;
  std::map<cudaStream_t, void*> workspaces;  // the cuBLAS workspace of each stream
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

namespace {
// cuBLAS's recommended workspace: 32 MiB from sm_90 (Hopper) on, 4 MiB before. Called
// under library_mutex(device).
std::size_t cublas_workspace_bytes(int device) {
  Handles& h = handles(device);
  if (!h.workspace_bytes) {
    int major = 0;
    DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    h.workspace_bytes = (major >= 9 ? 32u : 4u) << 20;  // cuBLAS's recommended sizes
  }
  return h.workspace_bytes;
}
}  // namespace

cublasHandle_t cublas_handle(int device, cudaStream_t stream) {
  Handles& h = handles(device);
  if (!h.cublas) {
    ScopedDevice g(device);
    DEZERO_CUBLAS_CHECK(cublasCreate(&h.cublas));
  }
  DEZERO_CUBLAS_CHECK(cublasSetStream(h.cublas, stream));
  // cuBLAS's default math never uses TF32 for float32 (unless NVIDIA_TF32_OVERRIDE says
  // so); cuda::set_allow_tf32(true) lets it, for the GEMMs enqueued from then on.
  DEZERO_CUBLAS_CHECK(cublasSetMathMode(h.cublas, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  std::size_t bytes = cublas_workspace_bytes(device);
  void*& ws = h.workspaces[stream];
  if (!ws) {
    try {
      ws = pool_malloc(device, bytes, stream);
    } catch (...) {
      h.workspaces.erase(stream);
      throw;
    }
  }
  DEZERO_CUBLAS_CHECK(cublasSetWorkspace(h.cublas, ws, bytes));
  return h.cublas;
}

void release_cublas_workspace(int device, cudaStream_t stream) noexcept {
  try {
    Handles& h = handles(device);
    std::lock_guard<std::mutex> lock(h.mu);
    auto it = h.workspaces.find(stream);
    if (it == h.workspaces.end()) return;
    void* ws = it->second;
    h.workspaces.erase(it);
    // The handle may still point at ws: every use goes through cublas_handle, which
    // sets the stream and its workspace again first.
    pool_free(device, ws);
  } catch (...) {
  }
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
