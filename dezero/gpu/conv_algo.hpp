// dezero/gpu/conv_algo.hpp - how cudnn_conv.cpp picks a cuDNN convolution
// algorithm, as plain host code that needs neither cuDNN nor a GPU (internal;
// tests/test_cuda_conv.cpp checks it on every machine).
//
// - ConvAlgoKey: what an algorithm is chosen once for. Everything that changes the
//   answer is in it: the pass, the whole ConvGeom (its compute type included: autocast's
//   bfloat16 / float16 convolutions have their own descriptors), the dtype, the device,
//   the TF32 switch and the workspace limit (set_max_workspace_size() after a choice
//   makes a new one rather than reusing an algorithm that no longer fits).
// - cudnn_half_conv_supported: which cuDNN and GPU take autocast's 16-bit convolutions.
// - choose_conv_algo: cuDNN's heuristics (cudnnGet*Algorithm_v7) list algorithms
//   fastest first; the first one that succeeded, whose math mode is allowed and whose
//   workspace fits the limit is taken, else the pass's fallback, which needs none.
// - cudnn_version_usable: the version check made before cuDNN's first use.
// - conv_algo_after_failure: what is tried when the cuDNN call itself fails at run time
//   for the chosen algorithm (the pass's fallback, then im2col, which the cache keeps).
// - cudnn_aligned: the 16-byte rule for the pointers given to cuDNN.
// - pool_geometry_fits_cudnn, batch_norm_fits_cudnn: which poolings and batch
//   normalisations cuDNN computes as DeZero does.
// Needs no GPU; the functions declared at the end of each section (cudnn_version(),
// cudnn_enabled(), cudnn_unavailable_reason(), the descriptor queries) need a CUDA build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/dtype.hpp"

namespace dezero::cuda::detail {

// The three calls of the legacy convolution API that dezero uses.
enum class ConvPass : int { forward = 0, backward_data = 1, backward_filter = 2 };

// cuDNN's cudnnMathType_t, with the same values (cudnn_conv.cpp checks them).
enum class ConvMath : int { default_math = 0, tensor_op = 1, tensor_op_allow_conversion = 2, fma = 3 };

// The math mode the convolution descriptor asks for: for float32, FMA only (no TF32:
// cuDNN 8+'s default math lets float32 run on TF32 tensor cores, which keep 10 bits of
// mantissa) unless TF32 is allowed; cuDNN's default for float64, which has no TF32.
// The 16-bit types (autocast's descriptors, `dt` the compute type) ask for tensor cores.
inline ConvMath requested_conv_math(DType dt, bool allow_tf32) {
  if (is_half(dt)) return ConvMath::tensor_op;
  return dt == float32 && !allow_tf32 ? ConvMath::fma : ConvMath::default_math;
}

// Whether a heuristic answer's math mode may be used: never down-conversion to half
// precision (..._ALLOW_CONVERSION); for float32 without TF32 only FMA.
inline bool conv_math_allowed(ConvMath m, DType dt, bool allow_tf32) {
  if (m == ConvMath::tensor_op_allow_conversion) return false;
  if (dt == float32 && !allow_tf32) return m == ConvMath::fma;
  return true;
}


struct ConvAlgoKey {
  ConvPass pass = ConvPass::forward;
  int device = 0;
  DType dtype = float32;
  bool allow_tf32 = false;
  std::size_t workspace_limit = 0;
  dezero::detail::ConvGeom g;
};

inline bool operator==(const ConvAlgoKey& a, const ConvAlgoKey& b) {
  const auto& x = a.g;
  const auto& y = b.g;
  return a.pass == b.pass && a.device == b.device && a.dtype == b.dtype && a.allow_tf32 == b.allow_tf32 &&
         a.workspace_limit == b.workspace_limit && x.n == y.n && x.c == y.c && x.h == y.h && x.w == y.w &&
         x.kh == y.kh && x.kw == y.kw && x.sh == y.sh && x.sw == y.sw && x.ph == y.ph && x.pw == y.pw &&
         x.oh == y.oh && x.ow == y.ow && x.oc == y.oc && x.compute == y.compute && x.groups == y.groups;
}
inline bool operator!=(const ConvAlgoKey& a, const ConvAlgoKey& b) { return !(a == b); }

struct ConvAlgoKeyHash {
  std::size_t operator()(const ConvAlgoKey& k) const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
    auto mix = [&h](std::uint64_t v) {
      for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= 1099511628211ull;
      }
    };
    const auto& g = k.g;
    for (std::int64_t v : {g.n, g.c, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.oh, g.ow, g.oc, g.groups})
      mix(static_cast<std::uint64_t>(v));
    mix(static_cast<std::uint64_t>(k.pass));
    mix(static_cast<std::uint64_t>(k.device));
    mix(static_cast<std::uint64_t>(k.dtype));
    mix(static_cast<std::uint64_t>(g.compute));
    mix(k.allow_tf32 ? 1u : 0u);
    mix(static_cast<std::uint64_t>(k.workspace_limit));
    return static_cast<std::size_t>(h);
  }
};

