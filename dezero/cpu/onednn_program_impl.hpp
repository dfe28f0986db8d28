// dezero/cpu/onednn_program_impl.hpp - what the two halves of OnednnProgram share: onednn_program.cpp
// (values, memory planning, running) and onednn_program_ops.cpp (the ops' primitives). The state
// (OnednnProgram::Impl) and the format helpers; only those two files include it, since only they
// see oneDNN's headers.
#pragma once

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dezero/cpu/onednn_engine.hpp"
#include "dezero/cpu/onednn_program.hpp"

namespace dezero::detail::cpu {

namespace program {
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;
using i64 = std::int64_t;
using Dims = OnednnProgram::Dims;

// A plain row-major desc of `d` (nchw for 4 axes).
memory::desc plain_md(const Dims& d);
// oneDNN's eltwise algorithm for a PostOp, and the PostOp's name in describe().
dnnl::algorithm eltwise_alg(PostOp::Kind k);
const char* post_name(PostOp::Kind k);
// A short name of a memory format for describe(): "nchw", "nhwc", "blocked:16b", ...
std::string format_of(const memory::desc& md);
// md's layout for other dims: the same order of strides (plain) or the same channel blocking
// (aBcd16b, ...); an undefined desc for a layout it does not know.
memory::desc same_layout(const memory::desc& md, const Dims& dims);

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

}  // namespace program

struct OnednnProgram::Impl {
  using memory = program::memory;
  using dt = program::dt;
  using tag = program::tag;
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
  std::vector<program::Block> weights;
  std::size_t weight_bytes = 0, arena_bytes = 0;
  program::Block arena, scratch;
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
    weights.push_back(program::Block::of(want.get_size()));
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
    Step& s = add_step(pd, "reorder " + program::format_of(fm) + " -> " + program::format_of(tm));
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
      what += "+" + std::string(program::post_name(p.kind));
      if (p.kind == PostOp::Sum) {
        check_value(p.value);
        po.append_sum(1.f);
        sums.push_back(p.value);
      } else {
        po.append_eltwise(1.f, program::eltwise_alg(p.kind), p.alpha, p.beta);
      }
    }
    return po;
  }
  // OnednnProgram::add and mul.
  int binary(bool mul, int a, int b, const std::vector<PostOp>& post);
  // Storage planning and argument maps (finalize).
  void plan_memory();
};

}  // namespace dezero::detail::cpu
