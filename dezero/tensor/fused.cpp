// dezero/tensor/fused.cpp - validation + dispatch of tensor/fused.hpp: softmax, leaky
// relu, the sigmoid and relu backward, the softmax cross entropy, the optimizer
// updates (one backend call per parameter, or per group of many) and the host ->
// device copy, one backend call each.
//
// The math lives in the backends (cpu/, cuda/; the element formulas in
// backend/ops.hpp); this file only checks operands, allocates the result and passes
// raw pointers. matmul_t, declared beside these, is in linalg.cpp.
#include "dezero/tensor/fused.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::detail {

namespace {
Tensor float_input(const char* op, const Tensor& x) {
  check_defined(op, x);
  return is_integer(x.dtype()) ? x.astype(float64) : x;
}
// The dtypes the backend's one-call forms take (float32, float64); the others (integers,
// whose mean is float64, and the 16-bit floats, computed in float32) go through the Tensor ops.
bool is_wide_float(DType dt) { return dt == DType::Float32 || dt == DType::Float64; }
}  // namespace

// --- softmax / log_softmax -------------------------------------------------------------
Tensor softmax(const Tensor& x0, int axis, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  Tensor x = float_input(op, x0);
  if (is_half(x.dtype())) return half_result(softmax(x.astype(float32), axis, log), x.dtype());
  if (x.ndim() == 0) detail::fail<ShapeError>(op, "expected at least a 1-d array, got a 0-d array");
  int a = normalize_axis(op, axis, x.ndim());
  std::int64_t outer = 1, inner = 1, c = x.shape()[a];
  for (int i = 0; i < a; ++i) outer *= x.shape()[i];
  for (int i = a + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (y.size()) backend_of(x).softmax(x.dtype(), x.raw_data(), y.raw_data(), outer, c, inner, log);
  return y;
}

// --- leaky relu ------------------------------------------------------------------------
namespace {
Tensor leaky(UnaryOp opc, const char* op, const Tensor& x0, double slope) {
  Tensor x = float_input(op, x0);
  if (is_half(x.dtype())) return half_result(leaky(opc, op, x.astype(float32), slope), x.dtype());
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (y.size()) backend_of(x).unary(opc, x.dtype(), x.raw_data(), y.raw_data(), y.size(), slope);
  return y;
}
}  // namespace
Tensor leaky_relu(const Tensor& x, double slope) { return leaky(UnaryOp::LeakyRelu, "leaky_relu", x, slope); }
Tensor leaky_relu_mask(const Tensor& x, double slope) { return leaky(UnaryOp::LeakyMask, "leaky_relu", x, slope); }

// --- sigmoid and relu backward (steps 43 and 47's networks) ----------------------------
namespace {
// gy (op) y element by element when both have the same shape and dtype; else nothing.
Tensor fused_grad(BinaryOp op, const char* name, const Tensor& gy, const Tensor& y) {
  check_defined(name, gy);
  check_defined(name, y);
  if (gy.shape() != y.shape() || gy.dtype() != y.dtype()) return Tensor();
  check_same_device(name, gy, y);
  if (is_half(y.dtype()))  // fused in float32, rounded once
    return half_result(fused_grad(op, name, gy.astype(float32), y.astype(float32)), y.dtype());
  Tensor gx = Tensor::empty(y.shape(), y.dtype(), y.device());
  if (gx.size()) {
    Strided s = make_contiguous(Shape{y.size()});  // one flat run: the contiguous fast path
    backend_of(y).binary(op, y.dtype(), gy.raw_data(), s, y.raw_data(), s, gx.raw_data(), s);
  }
  return gx;
}
}  // namespace

Tensor sigmoid_grad(const Tensor& gy, const Tensor& y) {
  Tensor gx = fused_grad(BinaryOp::SigmoidGrad, "sigmoid_grad", gy, y);
  return gx.defined() ? gx : gy * y * (1.0 - y);
}

Tensor relu_grad(const Tensor& gy, const Tensor& x) {
  Tensor gx = fused_grad(BinaryOp::ReluGrad, "relu_grad", gy, x);
  return gx.defined() ? gx : gy * greater(x, 0.0);
}

Tensor squared_difference(const Tensor& a, const Tensor& b) {
  Tensor y = fused_grad(BinaryOp::SquaredDiff, "squared_difference", a, b);
  return y.defined() ? y : square(a - b);
}

// --- mean squared error (step 42) ------------------------------------------------------
Tensor mean_squared_error(const Tensor& x0, const Tensor& x1) {
  check_defined("mean_squared_error", x0);
  check_defined("mean_squared_error", x1);
  check_same_device("mean_squared_error", x0, x1);
  if (x0.shape() == x1.shape() && x0.dtype() == x1.dtype() && is_wide_float(x0.dtype()) && x0.ndim() >= 1 &&
      x0.size() > 0) {
    Tensor loss = Tensor::empty(Shape{}, x0.dtype(), x0.device());
    backend_of(x0).nn().mse_forward(x0.dtype(), x0.raw_data(), x1.raw_data(), loss.raw_data(), x0.size(),
                                    static_cast<double>(x0.shape()[0]));
    return loss;
  }
  Tensor sq = squared_difference(x0, x1);
  if (sq.ndim() == 0)
    detail::fail<ShapeError>("mean_squared_error",
                             "expected at least a 1-d array (the loss divides by its first axis), got ",
                             describe(sq));
  return sum(sq) / static_cast<double>(sq.shape()[0]);
}

Tensor mean_squared_error_grad(const Tensor& gy, const Tensor& x0, const Tensor& x1) {
  check_defined("mean_squared_error", gy);
  if (x0.shape() == x1.shape() && x0.dtype() == x1.dtype() && gy.dtype() == x0.dtype() && is_wide_float(x0.dtype()) &&
      gy.size() == 1 && gy.ndim() <= x0.ndim() && x0.ndim() >= 1 && x0.size() > 0 && gy.device() == x0.device() &&
      x1.device() == x0.device()) {
    Tensor gx = Tensor::empty(x0.shape(), x0.dtype(), x0.device());
    backend_of(x0).nn().mse_backward(x0.dtype(), x0.raw_data(), x1.raw_data(), gy.raw_data(), gx.raw_data(),
                                     x0.size(), 2.0 / static_cast<double>(x0.shape()[0]));
    return gx;
  }
  Tensor diff = x0 - x1;
  return gy * diff * (2.0 / static_cast<double>(diff.shape()[0]));
}

// --- softmax cross entropy -------------------------------------------------------------
namespace {
void check_logits(const char* op, const Tensor& x) {
  check_defined(op, x);
  if (!is_floating(x.dtype()))
    detail::fail<DtypeError>(op, "logits must be float32 or float64, got ", describe(x),
                             "; hint: x.astype(dezero::float32)");
  if (x.ndim() != 2)
    detail::fail<ShapeError>(op, "logits must be 2-d (N, C), got ", describe(x), "; hint: reshape to (N, C) first");
  if (x.shape()[1] == 0) detail::fail<ShapeError>(op, "logits ", describe(x), " have no classes");
}
}  // namespace

Tensor sce_labels(const char* op, const Tensor& x, const Tensor& t) {
  check_logits(op, x);
  check_defined(op, t);
  check_same_device(op, x, t);
  if (!is_integer(t.dtype()))
    detail::fail<DtypeError>(op, "labels must be int32 or int64 class ids, got ", describe(t),
                             "; hint: t.astype(dezero::int64)");
  const std::int64_t n = x.shape()[0], c = x.shape()[1];
  if (t.size() != n)
    detail::fail<ShapeError>(op, "logits ", describe(x), " need ", std::to_string(n), " labels, got ", describe(t));
  Tensor t64 = (t.dtype() == int64 ? t : t.astype(int64)).reshape(Shape{n});
  if (auto bad = find_bad_index(t64, 0, c))
    detail::fail<IndexError>(op, "label ", std::to_string(bad->value), " at position ", std::to_string(bad->position),
                             " is out of range for ", std::to_string(c), " classes (logits ", describe(x),
                             "); hint: labels must be in [0, ", std::to_string(c), ")");
  return t64;
}

Tensor softmax_cross_entropy(const Tensor& x, const Tensor& t) {
  if (is_half(x.dtype())) return half_result(softmax_cross_entropy(x.astype(float32), t), x.dtype());
  Tensor loss = Tensor::empty(Shape{}, x.dtype(), x.device());
  backend_of(x).softmax_cross_entropy(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(t.raw_data()),
                                      loss.raw_data(), x.shape()[0], x.shape()[1]);
  return loss;
}

Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy0) {
  const char* op = "softmax_cross_entropy_grad";
  check_defined(op, gy0);
  check_same_device(op, x, gy0);
  if (gy0.size() != 1)
    detail::fail<ShapeError>(op, "the loss gradient must have one element, got ", describe(gy0));
  if (is_half(x.dtype()))
    return half_result(softmax_cross_entropy_grad(x.astype(float32), t, half_operand(gy0, x.dtype())), x.dtype());
  Tensor gy = gy0.dtype() == x.dtype() ? gy0 : gy0.astype(x.dtype());
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (gx.size())
    backend_of(x).softmax_cross_entropy_grad(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(t.raw_data()),
                                             gy.raw_data(), gx.raw_data(), x.shape()[0], x.shape()[1]);
  return gx;
}