// One row of cudnnGet*Algorithm_v7's answer, without cuDNN's types.
struct ConvAlgoCandidate {
  int algo = 0;
  bool ok = false;             // status == CUDNN_STATUS_SUCCESS
  std::size_t workspace = 0;   // bytes (perf.memory)
  ConvMath math = ConvMath::default_math;
};

struct ConvAlgoChoice {
  int algo = -1;  // -1: cuDNN does not take this case (the caller falls back to im2col)
  ConvMath math = ConvMath::default_math;
  std::size_t workspace = 0;
  bool fallback = false;  // the pass's workspace-free algorithm, not a heuristic's pick
};

// The first usable row, else `fallback_algo` with the requested math mode (its workspace
// is asked for afterwards: cudnn_conv.cpp gives up when even that one does not fit).
inline ConvAlgoChoice choose_conv_algo(const std::vector<ConvAlgoCandidate>& rows, std::size_t limit, DType dt,
                                       bool allow_tf32, int fallback_algo) {
  for (const ConvAlgoCandidate& r : rows) {
    if (!r.ok || r.workspace > limit || !conv_math_allowed(r.math, dt, allow_tf32)) continue;
    return {r.algo, r.math, r.workspace, false};
  }
  return {fallback_algo, requested_conv_math(dt, allow_tf32), 0, true};
}

// cudnnConvolution{Forward,BackwardData,BackwardFilter} can still fail for the algorithm
// chosen (the heuristics are no guarantee; PyTorch's AlgoIterator::try_all goes on to the
// next algorithm on any cuDNN error). What is tried next: after a heuristic pick, the pass's
// workspace-free fallback with the requested math mode; after the fallback itself (or a pick
// that was the fallback already), nothing: algo -1, and the case goes to im2col. The cache
// then keeps the answer, so a failing choice is tried once per process.
inline ConvAlgoChoice conv_algo_after_failure(const ConvAlgoChoice& failed, DType dt, bool allow_tf32,
                                              int fallback_algo) {
  const ConvMath m = requested_conv_math(dt, allow_tf32);
  if (failed.algo < 0 || failed.fallback || (failed.algo == fallback_algo && failed.math == m)) return {};
  return {fallback_algo, m, 0, true};
}

// cudnnGetVersion(): major * 1000 + minor * 100 + patch before 9, major * 10000 +
// minor * 100 + patch from 9 on (9.1.0 is 90100, 8.9.7 is 8907).
inline int cudnn_version_major(std::size_t v) { return static_cast<int>(v >= 10000 ? v / 10000 : v / 1000); }
// The legacy convolution API with the _v7 heuristics and FMA math: cuDNN 8 or later.
inline bool cudnn_version_usable(std::size_t v) { return cudnn_version_major(v) >= 8; }

// Autocast's convolutions (ConvGeom::compute bfloat16 or float16 on float32 buffers) run
// with 16-bit tensor and filter descriptors and float32 sums (cuDNN's PSEUDO_HALF_CONFIG and
// PSEUDO_BFLOAT16_CONFIG). cuDNN `version` (cudnnGetVersion()) and the GPU's compute
// capability major `sm_major`: float16 with any cuDNN this file takes (8+); bfloat16 from
// cuDNN 8.1 on, on sm_80 (Ampere) or later. Anything else is declined (the caller rounds the
// operands and convolves in float32).
inline bool cudnn_half_conv_supported(DType compute, std::size_t version, int sm_major) {
  if (compute == DType::Float16) return cudnn_version_usable(version);
  if (compute != DType::BFloat16) return false;
  return version >= 8100 && sm_major >= 8;  // 8.1.0 is 8100, and 9.x is 90000 and up
}

