// dezero/backend/backend.hpp - the backend interface: a required core that every
// device implements (cpu/ on the host with Eigen and our AVX-512 GEMMs, gpu/ on NVIDIA
// GPUs, file stems matching section by section), and four kernel tables on top of it.
//
//   Backend (required, every entry pure): memory and copies, element-wise math,
//     reductions, GEMM, im2col and pooling, indexing, softmax and its loss, batch
//     normalisation, the optimizer update, random numbers. A new device implements
//     these and has the whole library.
//   NnKernels, LowpKernels, OptimizerKernels (optional, never refuse): one-pass forms of
//     what the core composes (a product with its bias, the squared error, the 16-bit
//     product, the multi-tensor update). Each entry has a default written once over the
//     core (backend/tables.cpp); a device overrides the entries it has a faster form of
//     and hands the cases its kernel does not take to that default. A caller calls the
//     table and is done: no "false, now do it yourself".
//   LibraryKernels (optional, may decline): a vendor library's convolution, pooling and
//     batch normalisation (cuDNN on the GPU; oneDNN and image-by-image im2col on the
//     host). A library decides at run time (its algorithm search, its alignment rules),
//     so these entries answer false for a case they decline, and the tensor op that owns
//     the case (tensor/conv.cpp, tensor/batch_norm.cpp) runs it on the core.
//
// tensor/ validates shapes, dtypes and devices, then calls these with raw pointers
// to contiguous row-major data on the backend's own device. Nothing here throws for
// bad user input: that was checked before. One virtual call per operation, never per
// element.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dezero/device.hpp"
#include "dezero/dtype.hpp"
#include "dezero/shape.hpp"

namespace dezero::detail {

class Generator;  // backend/generator.hpp

constexpr int kMaxDims = ::dezero::kMaxNdim;  // shape.hpp

// An N-d view used by the broadcasting and strided-copy primitives: an extent
// and an element stride per axis (stride 0 = broadcast along that axis).
struct Strided {
  // Axes past ndim are left unset: a view is made on every element-wise call, and zeroing
  // 2 x kMaxDims extents each time cost more than a small kernel.
  int ndim = 0;
  std::int64_t shape[kMaxDims];
  std::int64_t strides[kMaxDims];
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
};

// y = f(x), element-wise; `alpha` parameterises the ops that need one.
enum class UnaryOp : int {
  Neg, Exp, Log, Sin, Cos, Tanh, Sqrt, Abs, Sign, Square, Reciprocal,
  Sigmoid,     // 0.5 * tanh(0.5 x) + 0.5
  Relu,        // max(x, 0)
  PowScalar,   // x ** alpha
  AddScalar,   // x + alpha
  MulScalar,   // x * alpha
  RSubScalar,  // alpha - x
  RDivScalar,  // alpha / x
  DivScalar,   // x / alpha (not x * (1 / alpha): the same rounding as NumPy's x / alpha)
  MaxScalar,   // max(x, alpha)
  MinScalar,   // min(x, alpha)
  GtScalar,    // x > alpha ? 1 : 0
  GeScalar, LtScalar, LeScalar,
  LeakyRelu,   // x > 0 ? x : alpha * x
  LeakyMask,   // x > 0 ? 1 : alpha
  Erf,         // the error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt
};

// y = f(a, b) with broadcasting; comparisons give 1 or 0 in the same dtype.
// SigmoidGrad: a * b * (1 - b), the sigmoid's backward with a = gy and b = y.
// ReluGrad: a * (b > 0 ? 1 : 0), the relu's backward with a = gy and b = x.
// SquaredDiff: (a - b) * (a - b), mean_squared_error's terms.
enum class BinaryOp : int {
  Add, Sub, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Gt, Ge, Lt, Le, SigmoidGrad, ReluGrad, SquaredDiff
};

enum class ReduceOp : int { Sum, Max, Min };
enum class ArgReduceOp : int { ArgMax, ArgMin };

// Fused optimizer updates, in place on the parameter (and its state).
enum class UpdateRule : int { SGD, MomentumSGD, AdaGrad, AdaDelta, Adam };
// decay: WeightDecay fused into optimizer_update_multi (only where the backend's
// fuses_weight_decay() says so): each grad[i] first becomes grad[i] + decay * param[i],
// rounded as the hook's own kernel rounds it and written back to grad, then the rule.
struct UpdateArgs {
  double lr = 0, momentum = 0, eps = 0, rho = 0, beta1 = 0, beta2 = 0;
  double decay = 0;
};
// One parameter of a multi-tensor update (optimizer_update_multi): param, grad and the
// rule's state arrays (s1, s2; null where the rule keeps fewer), numel elements each,
// contiguous, on the backend's device. Chunks never overlap one another. grad is written
// (the decayed gradient) only when UpdateArgs::decay is not 0.
struct UpdateChunk {
  void* param = nullptr;
  const void* grad = nullptr;
  void* s1 = nullptr;
  void* s2 = nullptr;
  std::int64_t numel = 0;
};

// The geometry of one 2-d convolution or pooling over NCHW data (DeZero step 55's
// names): input (n, c, h, w), window (kh, kw), stride (sh, sw), zero padding (ph, pw)
// and output (oh, ow) = ((h + 2ph - kh) / sh + 1, (w + 2pw - kw) / sw + 1), or a
// deconvolution's larger `outsize`. `oc` is the other side's channel count: a conv's
// output channels (weights (oc, c, kh, kw)); 0 for pooling and im2col.
// `groups` splits a convolution's channels (PyTorch's groups, ONNX's group): input
// channels [i c/groups, (i+1) c/groups) meet only filters [i oc/groups, (i+1) oc/groups),
// whose weights are (oc, c/groups, kh, kw) (the same bytes as oneDNN's (groups,
// oc/groups, c/groups, kh, kw)); groups == c is a depthwise convolution. c and oc are
// multiples of it (tensor/conv.cpp checks). A library that cannot take groups > 1 answers
// false from conv2d_* and the caller's im2col path does it per group. 1 for pooling.
// `compute` asks for mixed precision (issue 31, autocast): bfloat16 or float16 with
// float32 buffers, whose values are then rounded to it and the products summed in
// float32; float32 (the default) means the buffers' own dtype. A library path without
// such a kernel returns false when is_half(compute), and the caller rounds the operands.
struct ConvGeom {
  std::int64_t n = 0, c = 0, h = 0, w = 0;
  std::int64_t kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0;
  std::int64_t oh = 0, ow = 0;
  std::int64_t oc = 0;
  DType compute = DType::Float32;
  std::int64_t groups = 1;
};

class Backend;

// --- the optional tables ------------------------------------------------------------------

// What the three never-refusing tables share: the core their defaults are written over.
class CoreTable {
 public:
  explicit CoreTable(Backend& core) : core_(core) {}
  virtual ~CoreTable() = default;
  CoreTable(const CoreTable&) = delete;
  CoreTable& operator=(const CoreTable&) = delete;

