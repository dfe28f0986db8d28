// dezero/cuda/cudnn_conv.cpp - the CUDA backend's convolutions through cuDNN's legacy
// convolution API: y = conv(x, W) + b (cudnnConvolutionForward, then cudnnAddTensor),
// gx from gy and W (cudnnConvolutionBackwardData, which is also deconv2d's forward) and
// gW from x and gy (cudnnConvolutionBackwardFilter). NCHW, cross-correlation (what
// DeZero's im2col + matmul computes, step 57), float32 and float64.
//
// Each entry point answers false, having done nothing, where cuDNN cannot take the case:
// another dtype, a geometry cuDNN's 4-d descriptors cannot express, cuDNN missing or
// older than 8 (cudnnGetVersion() at first use), DEZERO_CUDNN=0 in the environment, or
// cuDNN's heuristics refusing the case. The caller (functions/conv) then uses im2col and
// GEMM, so a machine without cuDNN still convolves. The bias gradient is not here: the
// caller sums gy.
//
// The algorithm is chosen once per (pass, ConvGeom, dtype, device, TF32 switch,
// workspace limit) with cudnnGet*Algorithm_v7 (heuristics only: nothing runs, nothing is
// allocated), among those whose workspace fits cuda::get_max_workspace_size(), else a
// workspace-free fallback (detail/conv_algo.hpp holds the rule as host code). float32
// uses FMA math unless cuda::set_allow_tf32(true): no TF32, so results match the CPU to
// float32 precision. The workspace comes from the memory pool on the current stream and
// goes back right after the call is enqueued (the pool reuses a block only in that
// stream's order). The handle is bound to the current stream and used under
// library_mutex(device); every call is checked with file:line (DEZERO_CUDNN_CHECK).
//
// Pooling through cuDNN is in cudnn_pool.cpp. Not here: cuDNN's graph (v8+) API.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/cuda/detail/conv_algo.hpp"
#include "dezero/cuda/detail/cudnn.hpp"
#include "dezero/cuda/detail/launchers.hpp"
#include "dezero/cuda/detail/libs.hpp"
#include "dezero/cuda/detail/runtime.hpp"

namespace dezero::detail::gpu {

namespace {

namespace cd = ::dezero::cuda::detail;
using cd::ConvAlgoCandidate;
using cd::ConvAlgoChoice;
using cd::ConvAlgoKey;
using cd::ConvMath;
using cd::ConvPass;

static_assert(int(ConvMath::default_math) == CUDNN_DEFAULT_MATH && int(ConvMath::tensor_op) == CUDNN_TENSOR_OP_MATH &&
                  int(ConvMath::tensor_op_allow_conversion) == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
                  int(ConvMath::fma) == CUDNN_FMA_MATH,
              "ConvMath mirrors cudnnMathType_t");

using TensorDesc = cd::CudnnTensorDesc;
using Scalars = cd::CudnnScalars;
inline cudnnDataType_t data_type(DType dt) { return cd::cudnn_data_type(dt); }

// --- RAII descriptors ------------------------------------------------------------------------
// W: (oc, c, kh, kw)
class FilterDesc : public cd::CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                              cudnnDestroyFilterDescriptor> {
 public:
  FilterDesc(DType dt, std::int64_t oc, std::int64_t c, std::int64_t kh, std::int64_t kw) {
    DEZERO_CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(*this, data_type(dt), CUDNN_TENSOR_NCHW, int(oc), int(c), int(kh), int(kw)));
  }
};

// Padding and stride of g, no dilation, cross-correlation, computed in the data's type.
class ConvDesc : public cd::CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                            cudnnDestroyConvolutionDescriptor> {
 public:
  ConvDesc(DType dt, const ConvGeom& g, ConvMath math) {
    DEZERO_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(*this, int(g.ph), int(g.pw), int(g.sh), int(g.sw), 1, 1,
                                                       CUDNN_CROSS_CORRELATION, data_type(dt)));
    set_math(math);
  }
  void set_math(ConvMath math) {
    DEZERO_CUDNN_CHECK(cudnnSetConvolutionMathType(*this, static_cast<cudnnMathType_t>(math)));
  }
};

// The descriptors of one convolution: x (n, c, h, w), W (oc, c, kh, kw), y (n, oc, oh, ow).
struct ConvDescs {
  ConvDescs(DType dt, const ConvGeom& g, ConvMath math)
      : x(dt, g.n, g.c, g.h, g.w), y(dt, g.n, g.oc, g.oh, g.ow), w(dt, g.oc, g.c, g.kh, g.kw), conv(dt, g, math) {}
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
};