// Defined in cudnn_conv.cpp (CUDA builds only): what cudnnGetVersion() says, 0 when cuDNN
// does not load; and whether the convolutions use cuDNN at all (it loads, is 8.x or later,
// DEZERO_CUDNN is not 0, and no device's cudnnCreate has failed so far). Neither needs a GPU.
std::size_t cudnn_version() noexcept;
bool cudnn_enabled() noexcept;
// Why cuDNN is not used, "" when it is: DEZERO_CUDNN=0, libcudnn not loading (the loader's
// error), a version older than 8, descriptors that cannot be made, or cudnnCreate failing
// on a device (its error, kept from the first failure). Where a CUDA device is present it
// first makes the current device's handle (under the library lock), so that "" means the
// GPU cases can use cuDNN. cudnn_enabled() is false whenever a reason is known.
std::string cudnn_unavailable_reason();

// Test hooks for the run-time retry (tests/test_cuda_conv.cpp): the next n cuDNN
// convolution calls answer CUDNN_STATUS_EXECUTION_FAILED without running, as a kernel that
// fails would; the cached choice for a key (false: none yet); the last run-time failure,
// "" when there was none (what failed, the status, what was done instead).
void cudnn_conv_fail_next_calls(int n) noexcept;
bool cudnn_conv_cached_choice(const ConvAlgoKey& key, ConvAlgoChoice& out);
std::string cudnn_conv_last_failure();

// --- alignment ----------------------------------------------------------------------------------
// cuDNN's legacy API takes no alignment hint: its heuristics choose without the pointers,
// and some of its vectorised kernels assume 16-byte alignment. The pool's blocks are
// 512-byte aligned, but an offset view is not (x[1:] of an (n, 1, 5, 5) float32 tensor
// starts 100 bytes into its storage). The cuDNN entry points copy such an input into a
// fresh pool buffer (detail/cudnn.hpp's CudnnAlignedInputs) and decline such an output
// (the caller's own kernels take it). A null pointer (no bias) counts as aligned.
constexpr std::size_t kCudnnAlignment = 16;
inline bool cudnn_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kCudnnAlignment == 0; }

// Whether cuDNN's 4-d descriptors can hold the case (int sizes, at most INT_MAX elements
// per tensor) and its output size is the convolution's: (h + 2ph - kh) / sh + 1 = oh and
// the same across. A deconvolution whose `outsize` adds more than stride - 1 to that
// (DeZero allows it) is not one cuDNN can express: the caller's col2im path handles it.
// groups (cudnnSetConvolutionGroupCount) must be at least 1, an int, and divide c and oc.
inline bool conv_geometry_fits_cudnn(const dezero::detail::ConvGeom& g) {
  constexpr std::int64_t kMax = 2147483647;
  if (g.groups < 1 || g.groups > kMax || g.c % g.groups != 0 || g.oc % g.groups != 0) return false;
  for (std::int64_t v : {g.n, g.c, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.oh, g.ow, g.oc})
    if (v <= 0 || v > kMax) return false;
  if (g.ph < 0 || g.pw < 0 || g.ph > kMax || g.pw > kMax) return false;
  if (g.h + 2 * g.ph < g.kh || g.w + 2 * g.pw < g.kw) return false;
  if ((g.h + 2 * g.ph - g.kh) / g.sh + 1 != g.oh || (g.w + 2 * g.pw - g.kw) / g.sw + 1 != g.ow) return false;
  auto fits = [kMax](std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
    return a <= kMax / b && a * b <= kMax / c && a * b * c <= kMax / d;
  };
  return fits(g.n, g.c, g.h, g.w) && fits(g.n, g.oc, g.oh, g.ow) && fits(g.oc, g.c, g.kh, g.kw);
}


