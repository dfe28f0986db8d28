// dezero/gpu/cudnn_conv.cpp - the CUDA backend's convolutions through cuDNN's legacy
// convolution API: y = conv(x, W) + b (cudnnConvolutionForward, then cudnnAddTensor),
// gx from gy and W (cudnnConvolutionBackwardData, which is also deconv2d's forward) and
// gW from x and gy (cudnnConvolutionBackwardFilter). NCHW, cross-correlation (what
// DeZero's im2col + matmul computes, step 57), float32 and float64.
//
// Autocast (issue 31: ConvGeom::compute bfloat16 or float16, the buffers float32): the two
// inputs are rounded (half.cu's cast, round to nearest even) into 16-bit pool buffers, cuDNN
// convolves them with 16-bit tensor and filter descriptors, a float32 convolution descriptor
// (float32 sums: PSEUDO_HALF_CONFIG / PSEUDO_BFLOAT16_CONFIG; the legacy API has no
// configuration with 16-bit inputs and a float32 output) and tensor-op math, into a 16-bit
// buffer that is then widened into the float32 output; the bias is added in float32. So the
// output carries one more rounding, to the 16-bit type, than the host's float32 fallback on
// rounded operands (as PyTorch's autocast, whose convolutions return the 16-bit type); a
// float16 result beyond 65504 is inf (loss scaling then skips the step).
// bfloat16 needs cuDNN 8.1+ and sm_80+ (conv_algo.hpp's cudnn_half_conv_supported); the
// rest is declined and the caller rounds the operands and convolves in float32.
//
// Each entry point answers false, having done nothing, where cuDNN cannot take the case:
// another dtype, a geometry cuDNN's 4-d descriptors cannot express, cuDNN missing or
// older than 8 (cudnnGetVersion() at first use), DEZERO_CUDNN=0 in the environment, a
// handle that cannot be made, an output that is not 16-byte aligned, or cuDNN's heuristics
// refusing the case. The caller (tensor/conv.cpp) then uses im2col and GEMM, so a machine
// without cuDNN still convolves. Why cuDNN is off is kept (cudnn_unavailable_reason()).
// An input that is not 16-byte aligned (an offset view) is copied first. The bias
// gradient is not here: the caller sums gy.
//
// A call that fails at run time for its algorithm (the heuristics are no guarantee) is
// tried again with the pass's workspace-free fallback, and when that fails too the case
// is declined (im2col, after the fact: the output is overwritten). The cache keeps what
// worked, or algo -1, so each failing choice costs one try per process
// (conv_algo.hpp's conv_algo_after_failure; cudnn_conv_last_failure() says what happened).
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
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <initializer_list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/gpu/conv_algo.hpp"
#include "dezero/gpu/cudnn.hpp"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/libs.hpp"
#include "dezero/gpu/runtime.hpp"
#include "dezero/env.hpp"

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
// W: (oc, c, kh, kw); a grouped convolution's (oc, c/groups, kh, kw) is made with c/groups.
class FilterDesc : public cd::CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                              cudnnDestroyFilterDescriptor> {
 public:
  FilterDesc(DType dt, std::int64_t oc, std::int64_t c, std::int64_t kh, std::int64_t kw) {
    DEZERO_CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(*this, data_type(dt), CUDNN_TENSOR_NCHW, int(oc), int(c), int(kh), int(kw)));
  }
};

// Padding and stride of g, no dilation, cross-correlation, computed in the data's type
// (float32 for the 16-bit types: the pseudo-half configurations); g.groups > 1 sets cuDNN's
// group count (its filter descriptor then has c/groups input channels).
class ConvDesc : public cd::CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                            cudnnDestroyConvolutionDescriptor> {
 public:
  ConvDesc(DType dt, const ConvGeom& g, ConvMath math) {
    DEZERO_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(*this, int(g.ph), int(g.pw), int(g.sh), int(g.sw), 1, 1,
                                                       CUDNN_CROSS_CORRELATION,
                                                       is_half(dt) ? CUDNN_DATA_FLOAT : data_type(dt)));
    if (g.groups > 1) DEZERO_CUDNN_CHECK(cudnnSetConvolutionGroupCount(*this, int(g.groups)));
    set_math(math);
  }
  void set_math(ConvMath math) {
    DEZERO_CUDNN_CHECK(cudnnSetConvolutionMathType(*this, static_cast<cudnnMathType_t>(math)));
  }
};