 protected:
  Backend& core_;
};

// One-pass forms of composed neural-network ops. The defaults (backend/tables.cpp) compose
// the same arithmetic from the core, so a device's kernel and the default give the same
// values: bit for bit element by element (mse_backward), up to the order of a sum where the
// kernel adds in its own (the products of gemm_bias, mse_forward's total).
class NnKernels : public CoreTable {
 public:
  using CoreTable::CoreTable;

  // C (m, n; row stride ldc) = op(A) @ op(B) + bias, the row `bias` (n) added to each of C's
  // m rows. Default: the bias copied into C's rows, then gemm with beta = 1.
  virtual void gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                         std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c,
                         std::int64_t ldc);
  // mean_squared_error (step 42) over n elements of x0 and x1 (contiguous, one dtype):
  //   mse_forward:  loss = sum_i (x0[i] - x1[i])^2 / divisor, one element;
  //   mse_backward: gx[i] = (gy * (x0[i] - x1[i])) * scale, gy one element on this device.
  // Default: binary SquaredDiff (Sub, then Mul by gy), reduce Sum, unary DivScalar (MulScalar).
  virtual void mse_forward(DType dt, const void* x0, const void* x1, void* loss, std::int64_t n, double divisor);
  virtual void mse_backward(DType dt, const void* x0, const void* x1, const void* gy, void* gx, std::int64_t n,
                            double scale);
};

// Mixed precision (dezero::autocast): C (m, n) = op(A) op(B) into a float32 C, with A and B
// rounded to `compute` (bfloat16 or float16) and the products summed in float32, plus the
// row `bias` (n) when not null, plus C itself when accumulate. Each operand is float32
// (rounded here) or already of type `compute` (a copy the caller rounded once and keeps, as
// F::linear does for its backward). Default: the operands rounded to `compute` and back into
// float32 copies, then the float32 gemm (gemm_bias for a bias): the same values up to the
// order of the sums.
class LowpKernels : public CoreTable {
 public:
  using CoreTable::CoreTable;

