// dezero/cpu/onednn_matmul.cpp - the host's low-precision products for mixed precision
// (issue 31; Chainer's mixed16, PyTorch's CPU autocast): C = op(A) op(B) (+ bias) with
// float32 A, B and C, where A and B are rounded to bfloat16 (or float16) and the products
// are summed in float32. Compiled only with oneDNN (onednn_stub.cpp stands in otherwise,
// and the caller then rounds the operands itself and runs the float32 GEMM: the same values,
// more slowly).
//
//   A (m, k) = op(a):  a is (m, k), or (k, m) when ta, rows lda apart  -- float32 or low
//   B (k, n) = op(b):  b is (k, n), or (n, k) when tb, rows ldb apart  -- float32 or low
//   C (m, n), rows ldc apart: C = A B + bias (n), or C += A B (accumulate) -- float32
//
// A oneDNN reorder rounds each float32 operand to the low-precision type (round to nearest
// even) into a per-thread buffer, and a matmul primitive (brgemm: AMX tiles on CPUs that
// have them, AVX512-BF16 dot products on those that have that) multiplies them with float32
// accumulation into C. An operand that is already low precision (F::linear keeps the copies
// its forward rounded, for its backward) is read where it is. Nothing is kept between calls.
//
// Each (m, n, k, ta, tb, lda, ldb, ldc, bias, accumulate, type, threads, operand types) gets
// its primitives once, in onednn_plan's cache (onednn_engine.hpp), as onednn_conv.cpp's do.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

#include "dezero/cpu/isa.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/onednn_engine.hpp"
#include "dezero/cpu/parallel.hpp"
#include "dezero/onednn.hpp"

namespace dezero::detail::cpu {

namespace {

using i64 = std::int64_t;
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

using Key = OnednnKey<14>;

// The two reorders (float32 -> low precision; none for an operand that is low precision
// already) and the product; ok = false: oneDNN has no primitive for this case here (e.g. no
// float16 matmul on this CPU).
struct Plan {
  bool ok = false;
  bool round_a = false, round_b = false;
  dnnl::reorder ra, rb;
  dnnl::matmul mm;
  memory::desc a_user, b_user, a_low, b_low, c_user, bias_md;
  std::size_t scratch_bytes = 0;
};

std::shared_ptr<const Plan> make_plan(const Key& key) {
  auto plan = std::make_shared<Plan>();
  const i64 m = key.v[0], n = key.v[1], k = key.v[2], ta = key.v[3], tb = key.v[4], lda = key.v[5],
            ldb = key.v[6], ldc = key.v[7], has_bias = key.v[8], accumulate = key.v[9];
  const dt low = key.v[10] == static_cast<i64>(DType::Float16) ? dt::f16 : dt::bf16;
  plan->round_a = key.v[12] == 0;
  plan->round_b = key.v[13] == 0;
  dnnl::engine& eng = *onednn_engine();
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // op(a) as an (m, k) view of the caller's buffer: strides (lda, 1), or (1, lda) transposed.
    plan->a_user = memory::desc({m, k}, plan->round_a ? dt::f32 : low, ta ? memory::dims{1, lda} : memory::dims{lda, 1});
    plan->b_user = memory::desc({k, n}, plan->round_b ? dt::f32 : low, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    // The rounded copies keep the operands' orientation (a transposed one stays transposed,
    // packed densely): a reorder that transposes as it rounds took 3x as long (W1's
    // (1000, 1000) weight, 2 threads: 426 against 136 us), and brgemm reads either.
    // Except a transposed A no larger than B (a weight gradient x^T gy, k the batch):
    // brgemm copies a transposed A into row blocks itself, and rounding it straight into
    // (m, k) rows costs less than that copy (W1's x^T gy, 1000 x 100 x 1000, one thread:
    // 0.77 against 0.84 ms for the rounding and the product).
    const bool a_rows = ta && m <= n;
    plan->a_low = plan->round_a ? memory::desc({m, k}, low, ta && !a_rows ? tag::ba : tag::ab) : plan->a_user;
    plan->b_low = plan->round_b ? memory::desc({k, n}, low, tb ? tag::ba : tag::ab) : plan->b_user;
    plan->c_user = memory::desc({m, n}, dt::f32, memory::dims{ldc, 1});
    plan->bias_md = memory::desc({1, n}, dt::f32, tag::ab);
    if (plan->round_a) plan->ra = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->a_user, eng, plan->a_low, attr));
    if (plan->round_b) plan->rb = dnnl::reorder(dnnl::reorder::primitive_desc(eng, plan->b_user, eng, plan->b_low, attr));
    dnnl::primitive_attr mattr;
    mattr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (accumulate) {
      dnnl::post_ops po;
      po.append_sum(1.0f);
      mattr.set_post_ops(po);
    }
    auto d = has_bias ? dnnl::matmul::desc(plan->a_low, plan->b_low, plan->bias_md, plan->c_user)
                      : dnnl::matmul::desc(plan->a_low, plan->b_low, plan->c_user);
    dnnl::matmul::primitive_desc pd(d, mattr, eng);
    // A reference implementation would be slower than rounding + our float32 SGEMM.
    const char* impl = pd.impl_info_str();
    if (std::strncmp(impl, "ref", 3) == 0) return plan;
    plan->mm = dnnl::matmul(pd);
    plan->scratch_bytes = pd.scratchpad_desc().get_size();
    plan->ok = true;
  } catch (const dnnl::error&) {
    plan->ok = false;
  }
  return plan;
}