// --- optimizer updates -----------------------------------------------------------------
namespace {
// The checks of one parameter's update, before any backend call: defined tensors, a
// floating parameter, grad and the rule's `nstate` state tensors like it (ShapeError,
// DtypeError or DeviceError for the first property that differs). `index` names the
// item of a multi-tensor update in the messages (-1: a single update); the strings are
// built only on failure, so a check allocates nothing.
void check_update(std::ptrdiff_t index, const Tensor* param, const Tensor* grad, const Tensor* s1, const Tensor* s2,
                  int nstate) {
  auto where = [&] {
    std::string op = "optimizer update";
    if (index >= 0) op += ", parameter " + std::to_string(index);
    return op;
  };
  if (!param || !grad || (nstate >= 1 && !s1) || (nstate >= 2 && !s2))
    detail::fail<ValueError>(where().c_str(), "missing the parameter, its gradient or one of the rule's ", nstate,
                             " state tensors");
  if (!param->defined()) check_defined(where().c_str(), *param);
  const DType dt = param->dtype();
  if (!is_floating(dt) || is_half(dt))
    detail::fail<DtypeError>(where().c_str(), "the parameter is ", *param,
                             Hint{"only float32 and float64 parameters can be optimised (keep float32 master "
                                  "parameters and run the model in 16 bits)"});
  const Device dev = param->device();
  auto like = [&](const char* what, const Tensor& t) {
    if (!t.defined()) check_defined(where().c_str(), t);
    if (t.dtype() == dt && t.device() == dev && t.shape() == param->shape()) return;
    const std::string msg = where() + ": " + what + " is " + describe(t) + " but the parameter is " +
                            describe(*param) + "; hint: they must match in shape, dtype and device";
    if (t.shape() != param->shape()) throw ShapeError(msg);
    if (t.dtype() != param->dtype()) throw DtypeError(msg);
    throw DeviceError(msg);
  };
  like("the gradient", *grad);
  if (nstate >= 1) like("the optimizer state", *s1);
  if (nstate >= 2) like("the optimizer state", *s2);
}

// The number of state tensors each rule updates (s1, s2).
int state_count(UpdateRule rule) {
  switch (rule) {
    case UpdateRule::SGD: return 0;
    case UpdateRule::MomentumSGD:
    case UpdateRule::AdaGrad: return 1;
    case UpdateRule::AdaDelta:
    case UpdateRule::Adam: return 2;
  }
  return 0;
}

// param -= update(grad, state) through Backend::optimizer_update; s1/s2 are the rule's
// state tensors (nullptr when the rule has fewer).
void optimizer_update(UpdateRule rule, Tensor& param, const Tensor& grad, Tensor* s1, Tensor* s2,
                      const UpdateArgs& args) {
  check_update(-1, &param, &grad, s1, s2, state_count(rule));
  if (param.size() == 0) return;
  backend_of(param).optimizer_update(rule, param.dtype(), param.raw_data(), grad.raw_data(),
                                     s1 ? s1->raw_data() : nullptr, s2 ? s2->raw_data() : nullptr, param.size(),
                                     args);
}

// The same for n parameters: every item checked before anything changes, then one
// OptimizerKernels::update_multi per (device, dtype), in the order the groups first
// appear (a model has one). The lists are kept per thread and reused, so a step
// allocates nothing once they have grown.
struct MultiScratch {
  std::vector<UpdateChunk> chunks;
  std::vector<std::size_t> later;   // the items of other groups than the first one's
  std::vector<ParamUpdate> items;   // axpy_multi_'s
};
MultiScratch& multi_scratch() {
  [[gnu::tls_model("initial-exec")]] thread_local MultiScratch s;
  return s;
}

void optimizer_update_multi(UpdateRule rule, const ParamUpdate* items, std::size_t n, const UpdateArgs& args,
                            MultiScratch& sc) {
  if (n == 0) return;
  if (args.decay != 0 && !fuses_weight_decay(items, n))
    detail::fail<ValueError>("optimizer update with weight decay fused", "a parameter's device does not fuse it",
                             Hint{"check fuses_weight_decay() first and run WeightDecay as a hook otherwise"});
  const int nstate = state_count(rule);
  auto chunk = [&](const ParamUpdate& it) {
    UpdateChunk c;
    c.param = it.param->raw_data();
    c.grad = it.grad->raw_data();
    c.s1 = nstate >= 1 ? it.s1->raw_data() : nullptr;
    c.s2 = nstate >= 2 ? it.s2->raw_data() : nullptr;
    c.numel = it.param->size();
    return c;
  };
  // One pass checks every item and gathers the first item's group; the items of other
  // groups (rare: a model split over devices or dtypes) are set aside for later rounds.
  sc.chunks.clear();
  sc.later.clear();
  Device dev = Device::cpu();
  DType dt = float32;
  for (std::size_t i = 0; i < n; ++i) {
    const ParamUpdate& it = items[i];
    check_update(static_cast<std::ptrdiff_t>(i), it.param, it.grad, it.s1, it.s2, nstate);
    if (i == 0) {
      dev = it.param->device();
      dt = it.param->dtype();
    }
    if (it.param->dtype() != dt || !(it.param->device() == dev)) sc.later.push_back(i);
    else if (it.param->size() > 0) sc.chunks.push_back(chunk(it));
  }
  for (;;) {
    if (!sc.chunks.empty())
      backend_for(dev).optimizer().update_multi(rule, dt, sc.chunks.data(), sc.chunks.size(), args);
    if (sc.later.empty()) return;
    const Tensor& p0 = *items[sc.later.front()].param;
    dev = p0.device();
    dt = p0.dtype();
    sc.chunks.clear();
    std::size_t kept = 0;
    for (std::size_t i : sc.later) {
      const Tensor& p = *items[i].param;
      if (p.dtype() != dt || !(p.device() == dev)) sc.later[kept++] = i;  // yet another group
      else if (p.size() > 0) sc.chunks.push_back(chunk(items[i]));
    }
    sc.later.resize(kept);
  }
}
void optimizer_update_multi(UpdateRule rule, const ParamUpdate* items, std::size_t n, const UpdateArgs& args) {
  optimizer_update_multi(rule, items, n, args, multi_scratch());
}

// The arguments of each rule, for its single and its multi-tensor update.
UpdateArgs sgd_args(double lr) {
  UpdateArgs a;
  a.lr = lr;
  return a;
}
UpdateArgs momentum_args(double lr, double momentum) {
  UpdateArgs a = sgd_args(lr);
  a.momentum = momentum;
  return a;
}
UpdateArgs adagrad_args(double lr, double eps) {
  UpdateArgs a = sgd_args(lr);
  a.eps = eps;
  return a;
}
UpdateArgs adadelta_args(double rho, double eps) {
  UpdateArgs a;
  a.rho = rho;
  a.eps = eps;
  return a;
}
UpdateArgs adam_args(double lr, double beta1, double beta2, double eps) {
  UpdateArgs a = adagrad_args(lr, eps);
  a.beta1 = beta1;
  a.beta2 = beta2;
  return a;
}
}  // namespace

