// dezero/backend/ops.hpp - the element-wise math, written once for host and device.
//
// Every functor here is __host__ __device__ under nvcc, so the CPU backend (cpu/)
// and the CUDA backend (gpu/*.cu) compute exactly the same expressions: the CPU
// tests also check the GPU's arithmetic.
#pragma once

#include <cmath>
#include <cstdint>

#include "dezero/backend/backend.hpp"
#include "dezero/backend/isa_namespace.hpp"

#if defined(__CUDACC__)
#define DEZERO_HD __host__ __device__ __forceinline__
#else
#define DEZERO_HD inline
#endif

namespace dezero::kernels {
DEZERO_ISA_BEGIN  // one copy per instruction-set level in the host kernels (isa_namespace.hpp)

// Precision-matched math: float uses the f-suffixed C functions, double the plain ones.
DEZERO_HD float m_exp(float x) { return ::expf(x); }
DEZERO_HD double m_exp(double x) { return ::exp(x); }
DEZERO_HD float m_log(float x) { return ::logf(x); }
DEZERO_HD double m_log(double x) { return ::log(x); }
DEZERO_HD float m_sin(float x) { return ::sinf(x); }
DEZERO_HD double m_sin(double x) { return ::sin(x); }
DEZERO_HD float m_cos(float x) { return ::cosf(x); }
DEZERO_HD double m_cos(double x) { return ::cos(x); }
DEZERO_HD float m_tanh(float x) { return ::tanhf(x); }
DEZERO_HD double m_tanh(double x) { return ::tanh(x); }
DEZERO_HD float m_sqrt(float x) { return ::sqrtf(x); }
DEZERO_HD double m_sqrt(double x) { return ::sqrt(x); }
DEZERO_HD float m_erf(float x) { return ::erff(x); }
DEZERO_HD double m_erf(double x) { return ::erf(x); }
DEZERO_HD float m_pow(float x, float y) { return ::powf(x, y); }
DEZERO_HD double m_pow(double x, double y) { return ::pow(x, y); }
// Integers go through double and back.
DEZERO_HD std::int32_t m_exp(std::int32_t x) { return static_cast<std::int32_t>(::exp(static_cast<double>(x))); }
DEZERO_HD std::int64_t m_exp(std::int64_t x) { return static_cast<std::int64_t>(::exp(static_cast<double>(x))); }
DEZERO_HD std::int32_t m_log(std::int32_t x) { return static_cast<std::int32_t>(::log(static_cast<double>(x))); }
DEZERO_HD std::int64_t m_log(std::int64_t x) { return static_cast<std::int64_t>(::log(static_cast<double>(x))); }
DEZERO_HD std::int32_t m_sin(std::int32_t x) { return static_cast<std::int32_t>(::sin(static_cast<double>(x))); }
DEZERO_HD std::int64_t m_sin(std::int64_t x) { return static_cast<std::int64_t>(::sin(static_cast<double>(x))); }
DEZERO_HD std::int32_t m_cos(std::int32_t x) { return static_cast<std::int32_t>(::cos(static_cast<double>(x))); }
DEZERO_HD std::int64_t m_cos(std::int64_t x) { return static_cast<std::int64_t>(::cos(static_cast<double>(x))); }
DEZERO_HD std::int32_t m_tanh(std::int32_t x) { return static_cast<std::int32_t>(::tanh(static_cast<double>(x))); }
DEZERO_HD std::int64_t m_tanh(std::int64_t x) { return static_cast<std::int64_t>(::tanh(static_cast<double>(x))); }
DEZERO_HD std::int32_t m_sqrt(std::int32_t x) { return static_cast<std::int32_t>(::sqrt(static_cast<double>(x))); }
DEZERO_HD std::int64_t m_sqrt(std::int64_t x) { return static_cast<std::int64_t>(::sqrt(static_cast<double>(x))); }
DEZERO_HD std::int32_t m_erf(std::int32_t x) { return static_cast<std::int32_t>(::erf(static_cast<double>(x))); }
DEZERO_HD std::int64_t m_erf(std::int64_t x) { return static_cast<std::int64_t>(::erf(static_cast<double>(x))); }
DEZERO_HD std::int32_t m_pow(std::int32_t x, std::int32_t y) {
  return static_cast<std::int32_t>(::pow(static_cast<double>(x), static_cast<double>(y)));
}
DEZERO_HD std::int64_t m_pow(std::int64_t x, std::int64_t y) {
  return static_cast<std::int64_t>(::pow(static_cast<double>(x), static_cast<double>(y)));
}

// y = f(x; alpha) for every UnaryOp.
template <class T>
DEZERO_HD T unary_apply(detail::UnaryOp op, T x, T a) {
  using detail::UnaryOp;
  switch (op) {
    case UnaryOp::Neg: return -x;
    case UnaryOp::Exp: return m_exp(x);
    case UnaryOp::Log: return m_log(x);
    case UnaryOp::Sin: return m_sin(x);
    case UnaryOp::Cos: return m_cos(x);
    case UnaryOp::Tanh: return m_tanh(x);
    case UnaryOp::Sqrt: return m_sqrt(x);
    case UnaryOp::Abs: return x < T(0) ? -x : x;
    case UnaryOp::Sign: return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    case UnaryOp::Square: return x * x;
    case UnaryOp::Reciprocal: return T(1) / x;
    case UnaryOp::Sigmoid: return m_tanh(x * T(0.5)) * T(0.5) + T(0.5);
    case UnaryOp::Relu: return x > T(0) ? x : T(0);
    case UnaryOp::PowScalar: return m_pow(x, a);
    case UnaryOp::AddScalar: return x + a;
    case UnaryOp::MulScalar: return x * a;
    case UnaryOp::RSubScalar: return a - x;
    case UnaryOp::RDivScalar: return a / x;
    case UnaryOp::DivScalar: return x / a;
    case UnaryOp::MaxScalar: return x > a ? x : a;
    case UnaryOp::MinScalar: return x < a ? x : a;
    case UnaryOp::GtScalar: return x > a ? T(1) : T(0);
    case UnaryOp::GeScalar: return x >= a ? T(1) : T(0);
    case UnaryOp::LtScalar: return x < a ? T(1) : T(0);
    case UnaryOp::LeScalar: return x <= a ? T(1) : T(0);
    case UnaryOp::LeakyRelu: return x > T(0) ? x : a * x;
    case UnaryOp::LeakyMask: return x > T(0) ? T(1) : a;
    case UnaryOp::Erf: return m_erf(x);
  }
  return x;
}

template <class T>
DEZERO_HD T binary_apply(detail::BinaryOp op, T a, T b) {
  using detail::BinaryOp;
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Pow: return m_pow(a, b);
    case BinaryOp::Maximum: return a > b ? a : b;
    case BinaryOp::Minimum: return a < b ? a : b;
    case BinaryOp::Eq: return a == b ? T(1) : T(0);
    case BinaryOp::Ne: return a != b ? T(1) : T(0);
    case BinaryOp::Gt: return a > b ? T(1) : T(0);
    case BinaryOp::Ge: return a >= b ? T(1) : T(0);
    case BinaryOp::Lt: return a < b ? T(1) : T(0);
    case BinaryOp::Le: return a <= b ? T(1) : T(0);
    case BinaryOp::SigmoidGrad: return a * b * (T(1) - b);  // gy * y * (1 - y), in that order
    case BinaryOp::ReluGrad: return a * (b > T(0) ? T(1) : T(0));  // gy * (x > 0): NaN and -0 as the product gives
    case BinaryOp::SquaredDiff: {  // d * d with d = a - b: the bits of square(a - b)
      const T d = a - b;
      return d * d;
    }
  }
  return a;
}