  struct Operand {
    const void* data;
    DType dtype;        // float32, or `compute`
    std::int64_t ld;    // elements between rows as stored
  };
  virtual void gemm(DType compute, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                    const Operand& a, const Operand& b, const float* bias, float* c, std::int64_t ldc,
                    bool accumulate);
};

// The optimizer's update for n parameters at once (PyTorch's multi-tensor "foreach" step),
// all of dtype dt: bit for bit what one Backend::optimizer_update per chunk gives, in one
// pass (the host) or one launch per batch of chunks (CUDA). Default: that loop.
// With args.decay != 0 only where fuses_weight_decay() is true (the host): elsewhere the
// caller passes decay 0 and WeightDecay runs as its own kernel first.
class OptimizerKernels : public CoreTable {
 public:
  using CoreTable::CoreTable;

  virtual bool fuses_weight_decay() const { return false; }
  virtual void update_multi(UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                            const UpdateArgs& args);
};

// A vendor library's convolution, pooling and batch normalisation. Every entry returns
// false, with nothing done, for a case the library declines (a dtype it lacks, its
// alignment or geometry rules, no algorithm found, the library not loaded, any padding for
// max pooling: cuDNN's max skips padded positions where DeZero reads 0); the tensor op that
// owns the case then runs it on the core. Pointers are contiguous NCHW on this device.
//   conv2d_forward:         y (n, oc, oh, ow) = x (n, c, h, w) * W (oc, c/groups, kh, kw) + b (oc);
//                           b may be null (no bias)
//   conv2d_backward_data:   gx (n, c, h, w) from gy (n, oc, oh, ow) and W (deconv2d's forward)
//   conv2d_backward_filter: gW (oc, c/groups, kh, kw) from x and gy
//   max_pool_forward:       y (n, c, oh, ow) = each window's max, no indexes: the backward
//                           finds it again from x and y (the NaN rule: Backend::max_pool_forward's)
//   max_pool_backward:      gx (n, c, h, w) = gy routed to each window's max
//   avg_pool_forward / _backward: Backend::avg_pool_forward / _backward's formulas
//   batch_norm_forward / _backward: Backend::batch_norm_forward / _backward's arguments and
//                           results (the backward also takes the forward's eps)
class LibraryKernels {
 public:
  virtual ~LibraryKernels() = default;
  virtual bool conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y,
                              const ConvGeom& g) = 0;
  virtual bool conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) = 0;
  virtual bool conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g) = 0;
  virtual bool max_pool_forward(DType /*dt*/, const void* /*x*/, void* /*y*/, const ConvGeom& /*g*/) {
    return false;
  }
  virtual bool max_pool_backward(DType /*dt*/, const void* /*x*/, const void* /*y*/, const void* /*gy*/,
                                 void* /*gx*/, const ConvGeom& /*g*/) {
    return false;
  }
  virtual bool avg_pool_forward(DType /*dt*/, const void* /*x*/, void* /*y*/, const ConvGeom& /*g*/) {
    return false;
  }
  virtual bool avg_pool_backward(DType /*dt*/, const void* /*x*/, const void* /*y*/, const void* /*gy*/,
                                 void* /*gx*/, const ConvGeom& /*g*/) {
    return false;
  }
  virtual bool batch_norm_forward(DType /*dt*/, const void* /*x*/, const void* /*gamma*/, const void* /*beta*/,
                                  void* /*y*/, void* /*mean*/, void* /*inv_std*/, void* /*running_mean*/,
                                  void* /*running_var*/, std::int64_t /*n*/, std::int64_t /*c*/, std::int64_t /*hw*/,
                                  double /*decay*/, double /*eps*/, bool /*train*/) {
    return false;
  }
  virtual bool batch_norm_backward(DType /*dt*/, const void* /*x*/, const void* /*gy*/, const void* /*gamma*/,
                                   const void* /*mean*/, const void* /*inv_std*/, void* /*gx*/, void* /*ggamma*/,
                                   void* /*gbeta*/, std::int64_t /*n*/, std::int64_t /*c*/, std::int64_t /*hw*/,
                                   double /*eps*/, bool /*train*/) {
    return false;
  }
};

// --- the required core ----------------------------------------------------------------------
class Backend {
 public:
  Backend() : default_nn_(*this), default_lowp_(*this), default_optimizer_(*this) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual Device device() const = 0;

