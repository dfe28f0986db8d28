// dezero/cpu/elementwise.cpp - the host backend's element-wise primitives: cast, unary,
// binary (with broadcasting), where and copy_strided. Each element's math is the
// shared functor of backend/ops.hpp, the same as on the GPU; here are only the loops
// around it: contiguous and broadcast fast paths, for_each_row (loops.hpp) for the
// general strided case, and Eigen's SIMD exp/log/tanh for float32's unary ops.
#include "dezero/cpu/eigen.hpp"  // first: Eigen renamed per instruction-set level

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "dezero/backend/dispatch.hpp"
#include "dezero/backend/ops.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

// --- unary ---------------------------------------------------------------------------------
// flatten: the element's unary_apply (backend/ops.hpp) is a switch over every op that
// folds to one case only once inlined here; GCC's unit-growth limit would otherwise
// leave some of the 27 x 4 loops calling it out of line for every element.
template <class T, class F>
void unary_loop(const T* x, T* y, std::int64_t n, T a, F f) {
  par_for(n, n, [&](std::int64_t i) __attribute__((flatten)) { y[i] = f(x[i], a); });
}

// float32 exp / log / tanh / sigmoid through Eigen's SIMD versions (1-3 ulp from libm's):
// a scalar tanhf call per element is a large part of a small network's step
// (bench/w3_overhead.cpp). float64 keeps libm, so the book's float64 values stay
// exactly NumPy's.
// The elements past the last whole 16 go through a 16-float buffer as one packet: Eigen
// would compute them with its scalar function, one out-of-line call per element (for
// W3's 1,000-element sigmoid, 8 calls, about 20 ns of its 355).
bool unary_simd(UnaryOp op, const float* x, float* y, std::int64_t n) {
  constexpr std::int64_t kChunk = 4096, kLanes = 16;
  auto run = [&](auto f) {
    std::int64_t chunks = (n + kChunk - 1) / kChunk;
    par_for(2 * n, chunks, [&](std::int64_t c) {  // twice an addition's work (loops.hpp)
      const std::int64_t lo = c * kChunk, len = std::min(kChunk, n - lo), body = len / kLanes * kLanes;
      if (body) {
        Eigen::Map<const Eigen::ArrayXf> xs(x + lo, body);
        Eigen::Map<Eigen::ArrayXf> ys(y + lo, body);
        f(xs, ys);
      }
      if (const std::int64_t tail = len - body) {
        alignas(64) float buf[kLanes] = {};
        std::copy(x + lo + body, x + lo + len, buf);
        Eigen::Map<Eigen::Array<float, kLanes, 1>, Eigen::Aligned64> bs(buf);
        f(bs, bs);
        std::copy(buf, buf + tail, y + lo + body);
      }
    });
  };
  switch (op) {
    case UnaryOp::Exp: run([](const auto& xs, auto& ys) { ys = xs.exp(); }); return true;
    case UnaryOp::Log: run([](const auto& xs, auto& ys) { ys = xs.log(); }); return true;
    case UnaryOp::Tanh: run([](const auto& xs, auto& ys) { ys = xs.tanh(); }); return true;
    case UnaryOp::Sigmoid:  // DeZero's form: 0.5 tanh(0.5 x) + 0.5
      run([](const auto& xs, auto& ys) { ys = (xs * 0.5f).tanh() * 0.5f + 0.5f; });
      return true;
    default: return false;
  }
}

template <class T>
void unary_typed(UnaryOp op, const T* x, T* y, std::int64_t n, T a) {
  if constexpr (std::is_same_v<T, float>) {
    if (n >= 16 && unary_simd(op, x, y, n)) return;
  }
  switch (op) {
#define DEZERO_CASE(OP) case UnaryOp::OP: unary_loop(x, y, n, a, kernels::Unary<UnaryOp::OP>{}); break;
    DEZERO_CASE(Neg) DEZERO_CASE(Exp) DEZERO_CASE(Log) DEZERO_CASE(Sin) DEZERO_CASE(Cos) DEZERO_CASE(Tanh)
    DEZERO_CASE(Sqrt) DEZERO_CASE(Abs) DEZERO_CASE(Sign) DEZERO_CASE(Square) DEZERO_CASE(Reciprocal)
    DEZERO_CASE(Sigmoid) DEZERO_CASE(Relu) DEZERO_CASE(PowScalar) DEZERO_CASE(AddScalar) DEZERO_CASE(MulScalar)
    DEZERO_CASE(RSubScalar) DEZERO_CASE(RDivScalar) DEZERO_CASE(DivScalar) DEZERO_CASE(MaxScalar)
    DEZERO_CASE(MinScalar) DEZERO_CASE(GtScalar) DEZERO_CASE(GeScalar) DEZERO_CASE(LtScalar) DEZERO_CASE(LeScalar)
    DEZERO_CASE(LeakyRelu) DEZERO_CASE(LeakyMask) DEZERO_CASE(Erf)
#undef DEZERO_CASE
  }
}

