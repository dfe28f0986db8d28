// dezero/cpu/onednn_program.cpp - a fixed-shape program of oneDNN primitives (onednn_program.hpp).
//
// Building appends steps: each op makes its primitive for the formats oneDNN prefers
// (format_tag::any), and a reorder step in front of it where an input is in another format
// (reorders are shared: a value wanted in one format by two consumers is reordered once).
// finalize() then plans the memory: a value's life runs from the step that writes it to the last
// step that reads it; a step that may run in place (an element-wise op, an addition, the copy of a
// convolution's addend into its output) shares its input's bytes where the input dies there and has
// the same format; the remaining storages get offsets in one arena, greedily by size, so that
// storages alive at the same step never overlap. run() then executes the primitives with argument
// maps made once.
#include "dezero/cpu/onednn_program.hpp"

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/onednn_engine.hpp"

namespace dezero::detail::cpu {

namespace {
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;
using i64 = std::int64_t;

tag plain_tag(std::size_t ndim) {
  switch (ndim) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    default: throw std::invalid_argument("onednn program: 1 to 5 axes");
  }
}

memory::desc plain_md(const OnednnProgram::Dims& d) { return memory::desc(d, dt::f32, plain_tag(d.size())); }

dnnl::algorithm eltwise_alg(PostOp::Kind k) {
  switch (k) {
    case PostOp::Relu: return dnnl::algorithm::eltwise_relu;
    case PostOp::Clip: return dnnl::algorithm::eltwise_clip;
    case PostOp::HardSwish: return dnnl::algorithm::eltwise_hardswish;
    case PostOp::Sigmoid: return dnnl::algorithm::eltwise_logistic;
    case PostOp::Tanh: return dnnl::algorithm::eltwise_tanh;
    case PostOp::GeluErf: return dnnl::algorithm::eltwise_gelu_erf;
    case PostOp::GeluTanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case PostOp::Swish: return dnnl::algorithm::eltwise_swish;
    case PostOp::Sum: break;
  }
  throw std::invalid_argument("onednn program: a sum is not an element-wise op");
}

const char* post_name(PostOp::Kind k) {
  static const char* names[] = {"sum", "relu", "clip", "hardswish", "sigmoid", "tanh", "gelu", "gelu_tanh", "swish"};
  return names[static_cast<int>(k)];
}

// A short name of a memory format for describe(): "nchw", "blocked:16c", ...
std::string format_of(const memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked) return "any";
  const auto& b = d.format_desc.blocking;
  std::string s;
  if (b.inner_nblks == 0) {
    // the order of the strides, outermost first
    std::vector<int> order(static_cast<std::size_t>(d.ndims));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
    const char* letters = d.ndims == 4 ? "nchw" : "abcde";
    for (int i : order) s += letters[i];
    return s;
  }
  s = "blocked:";
  for (int i = 0; i < b.inner_nblks; ++i) s += std::to_string(b.inner_blks[i]) + "abcde"[b.inner_idxs[i]];
  return s;
}

// md's layout for other dims: the same order of strides (plain) or the same channel blocking
// (aBcd16b, ...); an undefined desc for a layout it does not know.
memory::desc same_layout(const memory::desc& md, const OnednnProgram::Dims& dims) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims != 4 || dims.size() != 4) return memory::desc();
  const auto& b = d.format_desc.blocking;
  if (b.inner_nblks == 0) {
    std::vector<int> order{0, 1, 2, 3};
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
    if (order == std::vector<int>{0, 1, 2, 3}) return memory::desc(dims, dt::f32, tag::abcd);
    if (order == std::vector<int>{0, 2, 3, 1}) return memory::desc(dims, dt::f32, tag::acdb);
    return memory::desc();
  }
  if (b.inner_nblks == 1 && b.inner_idxs[0] == 1 && dims[1] % b.inner_blks[0] == 0) {
    if (b.inner_blks[0] == 16) return memory::desc(dims, dt::f32, tag::aBcd16b);
    if (b.inner_blks[0] == 8) return memory::desc(dims, dt::f32, tag::aBcd8b);
  }
  return memory::desc();
}