// --- pooling through cuDNN (cudnn_pool.cpp) ---------------------------------------------------
// Whether cuDNN's pooling computes DeZero's on g (oc unused): the 4-d descriptors hold it
// (conv_geometry_fits_cudnn with one channel count), each padding is smaller than its
// window (cuDNN's rule), and for max pooling there is no padding at all (cuDNN's max skips
// padded positions, DeZero's reads them as 0: max(-1, pad) is 0 in DeZero, -1 in cuDNN).
// Average pooling counts the padding in both (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING).
inline bool pool_geometry_fits_cudnn(const dezero::detail::ConvGeom& g, bool max) {
  dezero::detail::ConvGeom c = g;
  c.oc = g.c;
  if (!conv_geometry_fits_cudnn(c)) return false;
  if (g.ph >= g.kh || g.pw >= g.kw) return false;
  return !max || (g.ph == 0 && g.pw == 0);
}

// Defined in cudnn_pool.cpp (CUDA builds only; no GPU needed): the output (n, c, h, w) that
// cuDNN's pooling descriptor for g gives (cudnnGetPooling2dForwardOutputDim), which
// cudnn_pool.cpp also compares with g's before each call; false when cuDNN does not load
// or refuses the descriptor.
bool cudnn_pooling_output(DType dt, const dezero::detail::ConvGeom& g, bool max, std::int64_t out[4]);
// The NaN rule cuDNN's max pooling is given: 1 for CUDNN_PROPAGATE_NAN (a NaN anywhere in
// a window makes its max NaN, as NumPy's max over DeZero's im2col and as cpu/pool.cpp and
// pool.cu), 0 for CUDNN_NOT_PROPAGATE_NAN; read back from the descriptor
// (cudnnGetPooling2dDescriptor), -1 when cuDNN does not load.
int cudnn_max_pooling_nan_propagation();

// --- batch normalisation through cuDNN (cudnn_batch_norm.cpp) -----------------------------------
// Whether cuDNN's batch normalisation (CUDNN_BATCHNORM_SPATIAL over x viewed as (n, c, hw, 1))
// computes DeZero's for x (n, c, hw) of dtype dt with this eps:
//   - float32 or float64, every size at least 1 and the tensor within int sizes;
//   - m = n * hw of at least 2: cuDNN's running variance is the unbiased one, var m / (m - 1),
//     which is DeZero's m / max(m - 1, 1) for m >= 2, and NaN for m = 1 (DeZero's is 0);
//   - eps positive, finite and at least cuDNN's CUDNN_BN_MIN_EPSILON (`min_eps`: 0 in
//     cuDNN 9's header, 1e-5 in old ones).
// The caller (batch_norm.cu) takes the rest.
inline bool batch_norm_fits_cudnn(DType dt, std::int64_t n, std::int64_t c, std::int64_t hw, double eps,
                                  double min_eps) {
  constexpr std::int64_t kMax = 2147483647;
  if (dt != float32 && dt != float64) return false;
  if (n <= 0 || c <= 0 || hw <= 0 || n > kMax || c > kMax || hw > kMax) return false;
  if (n > kMax / c || n * c > kMax / hw) return false;
  if (n * hw < 2) return false;
  return eps > 0.0 && eps >= min_eps && eps < 1e300;
}
// The factor cuDNN's running averages take: running = running (1 - f) + batch f. DeZero's
// running = decay running + (1 - decay) batch is f = 1 - decay.
inline double cudnn_exponential_average_factor(double decay) { return 1.0 - decay; }

// Defined in cudnn_batch_norm.cpp (CUDA builds only; no GPU needed): the descriptors the
// batch normalisation would use for x (n, c, hw): x's as (n, c, hw, 1) and the parameters'
// from cudnnDeriveBNTensorDescriptor (SPATIAL), each read back (cudnnGetTensor4dDescriptor)
// as dims and strides, with its data type; false when cuDNN does not load or refuses.
struct CudnnTensorShape {
  std::int64_t dims[4] = {0, 0, 0, 0};
  std::int64_t strides[4] = {0, 0, 0, 0};
  DType dtype = float32;
  bool dtype_known = false;  // the data type is float or double
};
bool cudnn_batch_norm_descriptors(DType dt, std::int64_t n, std::int64_t c, std::int64_t hw, CudnnTensorShape& x,
                                  CudnnTensorShape& param);
// CUDNN_BN_MIN_EPSILON as the cuDNN header dezero was built with defines it.
double cudnn_bn_min_epsilon() noexcept;

}  // namespace dezero::cuda::detail
