// dezero/cpu/onednn_program.cpp - a fixed-shape program of oneDNN primitives (onednn_program.hpp):
// its values, memory planning and running; the ops themselves are in onednn_program_ops.cpp.
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

#include <numeric>
#include <sstream>

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/onednn_program_impl.hpp"

namespace dezero::detail::cpu {

namespace program {

namespace {
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

}  // namespace

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

}  // namespace program

using namespace program;

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
