// cuda/cuda_backend.cu - the CUDA backend: every primitive of backend.hpp for one
// CUDA device, as kernels on the calling thread's current stream of that device.
//
// Twin of cpu/cpu_backend.cpp: the same primitives in the same order, the same
// element-wise math through kernels/ops.hpp (unary_apply, binary_apply,
// update_apply are __host__ __device__). Ops are chosen by a runtime switch inside
// one kernel per dtype (the switch is uniform across a launch, so it costs a few
// instructions per element and keeps compile time small). GEMM is cuBLAS (int
// dtypes: a plain kernel), random numbers cuRAND (Philox) seeded from dezero's host
// generator. Nothing here waits for the device except copy_to_host and
// synchronize(). Not here: device memory management (cuda_memory.cpp), streams,
// devices and handles (cuda_runtime.cpp).
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/cuda/detail/runtime.hpp"
#include "dezero/backend/ops.hpp"
#include "dezero/backend/generator.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;
using i64 = std::int64_t;

constexpr int kBlock = 256;

unsigned blocks_for(i64 n, int block = kBlock) {
  i64 b = (n + block - 1) / block;
  return static_cast<unsigned>(std::max<i64>(1, std::min<i64>(b, i64(1) << 20)));  // grid-stride loops do the rest
}

#define DEZERO_GRID_LOOP(i, n) \
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += static_cast<i64>(blockDim.x) * gridDim.x)

// --- strided views: K views sharing the iteration shape of view 0 --------------------
template <int K>
struct Views {
  int ndim;
  i64 shape[kMaxDims];
  i64 strides[K][kMaxDims];
};

template <int K>
Views<K> make_views(const Strided* const (&v)[K]) {
  Views<K> r{};
  r.ndim = v[0]->ndim;
  for (int d = 0; d < r.ndim; ++d) {
    r.shape[d] = v[0]->shape[d];
    for (int k = 0; k < K; ++k) r.strides[k][d] = v[k]->strides[d];
  }
  return r;
}

// Element offsets of linear index i (row-major over the shape) in each view.
template <int K>
__device__ __forceinline__ void view_offsets(const Views<K>& v, i64 i, i64 (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = 0;
  for (int d = v.ndim - 1; d >= 0; --d) {
    i64 ext = v.shape[d];
    i64 q = i / ext;
    i64 r = i - q * ext;
    i = q;
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += r * v.strides[k][d];
  }
}

// --- atomics ------------------------------------------------------------------------------
__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }  // sm_60+
__device__ __forceinline__ void atomic_add(std::int32_t* p, std::int32_t v) { atomicAdd(reinterpret_cast<int*>(p), v); }
__device__ __forceinline__ void atomic_add(std::int64_t* p, std::int64_t v) {
  // two's complement: adding as unsigned 64-bit gives the signed sum
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// --- reductions: identity, combine (NaN propagates for max/min), warp and block ----------
template <class T>
__host__ __device__ __forceinline__ T red_identity(ReduceOp op);
#define DEZERO_IDENTITY(T, LO, HI)                                                     \
  template <>                                                                          \
  __host__ __device__ __forceinline__ T red_identity<T>(ReduceOp op) {                 \
    return op == ReduceOp::Sum ? T(0) : (op == ReduceOp::Max ? T(LO) : T(HI));         \
  }
DEZERO_IDENTITY(float, -FLT_MAX, FLT_MAX)
DEZERO_IDENTITY(double, -DBL_MAX, DBL_MAX)
DEZERO_IDENTITY(std::int32_t, INT_MIN, INT_MAX)
DEZERO_IDENTITY(std::int64_t, LLONG_MIN, LLONG_MAX)
#undef DEZERO_IDENTITY

template <class T>
__device__ __forceinline__ bool is_nan(T v) { return false; }
template <>
__device__ __forceinline__ bool is_nan<float>(float v) { return v != v; }
template <>
__device__ __forceinline__ bool is_nan<double>(double v) { return v != v; }

template <class T>
__device__ __forceinline__ T red_combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Max: return (a > b || is_nan(a)) ? a : b;
    case ReduceOp::Min: return (a < b || is_nan(a)) ? a : b;
  }
  return a;
}

