// dezero/cpu/onednn_program.hpp - a fixed-shape program of oneDNN primitives: the host's half of
// issue 47's plan (dezero/plan.hpp). plan/plan.cpp builds one from a recorded graph, op by op, then
// runs it on every call; nothing here sees a Tensor or a Function.
//
// What a program does that the per-call path (onednn_conv.cpp) cannot:
//   - weights are copied and reordered into the convolution's own format once, when it is added
//     (the per-call path reorders each weight at every call: ResNet18 at batch 1, 59 reorders);
//   - values stay in the formats the primitives choose (nChw16c on AVX-512, nChw8c on AVX2) from one
//     primitive to the next; a reorder runs only where a consumer wants another format, or where a
//     value leaves the program (to_external) or enters it (external);
//   - a convolution carries oneDNN post-ops: the element-wise ops after it (ReLU, Clip, HardSwish,
//     ...) and a sum (y += another value, ResNet's residual), so that each is not a pass of its own;
//   - memory is planned once (finalize): every internal value gets an offset in one arena, values
//     whose lives do not overlap share bytes, and a sum whose addend dies there is done in place.
//
// Values are float32. An external value is a plain row-major buffer (nchw for 4 axes) that the
// caller binds (bind) before each run: a value the program reads (external) or writes
// (to_external). Ops return the new value's id, or -1 where oneDNN has no primitive for them
// (the caller then runs its own code). The primitives split their work for the OpenMP threads of
// the moment they were made; run() uses those.
//
// Built only with oneDNN (onednn_program.cpp); onednn_stub.cpp's available() is false.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dezero/backend/backend.hpp"

namespace dezero::detail::cpu {

// One op after a convolution or an addition, in order: an element-wise op (oneDNN's eltwise
// post-op) or a sum with another value (y += that value, before the ops that follow it).
struct PostOp {
  enum Kind : int { Sum, Relu, Clip, HardSwish, Sigmoid, Tanh, GeluErf, GeluTanh, Swish };
  Kind kind = Relu;
  float alpha = 0, beta = 0;  // Relu: the negative slope; Clip: lo, hi; Swish: the factor
  int value = -1;             // Sum: the value added
};

class OnednnProgram {
 public:
  using Dims = std::vector<std::int64_t>;
  // Whether this build and machine have oneDNN (and DEZERO_ONEDNN is not 0).
  static bool available();

  OnednnProgram();
  ~OnednnProgram();
  OnednnProgram(const OnednnProgram&) = delete;
  OnednnProgram& operator=(const OnednnProgram&) = delete;

  // --- building (before finalize) ---------------------------------------------------------------
  // A plain value the caller binds before each run.
  int external(const Dims& dims);
  // y = conv(x, W) + b then `post`: g's geometry (float32, g.n ... g.groups), W (oc, c/groups, kh,
  // kw) plain, b (oc,) or nullptr; both copied now.
  int conv(int x, const ConvGeom& g, const float* W, const float* b, const std::vector<PostOp>& post);
  // Pooling over (kh, kw) with strides (sh, sw) and padding top, left, bottom, right: max (padding
  // never wins) or average (padding counted, DeZero's and count_include_pad's).
  int pool(int x, bool max, const Dims& kernel, const Dims& stride, const Dims& pad_tl, const Dims& pad_br);
  // ops (no Sum) on x.
  int eltwise(int x, const std::vector<PostOp>& ops);
  // a + b or a * b, then `post` (no Sum); b has a's dims, or 1 where it is broadcast (an SE
  // block's (N, C, 1, 1) gate).
  int add(int a, int b, const std::vector<PostOp>& post);
  int mul(int a, int b, const std::vector<PostOp>& post);
  // The values joined along `axis`.
  int concat(const std::vector<int>& xs, int axis);
  // x[..., start:stop, ...] along `axis` (a copy of a view of x, in x's layout); -1 for an
  // external x or a layout it cannot keep.
  int slice(int x, int axis, std::int64_t start, std::int64_t stop);
  // ShuffleNet's channel shuffle: axis `axis` seen as (C / group_size, group_size), transposed.
  int shuffle(int x, int axis, std::int64_t group_size);
  // Batch normalization in inference: gamma (x - mean) / sqrt(var + eps) + beta over axis 1.
  int batch_norm(int x, const float* gamma, const float* beta, const float* mean, const float* var, float eps);
  // A plain external value that receives v at this point of the run.
  int to_external(int v);
  // Plans the memory; no op can be added after it.
  void finalize();

  // --- running ------------------------------------------------------------------------------------
  const Dims& dims(int v) const;
  // Binds an external value to the caller's buffer (its dims' float32 elements, row-major).
  void bind(int v, void* data);
  // Runs steps [first, last) (step_count() after an op says where it ends).
  void run(std::size_t first, std::size_t last);
  std::size_t step_count() const;

  // --- reporting ------------------------------------------------------------------------------------
  // One line per step: the primitive, its implementation and formats.
  std::string describe() const;
  // The arena's bytes (after finalize), the weights' bytes, the reorders among the steps.
  std::size_t arena_bytes() const;
  std::size_t weight_bytes() const;
  std::size_t reorder_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dezero::detail::cpu
