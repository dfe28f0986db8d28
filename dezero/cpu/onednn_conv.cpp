// dezero/cpu/onednn_conv.cpp - the host's float32 convolutions in oneDNN (Chainer's
// iDeep path made current; DeZero itself has only im2col + GEMM, step 57's conv2d).
// Compiled only when the build found oneDNN (cmake -DDEZERO_ONEDNN=AUTO/ON, Debian's
// libdnnl-dev); onednn_stub.cpp stands in for it otherwise. No CUDA twin: the GPU's
// library path is gpu/cudnn_conv.cpp.
//
// The three products of LibraryKernels::conv2d_* on contiguous NCHW float32 buffers:
//   forward: y (n, oc, oh, ow) = x (n, c, h, w) * W (oc, c, kh, kw) + b (oc)   convolution_forward
//   data:    gx (n, c, h, w) from gy (n, oc, oh, ow) and W                   convolution_backward_data
//   filter:  gW (oc, c, kh, kw) from x and gy                                convolution_backward_weights
// DeZero's zero padding is symmetric (ph, pw on both sides) with the output size rounded
// down, so oneDNN's right padding is what the output size leaves: (oh - 1) sh + kh - h - ph.
// A grouped convolution (g.groups G > 1, W (oc, c/G, kh, kw)) is oneDNN's own: weights of
// 5 dims (G, oc/G, c/G, kh, kw) in the plain goihw format, the same bytes as the callers'
// (oc, c/G, kh, kw); groups == c (depthwise) gets oneDNN's depthwise jit kernels.
//
// Memory formats: oneDNN chooses them (format_tag::any: nChw16c activations, OIhw16i16o
// weights, ...) and reorders turn the callers' plain nchw / oihw buffers into them and
// back, on every call, since nothing upstream keeps blocked tensors (the weights change
// at every step). Measured on W2's shapes (batch 100, README's oneDNN paragraph), the
// blocked jit:avx512_core kernels with their reorders beat both oneDNN's plain-format
// primitives (gemm:jit, an im2col + GEMM like ours, and slowed 100x by some gradients'
// values) and our im2col + SGEMM. Where the blocked format pads the channels more than
// twice over (conv1's data gradient: 1 channel in blocks of 16), the product is left to
// im2col + SGEMM.
//
// Each (geometry, direction, bias or not) gets its primitive once, in a cache shared by
// all threads (a mutex around the map; entries are immutable once made). The scratchpad
// is the caller's (scratchpad_mode::user), in a per-thread buffer, as is the stream, so
// threads may run the same primitive at once. oneDNN runs on the same OpenMP runtime as
// the rest of the backend (libgomp), so OMP_NUM_THREADS / omp_set_num_threads apply.
// A geometry oneDNN cannot do (e.g. a negative right padding) is remembered as such and
// left to im2col + SGEMM (the callers' fallback), as is every non-float32 product.
//
// Mixed precision (issue 31, autocast; g.compute bfloat16, or float16 where the CPU has
// it): the same three primitives with the two multiplied operands in the low-precision
// type and a float32 result, which oneDNN's avx512_core_bf16 / AMX kernels sum in float32:
//   forward  src, weights bf16 -> dst f32 (+ bias f32)
//   data     diff_dst, weights bf16 -> diff_src f32
//   filter   src, diff_dst bf16 -> diff_weights f32
// The input reorders round the callers' float32 buffers to nearest even as they block
// them, so nothing extra runs; where the CPU has no such kernel (a reference one) the
// plan is refused and tensor/conv.cpp rounds the operands for the float32 path.
#include <dnnl.hpp>
#include <omp.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <initializer_list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "dezero/cpu/isa.hpp"
#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/onednn_engine.hpp"
#include "dezero/cpu/parallel.hpp"
#include "dezero/env.hpp"
#include "dezero/onednn.hpp"

namespace dezero::detail::cpu {

namespace {

using i64 = std::int64_t;
using dnnl::memory;
using tag = memory::format_tag;

enum class Dir : int { Forward, ForwardBias, Data, Filter };

// DEZERO_ONEDNN=0 in the environment turns the path off, read once.
bool enabled() {
  static const bool on = [] {
    const char* v = ::dezero::detail::env_value("DEZERO_ONEDNN");
    bool off = v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "OFF") == 0);
    return !off && onednn_engine() != nullptr;
  }();
  return on;
}

// The geometry, the direction, the compute type and the thread count (a primitive splits
// its work for the threads there were when it was made; omp_set_num_threads may change
// them later).
using Key = OnednnKey<17>;