// A 64-byte aligned block freed with std::free.
struct Block {
  std::unique_ptr<void, void (*)(void*)> p{nullptr, std::free};
  void* get() const { return p.get(); }
  static Block of(std::size_t bytes) {
    Block b;
    b.p.reset(std::aligned_alloc(64, std::max<std::size_t>(64, (bytes + 63) / 64 * 64)));
    if (!b.p) throw std::bad_alloc();
    return b;
  }
};

}  // namespace

struct OnednnProgram::Impl {
  struct Value {
    memory::desc md;
    Dims dims;
    bool external = false;
    memory mem;
    int view_of = -1;  // a view (a submemory desc) into that value's bytes
  };
  struct Step {
    dnnl::primitive prim;
    std::vector<std::pair<int, int>> in, out;        // (DNNL_ARG_*, value)
    std::vector<std::pair<int, memory>> fixed;       // weights and the like, owned by the program
    std::size_t scratch = 0;
    std::string what;
    bool reorder = false;
    int inplace_in = -1, inplace_out = -1;  // may share the bytes of in -> out
    bool copy = false;                      // a copy that sharing the bytes makes unnecessary
    bool noop = false;
    std::unordered_map<int, memory> args;
  };
  struct Reordered {
    int from;
    memory::desc md;
    int to;
  };

  dnnl::engine& eng = *onednn_engine();
  dnnl::stream stream{eng};
  int threads = omp_get_max_threads();
  std::vector<Value> values;
  std::vector<Step> steps;
  std::vector<Reordered> reordered;
  std::vector<Block> weights;
  std::size_t weight_bytes = 0, arena_bytes = 0;
  Block arena, scratch;
  bool final = false;

  dnnl::primitive_attr attr() const {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
  }
  void check_building() const {
    if (final) throw std::logic_error("onednn program: an op added after finalize()");
  }
  void check_value(int v) const {
    if (v < 0 || static_cast<std::size_t>(v) >= values.size()) throw std::out_of_range("onednn program: no such value");
  }
  // dims by value: callers pass another value's dims, which push_back may move.
  int new_value(const memory::desc& md, Dims dims, bool external = false) {
    values.push_back({md, std::move(dims), external, memory(), -1});
    return static_cast<int>(values.size()) - 1;
  }
  // A fixed argument: `bytes` copied (plain) or reordered into the primitive's format `want`.
  memory owned(const memory::desc& user, const memory::desc& want, const void* data) {
    weights.push_back(Block::of(want.get_size()));
    weight_bytes += want.get_size();
    memory dst(want, eng, weights.back().get());
    if (user == want) {
      std::memcpy(dst.get_data_handle(), data, want.get_size());
    } else {
      memory src(user, eng, const_cast<void*>(data));
      dnnl::reorder(src, dst).execute(stream, src, dst);
      stream.wait();
    }
    return dst;
  }
  template <class PD>
  Step& add_step(const PD& pd, std::string what) {
    steps.emplace_back();
    Step& s = steps.back();
    s.scratch = pd.scratchpad_desc().get_size();
    s.what = std::move(what) + " [" + pd.impl_info_str() + "]";
    return s;
  }
  // v in the format md: v itself, or a reorder of it (made once per value and format).
  int as(int v, const memory::desc& md) {
    if (values[static_cast<std::size_t>(v)].md == md) return v;
    for (const auto& r : reordered)
      if (r.from == v && r.md == md) return r.to;
    const int to = new_value(md, values[static_cast<std::size_t>(v)].dims);
    copy_into(v, to, false);
    reordered.push_back({v, md, to});
    return to;
  }
  // A reorder step from -> to (`copy`: one that sharing the bytes may remove).
  void copy_into(int from, int to, bool may_share) {
    const auto& fm = values[static_cast<std::size_t>(from)].md;
    const auto& tm = values[static_cast<std::size_t>(to)].md;
    dnnl::reorder::primitive_desc pd(eng, fm, eng, tm, attr());
    Step& s = add_step(pd, "reorder " + format_of(fm) + " -> " + format_of(tm));
    s.prim = dnnl::reorder(pd);
    s.in = {{DNNL_ARG_FROM, from}};
    s.out = {{DNNL_ARG_TO, to}};
    s.reorder = true;
    if (may_share) {
      s.copy = true;
      s.inplace_in = from, s.inplace_out = to;
    }
  }
  // post ops (Sum and element-wise) as oneDNN's; the Sum values are returned in `sums`.
  dnnl::post_ops post_ops(const std::vector<PostOp>& post, std::vector<int>& sums, std::string& what) const {
    dnnl::post_ops po;
    for (const PostOp& p : post) {
      what += "+" + std::string(post_name(p.kind));
      if (p.kind == PostOp::Sum) {
        check_value(p.value);
        po.append_sum(1.f);
        sums.push_back(p.value);
      } else {
        po.append_eltwise(1.f, eltwise_alg(p.kind), p.alpha, p.beta);
      }
    }
    return po;
  }
  // OnednnProgram::add and mul.
  int binary(bool mul, int a, int b, const std::vector<PostOp>& post);
  // Storage planning and argument maps (finalize).
  void plan_memory();
};

