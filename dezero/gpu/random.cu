// dezero/gpu/random.cu - the CUDA backend's random numbers: uniform and normal
// samples from cuRAND (Philox), reseeded from dezero's host generator on every call.
//
// Twin of cpu/random.cpp. No kernel of its own: cuRAND fills the buffer, and the
// element-wise launchers (elementwise.cu) convert integer samples and map uniform
// samples from cuRAND's (0, 1] to NumPy's [0, 1).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/generator.hpp"
#include "dezero/gpu/launchers.hpp"
#include "dezero/gpu/runtime.hpp"

namespace dezero::detail {

namespace {

namespace cd = ::dezero::cuda::detail;
using i64 = std::int64_t;

// cuRAND (Philox) reseeded on every call with 64 bits drawn from the caller's host
// generator (dezero::random's or a random::Generator's), so seeding it makes GPU
// samples reproducible as well.
void random_fill(int device, Generator& host, bool normal, DType dt, void* dst, i64 n) {
  if (n <= 0) return;
  cd::ScopedDevice g(device);
  cudaStream_t s = cd::current_stream(device);
  if (is_integer(dt)) {  // as the CPU backend: samples converted to the integer type
    cd::DeviceBuffer tmp(device, static_cast<std::size_t>(n) * sizeof(double), s);
    random_fill(device, host, normal, float64, tmp.get(), n);
    gpu::cast(device, float64, tmp.get(), dt, dst, n);
    return;
  }
  std::uint64_t seed;
  {
    std::lock_guard<std::mutex> lock(host.mutex());
    seed = host.next64();
  }
  std::size_t esize = dtype_size(dt);
  // curandGenerateNormal* needs an even count and an aligned pointer.
  bool staged = normal && (n % 2 != 0 || reinterpret_cast<std::uintptr_t>(dst) % (2 * esize) != 0);
  i64 m = staged ? n + (n % 2) : n;
  std::unique_ptr<cd::DeviceBuffer> tmp;
  if (staged) tmp = std::make_unique<cd::DeviceBuffer>(device, static_cast<std::size_t>(m) * esize, s);
  void* out = staged ? tmp->get() : dst;
  {
    std::lock_guard<std::mutex> lock(cd::library_mutex(device));
    curandGenerator_t gen = cd::curand_generator(device, s);
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
  if (staged)
    DEZERO_CUDA_CHECK(cudaMemcpyAsync(dst, out, static_cast<std::size_t>(n) * esize, cudaMemcpyDeviceToDevice, s));
  if (!normal) {
    // cuRAND gives (0, 1], NumPy [0, 1): 1 - x, then at most the largest value below 1, since
    // 1 - x rounds to 1 for x under half an ulp of 1 (cuRAND's float32 draws go down to 2^-32)
    gpu::unary(device, UnaryOp::RSubScalar, dt, dst, dst, n, 1.0);
    double below_one = dt == float32 ? double(std::nextafter(1.0f, 0.0f)) : std::nextafter(1.0, 0.0);
    gpu::unary(device, UnaryOp::MinScalar, dt, dst, dst, n, below_one);
  }
}

}  // namespace

namespace gpu {

void random_uniform(int device, Generator& g, DType dt, void* dst, std::int64_t n) {
  random_fill(device, g, false, dt, dst, n);
}
void random_normal(int device, Generator& g, DType dt, void* dst, std::int64_t n) {
  random_fill(device, g, true, dt, dst, n);
}

}  // namespace gpu

}  // namespace dezero::detail