void sgd_update_(Tensor& param, const Tensor& grad, double lr) {
  optimizer_update(UpdateRule::SGD, param, grad, nullptr, nullptr, sgd_args(lr));
}
void momentum_sgd_update_(Tensor& param, const Tensor& grad, Tensor& v, double lr, double momentum) {
  optimizer_update(UpdateRule::MomentumSGD, param, grad, &v, nullptr, momentum_args(lr, momentum));
}
void adagrad_update_(Tensor& param, const Tensor& grad, Tensor& h, double lr, double eps) {
  optimizer_update(UpdateRule::AdaGrad, param, grad, &h, nullptr, adagrad_args(lr, eps));
}
void adadelta_update_(Tensor& param, const Tensor& grad, Tensor& msg, Tensor& msdx, double rho, double eps) {
  optimizer_update(UpdateRule::AdaDelta, param, grad, &msg, &msdx, adadelta_args(rho, eps));
}
void adam_update_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, double lr, double beta1, double beta2,
                  double eps) {
  optimizer_update(UpdateRule::Adam, param, grad, &m, &v, adam_args(lr, beta1, beta2, eps));
}

void axpy_(Tensor& y, double a, const Tensor& x) {
  // SGD's rule p -= lr * g with p = y, g = x and lr = -a is exactly y += a * x.
  sgd_update_(y, x, -a);
}