__device__ __forceinline__ float shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ double shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ std::int32_t shfl_xor(std::int32_t v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ std::int64_t shfl_xor(std::int64_t v, int m) {
  return static_cast<std::int64_t>(__shfl_xor_sync(0xffffffffu, static_cast<long long>(v), m));
}

// Every lane of a full warp gets the result.
template <class T>
__device__ __forceinline__ T warp_allreduce(ReduceOp op, T v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v = red_combine(op, v, shfl_xor(v, m));
  return v;
}

// Every thread of the block gets the result; blockDim.x is a multiple of 32 (<= 1024).
// All threads of the block must call it (it synchronises).
template <class T>
__device__ T block_allreduce(ReduceOp op, T v) {
  __shared__ __align__(8) unsigned char raw[32 * sizeof(T)];
  T* sm = reinterpret_cast<T*>(raw);
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_allreduce(op, v);
  __syncthreads();  // an earlier call's readers are done with sm
  if (lane == 0) sm[wid] = v;
  __syncthreads();
  T r = lane < nw ? sm[lane] : red_identity<T>(op);
  return warp_allreduce(op, r);
}

// ==========================================================================================
// kernels (same order as the Backend interface)
// ==========================================================================================

template <class T>
__global__ void fill_kernel(T* p, i64 n, T v) {
  DEZERO_GRID_LOOP(i, n) p[i] = v;
}

template <class S, class D>
__global__ void cast_kernel(const S* x, D* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = static_cast<D>(x[i]);
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, i64 n, T a) {
  DEZERO_GRID_LOOP(i, n) y[i] = kernels::unary_apply<T>(op, x[i], a);
}

// mode 0: a[i], b[i]; 1: a[i], b[0]; 2: a[0], b[i]; 3: general strided views (y, a, b).
template <class T>
__global__ void binary_kernel(BinaryOp op, int mode, const T* a, const T* b, T* y, i64 n, Views<3> v) {
  DEZERO_GRID_LOOP(i, n) {
    T x, z;
    i64 oy = i;
    if (mode == 0) {
      x = a[i];
      z = b[i];
    } else if (mode == 1) {
      x = a[i];
      z = b[0];
    } else if (mode == 2) {
      x = a[0];
      z = b[i];
    } else {
      i64 off[3];
      view_offsets(v, i, off);
      oy = off[0];
      x = a[off[1]];
      z = b[off[2]];
    }
    y[oy] = kernels::binary_apply<T>(op, x, z);
  }
}

template <class T>
__global__ void where_kernel(const T* c, const T* a, const T* b, T* y, i64 n, Views<4> v) {
  DEZERO_GRID_LOOP(i, n) {
    i64 off[4];
    view_offsets(v, i, off);
    y[off[0]] = c[off[1]] != T(0) ? a[off[2]] : b[off[3]];
  }
}

// views: (dst, src)
template <class T>
__global__ void copy_strided_kernel(const T* src, T* dst, i64 n, Views<2> v, bool accumulate) {
  DEZERO_GRID_LOOP(i, n) {
    i64 off[2];
    view_offsets(v, i, off);
    if (accumulate) atomic_add(dst + off[0], src[off[1]]);
    else dst[off[0]] = src[off[1]];
  }
}

// x: (outer, r) -> y[o * splits + s] for the s-th chunk of each row; one block per (row, chunk).
template <class T>
__global__ void reduce_rows_kernel(ReduceOp op, const T* x, T* y, i64 outer, i64 r, i64 chunk, int splits) {
  int s = blockIdx.y;
  i64 begin = s * chunk, end = begin + chunk < r ? begin + chunk : r;
  for (i64 o = blockIdx.x; o < outer; o += gridDim.x) {
    const T* p = x + o * r;
    T acc = red_identity<T>(op);
    for (i64 i = begin + threadIdx.x; i < end; i += blockDim.x) acc = red_combine(op, acc, p[i]);
    acc = block_allreduce(op, acc);
    if (threadIdx.x == 0) y[o * splits + s] = acc;
  }
}

// x: (outer, r) with short rows: one warp per row.
template <class T>
__global__ void reduce_rows_warp_kernel(ReduceOp op, const T* x, T* y, i64 outer, i64 r) {
  i64 warp = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  i64 nwarps = (static_cast<i64>(gridDim.x) * blockDim.x) >> 5;
  int lane = threadIdx.x & 31;
  for (i64 o = warp; o < outer; o += nwarps) {
    const T* p = x + o * r;
    T acc = red_identity<T>(op);
    for (i64 i = lane; i < r; i += 32) acc = red_combine(op, acc, p[i]);
    acc = warp_allreduce(op, acc);
    if (lane == 0) y[o] = acc;
  }
}

// x: (outer, r, inner) -> y: (outer, splits, inner); one thread per (o, j), chunk blockIdx.y of r.
template <class T>
__global__ void reduce_cols_kernel(ReduceOp op, const T* x, T* y, i64 outer, i64 r, i64 inner, i64 chunk,
                                   int splits) {
  int s = blockIdx.y;
  i64 begin = s * chunk, end = begin + chunk < r ? begin + chunk : r;
  DEZERO_GRID_LOOP(t, outer * inner) {
    i64 o = t / inner, j = t - o * inner;
    const T* p = x + o * r * inner + j;
    T acc = red_identity<T>(op);
    for (i64 i = begin; i < end; ++i) acc = red_combine(op, acc, p[i * inner]);
    y[(o * splits + s) * inner + j] = acc;
  }
}

template <class T>
__global__ void arg_reduce_kernel(ArgReduceOp op, const T* x, i64* y, i64 outer, i64 r, i64 inner) {
  DEZERO_GRID_LOOP(t, outer * inner) {
    i64 o = t / inner, j = t - o * inner;
    const T* p = x + o * r * inner + j;
    i64 best = 0;
    T bv = p[0];
    for (i64 i = 1; i < r; ++i) {
      T v = p[i * inner];
      if (op == ArgReduceOp::ArgMax ? v > bv : v < bv) {
        bv = v;
        best = i;
      }
    }
    y[t] = best;
  }
}

// Integer GEMM (cuBLAS has none for these types): one thread per output element.
template <class T>
__global__ void gemm_naive_kernel(bool ta, bool tb, i64 m, i64 n, i64 k, T alpha, const T* a, i64 lda, i64 sa,
                                  const T* b, i64 ldb, i64 sb, T beta, T* c, i64 ldc, i64 sc, i64 batch) {
  DEZERO_GRID_LOOP(t, batch * m * n) {
    i64 bi = t / (m * n), rem = t - bi * m * n, i = rem / n, j = rem - i * n;
    const T* A = a + bi * sa;
    const T* B = b + bi * sb;
    T acc = 0;
    for (i64 l = 0; l < k; ++l) acc += (ta ? A[l * lda + i] : A[i * lda + l]) * (tb ? B[j * ldb + l] : B[l * ldb + j]);
    T* C = c + bi * sc + i * ldc + j;
    *C = beta == T(0) ? alpha * acc : alpha * acc + beta * *C;
  }
}

template <class T>
__global__ void gather_kernel(const T* s, const i64* off, T* d, i64 n) {
  DEZERO_GRID_LOOP(i, n) d[i] = s[off[i]];
}

template <class T>
__global__ void scatter_add_kernel(const T* s, const i64* off, T* d, i64 n) {
  DEZERO_GRID_LOOP(i, n) atomic_add(d + off[i], s[i]);
}

template <class T>
__global__ void gather_rows_kernel(const T* s, const i64* idx, T* d, i64 rows, i64 cols) {
  DEZERO_GRID_LOOP(t, rows * cols) {
    i64 i = t / cols, c = t - i * cols;
    d[t] = s[idx[i] * cols + c];
  }
}

// Row statistics of a warp: the max and log-sum-exp of p[0..c).
template <class T>
__device__ __forceinline__ T warp_row_max(const T* p, i64 c, int lane) {
  T mx = red_identity<T>(ReduceOp::Max);
  for (i64 i = lane; i < c; i += 32) mx = red_combine(ReduceOp::Max, mx, p[i]);
  return warp_allreduce(ReduceOp::Max, mx);
}
template <class T>
__device__ __forceinline__ T warp_row_sumexp(const T* p, i64 c, T mx, int lane) {
  T s = 0;
  for (i64 i = lane; i < c; i += 32) s += kernels::m_exp(p[i] - mx);
  return warp_allreduce(ReduceOp::Sum, s);
}

#define DEZERO_WARP_ROWS(row, rows)                                                  \
  int lane = threadIdx.x & 31;                                                       \
  i64 warp0 = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;        \
  i64 nwarps = (static_cast<i64>(gridDim.x) * blockDim.x) >> 5;                      \
  for (i64 row = warp0; row < (rows); row += nwarps)

// softmax over rows of c contiguous elements (inner == 1): one warp per row.
template <class T>
__global__ void softmax_rows_kernel(const T* x, T* y, i64 rows, i64 c, bool log_) {
  DEZERO_WARP_ROWS(row, rows) {
    const T* p = x + row * c;
    T* q = y + row * c;
    T mx = warp_row_max(p, c, lane);
    T s = warp_row_sumexp(p, c, mx, lane);
    if (log_) {
      T ls = kernels::m_log(s) + mx;
      for (i64 i = lane; i < c; i += 32) q[i] = p[i] - ls;
    } else {
      T inv = T(1) / s;
      for (i64 i = lane; i < c; i += 32) q[i] = kernels::m_exp(p[i] - mx) * inv;
    }
  }
}

// softmax over the middle axis of (outer, c, inner), inner > 1: one thread per (o, j).
template <class T>
__global__ void softmax_cols_kernel(const T* x, T* y, i64 outer, i64 c, i64 inner, bool log_) {
  DEZERO_GRID_LOOP(t, outer * inner) {
    i64 o = t / inner, j = t - o * inner;
    const T* p = x + o * c * inner + j;
    T* q = y + o * c * inner + j;
    T mx = p[0];
    for (i64 i = 1; i < c; ++i) mx = p[i * inner] > mx ? p[i * inner] : mx;
    T s = 0;
    for (i64 i = 0; i < c; ++i) s += kernels::m_exp(p[i * inner] - mx);
    if (log_) {
      T ls = kernels::m_log(s) + mx;
      for (i64 i = 0; i < c; ++i) q[i * inner] = p[i * inner] - ls;
    } else {
      T inv = T(1) / s;
      for (i64 i = 0; i < c; ++i) q[i * inner] = kernels::m_exp(p[i * inner] - mx) * inv;
    }
  }
}

// Per-row loss logsumexp(x_i) - x_i[t_i], in double (NaN for a label out of range).
template <class T>
__global__ void sce_rows_kernel(const T* x, const i64* t, double* row_loss, i64 n, i64 c) {
  DEZERO_WARP_ROWS(row, n) {
    const T* p = x + row * c;
    T mx = warp_row_max(p, c, lane);
    T s = warp_row_sumexp(p, c, mx, lane);
    if (lane == 0) {
      i64 ti = t[row];
      row_loss[row] = (ti >= 0 && ti < c) ? static_cast<double>(kernels::m_log(s) + mx - p[ti])
                                          : __longlong_as_double(0x7ff8000000000000LL);
    }
  }
}

// loss[0] = mean of row_loss: one block, so the result is written without a host round trip.
template <class T>
__global__ void sce_mean_kernel(const double* row_loss, T* loss, i64 n) {
  double acc = 0;
  for (i64 i = threadIdx.x; i < n; i += blockDim.x) acc += row_loss[i];
  acc = block_allreduce(ReduceOp::Sum, acc);
  if (threadIdx.x == 0) *loss = static_cast<T>(acc / static_cast<double>(n));
}

// gx = (softmax(x) - onehot(t)) * gy / n, gy read on the device.
template <class T>
__global__ void sce_grad_kernel(const T* x, const i64* t, const T* gy, T* gx, i64 n, i64 c) {
  T scale = gy[0] / static_cast<T>(n);
  DEZERO_WARP_ROWS(row, n) {
    const T* p = x + row * c;
    T* q = gx + row * c;
    T mx = warp_row_max(p, c, lane);
    T s = warp_row_sumexp(p, c, mx, lane);
    T ls = kernels::m_log(s) + mx;
    i64 ti = t[row];
    for (i64 i = lane; i < c; i += 32) q[i] = kernels::m_exp(p[i] - ls) * scale - (i == ti ? scale : T(0));
  }
}

template <class T>
__global__ void update_kernel(UpdateRule rule, T* p, const T* g, T* s1, T* s2, i64 n, UpdateArgs args) {
  DEZERO_GRID_LOOP(i, n) kernels::update_apply<T>(rule, p[i], g[i], s1 ? s1 + i : nullptr, s2 ? s2 + i : nullptr, args);
}

// ==========================================================================================
// host side
// ==========================================================================================

// Launch helper: n elements, grid-stride kernels.
#define DEZERO_LAUNCH(kernel, n, stream, ...)                                          \
  do {                                                                                 \
    if ((n) > 0) {                                                                     \
      kernel<<<blocks_for(n), kBlock, 0, stream>>>(__VA_ARGS__);                       \
      DEZERO_CUDA_CHECK_LAUNCH();                                                      \
    }                                                                                  \
  } while (0)

// Warp-per-row launch: 8 warps per block.
unsigned warp_blocks_for(i64 rows) { return blocks_for(rows * 32); }

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int id) : id_(id) {}
  Device device() const override { return Device::cuda(id_); }

  // --- memory -----------------------------------------------------------------------------
  void* allocate(std::size_t nbytes) override { return cd::pool_malloc(id_, nbytes, stream()); }
  void deallocate(void* ptr, std::size_t) noexcept override { cd::pool_free(id_, ptr); }

  // From pageable memory the driver stages the source before returning, so the caller may
  // free it at once; the transfer itself completes in stream order (no host wait).
  void copy_from_host(void* dst, const void* src, std::size_t n) override {
    if (!n) return;
    cd::ScopedDevice g(id_);
    DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream()));
  }
  // The one place (with synchronize) that waits: the caller reads the values next.
  void copy_to_host(void* dst, const void* src, std::size_t n) override {
    if (!n) return;
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s));
    DEZERO_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  void copy(void* dst, const void* src, std::size_t n) override {
    if (!n || dst == src) return;
    cd::ScopedDevice g(id_);
    DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream()));
  }
  void fill(DType dt, void* dst, std::int64_t n, double value) override {
    if (n <= 0) return;
    cd::ScopedDevice g(id_);
    if (value == 0.0 && !std::signbit(value)) {  // all-zero bits for every dtype
      DEZERO_CUDA_CHECK(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(n) * dtype_size(dt), stream()));
      return;
    }
    DEZERO_DISPATCH(dt, T, DEZERO_LAUNCH(fill_kernel<T>, n, stream(), static_cast<T*>(dst), n, static_cast<T>(value)))
  }
  void synchronize() override {
    cd::ScopedDevice g(id_);
    DEZERO_CUDA_CHECK(cudaDeviceSynchronize());
  }

  // --- element-wise -------------------------------------------------------------------------
  void cast(DType from, const void* x, DType to, void* y, std::int64_t n) override {
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    DEZERO_DISPATCH(from, S, {
      DEZERO_DISPATCH(to, D, {
        auto kfn = cast_kernel<S, D>;
        DEZERO_LAUNCH(kfn, n, s, static_cast<const S*>(x), static_cast<D*>(y), n);
      })
    })
  }

  void unary(UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha) override {
    cd::ScopedDevice g(id_);
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(unary_kernel<T>, n, stream(), op, static_cast<const T*>(x), static_cast<T*>(y), n,
                          static_cast<T>(alpha)))
  }

  void binary(BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y,
              const Strided& out) override {
    cd::ScopedDevice g(id_);
    i64 n = out.numel();
    int mode = 3;
    bool flat = out.ndim == 0 || (out.ndim == 1 && (out.strides[0] == 1 || out.shape[0] == 1));
    if (out.ndim == 0) {
      mode = 0;
    } else if (flat) {
      i64 s1 = out.shape[0] == 1 ? 1 : sa.strides[0], s2 = out.shape[0] == 1 ? 1 : sb.strides[0];
      if (s1 == 1 && s2 == 1) mode = 0;
      else if (s1 == 1 && s2 == 0) mode = 1;
      else if (s1 == 0 && s2 == 1) mode = 2;
    }
    const Strided* v[3] = {&out, &sa, &sb};
    Views<3> views = make_views<3>(v);
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(binary_kernel<T>, n, stream(), op, mode, static_cast<const T*>(a),
                          static_cast<const T*>(b), static_cast<T*>(y), n, views))
  }

  void where(DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
             const Strided& sb, void* y, const Strided& out) override {
    cd::ScopedDevice g(id_);
    i64 n = out.numel();
    const Strided* v[4] = {&out, &sc, &sa, &sb};
    Views<4> views = make_views<4>(v);
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(where_kernel<T>, n, stream(), static_cast<const T*>(cond), static_cast<const T*>(a),
                          static_cast<const T*>(b), static_cast<T*>(y), n, views))
  }

  void copy_strided(DType dt, const void* src, const Strided& s, void* dst, const Strided& d,
                    bool accumulate) override {
    cd::ScopedDevice g(id_);
    i64 n = d.numel();
    const Strided* v[2] = {&d, &s};
    Views<2> views = make_views<2>(v);
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(copy_strided_kernel<T>, n, stream(), static_cast<const T*>(src), static_cast<T*>(dst), n,
                          views, accumulate))
  }

  // --- reductions -----------------------------------------------------------------------------
  void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
              std::int64_t inner) override {
    cd::ScopedDevice g(id_);
    DEZERO_DISPATCH(dt, T, reduce_typed<T>(op, static_cast<const T*>(x), static_cast<T*>(y), outer, r, inner))
  }
  void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                  std::int64_t inner) override {
    cd::ScopedDevice g(id_);
    i64 n = outer * inner;
    if (r <= 0) return;
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(arg_reduce_kernel<T>, n, stream(), op, static_cast<const T*>(x), y, outer, r, inner))
  }

  // --- GEMM -----------------------------------------------------------------------------------
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets the operands
  // swapped with the same transpose flags and (n, m) in place of (m, n).
  void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
            std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b,
            double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) override {
    if (m <= 0 || n <= 0 || batch <= 0) return;
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    if (is_integer(dt)) {
      auto run = [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        DEZERO_LAUNCH(gemm_naive_kernel<T>, batch * m * n, s, ta, tb, m, n, k, static_cast<T>(alpha),
                  static_cast<const T*>(a), lda, stride_a, static_cast<const T*>(b), ldb, stride_b,
                  static_cast<T>(beta), static_cast<T*>(c), ldc, stride_c, batch);
      };
      if (dt == int32) run(static_cast<std::int32_t*>(nullptr));
      else run(static_cast<std::int64_t*>(nullptr));
      return;
    }
    constexpr i64 kMax = INT_MAX;
    if (m > kMax || n > kMax || k > kMax || lda > kMax || ldb > kMax || ldc > kMax || batch > kMax)
      throw ValueError("matmul on cuda:" + std::to_string(id_) + ": a dimension exceeds cuBLAS's 32-bit limit (m=" +
                       std::to_string(m) + ", n=" + std::to_string(n) + ", k=" + std::to_string(k) +
                       "); hint: split the product");
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    std::lock_guard<std::mutex> lock(cd::library_mutex(id_));
    cublasHandle_t h = cd::cublas_handle(id_, s);
    if (dt == float32) {
      float al = static_cast<float>(alpha), be = static_cast<float>(beta);
      DEZERO_CUBLAS_CHECK(cublasSgemmStridedBatched(h, opb, opa, int(n), int(m), int(k), &al, static_cast<const float*>(b),
                                                int(ldb), stride_b, static_cast<const float*>(a), int(lda), stride_a,
                                                &be, static_cast<float*>(c), int(ldc), stride_c, int(batch)));
    } else {
      DEZERO_CUBLAS_CHECK(cublasDgemmStridedBatched(h, opb, opa, int(n), int(m), int(k), &alpha,
                                                static_cast<const double*>(b), int(ldb), stride_b,
                                                static_cast<const double*>(a), int(lda), stride_a, &beta,
                                                static_cast<double*>(c), int(ldc), stride_c, int(batch)));
    }
  }

  // --- indexing -------------------------------------------------------------------------------
  void gather(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    cd::ScopedDevice g(id_);
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(gather_kernel<T>, n, stream(), static_cast<const T*>(src), off, static_cast<T*>(dst), n))
  }
  void scatter_add(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    cd::ScopedDevice g(id_);
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(scatter_add_kernel<T>, n, stream(), static_cast<const T*>(src), off, static_cast<T*>(dst), n))
  }
  void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                   std::int64_t cols) override {
    cd::ScopedDevice g(id_);
    i64 n = rows * cols;
    DEZERO_DISPATCH(dt, T,
                DEZERO_LAUNCH(gather_rows_kernel<T>, n, stream(), static_cast<const T*>(src), idx, static_cast<T*>(dst),
                          rows, cols))
  }

  // --- fused NN kernels ---------------------------------------------------------------------------
  void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
               bool log_) override {
    if (outer <= 0 || c <= 0 || inner <= 0) return;
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    auto run = [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      if (inner == 1) {
        softmax_rows_kernel<T><<<warp_blocks_for(outer), kBlock, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                         outer, c, log_);
        DEZERO_CUDA_CHECK_LAUNCH();
      } else {
        DEZERO_LAUNCH(softmax_cols_kernel<T>, outer * inner, s, static_cast<const T*>(x), static_cast<T*>(y), outer, c,
                  inner, log_);
      }
    };
    if (dt == float32) run(static_cast<float*>(nullptr));
    else run(static_cast<double*>(nullptr));
  }

  void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                             std::int64_t c) override {
    if (n <= 0) return;
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    cd::DeviceBuffer rows(id_, static_cast<std::size_t>(n) * sizeof(double), s);
    auto run = [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      sce_rows_kernel<T><<<warp_blocks_for(n), kBlock, 0, s>>>(static_cast<const T*>(x), t, rows.as<double>(), n, c);
      DEZERO_CUDA_CHECK_LAUNCH();
      sce_mean_kernel<T><<<1, 1024, 0, s>>>(rows.as<double>(), static_cast<T*>(loss), n);
      DEZERO_CUDA_CHECK_LAUNCH();
    };
    if (dt == float32) run(static_cast<float*>(nullptr));
    else run(static_cast<double*>(nullptr));
  }

  void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                  std::int64_t n, std::int64_t c) override {
    if (n <= 0) return;
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    auto run = [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      sce_grad_kernel<T><<<warp_blocks_for(n), kBlock, 0, s>>>(static_cast<const T*>(x), t, static_cast<const T*>(gy),
                                                               static_cast<T*>(gx), n, c);
      DEZERO_CUDA_CHECK_LAUNCH();
    };
    if (dt == float32) run(static_cast<float*>(nullptr));
    else run(static_cast<double*>(nullptr));
  }

  void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                        std::int64_t n, const UpdateArgs& args) override {
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    if (dt == float32)
      DEZERO_LAUNCH(update_kernel<float>, n, s, rule, static_cast<float*>(param), static_cast<const float*>(grad),
                static_cast<float*>(s1), static_cast<float*>(s2), n, args);
    else
      DEZERO_LAUNCH(update_kernel<double>, n, s, rule, static_cast<double*>(param), static_cast<const double*>(grad),
                static_cast<double*>(s1), static_cast<double*>(s2), n, args);
  }

  // --- random numbers -----------------------------------------------------------------------------
  void random_uniform(DType dt, void* dst, std::int64_t n) override { random_fill(false, dt, dst, n); }
  void random_normal(DType dt, void* dst, std::int64_t n) override { random_fill(true, dt, dst, n); }

 private:
  cudaStream_t stream() const { return cd::current_stream(id_); }

  template <class T>
  void reduce_typed(ReduceOp op, const T* x, T* y, i64 outer, i64 r, i64 inner) {
    if (outer <= 0 || inner <= 0) return;
    cudaStream_t s = stream();
    if (r <= 0) {
      DEZERO_LAUNCH(fill_kernel<T>, outer * inner, s, y, outer * inner, red_identity<T>(op));
      return;
    }
    i64 sms = cd::sm_count(id_);
    if (inner == 1) {
      i64 want = sms * 4;  // blocks that keep every SM busy
      int splits = 1;
      if (outer < want && r > 8192)
        splits = static_cast<int>(std::min<i64>({(want + outer - 1) / outer, (r + 4095) / 4096, 1024}));
      if (splits == 1 && r <= 512) {
        reduce_rows_warp_kernel<T><<<warp_blocks_for(outer), kBlock, 0, s>>>(op, x, y, outer, r);
        DEZERO_CUDA_CHECK_LAUNCH();
        return;
      }
      i64 chunk = (r + splits - 1) / splits;
      splits = static_cast<int>((r + chunk - 1) / chunk);
      dim3 grid(static_cast<unsigned>(std::min<i64>(outer, 65535)), static_cast<unsigned>(splits));
      if (splits == 1) {
        reduce_rows_kernel<T><<<grid, kBlock, 0, s>>>(op, x, y, outer, r, chunk, 1);
        DEZERO_CUDA_CHECK_LAUNCH();
        return;
      }
      cd::DeviceBuffer part(id_, static_cast<std::size_t>(outer * splits) * sizeof(T), s);
      reduce_rows_kernel<T><<<grid, kBlock, 0, s>>>(op, x, part.as<T>(), outer, r, chunk, splits);
      DEZERO_CUDA_CHECK_LAUNCH();
      reduce_typed<T>(op, part.as<T>(), y, outer, splits, 1);
      return;
    }
    i64 threads = outer * inner, want = sms * 2048;
    int splits = 1;
    if (threads < want / 2 && r > 64)
      splits = static_cast<int>(std::min<i64>({(want + threads - 1) / threads, (r + 31) / 32, 1024}));
    i64 chunk = (r + splits - 1) / splits;
    splits = static_cast<int>((r + chunk - 1) / chunk);
    dim3 grid(blocks_for(threads), static_cast<unsigned>(splits));
    if (splits == 1) {
      reduce_cols_kernel<T><<<grid, kBlock, 0, s>>>(op, x, y, outer, r, inner, chunk, 1);
      DEZERO_CUDA_CHECK_LAUNCH();
      return;
    }
    cd::DeviceBuffer part(id_, static_cast<std::size_t>(outer * splits * inner) * sizeof(T), s);
    reduce_cols_kernel<T><<<grid, kBlock, 0, s>>>(op, x, part.as<T>(), outer, r, inner, chunk, splits);
    DEZERO_CUDA_CHECK_LAUNCH();
    reduce_typed<T>(op, part.as<T>(), y, outer, splits, inner);
  }

  // cuRAND (Philox) reseeded on every call with 64 bits drawn from dezero's host
  // generator, so random::seed(s) makes GPU samples reproducible as well.
  void random_fill(bool normal, DType dt, void* dst, i64 n) {
    if (n <= 0) return;
    cd::ScopedDevice g(id_);
    cudaStream_t s = stream();
    if (is_integer(dt)) {  // as the CPU backend: samples converted to the integer type
      cd::DeviceBuffer tmp(id_, static_cast<std::size_t>(n) * sizeof(double), s);
      random_fill(normal, float64, tmp.get(), n);
      cast(float64, tmp.get(), dt, dst, n);
      return;
    }
    std::uint64_t seed;
    {
      auto& gen = global_generator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      seed = gen.next64();
    }
    std::size_t esize = dtype_size(dt);
    // curandGenerateNormal* needs an even count and an aligned pointer.
    bool staged = normal && (n % 2 != 0 || reinterpret_cast<std::uintptr_t>(dst) % (2 * esize) != 0);
    i64 m = staged ? n + (n % 2) : n;
    std::unique_ptr<cd::DeviceBuffer> tmp;
    if (staged) tmp = std::make_unique<cd::DeviceBuffer>(id_, static_cast<std::size_t>(m) * esize, s);
    void* out = staged ? tmp->get() : dst;
    {
      std::lock_guard<std::mutex> lock(cd::library_mutex(id_));
      curandGenerator_t gen = cd::curand_generator(id_, s);
      DEZERO_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
      DEZERO_CURAND_CHECK(curandSetGeneratorOffset(gen, 0));
      std::size_t count = static_cast<std::size_t>(m);
      if (dt == float32) {
        if (normal) DEZERO_CURAND_CHECK(curandGenerateNormal(gen, static_cast<float*>(out), count, 0.0f, 1.0f));
        else DEZERO_CURAND_CHECK(curandGenerateUniform(gen, static_cast<float*>(out), count));
      } else {
        if (normal) DEZERO_CURAND_CHECK(curandGenerateNormalDouble(gen, static_cast<double*>(out), count, 0.0, 1.0));
        else DEZERO_CURAND_CHECK(curandGenerateUniformDouble(gen, static_cast<double*>(out), count));
      }
    }
    if (staged) DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, out, static_cast<std::size_t>(n) * esize, cudaMemcpyDeviceToDevice, s));
    if (!normal) unary(UnaryOp::RSubScalar, dt, dst, dst, n, 1.0);  // cuRAND gives (0, 1]; NumPy [0, 1)
  }

  int id_;
};

}  // namespace

bool cuda_runtime_available() { return cd::runtime_available(); }

Backend& cuda_backend(int device_id) {
  cd::check_device_id("tensor storage", device_id);
  static std::mutex mu;
  static auto* backends = new std::vector<CudaBackend*>();  // one per device, never destroyed
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<std::size_t>(device_id) >= backends->size()) backends->resize(device_id + 1, nullptr);
  auto& b = (*backends)[device_id];
  if (!b) b = new CudaBackend(device_id);
  return *b;
}

}  // namespace dezero::detail