bool OnednnProgram::available() { return onednn_enabled(); }

OnednnProgram::OnednnProgram() : impl_(std::make_unique<Impl>()) {}
OnednnProgram::~OnednnProgram() = default;

int OnednnProgram::external(const Dims& dims) {
  impl_->check_building();
  return impl_->new_value(plain_md(dims), dims, true);
}

const OnednnProgram::Dims& OnednnProgram::dims(int v) const {
  impl_->check_value(v);
  return impl_->values[static_cast<std::size_t>(v)].dims;
}

int OnednnProgram::conv(int x, const ConvGeom& g, const float* W, const float* b, const std::vector<PostOp>& post) {
  Impl& m = *impl_;
  m.check_building();
  m.check_value(x);
  if (m.values[static_cast<std::size_t>(x)].dims != Dims{g.n, g.c, g.h, g.w}) return -1;
  const bool grouped = g.groups > 1;
  const memory::dims Wd = grouped ? memory::dims{g.groups, g.oc / g.groups, g.c / g.groups, g.kh, g.kw}
                                  : memory::dims{g.oc, g.c, g.kh, g.kw};
  const Dims S{g.n, g.c, g.h, g.w}, D{g.n, g.oc, g.oh, g.ow};
  const memory::dims st{g.sh, g.sw}, pl{g.ph, g.pw},
      pr{(g.oh - 1) * g.sh + g.kh - g.h - g.ph, (g.ow - 1) * g.sw + g.kw - g.w - g.pw};
  try {
    const memory::desc wei(Wd, dt::f32, tag::any), bias({g.oc}, dt::f32, tag::x);
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    std::vector<int> sums;
    std::string what = "conv " + std::to_string(g.kh) + "x" + std::to_string(g.kw) +
                       (grouped ? " groups " + std::to_string(g.groups) : "");
    dnnl::primitive_attr attr = m.attr();
    attr.set_post_ops(m.post_ops(post, sums, what));
    // The activations' format: oneDNN's choice first; where that is a reference kernel (AVX2's
    // choice for a 1x1 convolution of 4 channels), the formats its jit kernels take, in turn.
    dnnl::convolution_forward::primitive_desc pd;
    // An input already in nhwc (after a channel slice or shuffle) stays so where a kernel takes it.
    const bool in_nhwc = m.values[static_cast<std::size_t>(x)].md == memory::desc(S, dt::f32, tag::acdb);
    const std::vector<tag> order = in_nhwc ? std::vector<tag>{tag::acdb, tag::any, tag::aBcd16b, tag::aBcd8b}
                                           : std::vector<tag>{tag::any, tag::acdb, tag::aBcd16b, tag::aBcd8b};
    for (tag t : order) {
      const memory::desc src(S, dt::f32, t), dst(D, dt::f32, t);
      auto d = b ? dnnl::convolution_forward::desc(prop, alg, src, wei, bias, dst, st, pl, pr)
                 : dnnl::convolution_forward::desc(prop, alg, src, wei, dst, st, pl, pr);
      try {
        pd = dnnl::convolution_forward::primitive_desc(d, attr, m.eng);
      } catch (const dnnl::error&) {
        continue;  // no kernel at all for this format
      }
      if (std::strncmp(pd.impl_info_str(), "ref", 3) != 0) break;
    }
    // A reference kernel is slower than the library's own im2col + SGEMM: leave it to the caller.
    if (!pd || std::strncmp(pd.impl_info_str(), "ref", 3) == 0) return -1;
    const int xin = m.as(x, pd.src_desc());
    const memory wm = m.owned(memory::desc(Wd, dt::f32, grouped ? tag::goihw : tag::oihw), pd.weights_desc(), W);
    const int y = m.new_value(pd.dst_desc(), D);
    for (int s : sums) {
      if (m.values[static_cast<std::size_t>(s)].dims != D) throw std::invalid_argument("onednn program: a sum of other dims");
      m.copy_into(s, y, true);  // the addend first; removed where y can take its bytes
    }
    Impl::Step& s = m.add_step(pd, what + " " + format_of(pd.src_desc()) + " -> " + format_of(pd.dst_desc()));
    s.prim = dnnl::convolution_forward(pd);
    s.in = {{DNNL_ARG_SRC, xin}};
    s.out = {{DNNL_ARG_DST, y}};
    if (!sums.empty()) s.in.push_back({DNNL_ARG_DST, y});  // read before it is written
    s.fixed = {{DNNL_ARG_WEIGHTS, wm}};
    if (b) s.fixed.push_back({DNNL_ARG_BIAS, m.owned(bias, pd.bias_desc(), b)});
    return y;
  } catch (const dnnl::error&) {
    return -1;
  }
}