// The descriptors of one convolution: x (n, c, h, w), W (oc, c/groups, kh, kw), y (n, oc, oh, ow).
struct ConvDescs {
  ConvDescs(DType dt, const ConvGeom& g, ConvMath math)
      : x(dt, g.n, g.c, g.h, g.w), y(dt, g.n, g.oc, g.oh, g.ow), w(dt, g.oc, g.c / g.groups, g.kh, g.kw),
        conv(dt, g, math) {}
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
};

// W's elements: oc (c/groups) kh kw.
std::int64_t weights_of(const ConvGeom& g) { return g.oc * (g.c / g.groups) * g.kh * g.kw; }

// --- is cuDNN usable? ------------------------------------------------------------------------
// Once per process: DEZERO_CUDNN=0 turns it off; otherwise libcudnn must load, say it is
// 8.x or later, and make the three kinds of descriptor (which needs no GPU, and loads
// cuDNN 9's ops and cnn sub-libraries). A failure here is not an error: convolutions take
// the im2col path, and the reason is kept for cudnn_unavailable_reason().
struct Loaded {
  std::size_t version = 0;
  std::string error;  // why libcudnn did not load
};
const Loaded& loaded() noexcept {
  static const Loaded l = [] {
    Loaded r;
    try {
      cd::load_gpu_library("cudnn");
      r.version = cudnnGetVersion();
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    return r;
  }();
  return l;
}
std::size_t loaded_version() noexcept { return loaded().version; }

struct Usability {
  bool usable = false;
  std::string reason;  // "" when usable
};
const Usability& usability() noexcept {
  static const Usability u = [] {
    Usability r;
    const char* env = ::dezero::detail::env_value("DEZERO_CUDNN");
    if (env != nullptr && std::strcmp(env, "0") == 0) {
      r.reason = "DEZERO_CUDNN=0 in the environment";
      return r;
    }
    const Loaded& l = loaded();
    if (l.version == 0) {
      r.reason = l.error.empty() ? std::string("libcudnn did not load") : "libcudnn did not load: " + l.error;
      return r;
    }
    if (!cd::cudnn_version_usable(l.version)) {
      r.reason = "cuDNN " + std::to_string(l.version) + " is older than 8 (the legacy API with the _v7 heuristics)";
      return r;
    }
    try {
      ConvGeom g;
      g.n = g.c = g.oc = 1;
      g.h = g.w = g.kh = g.kw = g.oh = g.ow = 1;
      ConvDescs d(float32, g, ConvMath::fma);
      r.usable = true;
    } catch (const std::exception& e) {
      r.reason = std::string("cuDNN ") + std::to_string(l.version) + " cannot make a convolution's descriptors: " +
                 e.what();
    }
    return r;
  }();
  return u;
}
bool cudnn_usable() noexcept { return usability().usable; }

// --- the handle of each device ------------------------------------------------------------------
// 0 unknown, 1 made, -1 cudnnCreate failed (its error kept, the first one).
struct HandleState {
  std::mutex mu;
  std::vector<signed char> state;
  std::string first_failure;
};
HandleState& handle_state() {
  static auto* s = new HandleState();  // leaked on purpose, like the handles
  return *s;
}
bool any_handle_failed() {
  HandleState& hs = handle_state();
  std::lock_guard<std::mutex> lock(hs.mu);
  return !hs.first_failure.empty();
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

// The run-time retry's test hook and record (conv_algo.hpp).
std::atomic<int> g_fail_next{0};
std::mutex& failure_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::string& last_failure() {
  static auto* s = new std::string();
  return *s;
}
const char* pass_call(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward: return "cudnnConvolutionForward";
    case ConvPass::backward_data: return "cudnnConvolutionBackwardData";
    case ConvPass::backward_filter: return "cudnnConvolutionBackwardFilter";
  }
  return "cudnnConvolution";
}

// What the three entry points share: checks, the device and stream, the handle, the
// descriptors, the algorithm, aligned copies of the `inputs` (pointer, bytes) that need
// them, then `prepare()` (autocast's rounded copies; once, when cuDNN takes the case);
// `run(h, d, algo, workspace, bytes)` enqueues the call and returns cuDNN's status.
// `dt` is the descriptors' type: the buffers' (float32, float64), or autocast's 16-bit
// g.compute, whose buffers `prepare` makes.
// A failing status moves to the next choice (conv_algo_after_failure), and the cache
// keeps the one that worked, or algo -1 (declined: false, the caller's im2col path).
template <class Prepare, class Run>
bool with_cudnn(ConvPass pass, int device, DType dt, const ConvGeom& g, void* output,
                std::initializer_list<std::pair<const void**, std::size_t>> inputs, Prepare prepare, Run run) {
  if (is_half(g.compute) ? dt != g.compute : (dt != float32 && dt != float64)) return false;
  if (!cd::conv_geometry_fits_cudnn(g) || !cudnn_usable()) return false;
  if (!cd::cudnn_aligned(output)) return false;
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
  cd::CudnnAlignedInputs aligned(device, s);
  for (const auto& in : inputs) aligned.add(*in.first, in.second);
  prepare();
  const ConvAlgoChoice first = c;
  std::string failures;
  while (c.algo >= 0) {
    cudnnStatus_t st = CUDNN_STATUS_EXECUTION_FAILED;
    int fail = g_fail_next.load();
    while (fail > 0 && !g_fail_next.compare_exchange_weak(fail, fail - 1)) {
    }
    if (fail <= 0) {
      if (c.workspace == 0) {
        st = run(h, d, c.algo, nullptr, std::size_t(0));
      } else {
        cd::DeviceBuffer ws(device, c.workspace, s);  // back to the pool once the call is enqueued
        st = run(h, d, c.algo, ws.get(), c.workspace);
      }
    }
    if (st == CUDNN_STATUS_SUCCESS) {
      if (c.algo != first.algo || c.math != first.math) {
        std::lock_guard<std::mutex> lock2(cache_mutex());
        cache().insert_or_assign(key, c);
      }
      if (!failures.empty()) {
        std::lock_guard<std::mutex> lock2(failure_mutex());
        last_failure() = failures + "; algorithm " + std::to_string(c.algo) + " (the fallback) worked";
      }
      return true;
    }
    (void)cudaGetLastError();  // a launch error cuDNN left behind is not the next kernel's
    if (!failures.empty()) failures += "; ";
    failures += std::string(pass_call(pass)) + " failed with algorithm " + std::to_string(c.algo) + ": " +
                cudnnGetErrorString(st) + (fail > 0 ? " (injected by cudnn_conv_fail_next_calls)" : "");
    c = cd::conv_algo_after_failure(c, dt, key.allow_tf32, fallback_algo(pass));
    if (c.algo >= 0) {  // the fallback: its workspace (none) for the math mode it uses
      d.conv.set_math(c.math);
      std::size_t bytes = 0;
      if (workspace_of(pass, h, d, c.algo, bytes) && bytes <= key.workspace_limit) c.workspace = bytes;
      else c = ConvAlgoChoice{};
    }
  }
  {
    std::lock_guard<std::mutex> lock2(cache_mutex());
    cache().insert_or_assign(key, ConvAlgoChoice{});
  }
  std::lock_guard<std::mutex> lock2(failure_mutex());
  last_failure() = failures + "; declined: im2col from now on for this case";
  return false;
}

// Bytes of `count` elements of dt (float32 or float64).
std::size_t bytes_of(DType dt, std::int64_t count) { return static_cast<std::size_t>(count) * (dt == float32 ? 4u : 8u); }

// --- autocast: 16-bit copies of float32 buffers ------------------------------------------------
// The GPU's compute capability major, asked once per device.
int sm_major(int device) {
  static std::mutex mu;
  static auto* known = new std::vector<int>();  // 0: not asked yet
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<std::size_t>(device) >= known->size()) known->resize(device + 1, 0);
  int& v = (*known)[device];
  if (v == 0) DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, device));
  return v;
}