// --- binary: y (contiguous, so's shape) = f(a viewed by sa, b viewed by sb) -----------------
template <class T, class F>
void binary_loop(const T* a, const Strided& sa, const T* b, const Strided& sb, T* y, const Strided& so, F f) {
  std::int64_t n = so.numel();
  int nd = so.ndim;
  bool ca = nd == 1 && sa.strides[0] == 1, cb = nd == 1 && sb.strides[0] == 1;
  bool za = nd == 1 && sa.strides[0] == 0, zb = nd == 1 && sb.strides[0] == 0;
  if (nd <= 1 && ca && cb) {
    par_for(n, n, [&](std::int64_t i) { y[i] = f(a[i], b[i]); });
    return;
  }
  if (nd <= 1 && ca && zb) {
    T bv = b[0];
    par_for(n, n, [&](std::int64_t i) { y[i] = f(a[i], bv); });
    return;
  }
  if (nd <= 1 && za && cb) {
    T av = a[0];
    par_for(n, n, [&](std::int64_t i) { y[i] = f(av, b[i]); });
    return;
  }
  const Strided* v[3] = {&so, &sa, &sb};
  for_each_row<3>(v, [&](const std::int64_t* off, std::int64_t len, const std::int64_t* st) {
    T* yy = y + off[0];
    const T* aa = a + off[1];
    const T* bb = b + off[2];
    std::int64_t s1 = st[1], s2 = st[2];
    if (s1 == 1 && s2 == 1) {
      for (std::int64_t i = 0; i < len; ++i) yy[i] = f(aa[i], bb[i]);
    } else if (s1 == 1 && s2 == 0) {
      T bv = bb[0];
      for (std::int64_t i = 0; i < len; ++i) yy[i] = f(aa[i], bv);
    } else if (s1 == 0 && s2 == 1) {
      T av = aa[0];
      for (std::int64_t i = 0; i < len; ++i) yy[i] = f(av, bb[i]);
    } else {
      for (std::int64_t i = 0; i < len; ++i) yy[i] = f(aa[i * s1], bb[i * s2]);
    }
  });
}

template <class T>
void binary_typed(BinaryOp op, const T* a, const Strided& sa, const T* b, const Strided& sb, T* y,
                  const Strided& so) {
  switch (op) {
#define DEZERO_CASE(OP) case BinaryOp::OP: binary_loop(a, sa, b, sb, y, so, kernels::Binary<BinaryOp::OP>{}); break;
    DEZERO_CASE(Add) DEZERO_CASE(Sub) DEZERO_CASE(Mul) DEZERO_CASE(Div) DEZERO_CASE(Pow) DEZERO_CASE(Maximum)
    DEZERO_CASE(Minimum) DEZERO_CASE(Eq) DEZERO_CASE(Ne) DEZERO_CASE(Gt) DEZERO_CASE(Ge) DEZERO_CASE(Lt)
    DEZERO_CASE(Le) DEZERO_CASE(SigmoidGrad) DEZERO_CASE(ReluGrad) DEZERO_CASE(SquaredDiff)
#undef DEZERO_CASE
  }
}

}  // namespace

// --- the element-wise primitives -------------------------------------------------------------
void cast(DType from, const void* x, DType to, void* y, std::int64_t n) {
  if (is_half(from) || is_half(to)) return cast_half(from, x, to, y, n);  // half.cpp
  DEZERO_DISPATCH(from, S, {
    DEZERO_DISPATCH(to, D, {
      const S* s = static_cast<const S*>(x);
      D* d = static_cast<D*>(y);
      par_for(n, n, [&](std::int64_t i) { d[i] = static_cast<D>(s[i]); });
    })
  })
}

void unary(UnaryOp op, DType dt, const void* x, void* y, std::int64_t n, double alpha) {
  DEZERO_DISPATCH(dt, T, unary_typed<T>(op, static_cast<const T*>(x), static_cast<T*>(y), n, static_cast<T>(alpha)))
}

void binary(BinaryOp op, DType dt, const void* a, const Strided& sa, const void* b, const Strided& sb, void* y,
            const Strided& out) {
  DEZERO_DISPATCH(dt, T,
                  binary_typed<T>(op, static_cast<const T*>(a), sa, static_cast<const T*>(b), sb, static_cast<T*>(y),
                                  out))
}

void where(DType dt, const void* cond, const Strided& sc, const void* a, const Strided& sa, const void* b,
           const Strided& sb, void* y, const Strided& out) {
  DEZERO_DISPATCH(dt, T, {
    const T* c = static_cast<const T*>(cond);
    const T* aa = static_cast<const T*>(a);
    const T* bb = static_cast<const T*>(b);
    T* yy = static_cast<T*>(y);
    const Strided* v[4] = {&out, &sc, &sa, &sb};
    for_each_row<4>(v, [&](const std::int64_t* off, std::int64_t len, const std::int64_t* st) {
      for (std::int64_t i = 0; i < len; ++i)
        yy[off[0] + i * st[0]] = c[off[1] + i * st[1]] != T(0) ? aa[off[2] + i * st[2]] : bb[off[3] + i * st[3]];
    });
  })
}

void copy_strided(DType dt, const void* src, const Strided& s, void* dst, const Strided& d, bool accumulate) {
  // 16-bit floats are moved as their bits; tensor/ accumulates their gradients in float32
  if (is_half(dt) && accumulate) no_half_kernel("copy_strided (accumulate)", dt);
  DEZERO_DISPATCH_BITS(dt, T, {
    const T* x = static_cast<const T*>(src);
    T* y = static_cast<T*>(dst);
    const Strided* v[2] = {&d, &s};
    for_each_row<2>(v, [&](const std::int64_t* off, std::int64_t len, const std::int64_t* st) {
      T* yy = y + off[0];
      const T* xx = x + off[1];
      if (accumulate) {
        for (std::int64_t i = 0; i < len; ++i) yy[i * st[0]] += xx[i * st[1]];
      } else if (st[0] == 1 && st[1] == 1) {
        std::memcpy(yy, xx, static_cast<std::size_t>(len) * sizeof(T));
      } else if (st[0] == 1 && st[1] == 0) {
        T v0 = xx[0];
        for (std::int64_t i = 0; i < len; ++i) yy[i] = v0;
      } else {
        for (std::int64_t i = 0; i < len; ++i) yy[i * st[0]] = xx[i * st[1]];
      }
    });
  })
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
