// dezero/plan/lower.cpp - compile()'s middle: the recorded graph walked into values and ops
// (record), then each op lowered (lower), in the recorded order. On the CPU in float32 with oneDNN,
// an op that oneDNN does well becomes a primitive of one OnednnProgram (cpu/onednn_program.hpp):
//   Conv2d  [-> BatchNorm (folded)] [-> ReLU/Clip/... and an Add of a value already computed (post-ops)]
//   Pad(-inf) -> Pooling, Pooling, AveragePooling, Mean over (H, W): oneDNN's pooling
//   Add, Mul, ReLU/Clip/..., Concat, BatchNorm, channel slices and shuffles: when an operand
//   already lives in the program
// and every other op is replayed: its Function's forward() on the tensors. Consecutive primitives
// form one "program" step; a value crosses between the two worlds through the program's external
// buffers (a reorder into a plain row-major Tensor on the way out, a reorder from it on the way in).
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "dezero/core/trace.hpp"
#include "dezero/fail.hpp"
#include "dezero/functions.hpp"
#include "dezero/plan/plan_impl.hpp"

namespace dezero::detail::plan {

namespace {

using detail::cpu::OnednnProgram;
using detail::cpu::PostOp;
using i64 = std::int64_t;

struct Op {
  std::shared_ptr<Function> fn;
  std::string name;
  FunctionAttrs attrs;
  std::vector<int> in, out;
  bool done = false;
};

const FunctionAttr* find_attr(const Op& op, const char* key) {
  for (const auto& kv : op.attrs)
    if (kv.first == key) return &kv.second;
  return nullptr;
}
std::vector<i64> ints_attr(const Op& op, const char* key) {
  const FunctionAttr* a = find_attr(op, key);
  if (a && std::holds_alternative<std::vector<i64>>(*a)) return std::get<std::vector<i64>>(*a);
  return {};
}
double real_attr(const Op& op, const char* key, double dflt) {
  const FunctionAttr* a = find_attr(op, key);
  if (a && std::holds_alternative<double>(*a)) return std::get<double>(*a);
  if (a && std::holds_alternative<i64>(*a)) return static_cast<double>(std::get<i64>(*a));
  return dflt;
}
i64 int_attr(const Op& op, const char* key, i64 dflt) {
  const FunctionAttr* a = find_attr(op, key);
  if (a && std::holds_alternative<i64>(*a)) return std::get<i64>(*a);
  return dflt;
}

// The element-wise Functions oneDNN has as eltwise ops.
bool eltwise_of(const Op& op, PostOp& p) {
  const std::string& n = op.name;
  if (op.in.size() != 1 || op.out.size() != 1) return false;
  if (n == "ReLU") p = {PostOp::Relu, 0.f, 0.f, -1};
  else if (n == "LeakyReLU") p = {PostOp::Relu, static_cast<float>(real_attr(op, "slope", 0.2)), 0.f, -1};
  else if (n == "Clip")
    p = {PostOp::Clip, static_cast<float>(real_attr(op, "lo", 0)), static_cast<float>(real_attr(op, "hi", 0)), -1};
  else if (n == "HardSwish") p = {PostOp::HardSwish, 0.f, 0.f, -1};
  else if (n == "Sigmoid") p = {PostOp::Sigmoid, 0.f, 0.f, -1};
  else if (n == "Tanh") p = {PostOp::Tanh, 0.f, 0.f, -1};
  else if (n == "Gelu") {
    const FunctionAttr* a = find_attr(op, "approximate");
    const bool tanh = a && std::holds_alternative<std::string>(*a) && std::get<std::string>(*a) == "tanh";
    p = {tanh ? PostOp::GeluTanh : PostOp::GeluErf, 0.f, 0.f, -1};
  } else {
    return false;
  }
  return true;
}

OnednnProgram::Dims dims_of(const Shape& s) { return OnednnProgram::Dims(s.begin(), s.end()); }

std::vector<float> floats_of(const Tensor& t) {
  const Tensor f = t.to_cpu().astype(float32);
  const float* p = f.data<float>();
  return std::vector<float>(p, p + f.size());
}


class Compiler {
 public:
  Compiler(Plan::Impl& p, const CompileOptions& o) : plan_(p), opt_(o) {}