int OnednnProgram::pool(int x, bool max, const Dims& kernel, const Dims& stride, const Dims& pad_tl,
                        const Dims& pad_br) {
  Impl& m = *impl_;
  m.check_building();
  m.check_value(x);
  const Dims& xd = m.values[static_cast<std::size_t>(x)].dims;
  if (xd.size() != 4 || kernel.size() != 2 || stride.size() != 2 || pad_tl.size() != 2 || pad_br.size() != 2) return -1;
  Dims D{xd[0], xd[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    const i64 span = xd[2 + i] + pad_tl[i] + pad_br[i] - kernel[i];
    if (span < 0 || stride[i] <= 0) return -1;
    D[2 + i] = span / stride[i] + 1;
  }
  try {
    const auto alg = max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
    const memory::desc src = m.values[static_cast<std::size_t>(x)].md;
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, memory::desc(D, dt::f32, tag::any),
                                  stride, kernel, pad_tl, pad_br);
    dnnl::pooling_forward::primitive_desc pd(d, m.attr(), m.eng);
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) return -1;
    const int y = m.new_value(pd.dst_desc(), D);
    Impl::Step& s = m.add_step(pd, std::string(max ? "max" : "average") + " pool " + std::to_string(kernel[0]) + "x" +
                                       std::to_string(kernel[1]) + " " + format_of(src));
    s.prim = dnnl::pooling_forward(pd);
    s.in = {{DNNL_ARG_SRC, x}};
    s.out = {{DNNL_ARG_DST, y}};
    return y;
  } catch (const dnnl::error&) {
    return -1;
  }
}

int OnednnProgram::eltwise(int x, const std::vector<PostOp>& ops) {
  Impl& m = *impl_;
  m.check_building();
  int v = x;
  for (const PostOp& p : ops) {
    m.check_value(v);
    if (p.kind == PostOp::Sum) return -1;
    try {
      const memory::desc src = m.values[static_cast<std::size_t>(v)].md;
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, eltwise_alg(p.kind), src, p.alpha, p.beta);
      dnnl::eltwise_forward::primitive_desc pd(d, m.attr(), m.eng);
      const int y = m.new_value(pd.dst_desc(), m.values[static_cast<std::size_t>(v)].dims);
      Impl::Step& s = m.add_step(pd, std::string(post_name(p.kind)) + " " + format_of(src));
      s.prim = dnnl::eltwise_forward(pd);
      s.in = {{DNNL_ARG_SRC, v}};
      s.out = {{DNNL_ARG_DST, y}};
      s.inplace_in = v, s.inplace_out = y;
      v = y;
    } catch (const dnnl::error&) {
      return -1;
    }
  }
  return v;
}