// Whether autocast's convolution may go to cuDNN at all: float32 buffers, cuDNN usable, and
// the compute type supported by this cuDNN on this GPU (more is checked by with_cudnn).
bool lowp_possible(int device, DType dt, const ConvGeom& g) {
  if (dt != float32 || !cd::conv_geometry_fits_cudnn(g) || !cudnn_usable()) return false;
#if CUDNN_VERSION < 8100
  if (g.compute == DType::BFloat16) return false;  // no CUDNN_DATA_BFLOAT16 in this header
#endif
  return cd::cudnn_half_conv_supported(g.compute, loaded_version(), sm_major(device));
}

// Pool buffers of `count` 16-bit elements on the current stream; round(x) also fills one with
// the float32 x (count elements) rounded to the type.
struct LowpBuffers {
  int device;
  DType type;
  std::vector<std::unique_ptr<cd::DeviceBuffer>> bufs;
  void* make(std::int64_t count) {
    bufs.push_back(std::make_unique<cd::DeviceBuffer>(device, static_cast<std::size_t>(count) * 2u,
                                                      cd::current_stream(device)));
    return bufs.back()->get();
  }
  const void* round(const void* x, std::int64_t count) {
    void* p = make(count);
    cast(device, float32, x, type, p, count);
    return p;
  }
};