std::shared_ptr<const Plan> plan_for(const Key& k) { return onednn_plan<Plan>(k, make_plan); }

// Per-thread stream and buffers: the scratchpad, the rounded A and the rounded B.
struct ThreadState {
  dnnl::stream stream{*onednn_engine()};
  OnednnBuffer buffers[3];
};

ThreadState& thread_state() {
  thread_local ThreadState st;
  return st;
}

}  // namespace

namespace {
// Whether this CPU and oneDNN take a product with these operands at all (the types; the ISA level).
bool lowp_takes(DType compute, DType a_dt, DType b_dt) {
  if (compute != DType::BFloat16 && compute != DType::Float16) return false;
  // Only on the instructions themselves (isa.hpp: AVX512-BF16; AMX for float16's AVX512-FP16): on
  // plain AVX-512 oneDNN would emulate bfloat16, more slowly than gemm.cpp's rounded operands.
  const int level = static_cast<int>(cpu_isa());
  if (level < static_cast<int>(compute == DType::BFloat16 ? IsaLevel::avx512_bf16 : IsaLevel::amx)) return false;
  return (a_dt == DType::Float32 || a_dt == compute) && (b_dt == DType::Float32 || b_dt == compute);
}

// The plan of one product (made once; keyed by the calling thread's OpenMP thread count too).
std::shared_ptr<const Plan> lowp_plan(DType compute, bool ta, bool tb, i64 m, i64 n, i64 k, DType a_dt, i64 lda,
                                      DType b_dt, i64 ldb, bool bias, i64 ldc, bool accumulate) {
  const Key key{{m, n, k, ta, tb, lda, ldb, ldc, bias, accumulate, static_cast<i64>(compute),
                 static_cast<i64>(omp_get_max_threads()), a_dt == compute, b_dt == compute}};
  return plan_for(key);
}

// Runs a plan that is ok; false when oneDNN fails (nothing was written to C: the product did not run).
bool lowp_run(const Plan& plan, const void* a, const void* b, const float* bias, float* c) {
  try {
    dnnl::engine& eng = *onednn_engine();
    ThreadState& ts = thread_state();
    memory au(plan.a_user, eng, const_cast<void*>(a)), bu(plan.b_user, eng, const_cast<void*>(b));
    memory al = au, bl = bu;
    if (plan.round_a) {
      al = memory(plan.a_low, eng, ts.buffers[1].get(plan.a_low.get_size()));
      plan.ra.execute(ts.stream, au, al);
    }
    if (plan.round_b) {
      bl = memory(plan.b_low, eng, ts.buffers[2].get(plan.b_low.get_size()));
      plan.rb.execute(ts.stream, bu, bl);
    }
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, al}, {DNNL_ARG_WEIGHTS, bl},
                                         {DNNL_ARG_DST, memory(plan.c_user, eng, c)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(plan.bias_md, eng, const_cast<float*>(bias)));
    if (plan.scratch_bytes > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   memory(memory::desc({static_cast<i64>(plan.scratch_bytes)}, dt::u8, tag::x), eng,
                          ts.buffers[0].get(plan.scratch_bytes)));
    plan.mm.execute(ts.stream, args);
    ts.stream.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}
}  // namespace