// --- multi-tensor optimizer updates ----------------------------------------------------
namespace {
UpdateArgs decayed(UpdateArgs a, double decay) {
  a.decay = decay;
  return a;
}
}  // namespace

bool fuses_weight_decay(const ParamUpdate* items, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!backend_of(*items[i].param).optimizer().fuses_weight_decay()) return false;
  return true;
}

void sgd_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double decay) {
  optimizer_update_multi(UpdateRule::SGD, items, n, decayed(sgd_args(lr), decay));
}
void momentum_sgd_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double momentum, double decay) {
  optimizer_update_multi(UpdateRule::MomentumSGD, items, n, decayed(momentum_args(lr, momentum), decay));
}
void adagrad_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double eps, double decay) {
  optimizer_update_multi(UpdateRule::AdaGrad, items, n, decayed(adagrad_args(lr, eps), decay));
}
void adadelta_update_multi_(const ParamUpdate* items, std::size_t n, double rho, double eps, double decay) {
  optimizer_update_multi(UpdateRule::AdaDelta, items, n, decayed(adadelta_args(rho, eps), decay));
}
void adam_update_multi_(const ParamUpdate* items, std::size_t n, double lr, double beta1, double beta2, double eps,
                        double decay) {
  optimizer_update_multi(UpdateRule::Adam, items, n, decayed(adam_args(lr, beta1, beta2, eps), decay));
}

void axpy_multi_(Tensor* const* ys, double a, const Tensor* const* xs, std::size_t n) {
  MultiScratch& sc = multi_scratch();
  sc.items.clear();
  for (std::size_t i = 0; i < n; ++i) {
    ParamUpdate u;
    u.param = ys[i];
    u.grad = xs[i];
    sc.items.push_back(u);
  }
  UpdateArgs args;
  args.lr = -a;  // as axpy_: SGD's y -= (-a) * x
  optimizer_update_multi(UpdateRule::SGD, sc.items.data(), sc.items.size(), args, sc);
}

// --- host -> device copy ---------------------------------------------------------------
void copy_from_host_(Tensor& dst, const void* host_src, std::size_t nbytes) {
  check_defined("copy_from_host_", dst);
  if (nbytes != dst.nbytes())
    detail::fail<ValueError>("copy_from_host_", std::to_string(nbytes), " bytes for ", describe(dst), " (",
                             std::to_string(dst.nbytes()), " bytes)");
  if (nbytes) backend_of(dst).copy_from_host(dst.raw_data(), host_src, nbytes);
}

}  // namespace dezero::detail
