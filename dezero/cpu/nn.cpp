// dezero/cpu/nn.cpp - the host backend's fused neural-network kernels, float32 and
// float64 only: softmax / log_softmax over the middle axis of (outer, c, inner),
// softmax_cross_entropy and its gradient on (n, c) logits with int64 labels (the
// book's SoftmaxCrossEntropy in one pass, from a max-shifted log-sum-exp per row),
// mean_squared_error and its gradient in one pass each, and the optimizers' in-place
// updates, one parameter at a time or many in one pass (the rules themselves are
// backend/ops.hpp's update_apply, shared with the GPU).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "dezero/backend/ops.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/loops.hpp"

namespace dezero::detail::cpu {
DEZERO_ISA_BEGIN

namespace {

// --- softmax: one (outer, inner) column of c elements at a time ------------------------------
template <class T>
void softmax_typed(const T* x, T* y, std::int64_t outer, std::int64_t c, std::int64_t inner, bool log_) {
  auto column = [&](std::int64_t o, std::int64_t j) {
    const T* p = x + o * c * inner + j;
    T* q = y + o * c * inner + j;
    T mx = p[0];
    for (std::int64_t i = 1; i < c; ++i) mx = p[i * inner] > mx ? p[i * inner] : mx;
    T s = 0;
    for (std::int64_t i = 0; i < c; ++i) {
      T e = kernels::m_exp(p[i * inner] - mx);
      q[i * inner] = e;
      s += e;
    }
    if (log_) {
      T ls = kernels::m_log(s) + mx;
      for (std::int64_t i = 0; i < c; ++i) q[i * inner] = p[i * inner] - ls;
    } else {
      T inv = T(1) / s;
      for (std::int64_t i = 0; i < c; ++i) q[i * inner] *= inv;
    }
  };
  std::int64_t cols = outer * inner;
  par_for(cols * c, cols, [&](std::int64_t t) { column(t / inner, t % inner); });
}

// --- softmax cross entropy: one row of c logits per sample ---------------------------------
template <class T>
T row_logsumexp(const T* p, std::int64_t c) {
  T mx = p[0];
  for (std::int64_t i = 1; i < c; ++i) mx = p[i] > mx ? p[i] : mx;
  T s = 0;
  for (std::int64_t i = 0; i < c; ++i) s += kernels::m_exp(p[i] - mx);
  return kernels::m_log(s) + mx;
}

template <class T>
void sce_typed(const T* x, const std::int64_t* t, T* loss, std::int64_t n, std::int64_t c) {
  double acc = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const T* p = x + i * c;
    acc += static_cast<double>(row_logsumexp(p, c) - p[t[i]]);
  }
  *loss = static_cast<T>(acc / static_cast<double>(n));
}

template <class T>
void sce_grad_typed(const T* x, const std::int64_t* t, T gy, T* gx, std::int64_t n, std::int64_t c) {
  T scale = gy / static_cast<T>(n);
  auto row = [&](std::int64_t i) {
    const T* p = x + i * c;
    T* q = gx + i * c;
    T ls = row_logsumexp(p, c);
    for (std::int64_t j = 0; j < c; ++j) q[j] = kernels::m_exp(p[j] - ls) * scale;
    q[t[i]] -= scale;
  };
  par_for(n * c, n, row);
}

}  // namespace

// --- the fused primitives --------------------------------------------------------------------
void softmax(DType dt, const void* x, void* y, std::int64_t outer, std::int64_t c, std::int64_t inner, bool log_) {
  if (dt == float32) softmax_typed(static_cast<const float*>(x), static_cast<float*>(y), outer, c, inner, log_);
  else softmax_typed(static_cast<const double*>(x), static_cast<double*>(y), outer, c, inner, log_);
}

void softmax_cross_entropy(DType dt, const void* x, const std::int64_t* t, void* loss, std::int64_t n, std::int64_t c) {
  if (dt == float32) sce_typed(static_cast<const float*>(x), t, static_cast<float*>(loss), n, c);
  else sce_typed(static_cast<const double*>(x), t, static_cast<double*>(loss), n, c);
}

void softmax_cross_entropy_grad(DType dt, const void* x, const std::int64_t* t, const void* gy, void* gx,
                                std::int64_t n, std::int64_t c) {
  if (dt == float32)
    sce_grad_typed(static_cast<const float*>(x), t, *static_cast<const float*>(gy), static_cast<float*>(gx), n, c);
  else
    sce_grad_typed(static_cast<const double*>(x), t, *static_cast<const double*>(gy), static_cast<double*>(gx), n, c);
}