int OnednnProgram::add(int a, int b, const std::vector<PostOp>& post) { return impl_->binary(false, a, b, post); }
int OnednnProgram::mul(int a, int b, const std::vector<PostOp>& post) { return impl_->binary(true, a, b, post); }

int OnednnProgram::Impl::binary(bool mul, int a, int b, const std::vector<PostOp>& post) {
  Impl& m = *this;
  m.check_building();
  m.check_value(a);
  m.check_value(b);
  const Dims D = m.values[static_cast<std::size_t>(a)].dims;  // a copy: as() adds values
  const Dims& bd = m.values[static_cast<std::size_t>(b)].dims;
  if (bd.size() != D.size()) return -1;
  bool broadcast = false;
  for (std::size_t k = 0; k < D.size(); ++k) {
    if (bd[k] != D[k] && bd[k] != 1) return -1;
    broadcast = broadcast || bd[k] != D[k];
  }
  try {
    const memory::desc src0 = m.values[static_cast<std::size_t>(a)].md;
    std::vector<int> sums;
    std::string what = mul ? "mul" : "add";
    if (broadcast) what += " (broadcast)";
    dnnl::primitive_attr attr = m.attr();
    attr.set_post_ops(m.post_ops(post, sums, what));
    if (!sums.empty()) return -1;
    // b in a's layout, or (broadcast) as it is
    const int bin = broadcast ? b : m.as(b, src0);
    const memory::desc src1 = m.values[static_cast<std::size_t>(bin)].md;
    dnnl::binary::desc d(mul ? dnnl::algorithm::binary_mul : dnnl::algorithm::binary_add, src0, src1, src0);
    dnnl::binary::primitive_desc pd(d, attr, m.eng);
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) return -1;
    const int y = m.new_value(pd.dst_desc(), D);
    Impl::Step& s = m.add_step(pd, what + " " + format_of(src0));
    s.prim = dnnl::binary(pd);
    s.in = {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, bin}};
    s.out = {{DNNL_ARG_DST, y}};
    s.inplace_in = a, s.inplace_out = y;
    return y;
  } catch (const dnnl::error&) {
    return -1;
  }
}

int OnednnProgram::concat(const std::vector<int>& xs, int axis) {
  Impl& m = *impl_;
  m.check_building();
  if (xs.empty()) return -1;
  std::vector<memory::desc> mds;
  Dims D;
  for (int x : xs) {
    m.check_value(x);
    const Dims& d = m.values[static_cast<std::size_t>(x)].dims;
    if (D.empty()) {
      D = d;
    } else {
      if (d.size() != D.size()) return -1;
      for (std::size_t i = 0; i < d.size(); ++i)
        if (static_cast<int>(i) != axis && d[i] != D[i]) return -1;
      D[static_cast<std::size_t>(axis)] += d[static_cast<std::size_t>(axis)];
    }
    mds.push_back(m.values[static_cast<std::size_t>(x)].md);
  }
  // The inputs in one layout, which oneDNN's fast concatenations want: the first internal input's,
  // else (its channel blocks padded: 58 channels in blocks of 8) nhwc. Reorders are added only for
  // the layout that has a kernel.
  int lead = xs[0];
  for (int x : xs)
    if (!m.values[static_cast<std::size_t>(x)].external) {
      lead = x;
      break;
    }
  const memory::desc lead_md = m.values[static_cast<std::size_t>(lead)].md;
  const memory::desc nhwc = D.size() == 4 ? memory::desc(D, dt::f32, tag::acdb) : memory::desc();
  for (const memory::desc& layout : {lead_md, nhwc}) {
    if (!layout) continue;
    std::vector<memory::desc> want = mds;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const memory::desc w = same_layout(layout, m.values[static_cast<std::size_t>(xs[i])].dims);
      if (w) want[i] = w;
    }
    dnnl::concat::primitive_desc pd;
    try {
      pd = dnnl::concat::primitive_desc(axis, want, m.eng, m.attr());
    } catch (const dnnl::error&) {
      continue;
    }
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) continue;
    std::vector<int> ins = xs;
    for (std::size_t i = 0; i < xs.size(); ++i) ins[i] = m.as(xs[i], want[i]);
    const int y = m.new_value(pd.dst_desc(), D);
    Impl::Step& s = m.add_step(pd, "concat of " + std::to_string(xs.size()) + " " + format_of(pd.dst_desc()));
    s.prim = dnnl::concat(pd);
    for (std::size_t i = 0; i < ins.size(); ++i) s.in.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), ins[i]});
    s.out = {{DNNL_ARG_DST, y}};
    return y;
  }
  return -1;
}