Key key_of(const ConvGeom& g, Dir d) {
  return Key{{g.n, g.c, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.oh, g.ow, g.oc, g.groups,
              static_cast<i64>(d), static_cast<i64>(g.compute), static_cast<i64>(omp_get_max_threads())}};
}

// One argument of a primitive: the caller's plain buffer (user) and the format the
// primitive wants (prim); where they differ, a reorder runs before (inputs) or after
// (the output) the primitive, through a per-thread buffer.
struct Slot {
  int id = 0;  // DNNL_ARG_*
  memory::desc user, prim;
  bool output = false, reorder = false;
  dnnl::reorder r;
};

// A made primitive and what its call needs; ok = false: oneDNN has none for this case.
struct Plan {
  bool ok = false;
  dnnl::primitive prim;
  std::vector<Slot> slots;  // in the order of the pointers run() gets
  std::size_t scratch_bytes = 0;
};

std::shared_ptr<const Plan> make_plan(const ConvGeom& g, Dir dir) {
  auto plan = std::make_shared<Plan>();
  dnnl::engine& eng = *onednn_engine();
  // W: (oc, c, kh, kw), or grouped (G, oc/G, c/G, kh, kw).
  const bool grouped = g.groups > 1;
  const memory::dims W = grouped ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                                 : memory::dims{g.oc, g.c, g.kh, g.kw};
  const tag w_plain = grouped ? tag::goihw : tag::oihw;
  const memory::dims S = {g.n, g.c, g.h, g.w}, D = {g.n, g.oc, g.oh, g.ow}, B = {g.oc}, st = {g.sh, g.sw},
                     pl = {g.ph, g.pw},
                     pr = {(g.oh - 1) * g.sh + g.kh - g.h - g.ph, (g.ow - 1) * g.sw + g.kw - g.w - g.pw};
  using dt = memory::data_type;
  const bool low = is_half(g.compute);
  // The multiplied operands' type: the inputs of each direction (src and weights forward,
  // diff_dst and weights for the data gradient, src and diff_dst for the filter's).
  const dt lt = !low ? dt::f32 : g.compute == DType::Float16 ? dt::f16 : dt::bf16;
  const dt x_t = dir == Dir::Data ? dt::f32 : lt, w_t = dir == Dir::Filter ? dt::f32 : lt,
           y_t = dir == Dir::Data || dir == Dir::Filter ? lt : dt::f32;
  auto md = [](const memory::dims& d, tag t, dt ty = dt::f32) { return memory::desc(d, ty, t); };
  const auto xu = md(S, tag::nchw), wu = md(W, w_plain), yu = md(D, tag::nchw), bs = md(B, tag::x);
  // A low-precision 1x1 convolution keeps the callers' plain formats (nchw, oihw): oneDNN
  // then runs it as a GEMM per image, whose operands need only the conversion, and writes
  // the float32 result where it goes. Its blocked (nhwc, AMX) kernel is faster by itself
  // but the reorders around it cost more than the product: ResNet50's 1x1 convolutions,
  // 64 -> 256 on 56x56, batch 8, 1 thread: 9.6 ms blocked against 3.8 ms plain; W4 in
  // bf16 at 1 thread 2.59 -> 1.97 s/step.
  const bool plain = low && g.kh == 1 && g.kw == 1;
  const tag ta = plain ? tag::nchw : tag::any, tw = plain ? w_plain : tag::any;  // any: oneDNN's choice
  const auto xs = md(S, ta, x_t), ws = md(W, tw, w_t), ys = md(D, ta, y_t);
  // The forward (and the backward's hint): low-precision src and weights, a float32 dst.
  const auto fxs = md(S, ta, lt), fws = md(W, tw, lt), fys = md(D, ta);
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto alg = dnnl::algorithm::convolution_direct;
    const auto prop = dnnl::prop_kind::forward_training;
    auto fd = dir == Dir::ForwardBias ? dnnl::convolution_forward::desc(prop, alg, fxs, fws, bs, fys, st, pl, pr)
                                      : dnnl::convolution_forward::desc(prop, alg, fxs, fws, fys, st, pl, pr);
    dnnl::convolution_forward::primitive_desc fpd(fd, attr, eng);
    bool refuse = false;
    auto slots_of = [&](const auto& pd, std::initializer_list<std::pair<int, memory::desc>> args, int out) {
      // A reference implementation of a low-precision product would be slower than
      // rounding the operands for the float32 path.
      if (low && std::strncmp(pd.impl_info_str(), "ref", 3) == 0) refuse = true;
      for (const auto& [id, user] : args) {
        Slot sl;
        sl.id = id;
        sl.user = user;
        sl.prim = pd.query_md(dnnl::query::exec_arg_md, id);
        sl.output = id == out;
        sl.reorder = sl.prim != sl.user;
        // A blocked format that pads the channels (nChw16c for 1 channel: 16 times the
        // data and the work, as in conv1's data gradient on W2) costs more than it saves.
        // Counted in elements (the user's are float32, 4 bytes; a low-precision copy's 2).
        const std::size_t prim_elt = sl.prim.data_type() == dt::f32 ? 4 : 2;
        if (sl.prim.get_size() * 4 > 2 * sl.user.get_size() * prim_elt) refuse = true;
        if (sl.reorder) {
          // A reorder that wants scratch memory would share the library's between threads.
          auto rpd = sl.output ? dnnl::reorder::primitive_desc(eng, sl.prim, eng, sl.user, attr)
                               : dnnl::reorder::primitive_desc(eng, sl.user, eng, sl.prim, attr);
          if (rpd.scratchpad_desc().get_size() > 0) refuse = true;
          sl.r = dnnl::reorder(rpd);
        }
        plan->slots.push_back(sl);
      }
      plan->scratch_bytes = pd.scratchpad_desc().get_size();
    };
    if (dir == Dir::Forward || dir == Dir::ForwardBias) {
      plan->prim = dnnl::convolution_forward(fpd);
      if (dir == Dir::ForwardBias)
        slots_of(fpd, {{DNNL_ARG_SRC, xu}, {DNNL_ARG_WEIGHTS, wu}, {DNNL_ARG_BIAS, bs}, {DNNL_ARG_DST, yu}},
                 DNNL_ARG_DST);
      else
        slots_of(fpd, {{DNNL_ARG_SRC, xu}, {DNNL_ARG_WEIGHTS, wu}, {DNNL_ARG_DST, yu}}, DNNL_ARG_DST);
    } else if (dir == Dir::Data) {
      dnnl::convolution_backward_data::desc bd(alg, xs, ws, ys, st, pl, pr);
      dnnl::convolution_backward_data::primitive_desc bpd(bd, attr, eng, fpd);
      plan->prim = dnnl::convolution_backward_data(bpd);
      slots_of(bpd, {{DNNL_ARG_WEIGHTS, wu}, {DNNL_ARG_DIFF_DST, yu}, {DNNL_ARG_DIFF_SRC, xu}}, DNNL_ARG_DIFF_SRC);
    } else {
      dnnl::convolution_backward_weights::desc wd(alg, xs, ws, ys, st, pl, pr);
      dnnl::convolution_backward_weights::primitive_desc wpd(wd, attr, eng, fpd);
      plan->prim = dnnl::convolution_backward_weights(wpd);
      slots_of(wpd, {{DNNL_ARG_SRC, xu}, {DNNL_ARG_DIFF_DST, yu}, {DNNL_ARG_DIFF_WEIGHTS, wu}},
               DNNL_ARG_DIFF_WEIGHTS);
    }
    // One input channel: a reduction of kh kw products per output, which the bf16 kernels
    // (dot products of pairs) do more slowly than the float32 one (W2's conv1 forward, 1
    // thread: 0.58 against 0.34 ms); the rounded operands take the float32 kernel instead.
    if (low && g.c == 1 && (dir == Dir::Forward || dir == Dir::ForwardBias)) refuse = true;
    plan->ok = !refuse;  // padded channels or a reorder with scratch memory: neither met on W2's shapes
  } catch (const dnnl::error&) {
    plan->ok = false;  // unsupported here: im2col + SGEMM does it
  }
  return plan;
}