  // `params`: a training step's parameters, the only leaves it may read (live, not copied).
  void record(const VariableList& xs, const VariableList& ys, const std::vector<Parameter>* params = nullptr,
              const char* who = "compile") {
    detail::TracedGraph g = detail::trace_graph(xs, ys);
    std::unordered_map<const VariableNode*, int> id;
    auto add_val = [&](const Variable& v) {
      Val val;
      val.shape = v.shape();
      val.dtype = v.dtype();
      val.device = v.data().device();
      plan_.vals.push_back(std::move(val));
      const int i = static_cast<int>(plan_.vals.size()) - 1;
      id[v.node().get()] = i;
      return i;
    };
    for (std::size_t i = 0; i < xs.size(); ++i) {
      auto it = id.find(xs[i].node().get());
      const int v = it != id.end() ? it->second : add_val(xs[i]);
      if (it == id.end()) plan_.vals[static_cast<std::size_t>(v)].input = static_cast<int>(i);
      plan_.inputs.push_back(v);
      plan_.in_shapes.push_back(xs[i].shape());
    }
    for (const Variable& leaf : g.leaves) {
      const int v = add_val(leaf);
      Val& c = plan_.vals[static_cast<std::size_t>(v)];
      c.constant = true;
      c.data = leaf.data();
      if (!params) continue;
      for (const Parameter& p : *params)
        if (p.is_same(leaf)) c.live = p;
      if (!c.live.defined())
        fail<NotImplementedError>(who, "the step reads a tensor ", leaf.shape(), " ", leaf.dtype(),
                                  " that is neither an input nor a parameter of the model; its recorded value would "
                                  "be replayed at every step; hint: pass it as an input (a random mask, F::dropout, "
                                  "is drawn anew at each step and cannot be replayed)");
    }
    // A Function that keeps an input's values as a constant of its own (EmbedID's ids) would
    // replay the example's values.
    std::unordered_map<const void*, int> computed;  // the storage of each input's and op output's tensor
    for (std::size_t i = 0; i < xs.size(); ++i) computed.emplace(xs[i].data().storage().get(), static_cast<int>(i));
    for (auto& fn : g.order) {
      Op op;
      op.name = fn->name();
      op.attrs = fn->attributes();
      for (const Variable& x : fn->inputs()) op.in.push_back(id.at(x.node().get()));
      for (const auto& kv : op.attrs) {
        if (!std::holds_alternative<Tensor>(kv.second)) continue;
        const Tensor& a = std::get<Tensor>(kv.second);
        if (a.defined() && computed.count(a.storage().get()))
          fail<NotImplementedError>(who, op.name, " keeps the values of ", a.shape(), " (its '", kv.first,
                                    "'), which the recorded run computed or took as an input; a replay would use "
                                    "the example's values; hint: run this model without a plan");
      }
      const VariableList outs = fn->outputs();
      for (const Variable& y : outs) {
        op.out.push_back(y.defined() ? add_val(y) : -1);
        if (y.defined()) computed.emplace(y.data().storage().get(), op.out.back());
      }
      const int oi = static_cast<int>(ops_.size());
      for (int v : op.out)
        if (v >= 0) plan_.vals[static_cast<std::size_t>(v)].producer = oi;
      for (int v : op.in) plan_.vals[static_cast<std::size_t>(v)].consumers.push_back(oi);
      op.fn = std::move(fn);
      ops_.push_back(std::move(op));
    }
    for (const Variable& y : ys) {
      const int v = id.at(y.node().get());
      plan_.vals[static_cast<std::size_t>(v)].output = true;
      plan_.outputs.push_back(v);
    }
    plan_.stats.recorded = ops_.size();
  }