int OnednnProgram::slice(int x, int axis, std::int64_t start, std::int64_t stop) {
  Impl& m = *impl_;
  m.check_building();
  m.check_value(x);
  Impl::Value src = m.values[static_cast<std::size_t>(x)];
  if (src.external || src.dims.size() != 4 || axis < 0 || axis >= 4) return -1;
  const auto a = static_cast<std::size_t>(axis);
  if (start < 0 || stop > src.dims[a] || start >= stop) return -1;
  Dims D = src.dims, offsets(4, 0);
  D[a] = stop - start;
  offsets[a] = start;
  // A channel slice that cuts a block (channels 4:8 of nChw8c) is taken from an nhwc copy.
  const bool cuts_block = src.md.data.format_desc.blocking.inner_nblks > 0 &&
                          (start % src.md.data.format_desc.blocking.inner_blks[0] != 0 ||
                           stop % src.md.data.format_desc.blocking.inner_blks[0] != 0);
  if (cuts_block || !same_layout(src.md, D)) {
    x = m.as(x, memory::desc(src.dims, dt::f32, tag::acdb));
    src = m.values[static_cast<std::size_t>(x)];
  }
  const memory::desc out = same_layout(src.md, D);
  if (!out) return -1;
  try {
    const memory::desc view_md = src.md.submemory_desc(D, offsets);
    const int view = m.new_value(view_md, D);
    m.values[static_cast<std::size_t>(view)].view_of = x;
    const int y = m.new_value(out, D);
    m.copy_into(view, y, false);
    m.steps.back().what = "slice " + std::to_string(start) + ":" + std::to_string(stop) + " of axis " +
                          std::to_string(axis) + " " + format_of(out) + " [" +
                          m.steps.back().what.substr(m.steps.back().what.find('[') + 1);
    return y;
  } catch (const dnnl::error&) {
    return -1;
  }
}

int OnednnProgram::shuffle(int x, int axis, std::int64_t group_size) {
  Impl& m = *impl_;
  m.check_building();
  m.check_value(x);
  const Dims D = m.values[static_cast<std::size_t>(x)].dims;
  if (axis < 0 || axis >= static_cast<int>(D.size()) || group_size <= 0 ||
      D[static_cast<std::size_t>(axis)] % group_size != 0)
    return -1;
  try {
    // A layout whose channel blocks the shuffle cannot keep (116 channels in blocks of 8): nhwc.
    const auto& blk = m.values[static_cast<std::size_t>(x)].md.data.format_desc.blocking;
    if (D.size() == 4 && blk.inner_nblks > 0 && D[1] % blk.inner_blks[0] != 0)
      x = m.as(x, memory::desc(D, dt::f32, tag::acdb));
    const memory::desc src = m.values[static_cast<std::size_t>(x)].md;
    dnnl::shuffle_forward::desc d(dnnl::prop_kind::forward_inference, src, axis, static_cast<int>(group_size));
    dnnl::shuffle_forward::primitive_desc pd(d, m.eng, m.attr());
    const int y = m.new_value(pd.dst_desc(), D);
    Impl::Step& s = m.add_step(pd, "shuffle of axis " + std::to_string(axis) + " groups of " +
                                       std::to_string(group_size) + " " + format_of(src));
    s.prim = dnnl::shuffle_forward(pd);
    s.in = {{DNNL_ARG_SRC, x}};
    s.out = {{DNNL_ARG_DST, y}};
    return y;
  } catch (const dnnl::error&) {
    return -1;
  }
}