  // The tables. A device without a faster form of an entry keeps the default table.
  virtual NnKernels& nn() { return default_nn_; }
  virtual LowpKernels& lowp() { return default_lowp_; }
  virtual OptimizerKernels& optimizer() { return default_optimizer_; }
  // null where the device has no vendor library (or it is built without one)
  virtual LibraryKernels* library() { return nullptr; }

  // --- memory -----------------------------------------------------------------
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes) noexcept = 0;
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t nbytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t nbytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t nbytes) = 0;  // within this device
  virtual void fill(DType dt, void* dst, std::int64_t n, double value) = 0;
  virtual void synchronize() = 0;

  // --- element-wise -------------------------------------------------------------
  virtual void cast(DType from, const void* x, DType to, void* y, std::int64_t n) = 0;
  virtual void unary(UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha) = 0;
  // y (contiguous, out.shape) = op(a viewed by sa, b viewed by sb); sa/sb/out have the same ndim.
  virtual void binary(BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb,
                      void* y, const Strided& out) = 0;
  // y = cond != 0 ? a : b (all broadcast views of out's shape; cond has dtype dt too).
  virtual void where(DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa,
                     const void* b, const Strided& sb, void* y, const Strided& out) = 0;
  // dst view = src view (same shape): transpose, broadcast, slices; dst may be strided.
  // accumulate=true adds into dst instead (slice gradients; views must not overlap themselves).
  virtual void copy_strided(DType dt, const void* src, const Strided& s, void* dst, const Strided& d,
                            bool accumulate) = 0;

  // --- reductions: x viewed as (outer, r, inner), y as (outer, inner) ---------------
  virtual void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
                      std::int64_t inner) = 0;
  virtual void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer,
                          std::int64_t r, std::int64_t inner) = 0;

  // --- linear algebra: row-major batched GEMM ---------------------------------------
  // C[i] = alpha * op(A[i]) @ op(B[i]) + beta * C[i], i < batch; op = transpose when ta/tb.
  // A[i] is (m, k) after op, B[i] (k, n), C[i] (m, n); lda/ldb/ldc are row strides of the
  // stored matrices; a stride of 0 repeats the same matrix across the batch.
  virtual void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                    const void* a, std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb,
                    std::int64_t stride_b, double beta, void* c, std::int64_t ldc, std::int64_t stride_c,
                    std::int64_t batch) = 0;

  // --- convolution and pooling (im2col.cpp / im2col.cu, pool.cpp / pool.cu) ----------
  // The im2col + GEMM path and max and average pooling run on these on every device.
  // Zero padding everywhere (DeZero's): a window position outside the image reads 0.
  //   im2col: col (n, c, kh, kw, oh, ow) from x (n, c, h, w); col[.., i, j, y, x] =
  //           x[.., y*sh - ph + i, x*sw - pw + j], 0 outside the image.
  //   col2im: x (n, c, h, w) = the sum of every col element that im2col would have
  //           read from that pixel (x is overwritten, not accumulated into).
  virtual void im2col(DType dt, const void* x, void* col, const ConvGeom& g) = 0;
  virtual void col2im(DType dt, const void* col, void* x, const ConvGeom& g) = 0;
  // Max pooling over the windows of g (oc unused): y (n, c, oh, ow) is each window's
  // max, idx (n, c, oh, ow) int64 its position i * kw + j in the window (the first
  // max, np.argmax's; a padded position counts as the value 0).
  //   max_pool_backward: gx (n, c, h, w) = gy added at each window's idx (overwritten);
  //                      a max that fell on the padding sends its gradient nowhere.
  //   max_pool_gather:   y (n, c, oh, ow) = x at each window's idx (0 on the padding),
  //                      the forward of the gradient's own gradient.
  // Max pooling's NaN rule (NumPy's max and argmax over DeZero's im2col): a NaN anywhere
  // in a window makes y NaN and idx the position of its first NaN, so max_pool_backward
  // sends the window's gradient there and max_pool_gather reads the NaN back.
  virtual void max_pool_forward(DType dt, const void* x, void* y, std::int64_t* idx, const ConvGeom& g) = 0;
  virtual void max_pool_backward(DType dt, const void* gy, const std::int64_t* idx, void* gx,
                                 const ConvGeom& g) = 0;
  virtual void max_pool_gather(DType dt, const void* x, const std::int64_t* idx, void* y, const ConvGeom& g) = 0;
  // Average pooling over the windows of g, the padded zeros counted (DeZero's mean of
  // im2col): y (n, c, oh, ow) = the window's sum / (kh * kw).
  //   avg_pool_backward: gx (n, c, h, w) = the sum of gy / (kh * kw) over the windows
  //                      that cover each pixel (overwritten). x and y are the forward's
  //                      input and output (LibraryKernels::avg_pool_backward's signature;
  //                      these kernels do not read them).
  virtual void avg_pool_forward(DType dt, const void* x, void* y, const ConvGeom& g) = 0;
  virtual void avg_pool_backward(DType dt, const void* x, const void* y, const void* gy, void* gx,
                                 const ConvGeom& g) = 0;

  // --- indexing: element offsets as int64 on this device ----------------------------
  virtual void gather(DType dt, const void* src, const std::int64_t* offsets, void* dst, std::int64_t n) = 0;
  virtual void scatter_add(DType dt, const void* src, const std::int64_t* offsets, void* dst,
                           std::int64_t n) = 0;
  // dst[i, :] = src[idx[i], :] for rows of `cols` elements (embedding, batches); idx int64.
  virtual void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                           std::int64_t cols) = 0;

  // --- neural-network kernels (the training loop's hot paths) ------------------------
  // softmax (or log_softmax) over the middle axis of (outer, c, inner).
  virtual void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
                       bool log) = 0;
  // loss = -mean_i log_softmax(x)[i, t[i]] for x (n, c), labels int64 (n,); writes one element.
  virtual void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                                     std::int64_t c) = 0;
  // gx = (softmax(x) - onehot(t)) * gy / n; gy is a single element on this device.
  virtual void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy,
                                          void* gx, std::int64_t n, std::int64_t c) = 0;
  // Batch normalisation over the channels of x viewed as (n, c, hw): (N, C) with hw = 1
  // or NCHW (N, C, H, W) with hw = H * W; gamma, beta, mean, inv_std, running_mean and
  // running_var are (c,), every array x's dtype. m = n * hw values per channel.
  //   batch_norm_forward, train: mean = sum x / m, var = sum (x - mean)^2 / m (biased),
  //     inv_std = 1 / sqrt(var + eps); running_mean = decay running_mean + (1 - decay) mean,
  //     running_var = decay running_var + (1 - decay) m / max(m - 1, 1) var, in place.
  //     test (train false): mean = running_mean, inv_std = 1 / sqrt(running_var + eps), the
  //     running statistics are only read. Both: y = gamma (x - mean) inv_std + beta, and
  //     mean and inv_std are written for the backward.
  //   batch_norm_backward: xhat = (x - mean) inv_std; gbeta = sum gy, ggamma = sum xhat gy
  //     over each channel; gx = gamma inv_std (gy - gbeta / m - xhat ggamma / m) in train
  //     mode, gamma inv_std gy in test mode; gx may be null (not wanted).
  virtual void batch_norm_forward(DType dt, const void* x, const void* gamma, const void* beta, void* y,
                                  void* mean, void* inv_std, void* running_mean, void* running_var, std::int64_t n,
                                  std::int64_t c, std::int64_t hw, double decay, double eps, bool train) = 0;
  virtual void batch_norm_backward(DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                                   const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n,
                                   std::int64_t c, std::int64_t hw, bool train) = 0;
  // param -= update(grad, state...) in place; state arrays have the param's size.
  virtual void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                                std::int64_t n, const UpdateArgs& args) = 0;

  // --- random numbers: fill with samples from a host generator's stream -------------
  // (the CPU backend draws from `gen`'s MT19937 under its lock; CUDA seeds cuRAND from it).
  // `gen` is the process-wide stream of dezero::random or a random::Generator's own.
  virtual void random_uniform(Generator& gen, DType dt, void* dst, std::int64_t n) = 0;
  virtual void random_normal(Generator& gen, DType dt, void* dst, std::int64_t n) = 0;

 private:
  NnKernels default_nn_;
  LowpKernels default_lowp_;
  OptimizerKernels default_optimizer_;
};

// The backend of a device; throws DeviceError when the device is unavailable.
Backend& backend_for(const Device& device);
Backend& cpu_backend();
// Implemented in gpu/ (or the stub when built without CUDA).
Backend& cuda_backend(int device_id);
bool cuda_runtime_available();

}  // namespace dezero::detail