  void lower(bool replay_only = false) {
    use_onednn_ = !replay_only && opt_.onednn && OnednnProgram::available();
    if (use_onednn_) plan_.prog = std::make_unique<OnednnProgram>();
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].done) continue;
      if (!(use_onednn_ && to_program(static_cast<int>(i)))) replay(static_cast<int>(i));
      ops_[i].done = true;
    }
    for (int v : plan_.outputs) {
      if (val(v).dnn >= 0) export_value(v);
    }
    close_segment();
    if (plan_.prog) {
      plan_.prog->finalize();
      plan_.stats.reorders = plan_.prog->reorder_count();
      plan_.stats.arena_bytes = plan_.prog->arena_bytes();
      plan_.stats.weight_bytes = plan_.prog->weight_bytes();
    }
    for (auto& kv : plan_.buffers)
      kv.second = Tensor::empty(val(kv.first).shape, float32);
  }

 private:
  Plan::Impl& plan_;
  const CompileOptions& opt_;
  std::vector<Op> ops_;
  bool use_onednn_ = false;
  // the program steps since the last replayed op
  std::size_t seg_first_ = 0;
  std::vector<std::pair<int, int>> imports_, exports_;

  Val& val(int v) { return plan_.vals[static_cast<std::size_t>(v)]; }
  bool host_f32(int v) { return val(v).dtype == float32 && val(v).device.is_cpu(); }
  bool single_use(int v) { return val(v).consumers.size() == 1 && !val(v).output; }
  // Whether v is computed by the time op i runs (an input, a constant, or made by a done op).
  bool ready(int v) { return val(v).producer < 0 || ops_[static_cast<std::size_t>(val(v).producer)].done; }
  // v held by the program with v's own dims.
  bool in_program(int v) {
    return val(v).dnn >= 0 && plan_.prog->dims(val(v).dnn) == dims_of(val(v).shape);
  }

  // v as a program value: its own, or an external one bound to its tensor at this segment's start.
  int program_value(int v) {
    if (in_program(v)) return val(v).dnn;
    // Bound once per call, in the segment that reads it first: its tensor does not change after.
    if (val(v).ext_in < 0) {
      own_constant(v);
      val(v).ext_in = plan_.prog->external(dims_of(val(v).shape));
      imports_.push_back({val(v).ext_in, v});
    }
    return val(v).ext_in;
  }
  // A constant read as a tensor: the plan's own copy, so that later changes to the parameter do
  // not reach the plan (the folded and reordered weights are copies too).
  void own_constant(int v) {
    Val& x = val(v);
    if (x.constant && !x.exported) {
      x.data = x.data.copy();
      x.exported = true;
    }
  }
  // v as a tensor for a replayed op: a program value leaves through a plain buffer, once.
  void export_value(int v) {
    if (val(v).dnn < 0 || val(v).exported) return;
    const int ext = plan_.prog->to_external(val(v).dnn);
    exports_.push_back({ext, v});
    val(v).exported = true;
    if (!val(v).output) plan_.buffers[v] = Tensor();
  }
  void close_segment() {
    if (!plan_.prog) return;
    const std::size_t end = plan_.prog->step_count();
    if (end == seg_first_ && exports_.empty()) {
      imports_.clear();
      return;
    }
    Plan::Impl::Step s;
    s.program = true;
    s.first = seg_first_;
    s.last = end;
    s.imports = std::move(imports_);
    s.exports = std::move(exports_);
    plan_.steps.push_back(std::move(s));
    imports_.clear();
    exports_.clear();
    seg_first_ = end;
  }

  void replay(int i) {
    Op& op = ops_[static_cast<std::size_t>(i)];
    for (int v : op.in) {
      export_value(v);
      own_constant(v);
    }
    close_segment();
    Plan::Impl::Step s;
    s.fn = op.name == "BatchNorm" && int_attr(op, "train", 1) == 0 ? own_batch_norm(op) : op.fn;
    s.in = op.in;
    s.out = op.out;
    plan_.steps.push_back(std::move(s));
    ++plan_.stats.replayed;
  }

  // A test-mode BatchNorm reads its layer's running statistics when it runs. The plan replays a
  // BatchNorm of its own instead, made by F::batch_norm on copies of them (and the recorded eps and
  // decay), so that it keeps them as it keeps its copies of the weights.
  std::shared_ptr<Function> own_batch_norm(const Op& op) {
    const FunctionAttr *rm = find_attr(op, "running_mean"), *rv = find_attr(op, "running_var");
    if (!rm || !rv || !std::holds_alternative<Tensor>(*rm) || !std::holds_alternative<Tensor>(*rv) || op.in.size() != 3)
      return op.fn;
    Tensor mean = std::get<Tensor>(*rm).copy(), var = std::get<Tensor>(*rv).copy();
    auto like = [&](int v) {
      Tensor t = Tensor::empty(val(v).shape, val(v).dtype, val(v).device);
      t.fill_(0.0);
      return Variable(t);
    };
    auto bp = using_config("enable_backprop", true);
    auto tm = test_mode();
    const Variable y = F::batch_norm(like(op.in[0]), like(op.in[1]), like(op.in[2]), mean, var,
                                     real_attr(op, "decay", 0.9), real_attr(op, "eps", 2e-5));
    std::shared_ptr<Function> fn = y.creator();
    return fn && fn->name() == op.name ? fn : op.fn;
  }

  // The ops oneDNN runs; false: replay op i.
  bool to_program(int i) {
    Op& op = ops_[static_cast<std::size_t>(i)];
    if (op.out.size() != 1 || op.out[0] < 0) return false;
    for (int v : op.in)
      if (!host_f32(v)) return false;
    const std::string& n = op.name;
    if (n == "Conv2d") return conv(i);
    if (n == "Pad") return padded_pool(i);
    if (n == "Pooling" || n == "AveragePooling") return pool(i, n == "Pooling", {0, 0}, {0, 0});
    if (n == "Mean") return global_average(i);
    PostOp p;
    if (eltwise_of(op, p)) return eltwise(i, p);
    if (n == "HardSigmoid") return gate_of_program_value(i);
    if (n == "Add" || n == "Mul") return binary(i, n == "Mul");
    if (n == "Concat") return concat(i);
    if (n == "BatchNorm") return batch_norm(i);
    if (n == "GetItem") return channel_slice(i);
    if (n == "Reshape") return channel_shuffle(i);
    return false;
  }

  // x[:, a:b] of an (N, C, H, W) value the program holds (ShuffleNet's split): a copy of a view.
  bool channel_slice(int i) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    const int x = op.in[0];
    const FunctionAttr* kinds = find_attr(op, "index");
    if (!in_program(x) || val(x).shape.ndim() != 4 || !kinds || !std::holds_alternative<std::string>(*kinds))
      return false;
    const std::string& k = std::get<std::string>(*kinds);  // slices only: [:, a:b] or the importer's [:, a:b, :, :]
    if (k.size() < 2 || k.size() > 4 || k.find_first_not_of('s') != std::string::npos) return false;
    constexpr i64 kNone = std::numeric_limits<i64>::min();
    const std::vector<i64> starts = ints_attr(op, "starts"), stops = ints_attr(op, "stops"), steps = ints_attr(op, "steps");
    const i64 C = val(x).shape[1];
    for (std::size_t ax = 0; ax < k.size(); ++ax) {
      if (steps[ax] != 1) return false;
      if (ax == 1) continue;
      const bool whole = (starts[ax] == kNone || starts[ax] == 0) &&
                         (stops[ax] == kNone || stops[ax] >= val(x).shape[static_cast<int>(ax)]);
      if (!whole) return false;
    }
    auto bound = [C](i64 v, i64 none) { return v == kNone ? none : std::clamp(v < 0 ? v + C : v, i64{0}, C); };
    const i64 a = bound(starts[1], 0), b = bound(stops[1], C);
    const Shape& ys = val(op.out[0]).shape;
    if (ys.ndim() != 4 || ys[1] != b - a) return false;
    const int r = plan_.prog->slice(val(x).dnn, 1, a, b);
    if (r < 0) return false;
    finish(op.out[0], r, {});
    return true;
  }

  // ShuffleNet's channel shuffle: Reshape (N, C, H, W) -> (N, g, C/g, H, W), Transpose(0, 2, 1, 3, 4),
  // Reshape -> (N, C, H, W), each read once: oneDNN's shuffle, groups of C/g.
  bool channel_shuffle(int i) {
    const Op& r1 = ops_[static_cast<std::size_t>(i)];
    const int x = r1.in[0];
    const Shape& xs = val(x).shape;
    const Shape& s5 = val(r1.out[0]).shape;
    if (!in_program(x) || xs.ndim() != 4 || s5.ndim() != 5 || s5[0] != xs[0] || s5[1] * s5[2] != xs[1] ||
        s5[3] != xs[2] || s5[4] != xs[3] || !single_use(r1.out[0]))
      return false;
    const int t = val(r1.out[0]).consumers[0];
    const Op& tr = ops_[static_cast<std::size_t>(t)];
    if (tr.name != "Transpose" || ints_attr(tr, "axes") != std::vector<i64>{0, 2, 1, 3, 4} || !single_use(tr.out[0]))
      return false;
    const int r2i = val(tr.out[0]).consumers[0];
    const Op& r2 = ops_[static_cast<std::size_t>(r2i)];
    if (r2.name != "Reshape" || val(r2.out[0]).shape != xs) return false;
    const int r = plan_.prog->shuffle(val(x).dnn, 1, s5[2]);
    if (r < 0) return false;
    finish(r2.out[0], r, {t, r2i});
    return true;
  }

  // The single-use element-wise ops after v: their PostOps, the ops and the last value.
  int absorb_eltwise(int y, std::vector<PostOp>& post, std::vector<int>& absorbed) {
    while (opt_.fuse) {
      if (take_gate(y, post, absorbed)) continue;
      PostOp p;
      if (!single_use(y)) break;
      const int c = val(y).consumers[0];
      if (!eltwise_of(ops_[static_cast<std::size_t>(c)], p) || !host_f32(ops_[static_cast<std::size_t>(c)].out[0])) break;
      post.push_back(p);
      absorbed.push_back(c);
      y = ops_[static_cast<std::size_t>(c)].out[0];
    }
    return y;
  }
  // y * g(y) with g = Sigmoid (SiLU, EfficientNet's swish) or HardSigmoid(1/6, 1/2) (HardSwish as
  // PyTorch writes it at opset 13), y read by exactly those two ops: the op, the Mul's output, or -1.
  int gated(int y, PostOp& p, std::vector<int>& ops) {
    if (!opt_.fuse || val(y).output || val(y).consumers.size() != 2) return -1;
    for (int k = 0; k < 2; ++k) {
      const int g = val(y).consumers[static_cast<std::size_t>(k)], m = val(y).consumers[static_cast<std::size_t>(1 - k)];
      const Op &gop = ops_[static_cast<std::size_t>(g)], &mop = ops_[static_cast<std::size_t>(m)];
      if (gop.in.size() != 1 || gop.out.size() != 1 || !single_use(gop.out[0]) || mop.name != "Mul" ||
          mop.in.size() != 2 || val(gop.out[0]).consumers[0] != m)
        continue;
      if (!((mop.in[0] == y && mop.in[1] == gop.out[0]) || (mop.in[1] == y && mop.in[0] == gop.out[0]))) continue;
      if (val(mop.out[0]).shape != val(y).shape || !host_f32(mop.out[0])) continue;
      if (gop.name == "Sigmoid") {
        p = {PostOp::Swish, 1.f, 0.f, -1};
      } else if (gop.name == "HardSigmoid" && std::abs(real_attr(gop, "alpha", 0) - 1.0 / 6) < 1e-6 &&
                 std::abs(real_attr(gop, "beta", 0) - 0.5) < 1e-12) {
        p = {PostOp::HardSwish, 0.f, 0.f, -1};
      } else {
        continue;
      }
      ops.push_back(g);
      ops.push_back(m);
      return mop.out[0];
    }
    return -1;
  }
  // A gate after y (gated()) taken into `post`: y moves to the gate's product.
  bool take_gate(int& y, std::vector<PostOp>& post, std::vector<int>& absorbed) {
    PostOp p;
    const int z = gated(y, p, absorbed);
    if (z < 0) return false;
    post.push_back(p);
    y = z;
    return true;
  }
  void finish(int y, int r, const std::vector<int>& absorbed) {
    val(y).dnn = r;
    for (int c : absorbed) ops_[static_cast<std::size_t>(c)].done = true;
    plan_.stats.fused += absorbed.size();
    ++plan_.stats.onednn;
  }

  bool conv(int i) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    const int x = op.in[0], W = op.in[1], b = op.in.size() > 2 ? op.in[2] : -1;
    if (op.in.size() < 2 || !val(W).constant || (b >= 0 && !val(b).constant) || val(x).shape.ndim() != 4 ||
        val(W).shape.ndim() != 4)
      return false;
    const std::vector<i64> st = ints_attr(op, "stride"), pd = ints_attr(op, "pad");
    if (st.size() != 2 || pd.size() != 2) return false;
    const Shape &xs = val(x).shape, &ws = val(W).shape;
    detail::ConvGeom g;
    g.n = xs[0], g.c = xs[1], g.h = xs[2], g.w = xs[3];
    g.oc = ws[0], g.kh = ws[2], g.kw = ws[3];
    g.sh = st[0], g.sw = st[1], g.ph = pd[0], g.pw = pd[1];
    g.groups = int_attr(op, "groups", 1);
    int y = op.out[0];
    g.oh = val(y).shape[2], g.ow = val(y).shape[3];
    std::vector<float> Wf = floats_of(val(W).data), bf;
    if (b >= 0) bf = floats_of(val(b).data);
    std::vector<PostOp> post;
    std::vector<int> absorbed;
    std::size_t folded = 0;
    bool summed = false;
    while (true) {
      if (take_gate(y, post, absorbed)) continue;
      PostOp p;
      if (!single_use(y)) break;
      const int c = val(y).consumers[0];
      const Op& cop = ops_[static_cast<std::size_t>(c)];
      if (opt_.fold_batch_norm && post.empty() && cop.name == "BatchNorm" && fold(cop, y, Wf, bf, g)) {
        ++folded;
      } else if (opt_.fuse && eltwise_of(cop, p)) {
        post.push_back(p);
      } else if (opt_.fuse && !summed && cop.name == "Add" && cop.in.size() == 2 && cop.in[0] != cop.in[1]) {
        const int other = cop.in[0] == y ? cop.in[1] : cop.in[0];
        if (!host_f32(other) || val(other).shape != val(y).shape || val(cop.out[0]).shape != val(y).shape ||
            !ready(other))
          break;
        p.kind = PostOp::Sum;
        p.value = program_value(other);
        post.push_back(p);
        summed = true;
      } else {
        break;
      }
      absorbed.push_back(c);
      y = cop.out[0];
      if (!host_f32(y)) return false;
    }
    const int px = program_value(x);
    const float* bias = bf.empty() ? nullptr : bf.data();
    // Where oneDNN has no kernel with all these post-ops (HardSwish before a sum on AVX2), the
    // longest prefix it has, and the rest as steps of their own.
    int r = -1;
    std::size_t k = post.size();
    for (;; --k) {
      r = plan_.prog->conv(px, g, Wf.data(), bias,
                           std::vector<PostOp>(post.begin(), post.begin() + static_cast<std::ptrdiff_t>(k)));
      if (r >= 0 || k == 0) break;
    }
    for (std::size_t j = k; j < post.size() && r >= 0; ++j)
      r = post[j].kind == PostOp::Sum ? plan_.prog->add(r, post[j].value, {}) : plan_.prog->eltwise(r, {post[j]});
    if (r < 0) return false;
    finish(y, r, absorbed);
    plan_.stats.folded += folded;
    plan_.stats.fused -= folded;
    return true;
  }

  // A test-mode batch norm of y (the convolution's output, (N, OC, OH, OW)) folded into W and b.
  bool fold(const Op& bn, int y, std::vector<float>& W, std::vector<float>& b, const detail::ConvGeom& g) {
    if (int_attr(bn, "train", 1) != 0 || bn.in.size() != 3 || bn.in[0] != y) return false;
    const FunctionAttr *rm = find_attr(bn, "running_mean"), *rv = find_attr(bn, "running_var");
    if (!rm || !rv || !std::holds_alternative<Tensor>(*rm) || !std::holds_alternative<Tensor>(*rv)) return false;
    if (!val(bn.in[1]).constant || !val(bn.in[2]).constant) return false;
    const std::vector<float> mean = floats_of(std::get<Tensor>(*rm)), var = floats_of(std::get<Tensor>(*rv)),
                             gamma = floats_of(val(bn.in[1]).data), beta = floats_of(val(bn.in[2]).data);
    const auto oc = static_cast<std::size_t>(g.oc);
    if (mean.size() != oc || var.size() != oc || gamma.size() != oc || beta.size() != oc) return false;
    const double eps = real_attr(bn, "eps", 1e-5);
    if (b.empty()) b.assign(oc, 0.f);
    const std::size_t per = W.size() / oc;
    for (std::size_t o = 0; o < oc; ++o) {
      const double s = gamma[o] / std::sqrt(static_cast<double>(var[o]) + eps);
      for (std::size_t k = 0; k < per; ++k) W[o * per + k] = static_cast<float>(W[o * per + k] * s);
      b[o] = static_cast<float>((b[o] - mean[o]) * s + beta[o]);
    }
    return true;
  }

  bool pool(int i, bool max, std::vector<i64> extra_tl, std::vector<i64> extra_br, int x = -1) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    if (x < 0) x = op.in[0];
    const std::vector<i64> k = ints_attr(op, "kernel_size"), s = ints_attr(op, "stride"), p = ints_attr(op, "pad");
    if (k.size() != 2 || s.size() != 2 || p.size() != 2 || val(x).shape.ndim() != 4) return false;
    // DeZero's max pooling pads with zeros, which a max pool of oneDNN's does not see.
    if (max && (p[0] || p[1])) return false;
    std::vector<i64> tl{p[0] + extra_tl[0], p[1] + extra_tl[1]}, br{p[0] + extra_br[0], p[1] + extra_br[1]};
    std::vector<PostOp> post;
    std::vector<int> absorbed;
    const int y = absorb_eltwise(op.out[0], post, absorbed);
    int r = plan_.prog->pool(program_value(x), max, k, s, tl, br);
    if (r < 0 || dims_of(val(op.out[0]).shape) != plan_.prog->dims(r)) return false;
    if (!post.empty()) r = plan_.prog->eltwise(r, post);
    if (r < 0) return false;
    finish(y, r, absorbed);
    return true;
  }

  // Pad(-inf) -> Pooling (the importer's MaxPool), Pad(0) -> AveragePooling: one pool with padding.
  bool padded_pool(int i) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    const int y = op.out[0];
    if (!single_use(y) || val(op.in[0]).shape.ndim() != 4) return false;
    const std::vector<i64> pads = ints_attr(op, "pads");
    const double value = real_attr(op, "value", 0.0);
    if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5]) return false;
    for (i64 p : pads)
      if (p < 0) return false;
    const int c = val(y).consumers[0];
    const std::string& cn = ops_[static_cast<std::size_t>(c)].name;
    const bool max = cn == "Pooling" && std::isinf(value) && value < 0;
    const bool avg = cn == "AveragePooling" && value == 0.0;
    if (!max && !avg) return false;
    if (!pool(c, max, {pads[2], pads[3]}, {pads[6], pads[7]}, op.in[0])) return false;
    ops_[static_cast<std::size_t>(c)].done = true;
    ++plan_.stats.fused;
    return true;
  }

  // Mean over (H, W) of an (N, C, H, W) value the program holds: an average pool over the whole image.
  bool global_average(int i) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    const int x = op.in[0];
    const std::vector<i64> axes = ints_attr(op, "axes");
    if (!in_program(x) || val(x).shape.ndim() != 4 || axes != std::vector<i64>{2, 3}) return false;
    const Shape& s = val(x).shape;
    int r = plan_.prog->pool(val(x).dnn, false, {s[2], s[3]}, {1, 1}, {0, 0}, {0, 0});
    if (r < 0) return false;
    finish(op.out[0], r, {});
    return true;
  }

  bool eltwise(int i, const PostOp& first) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    if (!in_program(op.in[0])) return false;
    if (gate_of_program_value(i)) return true;
    std::vector<PostOp> post{first};
    std::vector<int> absorbed;
    const int y = absorb_eltwise(op.out[0], post, absorbed);
    const int r = plan_.prog->eltwise(val(op.in[0]).dnn, post);
    if (r < 0) return false;
    finish(y, r, absorbed);
    return true;
  }

  // Op i is the g of y * g(y) for a y the program holds: the pair as one swish / hardswish.
  bool gate_of_program_value(int i) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    PostOp p;
    std::vector<int> absorbed;
    const int y0 = op.in[0];
    if (op.in.size() != 1 || !in_program(y0)) return false;
    const int z = gated(y0, p, absorbed);
    if (z < 0 || absorbed.empty() || absorbed[0] != i) return false;
    std::vector<PostOp> post{p};
    absorbed.erase(absorbed.begin());  // op i itself is marked done by lower()
    const int y = absorb_eltwise(z, post, absorbed);
    const int r = plan_.prog->eltwise(val(y0).dnn, post);
    if (r < 0) return false;
    finish(y, r, absorbed);
    plan_.stats.fused += 1;
    return true;
  }

  // Add and Mul: a program value of the result's shape, and the other operand of that shape or
  // broadcast along axes of 1 (the same number of axes).
  bool binary(int i, bool mul) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    if (op.in.size() != 2) return false;
    const Shape& s = val(op.out[0]).shape;
    int a = op.in[0], b = op.in[1];
    if (!(in_program(a) && val(a).shape == s)) std::swap(a, b);  // the full-shaped program operand first
    if (!(in_program(a) && val(a).shape == s) || val(b).shape.ndim() != s.ndim()) return false;
    std::vector<PostOp> post;
    std::vector<int> absorbed;
    const int y = absorb_eltwise(op.out[0], post, absorbed);
    const int pa = program_value(a), pb = program_value(b);
    const int r = mul ? plan_.prog->mul(pa, pb, post) : plan_.prog->add(pa, pb, post);
    if (r < 0) return false;
    finish(y, r, absorbed);
    return true;
  }

  bool concat(int i) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    const i64 axis = int_attr(op, "axis", 0);
    bool any = false;
    for (int v : op.in) any = any || in_program(v);
    if (!any || axis < 0 || axis >= val(op.out[0]).shape.ndim()) return false;
    std::vector<int> xs;
    for (int v : op.in) xs.push_back(program_value(v));
    const int r = plan_.prog->concat(xs, static_cast<int>(axis));
    if (r < 0) return false;
    finish(op.out[0], r, {});
    return true;
  }

  bool batch_norm(int i) {
    const Op& op = ops_[static_cast<std::size_t>(i)];
    if (int_attr(op, "train", 1) != 0 || op.in.size() != 3 || !in_program(op.in[0])) return false;
    const FunctionAttr *rm = find_attr(op, "running_mean"), *rv = find_attr(op, "running_var");
    if (!rm || !rv || !std::holds_alternative<Tensor>(*rm) || !std::holds_alternative<Tensor>(*rv)) return false;
    if (!val(op.in[1]).constant || !val(op.in[2]).constant) return false;
    const std::vector<float> mean = floats_of(std::get<Tensor>(*rm)), var = floats_of(std::get<Tensor>(*rv)),
                             gamma = floats_of(val(op.in[1]).data), beta = floats_of(val(op.in[2]).data);
    const auto C = static_cast<std::size_t>(val(op.in[0]).shape[1]);
    if (mean.size() != C || var.size() != C || gamma.size() != C || beta.size() != C) return false;
    const int r = plan_.prog->batch_norm(val(op.in[0]).dnn, gamma.data(), beta.data(), mean.data(), var.data(),
                                         static_cast<float>(real_attr(op, "eps", 1e-5)));
    if (r < 0) return false;
    finish(op.out[0], r, {});
    return true;
  }
};

}  // namespace

void build_plan(Plan::Impl& plan, const CompileOptions& options, const VariableList& xs, const VariableList& ys,
                const std::vector<Parameter>* params, const char* who) {
  Compiler c(plan, options);
  c.record(xs, ys, params, who);
  c.lower(/*replay_only=*/params != nullptr);
  plan.kernels = lower_kernels(plan);
  summarize(plan);
}

}  // namespace dezero::detail::plan