int OnednnProgram::batch_norm(int x, const float* gamma, const float* beta, const float* mean, const float* var,
                              float eps) {
  Impl& m = *impl_;
  m.check_building();
  m.check_value(x);
  const Dims D = m.values[static_cast<std::size_t>(x)].dims;
  if (D.size() < 2) return -1;
  try {
    const memory::desc src = m.values[static_cast<std::size_t>(x)].md;
    const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                       dnnl::normalization_flags::use_shift;
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src, eps, flags);
    dnnl::batch_normalization_forward::primitive_desc pd(d, m.attr(), m.eng);
    const memory::desc c({D[1]}, dt::f32, tag::x);
    const int y = m.new_value(pd.dst_desc(), D);
    Impl::Step& s = m.add_step(pd, "batch norm " + format_of(src));
    s.prim = dnnl::batch_normalization_forward(pd);
    s.in = {{DNNL_ARG_SRC, x}};
    s.out = {{DNNL_ARG_DST, y}};
    s.fixed = {{DNNL_ARG_MEAN, m.owned(c, c, mean)},
               {DNNL_ARG_VARIANCE, m.owned(c, c, var)},
               {DNNL_ARG_SCALE, m.owned(c, c, gamma)},
               {DNNL_ARG_SHIFT, m.owned(c, c, beta)}};
    s.inplace_in = x, s.inplace_out = y;
    return y;
  } catch (const dnnl::error&) {
    return -1;
  }
}

int OnednnProgram::to_external(int v) {
  Impl& m = *impl_;
  m.check_building();
  m.check_value(v);
  const int e = m.new_value(plain_md(m.values[static_cast<std::size_t>(v)].dims),
                            m.values[static_cast<std::size_t>(v)].dims, true);
  m.copy_into(v, e, false);
  return e;
}

void OnednnProgram::Impl::plan_memory() {
  const std::size_t nv = values.size();
  std::vector<int> def(nv, -1), last(nv, -1);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int si = static_cast<int>(i);
    for (const auto& a : steps[i].in) last[static_cast<std::size_t>(a.second)] = si;
    for (const auto& a : steps[i].out)
      if (def[static_cast<std::size_t>(a.second)] < 0) def[static_cast<std::size_t>(a.second)] = si;
  }
  // Storages: value -> its storage's first value (union of in-place pairs), with the last step any
  // of its values is read at.
  std::vector<int> root(nv);
  std::iota(root.begin(), root.end(), 0);
  for (std::size_t v = 0; v < nv; ++v)  // a view is read from its value's bytes (made before it)
    if (values[v].view_of >= 0) root[v] = root[static_cast<std::size_t>(values[v].view_of)];
  std::vector<int> group_last(nv, -1);
  for (std::size_t v = 0; v < nv; ++v) {
    int& g = group_last[static_cast<std::size_t>(root[v])];
    g = std::max({g, last[v], def[v]});
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Step& s = steps[i];
    if (s.inplace_in < 0) continue;
    const auto in = static_cast<std::size_t>(s.inplace_in), out = static_cast<std::size_t>(s.inplace_out);
    if (values[in].external || values[out].external || values[in].view_of >= 0 || !(values[in].md == values[out].md))
      continue;
    const int r = root[in];
    if (group_last[static_cast<std::size_t>(r)] > static_cast<int>(i) || root[out] != static_cast<int>(out)) continue;
    root[out] = r;
    group_last[static_cast<std::size_t>(r)] = std::max(group_last[out], static_cast<int>(i));
    if (s.copy) s.noop = true;
  }
  struct Storage {
    int root;
    std::size_t bytes = 0, offset = 0;
    int first = 1 << 30, last = -1;
  };
  std::unordered_map<int, Storage> st;
  for (std::size_t v = 0; v < nv; ++v) {
    if (values[v].external) continue;
    Storage& s = st.emplace(root[v], Storage{root[v]}).first->second;
    if (values[v].view_of < 0) {  // a view adds the steps that read it, not bytes or a writer
      s.bytes = std::max(s.bytes, (values[v].md.get_size() + 63) / 64 * 64);
      s.first = std::min(s.first, def[v] < 0 ? 0 : def[v]);
    }
    s.last = std::max({s.last, last[v], def[v]});
  }
  std::vector<Storage*> order;
  for (auto& kv : st) order.push_back(&kv.second);
  std::sort(order.begin(), order.end(),
            [](const Storage* a, const Storage* b) { return a->bytes != b->bytes ? a->bytes > b->bytes : a->root < b->root; });
  std::vector<const Storage*> placed;
  arena_bytes = 0;
  for (Storage* s : order) {
    // the lowest offset that no storage alive at the same time covers
    std::vector<const Storage*> live;
    for (const Storage* p : placed)
      if (p->first <= s->last && s->first <= p->last) live.push_back(p);
    std::sort(live.begin(), live.end(), [](const Storage* a, const Storage* b) { return a->offset < b->offset; });
    std::size_t off = 0;
    for (const Storage* p : live) {
      if (off + s->bytes <= p->offset) break;
      off = std::max(off, p->offset + p->bytes);
    }
    s->offset = off;
    arena_bytes = std::max(arena_bytes, off + s->bytes);
    placed.push_back(s);
  }
  arena = Block::of(arena_bytes);
  for (std::size_t v = 0; v < nv; ++v) {
    if (values[v].external) {
      values[v].mem = memory(values[v].md, eng, DNNL_MEMORY_NONE);
    } else {
      char* base = static_cast<char*>(arena.get()) + st.at(root[v]).offset;
      values[v].mem = memory(values[v].md, eng, base);
    }
  }
  std::size_t scratch_bytes = 0;
  for (const Step& s : steps) scratch_bytes = std::max(scratch_bytes, s.scratch);
  scratch = Block::of(scratch_bytes);
  for (Step& s : steps) {
    for (const auto& a : s.in) s.args[a.first] = values[static_cast<std::size_t>(a.second)].mem;
    for (const auto& a : s.out) s.args[a.first] = values[static_cast<std::size_t>(a.second)].mem;
    for (const auto& a : s.fixed) s.args[a.first] = a.second;
    if (s.scratch)
      s.args[DNNL_ARG_SCRATCHPAD] =
          memory(memory::desc({static_cast<i64>(s.scratch)}, dt::u8, tag::x), eng, scratch.get());
  }
}