// y (float32) = conv(round(x), round(W)) in 16 bits, widened, + b in float32
bool lowp_forward(int device, DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g) {
  if (!lowp_possible(device, dt, g)) return false;
  const DType ht = g.compute;
  const std::int64_t ny = g.n * g.oc * g.oh * g.ow;
  LowpBuffers lb{device, ht, {}};
  const void *xh = nullptr, *wh = nullptr;
  void* yh = nullptr;
  return with_cudnn(ConvPass::forward, device, ht, g, y, {{&b, bytes_of(float32, g.oc)}},
                    [&] {
                      xh = lb.round(x, g.n * g.c * g.h * g.w);
                      wh = lb.round(w, weights_of(g));
                      yh = lb.make(ny);
                    },
                    [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      cudnnStatus_t st = cudnnConvolutionForward(h, k.get(ht, 1), d.x, xh, d.w, wh, d.conv,
                                                                 static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws,
                                                                 ws_bytes, k.get(ht, 0), d.y, yh);
                      if (st != CUDNN_STATUS_SUCCESS) return st;
                      cast(device, ht, yh, float32, y, ny);
                      if (b != nullptr) {  // y += b as (1, oc, 1, 1), in float32
                        TensorDesc bd(float32, 1, g.oc, 1, 1), yd(float32, g.n, g.oc, g.oh, g.ow);
                        DEZERO_CUDNN_CHECK(cudnnAddTensor(h, k.get(float32, 1), bd, b, k.get(float32, 1), yd, y));
                      }
                      return st;
                    });
}