// Compile-time op functors for the hot loops (the switch above is resolved once
// per call, outside the loop, by instantiating these).
template <detail::UnaryOp OP>
struct Unary {
  template <class T>
  DEZERO_HD T operator()(T x, T a) const { return unary_apply<T>(OP, x, a); }
};
template <detail::BinaryOp OP>
struct Binary {
  template <class T>
  DEZERO_HD T operator()(T a, T b) const { return binary_apply<T>(OP, a, b); }
};

// One optimizer step for one element (DeZero's update rules).
//   SGD:        p -= lr g
//   Momentum:   v = momentum v - lr g; p += v               (s1 = v)
//   AdaGrad:    h += g^2; p -= lr g / (::sqrt(h) + eps)      (s1 = h)
//   AdaDelta:   msg = rho msg + (1-rho) g^2; dx = sqrt((msdx+eps)/(msg+eps)) g;
//               msdx = rho msdx + (1-rho) dx^2; p -= dx      (s1 = msg, s2 = msdx)
//   Adam:       m += (1-b1)(g-m); v += (1-b2)(g^2-v); p -= lr m / (::sqrt(v) + eps)
//               (lr already bias-corrected by the caller)  (s1 = m, s2 = v)
template <class T>
DEZERO_HD void update_apply(detail::UpdateRule rule, T& p, T g, T* s1, T* s2, const detail::UpdateArgs& u) {
  using detail::UpdateRule;
  switch (rule) {
    case UpdateRule::SGD: p -= T(u.lr) * g; break;
    case UpdateRule::MomentumSGD: {
      T v = T(u.momentum) * *s1 - T(u.lr) * g;
      *s1 = v;
      p += v;
      break;
    }
    case UpdateRule::AdaGrad: {
      T h = *s1 + g * g;
      *s1 = h;
      p -= T(u.lr) * g / (m_sqrt(h) + T(u.eps));
      break;
    }
    case UpdateRule::AdaDelta: {
      T rho = T(u.rho), eps = T(u.eps);
      T msg = rho * *s1 + (T(1) - rho) * g * g;
      *s1 = msg;
      T dx = m_sqrt((*s2 + eps) / (msg + eps)) * g;
      *s2 = rho * *s2 + (T(1) - rho) * dx * dx;
      p -= dx;
      break;
    }
    case UpdateRule::Adam: {
      T m = *s1 + (T(1) - T(u.beta1)) * (g - *s1);
      T v = *s2 + (T(1) - T(u.beta2)) * (g * g - *s2);
      *s1 = m;
      *s2 = v;
      p -= T(u.lr) * m / (m_sqrt(v) + T(u.eps));
      break;
    }
  }
}

DEZERO_ISA_END
}  // namespace dezero::kernels