// --- is cuDNN usable? ------------------------------------------------------------------------
// Once per process: DEZERO_CUDNN=0 turns it off; otherwise libcudnn must load, say it is
// 8.x or later, and make the three kinds of descriptor (which needs no GPU, and loads
// cuDNN 9's ops and cnn sub-libraries). A failure here is not an error: convolutions take
// the im2col path.
std::size_t loaded_version() noexcept {
  static const std::size_t v = [] {
    try {
      cd::load_gpu_library("cudnn");
      return cudnnGetVersion();
    } catch (const std::exception&) {
      return std::size_t(0);
    }
  }();
  return v;
}
bool cudnn_usable() noexcept {
  static const bool usable = [] {
    const char* env = std::getenv("DEZERO_CUDNN");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    if (!cd::cudnn_version_usable(loaded_version())) return false;
    try {
      ConvGeom g;
      g.n = g.c = g.oc = 1;
      g.h = g.w = g.kh = g.kw = g.oh = g.ow = 1;
      ConvDescs d(float32, g, ConvMath::fma);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }();
  return usable;
}

// --- the algorithm cache ---------------------------------------------------------------------
std::mutex& cache_mutex() {
  static std::mutex* m = new std::mutex();  // leaked on purpose, like the handles
  return *m;
}
std::unordered_map<ConvAlgoKey, ConvAlgoChoice, cd::ConvAlgoKeyHash>& cache() {
  static auto* c = new std::unordered_map<ConvAlgoKey, ConvAlgoChoice, cd::ConvAlgoKeyHash>();
  return *c;
}

// cudnnGet*Algorithm_v7's rows, fastest first, without cuDNN's types.
template <class Perf>
std::vector<ConvAlgoCandidate> rows_of(const std::vector<Perf>& perf, int returned) {
  std::vector<ConvAlgoCandidate> rows;
  for (int i = 0; i < returned && i < static_cast<int>(perf.size()); ++i)
    rows.push_back({static_cast<int>(perf[i].algo), perf[i].status == CUDNN_STATUS_SUCCESS, perf[i].memory,
                    static_cast<ConvMath>(perf[i].mathType)});
  return rows;
}

// The pass's rows from cudnnGet*Algorithm_v7 (false: cuDNN refused the case, which is then
// declined rather than an error), and the workspace of one algorithm (false: not supported).
bool heuristics(ConvPass pass, cudnnHandle_t h, const ConvDescs& d, std::vector<ConvAlgoCandidate>& rows) {
  int count = 0;
  int returned = 0;
  switch (pass) {
    case ConvPass::forward: {
      if (cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count) != CUDNN_STATUS_SUCCESS || count <= 0) return false;
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(count);
      if (cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, count, &returned, perf.data()) !=
          CUDNN_STATUS_SUCCESS)
        return false;
      rows = rows_of(perf, returned);
      return true;
    }
    case ConvPass::backward_data: {
      if (cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count) != CUDNN_STATUS_SUCCESS || count <= 0)
        return false;
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(count);
      if (cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, count, &returned, perf.data()) !=
          CUDNN_STATUS_SUCCESS)
        return false;
      rows = rows_of(perf, returned);
      return true;
    }
    case ConvPass::backward_filter: {
      if (cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count) != CUDNN_STATUS_SUCCESS || count <= 0)
        return false;
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(count);
      if (cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, count, &returned, perf.data()) !=
          CUDNN_STATUS_SUCCESS)
        return false;
      rows = rows_of(perf, returned);
      return true;
    }
  }
  return false;
}

bool workspace_of(ConvPass pass, cudnnHandle_t h, const ConvDescs& d, int algo, std::size_t& bytes) {
  cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
  switch (pass) {
    case ConvPass::forward:
      s = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                  &bytes);
      break;
    case ConvPass::backward_data:
      s = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x,
                                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
      break;
    case ConvPass::backward_filter:
      s = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w,
                                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes);
      break;
  }
  return s == CUDNN_STATUS_SUCCESS;
}

int fallback_algo(ConvPass pass) {  // implicit GEMM / ALGO_0: no workspace
  switch (pass) {
    case ConvPass::forward: return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    case ConvPass::backward_data: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    case ConvPass::backward_filter: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  }
  return 0;
}

// The cached choice for `key`, made now when there is none. `d.conv` is left with the
// choice's math mode. Called under library_mutex(key.device), with `h` bound.
ConvAlgoChoice choose(const ConvAlgoKey& key, cudnnHandle_t h, ConvDescs& d) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = cache().find(key);
    if (it != cache().end()) {
      if (it->second.algo >= 0) d.conv.set_math(it->second.math);
      return it->second;
    }
  }
  ConvAlgoChoice c;  // algo -1: not through cuDNN
  std::vector<ConvAlgoCandidate> rows;
  if (heuristics(key.pass, h, d, rows)) {
    c = cd::choose_conv_algo(rows, key.workspace_limit, key.dtype, key.allow_tf32, fallback_algo(key.pass));
    // The workspace for the math mode the call will use (the heuristics' figure may be an
    // estimate); a pick that does not fit after all gives way to the fallback.
    for (int attempt = 0; attempt < 2 && c.algo >= 0; ++attempt) {
      d.conv.set_math(c.math);
      std::size_t bytes = 0;
      if (workspace_of(key.pass, h, d, c.algo, bytes) && bytes <= key.workspace_limit) {
        c.workspace = bytes;
        break;
      }
      if (c.fallback) {
        c.algo = -1;
      } else {
        c = {fallback_algo(key.pass), cd::requested_conv_math(key.dtype, key.allow_tf32), 0, true};
      }
    }
  }
  if (c.algo < 0) d.conv.set_math(cd::requested_conv_math(key.dtype, key.allow_tf32));
  std::lock_guard<std::mutex> lock(cache_mutex());
  cache().emplace(key, c);
  return c;
}

