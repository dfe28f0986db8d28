// cpu/cpu_backend.cpp - the host backend: Eigen for GEMM, plain loops that the
// compiler vectorises for everything else, OpenMP threads for large arrays only
// (small arrays stay on the calling thread: overhead is the product for small nets).
//
// Twin of cuda/cuda_backend.cu: the same primitives in the same order, the same
// math through kernels/ops.hpp.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#include <omp.h>
#include <type_traits>

#include "dezero/backend/backend.hpp"
#include "dezero/cpu/gemm.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"
#include "dezero/backend/ops.hpp"
#include "dezero/backend/generator.hpp"
#include "dezero/backend/dispatch.hpp"
#include "dezero/error.hpp"

namespace dezero::detail {

namespace {

using cpu::for_each_row;
using cpu::kParallelMin;
using cpu::par_for;

class CpuBackend final : public Backend {
 public:
  CpuBackend() { cpu::init_gemm(); }
  Device device() const override { return Device::cpu(); }

  void* allocate(std::size_t nbytes) override { return cpu::allocate(nbytes); }
  void deallocate(void* ptr, std::size_t nbytes) noexcept override { cpu::deallocate(ptr, nbytes); }
  void copy_from_host(void* dst, const void* src, std::size_t n) override { cpu::copy_from_host(dst, src, n); }
  void copy_to_host(void* dst, const void* src, std::size_t n) override { cpu::copy_to_host(dst, src, n); }
  void copy(void* dst, const void* src, std::size_t n) override { cpu::copy(dst, src, n); }
  void fill(DType dt, void* dst, std::int64_t n, double value) override { cpu::fill(dt, dst, n, value); }
  void synchronize() override {}

  void cast(DType from, const void* x, DType to, void* y, std::int64_t n) override { cpu::cast(from, x, to, y, n); }
  void unary(UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha) override {
    cpu::unary(op, dt, x, y, n, alpha);
  }
  void binary(BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y,
              const Strided& out) override {
    cpu::binary(op, dt, a, sa, b, sb, y, out);
  }
  void where(DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
             const Strided& sb, void* y, const Strided& out) override {
    cpu::where(dt, cond, sc, a, sa, b, sb, y, out);
  }
  void copy_strided(DType dt, const void* src, const Strided& s, void* dst, const Strided& d,
                    bool accumulate) override {
    cpu::copy_strided(dt, src, s, dst, d, accumulate);
  }

  void reduce(ReduceOp op, DType dt, const void* x, void* y, std::int64_t outer, std::int64_t r,
              std::int64_t inner) override {
    cpu::reduce(op, dt, x, y, outer, r, inner);
  }
  void arg_reduce(ArgReduceOp op, DType dt, const void* x, std::int64_t* y, std::int64_t outer, std::int64_t r,
                  std::int64_t inner) override {
    cpu::arg_reduce(op, dt, x, y, outer, r, inner);
  }

  bool gemm_bias(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const void* a,
                 std::int64_t lda, const void* b, std::int64_t ldb, const void* bias, void* c,
                 std::int64_t ldc) override {
    return cpu::gemm_bias(dt, ta, tb, m, n, k, a, lda, b, ldb, bias, c, ldc);
  }
  void gemm(DType dt, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a,
            std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b,
            double beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch) override {
    cpu::gemm(dt, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
  }

  void gather(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    cpu::gather(dt, src, off, dst, n);
  }
  void scatter_add(DType dt, const void* src, const std::int64_t* off, void* dst, std::int64_t n) override {
    cpu::scatter_add(dt, src, off, dst, n);
  }
  void gather_rows(DType dt, const void* src, const std::int64_t* idx, void* dst, std::int64_t rows,
                   std::int64_t cols) override {
    cpu::gather_rows(dt, src, idx, dst, rows, cols);
  }

  void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner,
               bool log_) override {
    cpu::softmax(dt, x, y, outer, c, inner, log_);
  }
  void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n,
                             std::int64_t c) override {
    cpu::softmax_cross_entropy(dt, x, t, loss, n, c);
  }
  void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                  std::int64_t n, std::int64_t c) override {
    cpu::softmax_cross_entropy_grad(dt, x, t, gy, gx, n, c);
  }
  void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2,
                        std::int64_t n, const UpdateArgs& args) override {
    cpu::optimizer_update(rule, dt, param, grad, s1, s2, n, args);
  }

  void random_uniform(DType dt, void* dst, std::int64_t n) override {
    auto& g = global_generator();
    std::lock_guard<std::mutex> lock(g.mutex());
    DEZERO_DISPATCH(dt, T, {
      T* p = static_cast<T*>(dst);
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(g.uniform());
    })
  }
  void random_normal(DType dt, void* dst, std::int64_t n) override {
    auto& g = global_generator();
    std::lock_guard<std::mutex> lock(g.mutex());
    DEZERO_DISPATCH(dt, T, {
      T* p = static_cast<T*>(dst);
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(g.gauss());
    })
  }

};

}  // namespace

Backend& cpu_backend() {
  // Never destroyed: tensors in static storage may be freed after main returns.
  static CpuBackend* b = new CpuBackend;
  return *b;
}

}  // namespace dezero::detail