// --- mean squared error (step 42) ---------------------------------------------------------------
// The loss as one pass over both inputs instead of a difference, a square, a sum and a
// division (four kernels and three temporaries on W3's (100, 1) outputs); the gradient
// as (gy * d) * scale per element, the two products of the unfused expression in their
// order, so that the Variable path (create_graph) gives the same bits.
namespace {
template <class T>
void mse_forward_typed(const T* a, const T* b, T* loss, std::int64_t n, T divisor) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t i = 0; i < n; ++i) {
    const T d = a[i] - b[i];
    acc += d * d;
  }
  *loss = acc / divisor;
}
template <class T>
void mse_backward_typed(const T* a, const T* b, T gy, T* gx, std::int64_t n, T scale) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T g = gy * (a[i] - b[i]);
    gx[i] = g * scale;
  }
}
}  // namespace

bool mse_forward(DType dt, const void* x0, const void* x1, void* loss, std::int64_t n, double divisor) {
  if (n >= kReduceParallelMin) return false;
  if (dt == float32)
    mse_forward_typed(static_cast<const float*>(x0), static_cast<const float*>(x1), static_cast<float*>(loss), n,
                      static_cast<float>(divisor));
  else if (dt == float64)
    mse_forward_typed(static_cast<const double*>(x0), static_cast<const double*>(x1), static_cast<double*>(loss), n,
                      divisor);
  else
    return false;
  return true;
}

bool mse_backward(DType dt, const void* x0, const void* x1, const void* gy, void* gx, std::int64_t n, double scale) {
  if (n >= kParallelMin) return false;
  if (dt == float32)
    mse_backward_typed(static_cast<const float*>(x0), static_cast<const float*>(x1), *static_cast<const float*>(gy),
                       static_cast<float*>(gx), n, static_cast<float>(scale));
  else if (dt == float64)
    mse_backward_typed(static_cast<const double*>(x0), static_cast<const double*>(x1), *static_cast<const double*>(gy),
                       static_cast<double*>(gx), n, scale);
  else
    return false;
  return true;
}

