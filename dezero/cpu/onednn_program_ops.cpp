// dezero/cpu/onednn_program_ops.cpp - the ops of a fixed-shape oneDNN program (onednn_program.hpp):
// each makes its primitive for the formats oneDNN prefers, adds the reorders its inputs need and
// one step; -1 where oneDNN has no kernel but a reference one (the caller replays the op itself).
// Values, memory planning and running are in onednn_program.cpp.
#include "dezero/cpu/onednn_program_impl.hpp"

namespace dezero::detail::cpu {

using namespace program;

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

}  // namespace dezero::detail::cpu