// The plan for (g, dir), made once (onednn_plan's cache).
std::shared_ptr<const Plan> plan_for(const ConvGeom& g, Dir dir) {
  return onednn_plan<Plan>(key_of(g, dir), [&](const Key&) { return make_plan(g, dir); });
}

// Per-thread stream, scratchpad and reorder buffers.
struct ThreadState {
  dnnl::stream stream{*onednn_engine()};
  OnednnBuffer buffers[5];  // the scratchpad, then one per slot
  void* buffer(int i, std::size_t bytes) { return buffers[i].get(bytes); }
};

ThreadState& thread_state() {
  thread_local ThreadState st;
  return st;
}

// Runs (g, dir)'s primitive on the buffers ptrs (in the plan's slot order); false, with
// nothing written that the fallback does not overwrite, where oneDNN has no primitive
// for it or fails.
bool run(const ConvGeom& g, Dir dir, std::initializer_list<const void*> ptrs) {
  if (!enabled()) return false;
  auto plan = plan_for(g, dir);
  if (!plan->ok) return false;
  try {
    dnnl::engine& eng = *onednn_engine();
    ThreadState& ts = thread_state();
    std::unordered_map<int, memory> margs;
    memory out_user, out_prim;
    const Slot* out_slot = nullptr;
    int i = 0;
    for (const void* ptr : ptrs) {
      const Slot& sl = plan->slots[static_cast<std::size_t>(i)];
      memory user(sl.user, eng, const_cast<void*>(ptr));
      if (!sl.reorder) {
        margs.emplace(sl.id, user);
      } else {
        memory prim(sl.prim, eng, ts.buffer(1 + i, sl.prim.get_size()));
        if (sl.output) {
          out_slot = &sl, out_user = user, out_prim = prim;
        } else {
          sl.r.execute(ts.stream, user, prim);
        }
        margs.emplace(sl.id, prim);
      }
      ++i;
    }
    if (plan->scratch_bytes > 0)
      margs.emplace(DNNL_ARG_SCRATCHPAD, memory(memory::desc({static_cast<i64>(plan->scratch_bytes)},
                                                             memory::data_type::u8, tag::x),
                                                eng, ts.buffer(0, plan->scratch_bytes)));
    plan->prim.execute(ts.stream, margs);
    if (out_slot) out_slot->r.execute(ts.stream, out_prim, out_user);
    ts.stream.wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

}  // namespace

// DEZERO_CPU_ISA's cap (isa.hpp), passed on before oneDNN's first primitive: sse2 -> SSE4.1 (oneDNN's
// lowest), avx2 -> AVX2 (not AVX-VNNI, which x86-64-v3 lacks), avx512 -> AVX512_CORE_VNNI (no
// bfloat16 instructions), avx512_bf16 -> AVX512_CORE_BF16 (no AMX); amx is no cap. oneDNN refuses
// once it has chosen (ONEDNN_MAX_CPU_ISA read, a primitive made): then the cap is its own.
void onednn_cap_isa(int level) {
  using I = dnnl::cpu_isa;
  const I caps[] = {I::sse41, I::avx2, I::avx512_core_vnni, I::avx512_core_bf16, I::all};
  if (level >= 0 && level < 4) (void)dnnl::set_max_cpu_isa(caps[level]);
}

dnnl::engine* onednn_engine() {
  static dnnl::engine* eng = []() -> dnnl::engine* {
    (void)cpu_isa();  // DEZERO_CPU_ISA's cap reaches oneDNN before its first primitive
    try {
      return new dnnl::engine(dnnl::engine::kind::cpu, 0);
    } catch (const dnnl::error&) {
      return nullptr;
    }
  }();
  return eng;
}

bool onednn_usable() { return onednn_engine() != nullptr; }
bool onednn_enabled() { return enabled(); }

namespace {
// float32 buffers, multiplied in float32 or in a low-precision type this CPU has kernels for.
bool takes(DType dt, const ConvGeom& g) {
  if (dt != DType::Float32) return false;
  if (g.compute == DType::BFloat16) return cpu_supports_bf16();
  if (g.compute == DType::Float16) return cpu_supports_fp16();
  return g.compute == DType::Float32;
}
}  // namespace

namespace {
// --- the batch on the library's threads --------------------------------------------------------
// oneDNN threads with OpenMP (libgomp), whose idle threads spin for milliseconds after each
// primitive; the rest of the backend runs on its own pool (parallel.hpp), whose threads would then
// compete with them for the same cores (W2 at 2 threads: 10% slower), and an OpenMP region waits at
// its end for a thread the OS has descheduled. So a batch of two images or more is cut into the
// pool's pieces (consecutive images, pieces_for's count), each piece a primitive of its own images on one
// thread (OneOmpThread: oneDNN then runs it without entering OpenMP). One image (inference) keeps
// oneDNN's own threads. The filter gradient sums each
// piece's images into its own buffer, then the pieces in order: the same bits whichever thread
// ran a piece.
// Pieces for a batch of n on the pool: none (0) where oneDNN keeps its own threads (one image).
i64 batch_pieces(i64 n) {
  if (n < 2 || in_parallel()) return 0;
  const int threads = max_threads();
  if (threads <= 1) return 0;
  return pieces_for(n, threads);
}

// g for images [lo, hi) of its batch.
ConvGeom images(const ConvGeom& g, i64 lo, i64 hi) {
  ConvGeom s = g;
  s.n = hi - lo;
  return s;
}

// dir's primitive on each piece's images (x, y: per image strides xs, ys floats), on the pool;
// false when any piece was refused (then nothing was written that the fallback does not overwrite).
bool run_pieces(const ConvGeom& g, Dir dir, i64 pieces, const float* x, const float* w, const float* b, float* y,
                i64 xs, i64 ys) {
  std::atomic<bool> ok{true};
  parallel_items(pieces, static_cast<int>(std::min<i64>(pieces, max_threads())), [&](i64 p) {
    const i64 lo = g.n * p / pieces, hi = g.n * (p + 1) / pieces;
    OneOmpThread one;
    bool done;
    if (dir == Dir::ForwardBias) done = run(images(g, lo, hi), dir, {x + lo * xs, w, b, y + lo * ys});
    else if (dir == Dir::Forward) done = run(images(g, lo, hi), dir, {x + lo * xs, w, y + lo * ys});
    else done = run(images(g, lo, hi), dir, {w, x + lo * xs, y + lo * ys});  // Data: x = gy, y = gx
    if (!done) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}

// A scratch buffer of n floats for the calling thread, kept between calls (the pieces' filter sums).
float* filter_scratch(i64 n) {
  thread_local std::vector<float> buf;
  if (static_cast<i64>(buf.size()) < n) buf.resize(static_cast<std::size_t>(n));
  return buf.data();
}

}  // namespace

bool onednn_conv2d_forward(DType dt, const void* x, const void* w, const void* b, void* y, const ConvGeom& g) {
  if (!takes(dt, g)) return false;
  if (const i64 pieces = batch_pieces(g.n))
    return run_pieces(g, b ? Dir::ForwardBias : Dir::Forward, pieces, static_cast<const float*>(x),
                      static_cast<const float*>(w), static_cast<const float*>(b), static_cast<float*>(y),
                      g.c * g.h * g.w, g.oc * g.oh * g.ow);
  if (b) return run(g, Dir::ForwardBias, {x, w, b, y});
  return run(g, Dir::Forward, {x, w, y});
}

bool onednn_conv2d_backward_data(DType dt, const void* w, const void* gy, void* gx, const ConvGeom& g) {
  if (!takes(dt, g)) return false;
  if (const i64 pieces = batch_pieces(g.n))
    return run_pieces(g, Dir::Data, pieces, static_cast<const float*>(gy), static_cast<const float*>(w), nullptr,
                      static_cast<float*>(gx), g.oc * g.oh * g.ow, g.c * g.h * g.w);
  return run(g, Dir::Data, {w, gy, gx});
}

bool onednn_conv2d_backward_filter(DType dt, const void* x, const void* gy, void* gw, const ConvGeom& g) {
  if (!takes(dt, g)) return false;
  const i64 pieces = batch_pieces(g.n);
  if (!pieces) return run(g, Dir::Filter, {x, gy, gw});
  const i64 nw = g.oc * (g.c / g.groups) * g.kh * g.kw, xs = g.c * g.h * g.w, ys = g.oc * g.oh * g.ow;
  float* parts = filter_scratch(nw * pieces);  // piece p's sum at parts + p nw
  const auto* xf = static_cast<const float*>(x);
  const auto* gyf = static_cast<const float*>(gy);
  std::atomic<bool> ok{true};
  parallel_items(pieces, static_cast<int>(std::min<i64>(pieces, max_threads())), [&](i64 p) {
    const i64 lo = g.n * p / pieces, hi = g.n * (p + 1) / pieces;
    OneOmpThread one;
    if (!run(images(g, lo, hi), Dir::Filter, {xf + lo * xs, gyf + lo * ys, parts + p * nw}))
      ok.store(false, std::memory_order_relaxed);
  });
  if (!ok.load()) return false;
  auto* out = static_cast<float*>(gw);
  for (i64 k = 0; k < nw; ++k) {
    float sum = parts[k];
    for (i64 p = 1; p < pieces; ++p) sum += parts[p * nw + k];
    out[k] = sum;
  }
  return true;
}


}  // namespace dezero::detail::cpu

namespace dezero {
bool is_onednn_available() { return detail::cpu::onednn_usable(); }
}  // namespace dezero
