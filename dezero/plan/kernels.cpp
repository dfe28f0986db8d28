// dezero/plan/kernels.cpp - a plan whose every op is one backend call on buffers planned once
// (kernel program): a small network's training step (W3's 2-10-1 MLP: Linear, Sigmoid, Linear,
// MeanSquaredError and the 11 Functions of its backward) replays with no Tensor made, no
// Function called and no check repeated per op; only the outputs are new tensors.
//
// An op becomes a kernel when it is the Function's own fast path as one backend call on
// contiguous operands of one float dtype:
//   Linear (x W + b: NnKernels::gemm_bias, matmul_t's call), MatMul (2-D, transpose
//   flags), Add/Sub/Mul/Div (broadcast views made once) and their constant forms (x + c, x * c,
//   c - x, c / x), Neg/Exp/Tanh/Sigmoid/ReLU/ReLUMask, SumTo (one block of summed axes),
//   MeanSquaredError (NnKernels::mse_forward)
// and compile checks each kernel on the recorded run: its result must equal the Function's
// recorded output bit for bit, or the plan keeps replaying Functions. So the kernels compute what
// forward() computes, in the same order, and a kernel program is bit-equal to the unplanned run.
// The program is used only when every op of the plan is a kernel (no oneDNN step, no replay): the
// CPU, float32 or float64, no autocast.
#include <cstring>
#include <utility>

#include "dezero/fail.hpp"
#include "dezero/plan/plan_impl.hpp"
#include "dezero/tensor/strided.hpp"