// gx (float32) from round(gy) and round(W)
bool lowp_backward_data(int device, DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) {
  if (!lowp_possible(device, dt, g)) return false;
  const DType ht = g.compute;
  const std::int64_t nx = g.n * g.c * g.h * g.w;
  LowpBuffers lb{device, ht, {}};
  const void *wh = nullptr, *gyh = nullptr;
  void* gxh = nullptr;
  return with_cudnn(ConvPass::backward_data, device, ht, g, gx, {},
                    [&] {
                      wh = lb.round(w, weights_of(g));
                      gyh = lb.round(gy, g.n * g.oc * g.oh * g.ow);
                      gxh = lb.make(nx);
                    },
                    [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      cudnnStatus_t st = cudnnConvolutionBackwardData(
                          h, k.get(ht, 1), d.w, wh, d.y, gyh, d.conv,
                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, ws_bytes, k.get(ht, 0), d.x, gxh);
                      if (st == CUDNN_STATUS_SUCCESS) cast(device, ht, gxh, float32, gx, nx);
                      return st;
                    });
}

// gW (float32) from round(x) and round(gy)
bool lowp_backward_filter(int device, DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g) {
  if (!lowp_possible(device, dt, g)) return false;
  const DType ht = g.compute;
  const std::int64_t nw = weights_of(g);
  LowpBuffers lb{device, ht, {}};
  const void *xh = nullptr, *gyh = nullptr;
  void* gwh = nullptr;
  return with_cudnn(ConvPass::backward_filter, device, ht, g, gw, {},
                    [&] {
                      xh = lb.round(x, g.n * g.c * g.h * g.w);
                      gyh = lb.round(gy, g.n * g.oc * g.oh * g.ow);
                      gwh = lb.make(nw);
                    },
                    [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      cudnnStatus_t st = cudnnConvolutionBackwardFilter(
                          h, k.get(ht, 1), d.x, xh, d.y, gyh, d.conv,
                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, ws_bytes, k.get(ht, 0), d.w, gwh);
                      if (st == CUDNN_STATUS_SUCCESS) cast(device, ht, gwh, float32, gw, nw);
                      return st;
                    });
}

}  // namespace

}  // namespace dezero::detail::gpu

namespace dezero::cuda::detail {
std::size_t cudnn_version() noexcept { return ::dezero::detail::gpu::loaded_version(); }
bool cudnn_enabled() noexcept {
  return ::dezero::detail::gpu::cudnn_usable() && !::dezero::detail::gpu::any_handle_failed();
}

std::string cudnn_unavailable_reason() {
  namespace dg = ::dezero::detail::gpu;
  const dg::Usability& u = dg::usability();
  if (!u.usable) return u.reason;
  if (runtime_available()) {  // make (or look up) the current device's handle
    int device = current_device();
    ScopedDevice sd(device);
    cudaStream_t s = current_stream(device);
    std::lock_guard<std::mutex> lock(library_mutex(device));
    cudnn_handle_or_null(device, s);
  }
  dg::HandleState& hs = dg::handle_state();
  std::lock_guard<std::mutex> lock(hs.mu);
  return hs.first_failure;
}

void cudnn_conv_fail_next_calls(int n) noexcept { ::dezero::detail::gpu::g_fail_next.store(n); }

bool cudnn_conv_cached_choice(const ConvAlgoKey& key, ConvAlgoChoice& out) {
  namespace dg = ::dezero::detail::gpu;
  std::lock_guard<std::mutex> lock(dg::cache_mutex());
  auto it = dg::cache().find(key);
  if (it == dg::cache().end()) return false;
  out = it->second;
  return true;
}

std::string cudnn_conv_last_failure() {
  namespace dg = ::dezero::detail::gpu;
  std::lock_guard<std::mutex> lock(dg::failure_mutex());
  return dg::last_failure();
}

// (cudnn.hpp)
cudnnHandle_t cudnn_handle_or_null(int device, cudaStream_t stream) {
  ::dezero::detail::gpu::HandleState& hs = ::dezero::detail::gpu::handle_state();
  signed char known = 0;
  {
    std::lock_guard<std::mutex> lock(hs.mu);
    if (static_cast<std::size_t>(device) >= hs.state.size()) hs.state.resize(device + 1, 0);
    known = hs.state[device];
  }
  if (known < 0) return nullptr;
  if (known > 0) return cudnn_handle(device, stream);
  cudnnHandle_t h = nullptr;
  std::string error;
  try {
    h = cudnn_handle(device, stream);
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "(no message)";
  }
  std::lock_guard<std::mutex> lock(hs.mu);
  hs.state[device] = error.empty() ? 1 : -1;
  if (!error.empty() && hs.first_failure.empty())
    hs.first_failure = "cudnnCreate failed on cuda:" + std::to_string(device) + ": " + error;
  return h;
}
}  // namespace dezero::cuda::detail