// --- optimizer updates -------------------------------------------------------------------------
namespace {
// f(std::integral_constant<UpdateRule, R>{}) for the runtime rule: the rule is a
// compile-time constant inside each loop, so the switch in update_apply folds away and
// the loop vectorises (with the switch inside, SGD over the MNIST MLP's 1.8M weights
// would be a noticeable part of an epoch of bench/w1_mlp_epoch.cpp).
template <class F>
void with_rule(UpdateRule rule, F&& f) {
  switch (rule) {
    case UpdateRule::SGD: f(std::integral_constant<UpdateRule, UpdateRule::SGD>{}); break;
    case UpdateRule::MomentumSGD: f(std::integral_constant<UpdateRule, UpdateRule::MomentumSGD>{}); break;
    case UpdateRule::AdaGrad: f(std::integral_constant<UpdateRule, UpdateRule::AdaGrad>{}); break;
    case UpdateRule::AdaDelta: f(std::integral_constant<UpdateRule, UpdateRule::AdaDelta>{}); break;
    case UpdateRule::Adam: f(std::integral_constant<UpdateRule, UpdateRule::Adam>{}); break;
  }
}

// Elements [lo, hi) of one chunk: the loop of optimizer_update, without its threading.
//
// The loop vectorises (16 float32 or 8 float64 lanes with AVX-512): the rule is a
// compile-time constant, the state pointers are used only by the rules that have them
// (no select per element), and this file is compiled with -fno-math-errno
// (dezero/CMakeLists.txt), without which GCC guards every sqrt with a call to sqrtf for
// errno's sake and keeps the loop scalar (issue 36: Adam at 2 ns per element). Each lane
// computes update_apply's expression with its operations in the same order and the same
// fused multiply-adds as the scalar loop did, and vsqrtps / vdivps round as sqrtss /
// divss do, so the bits are those of the scalar loop (tests/test_optimizers.cpp: a lane,
// the scalar tail and a thread boundary agree; bench/README.md: the previous library's
// bits, compared byte for byte).
template <UpdateRule R, class T>
void update_span(const UpdateChunk& c, std::int64_t lo, std::int64_t hi, const UpdateArgs& args) {
  T* p = static_cast<T*>(c.param);
  const T* g = static_cast<const T*>(c.grad);
  T* a = static_cast<T*>(c.s1);
  T* b = static_cast<T*>(c.s2);
  const UpdateArgs u = args;  // a local copy: no store in the loop may alias it
  if (u.decay != 0) {
    // WeightDecay fused: the hook's own kernel (axpy_multi_, SGD's rule with lr = -decay)
    // on the element, its result written back to the gradient as the hook writes it, then
    // the rule on that value: one pass over memory instead of two, the same bits.
    T* gw = const_cast<T*>(g);  // the caller hands a writable gradient when decay != 0
    UpdateArgs d;
    d.lr = -u.decay;
    for (std::int64_t i = lo; i < hi; ++i) {
      T gi = gw[i];
      kernels::update_apply<T>(UpdateRule::SGD, gi, p[i], nullptr, nullptr, d);
      gw[i] = gi;
      kernels::update_apply<T>(R, p[i], gi, R == UpdateRule::SGD ? nullptr : a + i,
                               R == UpdateRule::AdaDelta || R == UpdateRule::Adam ? b + i : nullptr, u);
    }
    return;
  }
  if constexpr (R == UpdateRule::SGD) {
    for (std::int64_t i = lo; i < hi; ++i) kernels::update_apply<T>(R, p[i], g[i], nullptr, nullptr, u);
  } else if constexpr (R == UpdateRule::MomentumSGD || R == UpdateRule::AdaGrad) {
    for (std::int64_t i = lo; i < hi; ++i) kernels::update_apply<T>(R, p[i], g[i], a + i, nullptr, u);
  } else {
    for (std::int64_t i = lo; i < hi; ++i) kernels::update_apply<T>(R, p[i], g[i], a + i, b + i, u);
  }
}

// Every chunk, one after another: below kParallelMin elements in all (a small network's
// step: W3's four parameters of 1-20 elements) on the calling thread, without touching
// the pool; above it one loop of the pool whose pieces are consecutive ranges of the
// elements of the chunks laid end to end.
//
// SGD and MomentumSGD are a multiply-add or two per element: on memory a cache holds, threads
// pay only from about 2^18 elements in all (200 parameters of 64-1,024 elements, 109,568 in
// all, took 18.9 us on one thread and 24 us on two: bench/optimizer_update.cpp), so their
// threshold is 8 kParallelMin; the other rules take a square root and a division per element.
template <UpdateRule R>
constexpr std::int64_t update_parallel_factor() {
  return R == UpdateRule::SGD || R == UpdateRule::MomentumSGD ? 8 : 1;
}

template <UpdateRule R, class T>
void update_chunks(const UpdateChunk* chunks, std::size_t n, const UpdateArgs& args) {
  std::int64_t total = 0;
  for (std::size_t k = 0; k < n; ++k) total += chunks[k].numel;
  if (total < kParallelMin * update_parallel_factor<R>() || in_parallel()) {
    for (std::size_t k = 0; k < n; ++k) update_span<R, T>(chunks[k], 0, chunks[k].numel, args);
    return;
  }
  parallel_ranges(total, max_threads(), [&](std::int64_t lo, std::int64_t hi) {
    std::int64_t off = 0;  // where chunk k starts in the chunks laid end to end
    for (std::size_t k = 0; k < n && off < hi; ++k) {
      const std::int64_t b = std::max(lo, off), e = std::min(hi, off + chunks[k].numel);
      if (b < e) update_span<R, T>(chunks[k], b - off, e - off, args);
      off += chunks[k].numel;
    }
  });
}
}  // namespace

void optimizer_update(UpdateRule rule, DType dt, void* param, const void* grad, void* s1, void* s2, std::int64_t n,
                      const UpdateArgs& args) {
  auto run = [&](auto* p, const auto* g, auto* a, auto* b) {
    with_rule(rule, [&](auto rule_c) {
      constexpr UpdateRule R = decltype(rule_c)::value;
      par_for(n, n, [&](std::int64_t i) {
        kernels::update_apply(R, p[i], g[i], a ? a + i : nullptr, b ? b + i : nullptr, args);
      });
    });
  };
  if (dt == float32)
    run(static_cast<float*>(param), static_cast<const float*>(grad), static_cast<float*>(s1), static_cast<float*>(s2));
  else
    run(static_cast<double*>(param), static_cast<const double*>(grad), static_cast<double*>(s1),
        static_cast<double*>(s2));
}

void optimizer_update_multi(UpdateRule rule, DType dt, const UpdateChunk* chunks, std::size_t n,
                            const UpdateArgs& args) {
  with_rule(rule, [&](auto rule_c) {
    constexpr UpdateRule R = decltype(rule_c)::value;
    if (dt == float32) update_chunks<R, float>(chunks, n, args);
    else update_chunks<R, double>(chunks, n, args);
  });
}

DEZERO_ISA_END
}  // namespace dezero::detail::cpu