// What the three entry points share: checks, the device and stream, the handle, the
// descriptors and the algorithm; `run` enqueues the call with the workspace.
template <class Run>
bool with_cudnn(ConvPass pass, int device, DType dt, const ConvGeom& g, Run run) {
  if (dt != float32 && dt != float64) return false;
  if (!cd::conv_geometry_fits_cudnn(g) || !cudnn_usable()) return false;
  cd::ScopedDevice sd(device);
  cudaStream_t s = cd::current_stream(device);
  ConvAlgoKey key;
  key.pass = pass;
  key.device = device;
  key.dtype = dt;
  key.allow_tf32 = cd::allow_tf32();
  key.workspace_limit = cd::max_workspace_size();
  key.g = g;
  std::lock_guard<std::mutex> lock(cd::library_mutex(device));
  cudnnHandle_t h = cd::cudnn_handle_or_null(device, s);
  if (h == nullptr) return false;
  ConvDescs d(dt, g, cd::requested_conv_math(dt, key.allow_tf32));
  ConvAlgoChoice c = choose(key, h, d);
  if (c.algo < 0) return false;
  if (c.workspace == 0) {
    run(h, d, c.algo, nullptr, std::size_t(0));
  } else {
    cd::DeviceBuffer ws(device, c.workspace, s);  // back to the pool once the call is enqueued
    run(h, d, c.algo, ws.get(), c.workspace);
  }
  return true;
}

}  // namespace

}  // namespace dezero::detail::gpu

namespace dezero::cuda::detail {
std::size_t cudnn_version() noexcept { return ::dezero::detail::gpu::loaded_version(); }
bool cudnn_enabled() noexcept { return ::dezero::detail::gpu::cudnn_usable(); }

// (cudnn.hpp)
cudnnHandle_t cudnn_handle_or_null(int device, cudaStream_t stream) {
  static auto* mu = new std::mutex();                   // leaked on purpose, like the handles
  static auto* state = new std::vector<signed char>();  // per device: 0 unknown, 1 good, -1 bad
  signed char known = 0;
  {
    std::lock_guard<std::mutex> lock(*mu);
    if (static_cast<std::size_t>(device) >= state->size()) state->resize(device + 1, 0);
    known = (*state)[device];
  }
  if (known < 0) return nullptr;
  if (known > 0) return cudnn_handle(device, stream);
  cudnnHandle_t h = nullptr;
  bool ok = true;
  try {
    h = cudnn_handle(device, stream);
  } catch (const std::exception&) {
    ok = false;
  }
  std::lock_guard<std::mutex> lock(*mu);
  (*state)[device] = ok ? 1 : -1;
  return h;
}
}  // namespace dezero::cuda::detail

namespace dezero::detail::gpu {

// --- the entry points (detail/launchers.hpp) -------------------------------------------------
// x (n, c, h, w), W (oc, c, kh, kw), b (oc) or null -> y (n, oc, oh, ow)
bool cudnn_conv2d_forward(int device, DType dt, const void* x, const void* w, const void* b, void* y,
                          const ConvGeom& g) {
  return with_cudnn(ConvPass::forward, device, dt, g,
                    [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      DEZERO_CUDNN_CHECK(cudnnConvolutionForward(h, k.get(dt, 1), d.x, x, d.w, w, d.conv,
                                                                 static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws,
                                                                 ws_bytes, k.get(dt, 0), d.y, y));
                      if (b != nullptr) {  // y += b as (1, oc, 1, 1), broadcast over n, oh, ow
                        TensorDesc bd(dt, 1, g.oc, 1, 1);
                        DEZERO_CUDNN_CHECK(cudnnAddTensor(h, k.get(dt, 1), bd, b, k.get(dt, 1), d.y, y));
                      }
                    });
}

// gy (n, oc, oh, ow), W (oc, c, kh, kw) -> gx (n, c, h, w), overwritten
bool cudnn_conv2d_backward_data(int device, DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) {
  return with_cudnn(ConvPass::backward_data, device, dt, g,
                    [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      DEZERO_CUDNN_CHECK(cudnnConvolutionBackwardData(
                          h, k.get(dt, 1), d.w, w, d.y, gy, d.conv, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
                          ws, ws_bytes, k.get(dt, 0), d.x, gx));
                    });
}

// x (n, c, h, w), gy (n, oc, oh, ow) -> gW (oc, c, kh, kw), overwritten
bool cudnn_conv2d_backward_filter(int device, DType dt, const void* x, const void* gy, void* gw,
                                  const ConvGeom& g) {
  return with_cudnn(ConvPass::backward_filter, device, dt, g,
                    [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      DEZERO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
                          h, k.get(dt, 1), d.x, x, d.y, gy, d.conv,
                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, ws_bytes, k.get(dt, 0), d.w, gw));
                    });
}

}  // namespace dezero::detail::gpu