namespace dezero::detail::gpu {

// --- the entry points (detail/launchers.hpp) -------------------------------------------------
// x (n, c, h, w), W (oc, c/groups, kh, kw), b (oc) or null -> y (n, oc, oh, ow)
bool cudnn_conv2d_forward(int device, DType dt, const void* x, const void* w, const void* b, void* y,
                          const ConvGeom& g) {
  if (is_half(g.compute)) return lowp_forward(device, dt, x, w, b, y, g);
  return with_cudnn(ConvPass::forward, device, dt, g, y,
                    {{&x, bytes_of(dt, g.n * g.c * g.h * g.w)}, {&w, bytes_of(dt, weights_of(g))},
                     {&b, bytes_of(dt, g.oc)}},
                    [] {}, [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      cudnnStatus_t st = cudnnConvolutionForward(h, k.get(dt, 1), d.x, x, d.w, w, d.conv,
                                                                 static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws,
                                                                 ws_bytes, k.get(dt, 0), d.y, y);
                      if (st != CUDNN_STATUS_SUCCESS) return st;
                      if (b != nullptr) {  // y += b as (1, oc, 1, 1), broadcast over n, oh, ow
                        TensorDesc bd(dt, 1, g.oc, 1, 1);
                        DEZERO_CUDNN_CHECK(cudnnAddTensor(h, k.get(dt, 1), bd, b, k.get(dt, 1), d.y, y));
                      }
                      return st;
                    });
}

// gy (n, oc, oh, ow), W (oc, c/groups, kh, kw) -> gx (n, c, h, w), overwritten
bool cudnn_conv2d_backward_data(int device, DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) {
  if (is_half(g.compute)) return lowp_backward_data(device, dt, w, gy, gx, g);
  return with_cudnn(ConvPass::backward_data, device, dt, g, gx,
                    {{&w, bytes_of(dt, weights_of(g))}, {&gy, bytes_of(dt, g.n * g.oc * g.oh * g.ow)}},
                    [] {}, [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      return cudnnConvolutionBackwardData(h, k.get(dt, 1), d.w, w, d.y, gy, d.conv,
                                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                                          ws_bytes, k.get(dt, 0), d.x, gx);
                    });
}

// x (n, c, h, w), gy (n, oc, oh, ow) -> gW (oc, c/groups, kh, kw), overwritten
bool cudnn_conv2d_backward_filter(int device, DType dt, const void* x, const void* gy, void* gw,
                                  const ConvGeom& g) {
  if (is_half(g.compute)) return lowp_backward_filter(device, dt, x, gy, gw, g);
  return with_cudnn(ConvPass::backward_filter, device, dt, g, gw,
                    {{&x, bytes_of(dt, g.n * g.c * g.h * g.w)}, {&gy, bytes_of(dt, g.n * g.oc * g.oh * g.ow)}},
                    [] {}, [&](cudnnHandle_t h, const ConvDescs& d, int algo, void* ws, std::size_t ws_bytes) {
                      Scalars k;
                      return cudnnConvolutionBackwardFilter(h, k.get(dt, 1), d.x, x, d.y, gy, d.conv,
                                                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                                            ws_bytes, k.get(dt, 0), d.w, gw);
                    });
}

}  // namespace dezero::detail::gpu