// Large products on the library's pool (as gemm.cpp's slabs: C's columns when n >= m, else its rows,
// edges at multiples of 16), each slab a primitive of its own on one thread (OneOmpThread): oneDNN's
// OpenMP threads, which spin after each primitive, would take the cores the pool needs for the rest
// of a training step (W1 under autocast(bfloat16): 0.81 s an epoch before the pool, 1.05-1.12 s
// beside it, measured on an AMD Zen 5). The slabs' plans (at most two widths) are made and checked
// before any slab runs, so that a refusal leaves C untouched for the caller's fallback. Below 2^21
// flops, or inside a loop, one primitive on the calling thread alone.
bool onednn_gemm_lowp(DType compute, bool ta, bool tb, i64 m, i64 n, i64 k, const void* a, DType a_dt, i64 lda,
                      const void* b, DType b_dt, i64 ldb, const float* bias, float* c, i64 ldc, bool accumulate) {
  if (!onednn_enabled() || m <= 0 || n <= 0 || k <= 0 || !lowp_takes(compute, a_dt, b_dt)) return false;
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const int threads = flops < double(1 << 21) || in_parallel() ? 1 : max_threads();
  const bool by_cols = n >= m;
  const i64 len = by_cols ? n : m;
  const i64 slabs = std::min<i64>(pieces_for(len, threads), len / 16);
  if (threads <= 1 || slabs <= 1) {  // one thread too: an OpenMP team here would spin beside the pool
    OneOmpThread one;
    auto plan = lowp_plan(compute, ta, tb, m, n, k, a_dt, lda, b_dt, ldb, bias != nullptr, ldc, accumulate);
    return plan->ok && lowp_run(*plan, a, b, bias, c);
  }
  auto edge = [&](i64 s) { return s == slabs ? len : (len * s / slabs) / 16 * 16; };
  auto plan_of = [&](i64 width) {
    return by_cols ? lowp_plan(compute, ta, tb, m, width, k, a_dt, lda, b_dt, ldb, bias != nullptr, ldc, accumulate)
                   : lowp_plan(compute, ta, tb, width, n, k, a_dt, lda, b_dt, ldb, bias != nullptr, ldc, accumulate);
  };
  {
    OneOmpThread one;
    for (i64 s = 0; s < slabs; ++s)
      if (edge(s + 1) > edge(s) && !plan_of(edge(s + 1) - edge(s))->ok) return false;
  }
  const std::size_t ea = a_dt == DType::Float32 ? 4 : 2, eb = b_dt == DType::Float32 ? 4 : 2;
  const auto* ab = static_cast<const char*>(a);
  const auto* bb = static_cast<const char*>(b);
  std::atomic<bool> ok{true};
  parallel_items(slabs, threads, [&](i64 s) {
    const i64 lo = edge(s), hi = edge(s + 1);
    if (hi <= lo) return;
    OneOmpThread one;
    const auto plan = plan_of(hi - lo);
    const bool done =
        by_cols  // C[:, lo:hi] = op(A) op(B)[:, lo:hi]
            ? lowp_run(*plan, a, bb + (tb ? lo * ldb : lo) * i64(eb), bias ? bias + lo : nullptr, c + lo)
            // C[lo:hi, :] = op(A)[lo:hi, :] op(B)
            : lowp_run(*plan, ab + (ta ? lo : lo * lda) * i64(ea), b, bias, c + lo * ldc);
    if (!done) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}

}  // namespace dezero::detail::cpu

namespace dezero {
// A probe product (16 x 32 x 32, no bias) for each type, made once: a fast kernel exists
// when its plan is not a reference implementation.
// (onednn_gemm_lowp declines where the level in use lacks the instructions.)
bool cpu_supports_bf16() {
  static const bool yes = [] {
    float a[16 * 32] = {}, b[32 * 32] = {}, c[16 * 32];
    return detail::cpu::onednn_gemm_lowp(DType::BFloat16, false, false, 16, 32, 32, a, DType::Float32, 32, b,
                                         DType::Float32, 32, nullptr, c, 32, false);
  }();
  return yes;
}
bool cpu_supports_fp16() {
  static const bool yes = [] {
    float a[16 * 32] = {}, b[32 * 32] = {}, c[16 * 32];
    return detail::cpu::onednn_gemm_lowp(DType::Float16, false, false, 16, 32, 32, a, DType::Float32, 32, b,
                                         DType::Float32, 32, nullptr, c, 32, false);
  }();
  return yes;
}
}  // namespace dezero