namespace dezero::detail::plan {

namespace {

using i64 = std::int64_t;

bool binary_of(const std::string& name, BinaryOp& op) {
  if (name == "Add") op = BinaryOp::Add;
  else if (name == "Sub") op = BinaryOp::Sub;
  else if (name == "Mul") op = BinaryOp::Mul;
  else if (name == "Div") op = BinaryOp::Div;
  else return false;
  return true;
}

bool unary_of(const std::string& name, UnaryOp& op) {
  if (name == "Neg") op = UnaryOp::Neg;
  else if (name == "Exp") op = UnaryOp::Exp;
  else if (name == "Tanh") op = UnaryOp::Tanh;
  else if (name == "Sigmoid") op = UnaryOp::Sigmoid;
  else if (name == "ReLU") op = UnaryOp::Relu;
  else if (name == "ReLUMask") op = UnaryOp::GtScalar;  // x > 0
  else return false;
  return true;
}

// The constant forms x + c, x * c, c - x, c / x (arithmetic.cpp's AddConst, MulConst, RSubConst,
// RDivConst: one input and the attribute "c"), as the tensor operators run them.
bool scalar_of(const std::string& name, UnaryOp& op) {
  if (name == "Add") op = UnaryOp::AddScalar;
  else if (name == "Mul") op = UnaryOp::MulScalar;
  else if (name == "Sub") op = UnaryOp::RSubScalar;
  else if (name == "Div") op = UnaryOp::RDivScalar;
  else return false;
  return true;
}

const FunctionAttr* attr_of(const FunctionAttrs& attrs, const char* key) {
  for (const auto& kv : attrs)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

// Op `s` as a kernel on the recorded shapes, or false.
bool make_kernel(const Plan::Impl& plan, const Plan::Impl::Step& s, Kernel& k) {
  if (s.program || !s.fn || s.out.size() != 1 || s.out[0] < 0 || s.in.empty() || s.in.size() > 3) return false;
  const Val& y = plan.vals[static_cast<std::size_t>(s.out[0])];
  const DType dt = y.dtype;
  if ((dt != float32 && dt != float64) || !y.device.is_cpu() || y.shape.numel() == 0) return false;
  for (int v : s.in) {
    const Val& x = plan.vals[static_cast<std::size_t>(v)];
    if (x.dtype != dt || !x.device.is_cpu() || x.shape.numel() == 0) return false;
  }
  auto shape = [&](std::size_t i) -> const Shape& { return plan.vals[static_cast<std::size_t>(s.in[i])].shape; };
  k.name = s.fn->name();
  k.dt = dt;
  k.be = &backend_for(y.device);
  k.y = s.out[0];
  for (std::size_t i = 0; i < s.in.size(); ++i) k.x[i] = s.in[i];
  k.count = y.shape.numel();
  if (s.in.size() == 1 && shape(0) == y.shape) {
    const FunctionAttrs attrs = s.fn->attributes();
    const FunctionAttr* c = attr_of(attrs, "c");
    k.kind = Kernel::Unary;
    if (attrs.empty() && unary_of(k.name, k.uop)) return true;
    if (attrs.size() == 1 && c && std::holds_alternative<double>(*c) && scalar_of(k.name, k.uop)) {
      k.scale = std::get<double>(*c);
      return true;
    }
    return false;
  }
  if (binary_of(k.name, k.bop) && s.in.size() == 2) {
    k.kind = Kernel::Binary;
    binary_views(shape(0), shape(1), y.shape, k.sa, k.sb, k.so);  // binary_op's views
    return true;
  }
  const bool low_precision = is_half(Config::autocast);  // the products would round their operands
  if (k.name == "MatMul" && s.in.size() == 2 && !low_precision && shape(0).ndim() == 2 && shape(1).ndim() == 2 &&
      y.shape.ndim() == 2) {
    const FunctionAttrs attrs = s.fn->attributes();
    const FunctionAttr *ta = attr_of(attrs, "transpose_a"), *tb = attr_of(attrs, "transpose_b");
    if (!ta || !tb || !std::holds_alternative<i64>(*ta) || !std::holds_alternative<i64>(*tb)) return false;
    k.kind = Kernel::Gemm;
    k.ta = std::get<i64>(*ta) != 0;
    k.tb = std::get<i64>(*tb) != 0;
    k.m = y.shape[0];
    k.n = y.shape[1];
    k.k = k.ta ? shape(0)[0] : shape(0)[1];
    k.lda = shape(0)[1];
    k.ldb = shape(1)[1];
    return (k.tb ? shape(1)[1] : shape(1)[0]) == k.k && (k.ta ? shape(0)[1] : shape(0)[0]) == k.m &&
           (k.tb ? shape(1)[0] : shape(1)[1]) == k.n;
  }
  if (k.name == "Linear" && s.in.size() == 3 && !low_precision && shape(0).ndim() == 2 && shape(1).ndim() == 2 &&
      shape(2).ndim() == 1 && y.shape.ndim() == 2) {
    k.kind = Kernel::GemmBias;
    k.m = y.shape[0];
    k.n = y.shape[1];
    k.k = shape(0)[1];
    k.lda = shape(0)[1];
    k.ldb = shape(1)[1];
    return shape(1)[0] == k.k && shape(2)[0] == k.n && shape(0)[0] == k.m && k.m > 0 && k.k > 0;
  }
  if (k.name == "SumTo" && s.in.size() == 1) {
    // sum_to's one block of summed axes (tensor/reduce.cpp): the leading extra axes, then axes of 1.
    const Shape& x = shape(0);
    const int lead = x.ndim() - y.shape.ndim();
    if (lead < 0) return false;
    int first = -1, last = -1, n = 0;
    for (int i = 0; i < x.ndim(); ++i) {
      const bool summed = i < lead || (y.shape[i - lead] == 1 && x[i] != 1);
      if (!summed) continue;
      if (first < 0) first = i;
      last = i;
      ++n;
    }
    if (n == 0 || last - first + 1 != n) return false;
    k.kind = Kernel::Reduce;
    k.outer = k.r = k.inner = 1;
    for (int i = 0; i < first; ++i) k.outer *= x[i];
    for (int i = first; i <= last; ++i) k.r *= x[i];
    for (int i = last + 1; i < x.ndim(); ++i) k.inner *= x[i];
    return true;
  }
  if (k.name == "MeanSquaredError" && s.in.size() == 2 && shape(0) == shape(1) && shape(0).ndim() >= 1 &&
      shape(0).numel() > 0) {
    k.kind = Kernel::Mse;
    k.count = shape(0).numel();
    k.scale = static_cast<double>(shape(0)[0]);
    return true;
  }
  return false;
}

}  // namespace

// Runs kernel `k` on the buffers `p` (one per value).
void run_kernel(const Kernel& k, void* const* p) {
  switch (k.kind) {
    case Kernel::Unary:
      k.be->unary(k.uop, k.dt, p[k.x[0]], p[k.y], k.count, k.scale);
      return;
    case Kernel::Binary:
      k.be->binary(k.bop, k.dt, p[k.x[0]], k.sa, p[k.x[1]], k.sb, p[k.y], k.so);
      return;
    case Kernel::Gemm:
      k.be->gemm(k.dt, k.ta, k.tb, k.m, k.n, k.k, 1.0, p[k.x[0]], k.lda, 0, p[k.x[1]], k.ldb, 0, 0.0, p[k.y], k.n, 0,
                 1);
      return;
    case Kernel::GemmBias:  // matmul_t's call
      k.be->nn().gemm_bias(k.dt, false, false, k.m, k.n, k.k, p[k.x[0]], k.lda, p[k.x[1]], k.ldb, p[k.x[2]], p[k.y],
                           k.n);
      return;
    case Kernel::Reduce:
      k.be->reduce(ReduceOp::Sum, k.dt, p[k.x[0]], p[k.y], k.outer, k.r, k.inner);
      return;
    case Kernel::Mse:  // mean_squared_error's call
      k.be->nn().mse_forward(k.dt, p[k.x[0]], p[k.x[1]], p[k.y], k.count, k.scale);
      return;
  }
}

std::unique_ptr<KernelProgram> lower_kernels(Plan::Impl& plan) {
  if (plan.steps.empty()) return nullptr;
  auto kp = std::make_unique<KernelProgram>();
  kp->ptr.assign(plan.vals.size(), nullptr);
  std::vector<Tensor> recorded(plan.vals.size());  // the recorded run's tensors, for the check
  for (const auto& s : plan.steps) {
    Kernel k;
    if (!make_kernel(plan, s, k)) return nullptr;
    const VariableList ins = s.fn->inputs(), outs = s.fn->outputs();
    if (ins.size() != s.in.size() || outs.size() != 1 || !outs[0].defined()) return nullptr;
    for (std::size_t i = 0; i < ins.size(); ++i) recorded[static_cast<std::size_t>(s.in[i])] = ins[i].data();
    recorded[static_cast<std::size_t>(s.out[0])] = outs[0].data();
    kp->kernels.push_back(std::move(k));
  }
  // Buffers: an op's output that is not an output of the plan gets one for the plan's life; the
  // outputs are new tensors at every call, written in place; constants are the plan's copies;
  // inputs and parameters are bound at each call. An output that no op makes: no kernel program.
  for (int v : plan.outputs)
    if (plan.vals[static_cast<std::size_t>(v)].producer < 0) return nullptr;
  for (std::size_t v = 0; v < plan.vals.size(); ++v) {
    const Val& val = plan.vals[v];
    if (val.constant && !val.live.defined()) kp->ptr[v] = val.data.raw_data();
    if (val.producer >= 0 && !val.output) {
      kp->buffers.push_back(Tensor::empty(val.shape, val.dtype, val.device));
      kp->ptr[v] = kp->buffers.back().raw_data();
    }
    if (val.constant && val.live.defined()) kp->params.push_back(static_cast<int>(v));
  }
  // Each kernel against the recorded run, bit for bit: on the recorded operands, into a scratch tensor.
  std::vector<void*> p(plan.vals.size(), nullptr);
  for (std::size_t v = 0; v < recorded.size(); ++v)
    if (recorded[v].defined()) p[v] = recorded[v].raw_data();
  for (const Kernel& k : kp->kernels) {
    const Tensor& want = recorded[static_cast<std::size_t>(k.y)];
    Tensor got = Tensor::empty(want.shape(), want.dtype(), want.device());
    void* keep = p[static_cast<std::size_t>(k.y)];
    p[static_cast<std::size_t>(k.y)] = got.raw_data();
    run_kernel(k, p.data());
    p[static_cast<std::size_t>(k.y)] = keep;
    if (std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()) != 0) return nullptr;
  }
  plan.stats.kernels = kp->kernels.size();
  return kp;
}

VariableList KernelProgram::run(const Plan::Impl& plan, const VariableList& xs) {
  for (std::size_t i = 0; i < plan.inputs.size(); ++i)
    ptr[static_cast<std::size_t>(plan.inputs[i])] = xs[i].data().raw_data();
  // A parameter is read where it is now (an optimizer may have given it new data): the same shape,
  // dtype and device as recorded, or an error.
  for (int v : params) {
    const Val& val = plan.vals[static_cast<std::size_t>(v)];
    const Tensor& d = val.live.data();
    if (!d.defined() || d.shape() != val.shape || d.dtype() != val.dtype || d.device() != val.device)
      fail<ValueError>("Plan", "a parameter recorded as ", val.shape, " ", val.dtype, " on ", val.device, " is now ",
                       d.defined() ? d.shape().str() + " " + dtype_name(d.dtype()) + " on " + d.device().str()
                                   : std::string("empty"),
                       "; hint: compile the step again after changing a parameter's shape, dtype or device");
    ptr[static_cast<std::size_t>(v)] = d.raw_data();
  }
  // The outputs: new tensors, written in place (the same value twice among them: one tensor, as a
  // replay returns).
  VariableList ys;
  ys.reserve(plan.outputs.size());
  for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
    std::size_t j = 0;
    while (plan.outputs[j] != plan.outputs[i]) ++j;
    if (j < i) {
      ys.push_back(ys[j]);
      continue;
    }
    const Val& val = plan.vals[static_cast<std::size_t>(plan.outputs[i])];
    Tensor y = Tensor::empty(val.shape, val.dtype, val.device);
    ptr[static_cast<std::size_t>(plan.outputs[i])] = y.raw_data();
    ys.push_back(Variable(std::move(y)));
  }
  for (const Kernel& k : kernels) run_kernel(k, ptr.data());
  return ys;
}

}  // namespace dezero::detail::plan
