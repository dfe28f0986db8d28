// dezero/gpu/half.cu - the CUDA backend's side of the 16-bit floats: cast between bfloat16 /
// float16 and every other dtype (CUDA's __nv_bfloat16 and __half conversions, round to nearest
// even, NaN kept, float16 overflow to infinity, subnormals exact) and the strided copy of 2-byte
// elements. Arithmetic on these dtypes is not here: tensor/ converts them to float32, runs the
// float32 kernels and converts back, so the GPU needs only these moves and conversions. The
// host's twin is cpu/half.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "dezero/backend/dispatch.hpp"
#include "dezero/gpu/launch.cuh"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace cd = ::dezero::cuda::detail;

namespace {

// --- one element to a 16-bit float, rounded once --------------------------------------------
__device__ __forceinline__ __nv_bfloat16 to_bf16(float v) { return __float2bfloat16_rn(v); }
__device__ __forceinline__ __nv_bfloat16 to_bf16(double v) { return __double2bfloat16(v); }
__device__ __forceinline__ __nv_bfloat16 to_bf16(std::int32_t v) { return __int2bfloat16_rn(v); }
__device__ __forceinline__ __nv_bfloat16 to_bf16(std::int64_t v) { return __ll2bfloat16_rn(static_cast<long long>(v)); }
__device__ __forceinline__ __half to_f16(float v) { return __float2half_rn(v); }
__device__ __forceinline__ __half to_f16(double v) { return __double2half(v); }
__device__ __forceinline__ __half to_f16(std::int32_t v) { return __int2half_rn(v); }
__device__ __forceinline__ __half to_f16(std::int64_t v) { return __ll2half_rn(static_cast<long long>(v)); }

template <class S>
__global__ void to_bf16_kernel(const S* x, __nv_bfloat16* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = to_bf16(x[i]);
}
template <class S>
__global__ void to_f16_kernel(const S* x, __half* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = to_f16(x[i]);
}
// from a 16-bit float: exact to float32, then as float32's cast_kernel converts a float
template <class D>
__global__ void from_bf16_kernel(const __nv_bfloat16* x, D* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = static_cast<D>(__bfloat162float(x[i]));
}
template <class D>
__global__ void from_f16_kernel(const __half* x, D* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = static_cast<D>(__half2float(x[i]));
}
__global__ void bf16_to_f16_kernel(const __nv_bfloat16* x, __half* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = __float2half_rn(__bfloat162float(x[i]));
}
__global__ void f16_to_bf16_kernel(const __half* x, __nv_bfloat16* y, i64 n) {
  DEZERO_GRID_LOOP(i, n) y[i] = __float2bfloat16_rn(__half2float(x[i]));
}

// views: (dst, src); 2-byte elements moved as bits
__global__ void copy_strided_16_kernel(const std::uint16_t* src, std::uint16_t* dst, i64 n, Views<2> v) {
  DEZERO_GRID_LOOP(i, n) {
    i64 off[2];
    view_offsets(v, i, off);
    dst[off[0]] = src[off[1]];
  }
}

}  // namespace

namespace gpu {

void cast_half(int device, DType from, const void* x, DType to, void* y, std::int64_t n) {
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  if (from == to) {
    DEZERO_CUDA_CHECK(cudaMemcpyAsync(y, x, static_cast<std::size_t>(n) * 2, cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (from == DType::BFloat16 && to == DType::Float16) {
    DEZERO_LAUNCH(bf16_to_f16_kernel, n, s, static_cast<const __nv_bfloat16*>(x), static_cast<__half*>(y), n);
    return;
  }
  if (from == DType::Float16 && to == DType::BFloat16) {
    DEZERO_LAUNCH(f16_to_bf16_kernel, n, s, static_cast<const __half*>(x), static_cast<__nv_bfloat16*>(y), n);
    return;
  }
  if (to == DType::BFloat16) {
    DEZERO_DISPATCH(from, S, {
      auto kfn = to_bf16_kernel<S>;
      DEZERO_LAUNCH(kfn, n, s, static_cast<const S*>(x), static_cast<__nv_bfloat16*>(y), n);
    })
  } else if (to == DType::Float16) {
    DEZERO_DISPATCH(from, S, {
      auto kfn = to_f16_kernel<S>;
      DEZERO_LAUNCH(kfn, n, s, static_cast<const S*>(x), static_cast<__half*>(y), n);
    })
  } else if (from == DType::BFloat16) {
    DEZERO_DISPATCH(to, D, {
      auto kfn = from_bf16_kernel<D>;
      DEZERO_LAUNCH(kfn, n, s, static_cast<const __nv_bfloat16*>(x), static_cast<D*>(y), n);
    })
  } else {
    DEZERO_DISPATCH(to, D, {
      auto kfn = from_f16_kernel<D>;
      DEZERO_LAUNCH(kfn, n, s, static_cast<const __half*>(x), static_cast<D*>(y), n);
    })
  }
}

void copy_strided_16(int device, const void* src, const Strided& s, void* dst, const Strided& d) {
  cd::ScopedDevice g(device);
  i64 n = d.numel();
  const Strided* v[2] = {&d, &s};
  Views<2> views = make_views<2>(v);
  DEZERO_LAUNCH(copy_strided_16_kernel, n, cd::current_stream(device), static_cast<const std::uint16_t*>(src),
                static_cast<std::uint16_t*>(dst), n, views);
}

}  // namespace gpu

}  // namespace dezero::detail
