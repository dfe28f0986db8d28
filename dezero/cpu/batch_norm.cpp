// dezero/cpu/batch_norm.cpp - the host backend's fused batch normalisation (DeZero
// functions.py's BatchNorm, step 52's layer; backend/backend.hpp gives the contract):
// float32 and float64, x viewed as (n, c, hw), i.e. (N, C) with hw = 1 or NCHW with
// hw = H * W, so that 4-d input needs no transpose to (N*H*W, C) and back.
//
// One channel at a time, channels on OpenMP threads: a channel's m = n * hw values are n
// runs of hw contiguous elements, x + (i * c + ch) * hw. Forward (train): one pass for
// the sum, one for the sum of squared deviations (two passes, as DeZero's
// x.mean / ((x - mean)**2).mean, so no cancellation), one writing y = a x + b with
// a = gamma inv_std and b = beta - mean a. Backward: one pass for sum gy and
// sum (x - mean) gy, one writing gx = k1 gy + k2 x + k0. The channel sums are
// accumulated in double for both dtypes; the per-element arithmetic is in T.
// Twin of gpu/batch_norm.cu.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

using i64 = std::int64_t;

// sum over channel ch of f(x[k]) for the channel's n runs of hw elements.
template <class T, class F>
double channel_sum(const T* x, i64 n, i64 c, i64 hw, i64 ch, F&& f) {
  double s = 0;
  for (i64 i = 0; i < n; ++i) {
    const T* p = x + (i * c + ch) * hw;
    double r = 0;
#pragma omp simd reduction(+ : r)
    for (i64 j = 0; j < hw; ++j) r += f(p[j], j);
    s += r;
  }
  return s;
}

template <class T>
void forward_typed(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* inv_std, T* rm, T* rv, i64 n, i64 c,
                   i64 hw, double decay, double eps, bool train) {
  const i64 m = n * hw;
  par_for(n * c * hw, c, [&](i64 ch) {
    T mu, inv;
    if (train) {
      const double md = channel_sum(x, n, c, hw, ch, [](T v, i64) { return static_cast<double>(v); }) /
                        static_cast<double>(m);
      const double var = channel_sum(x, n, c, hw, ch,
                                     [md](T v, i64) {
                                       double d = static_cast<double>(v) - md;
                                       return d * d;
                                     }) /
                         static_cast<double>(m);
      mu = static_cast<T>(md);
      inv = static_cast<T>(1.0 / std::sqrt(var + eps));
      const double adjust = static_cast<double>(m) / std::max(static_cast<double>(m) - 1.0, 1.0);
      rm[ch] = static_cast<T>(static_cast<double>(rm[ch]) * decay + md * (1.0 - decay));
      rv[ch] = static_cast<T>(static_cast<double>(rv[ch]) * decay + var * ((1.0 - decay) * adjust));
    } else {
      mu = rm[ch];
      inv = T(1) / std::sqrt(rv[ch] + static_cast<T>(eps));
    }
    mean[ch] = mu;
    inv_std[ch] = inv;
    const T a = gamma[ch] * inv, b = beta[ch] - mu * a;
    for (i64 i = 0; i < n; ++i) {
      const T* p = x + (i * c + ch) * hw;
      T* q = y + (i * c + ch) * hw;
#pragma omp simd
      for (i64 j = 0; j < hw; ++j) q[j] = p[j] * a + b;
    }
  });
}

template <class T>
void backward_typed(const T* x, const T* gy, const T* gamma, const T* mean, const T* inv_std, T* gx, T* ggamma,
                    T* gbeta, i64 n, i64 c, i64 hw, bool train) {
  const double m = static_cast<double>(n * hw);
  par_for(n * c * hw, c, [&](i64 ch) {
    const double mu = static_cast<double>(mean[ch]), inv = static_cast<double>(inv_std[ch]);
    double sg = 0, sxg = 0;
    for (i64 i = 0; i < n; ++i) {
      const T* p = x + (i * c + ch) * hw;
      const T* g = gy + (i * c + ch) * hw;
      double r1 = 0, r2 = 0;
#pragma omp simd reduction(+ : r1, r2)
      for (i64 j = 0; j < hw; ++j) {
        double gv = static_cast<double>(g[j]);
        r1 += gv;
        r2 += (static_cast<double>(p[j]) - mu) * gv;
      }
      sg += r1;
      sxg += r2;
    }
    const double gg = sxg * inv;  // sum xhat gy
    gbeta[ch] = static_cast<T>(sg);
    ggamma[ch] = static_cast<T>(gg);
    if (!gx) return;
    // train: gx = gamma inv (gy - sg / m - (x - mu) inv gg / m) = k1 gy + k2 x + k0
    const double k1d = static_cast<double>(gamma[ch]) * inv;
    const double k2d = train ? -k1d * inv * gg / m : 0.0;
    const double k0d = train ? -k1d * sg / m - k2d * mu : 0.0;
    const T k1 = static_cast<T>(k1d), k2 = static_cast<T>(k2d), k0 = static_cast<T>(k0d);
    for (i64 i = 0; i < n; ++i) {
      const T* p = x + (i * c + ch) * hw;
      const T* g = gy + (i * c + ch) * hw;
      T* q = gx + (i * c + ch) * hw;
      if (train) {
#pragma omp simd
        for (i64 j = 0; j < hw; ++j) q[j] = k1 * g[j] + k2 * p[j] + k0;
      } else {
#pragma omp simd
        for (i64 j = 0; j < hw; ++j) q[j] = k1 * g[j];
      }
    }
  });
}

}  // namespace

void batch_norm_forward(DType dt, const void* x, const void* gamma, const void* beta, void* y, void* mean,
                        void* inv_std, void* running_mean, void* running_var, std::int64_t n, std::int64_t c,
                        std::int64_t hw, double decay, double eps, bool train) {
  if (dt == float32)
    forward_typed(static_cast<const float*>(x), static_cast<const float*>(gamma), static_cast<const float*>(beta),
                  static_cast<float*>(y), static_cast<float*>(mean), static_cast<float*>(inv_std),
                  static_cast<float*>(running_mean), static_cast<float*>(running_var), n, c, hw, decay, eps, train);
  else
    forward_typed(static_cast<const double*>(x), static_cast<const double*>(gamma), static_cast<const double*>(beta),
                  static_cast<double*>(y), static_cast<double*>(mean), static_cast<double*>(inv_std),
                  static_cast<double*>(running_mean), static_cast<double*>(running_var), n, c, hw, decay, eps,
                  train);
}

void batch_norm_backward(DType dt, const void* x, const void* gy, const void* gamma, const void* mean,
                         const void* inv_std, void* gx, void* ggamma, void* gbeta, std::int64_t n, std::int64_t c,
                         std::int64_t hw, bool train) {
  if (dt == float32)
    backward_typed(static_cast<const float*>(x), static_cast<const float*>(gy), static_cast<const float*>(gamma),
                   static_cast<const float*>(mean), static_cast<const float*>(inv_std), static_cast<float*>(gx),
                   static_cast<float*>(ggamma), static_cast<float*>(gbeta), n, c, hw, train);
  else
    backward_typed(static_cast<const double*>(x), static_cast<const double*>(gy), static_cast<const double*>(gamma),
                   static_cast<const double*>(mean), static_cast<const double*>(inv_std), static_cast<double*>(gx),
                   static_cast<double*>(ggamma), static_cast<double*>(gbeta), n, c, hw, train);
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
