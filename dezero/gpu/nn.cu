// dezero/gpu/nn.cu - the fused neural-network kernels of the CUDA backend and their
// launchers: softmax / log_softmax, softmax cross-entropy and its gradient, and the
// in-place optimizer updates.
//
// Twin of cpu/nn.cpp. A contiguous row is a warp's (DEZERO_WARP_ROWS): its max and
// log-sum-exp come from warp reductions. The loss is a per-row pass in double and a
// one-block mean written on the device, so nothing waits for the host; the gradient
// reads gy on the device too. update_apply is backend/ops.hpp's, shared with the CPU;
// the multi-tensor update launches once per 64 parameters with their table by value.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/ops.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;

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

// --- multi-tensor updates: one launch for up to kUpdateChunksPerLaunch parameters ------------
// The chunk table travels by value as the kernel's argument (2.8 KB of the 4 KB a
// kernel may take), so a step needs no device memory and no copy. Chunk k owns the blocks
// [block0[k], block0[k + 1]) - as many as update_kernel would get for it alone
// (blocks_for) - and runs update_kernel's grid-stride loop over them, with update_kernel's
// very expression, so every element gets the same bits as one launch per parameter.
constexpr int kUpdateChunksPerLaunch = 64;
template <class T>
struct UpdateTable {
  T* p[kUpdateChunksPerLaunch];
  const T* g[kUpdateChunksPerLaunch];
  T* s1[kUpdateChunksPerLaunch];
  T* s2[kUpdateChunksPerLaunch];
  i64 n[kUpdateChunksPerLaunch];
  unsigned block0[kUpdateChunksPerLaunch + 1];
  int count;
};
static_assert(sizeof(UpdateTable<double>) + sizeof(UpdateArgs) + sizeof(UpdateRule) <= 4000,
              "a kernel's arguments are limited to 4 KB");

template <class T>
__global__ void update_multi_kernel(UpdateRule rule, UpdateTable<T> table, UpdateArgs args) {
  // The block's chunk: the last k with block0[k] <= blockIdx.x (binary search; the same
  // k for every thread of the block, so the table reads are broadcast).
  int lo = 0, hi = table.count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (table.block0[mid] <= blockIdx.x) lo = mid;
    else hi = mid - 1;
  }
  const int k = lo;
  T* p = table.p[k];
  const T* g = table.g[k];
  T* s1 = table.s1[k];
  T* s2 = table.s2[k];
  const i64 n = table.n[k];
  const i64 stride = static_cast<i64>(table.block0[k + 1] - table.block0[k]) * blockDim.x;
  for (i64 i = static_cast<i64>(blockIdx.x - table.block0[k]) * blockDim.x + threadIdx.x; i < n; i += stride)
    kernels::update_apply<T>(rule, p[i], g[i], s1 ? s1 + i : nullptr, s2 ? s2 + i : nullptr, args);
}

}  // namespace

namespace gpu {

void softmax(int device, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
             bool log_) {
  if (outer <= 0 || c <= 0 || inner <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
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

void softmax_cross_entropy(int device, DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                           std::int64_t c) {
  if (n <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  cd::DeviceBuffer rows(device, static_cast<std::size_t>(n) * sizeof(double), s);
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

void softmax_cross_entropy_grad(int device, DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                std::int64_t n, std::int64_t c) {
  if (n <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    sce_grad_kernel<T><<<warp_blocks_for(n), kBlock, 0, s>>>(static_cast<const T*>(x), t, static_cast<const T*>(gy),
                                                             static_cast<T*>(gx), n, c);
    DEZERO_CUDA_CHECK_LAUNCH();
  };
  if (dt == float32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

void optimizer_update(int device, UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                      std::int64_t n, const UpdateArgs& args) {
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  if (dt == float32)
    DEZERO_LAUNCH(update_kernel<float>, n, s, rule, static_cast<float*>(param), static_cast<const float*>(grad),
                  static_cast<float*>(s1), static_cast<float*>(s2), n, args);
  else
    DEZERO_LAUNCH(update_kernel<double>, n, s, rule, static_cast<double*>(param), static_cast<const double*>(grad),
                  static_cast<double*>(s1), static_cast<double*>(s2), n, args);
}

void optimizer_update_multi(int device, UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                            const UpdateArgs& args) {
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    UpdateTable<T> table{};  // count 0, block0[0] 0
    auto launch = [&] {
      if (table.count == 0) return;
      update_multi_kernel<T><<<table.block0[table.count], kBlock, 0, s>>>(rule, table, args);
      DEZERO_CUDA_CHECK_LAUNCH();
      table.count = 0;
    };
    for (std::size_t i = 0; i < n; ++i) {
      const UpdateChunk& c = chunks[i];
      if (c.numel <= 0) continue;
      const int k = table.count;
      table.p[k] = static_cast<T*>(c.param);
      table.g[k] = static_cast<const T*>(c.grad);
      table.s1[k] = static_cast<T*>(c.s1);
      table.s2[k] = static_cast<T*>(c.s2);
      table.n[k] = c.numel;
      table.block0[k + 1] = table.block0[k] + blocks_for(c.numel);  // at most 64 x 2^20 blocks in all
      table.count = k + 1;
      if (table.count == kUpdateChunksPerLaunch) launch();
    }
    launch();
  };
  if (dt == float32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

}  // namespace gpu

}  // namespace dezero::detail