void OnednnProgram::finalize() {
  impl_->check_building();
  impl_->plan_memory();
  impl_->final = true;
}

void OnednnProgram::bind(int v, void* data) {
  impl_->check_value(v);
  auto& val = impl_->values[static_cast<std::size_t>(v)];
  if (!val.external) throw std::invalid_argument("onednn program: bind() of an internal value");
  val.mem.set_data_handle(data);
}

void OnednnProgram::run(std::size_t first, std::size_t last) {
  Impl& m = *impl_;
  if (!m.final) throw std::logic_error("onednn program: run() before finalize()");
  const int saved = omp_get_max_threads();
  if (saved != m.threads) omp_set_num_threads(m.threads);  // the count the primitives were made for
  try {
    for (std::size_t i = first; i < last && i < m.steps.size(); ++i)
      if (!m.steps[i].noop) m.steps[i].prim.execute(m.stream, m.steps[i].args);
    m.stream.wait();
  } catch (...) {
    if (saved != m.threads) omp_set_num_threads(saved);
    throw;
  }
  if (saved != m.threads) omp_set_num_threads(saved);
}

std::size_t OnednnProgram::step_count() const { return impl_->steps.size(); }

std::string OnednnProgram::describe() const {
  std::ostringstream os;
  for (std::size_t i = 0; i < impl_->steps.size(); ++i) {
    const auto& s = impl_->steps[i];
    os << i << ": " << s.what << (s.noop ? " (in place: none)" : "") << "\n";
  }
  return os.str();
}

std::size_t OnednnProgram::arena_bytes() const { return impl_->arena_bytes; }
std::size_t OnednnProgram::weight_bytes() const { return impl_->weight_bytes; }
std::size_t OnednnProgram::reorder_count() const {
  std::size_t n = 0;
  for (const auto& s : impl_->steps) n += s.reorder && !s.noop;
  return n;
}

}  // namespace dezero::detail::cpu
