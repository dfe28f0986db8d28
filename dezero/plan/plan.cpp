// dezero/plan/plan.cpp - dezero::compile and compile_step (plan.hpp): the public API, a plan's run,
// and the checks around recording; lower.cpp turns a recorded graph into the steps.
//
// A call binds the inputs, runs the steps, and returns the outputs as new Variables. Tensors the
// plan owns (the buffers of values leaving the program for a replayed op) are reused from call to
// call; an output never shares them (it is copied where a replayed view would).
#include "dezero/plan.hpp"

#include <mutex>
#include <sstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "dezero/core/trace.hpp"
#include "dezero/fail.hpp"
#include "dezero/plan/plan_impl.hpp"

namespace dezero {

using detail::fail;
using detail::plan::Val;

namespace detail::plan {

// The summary: the steps in order (oneDNN primitives, kernels of a kernel program, replays).
void summarize(Plan::Impl& plan) {
  std::ostringstream os;
  std::istringstream prog_lines(plan.prog ? plan.prog->describe() : std::string());
  std::vector<std::string> lines;
  for (std::string l; std::getline(prog_lines, l);) lines.push_back(l.substr(l.find(": ") + 2));
  for (const auto& s : plan.steps) {
    if (s.program) {
      for (std::size_t k = s.first; k < s.last; ++k) os << "onednn  " << lines[k] << "\n";
      continue;
    }
    os << (plan.kernels ? "kernel  " : "replay  ") << s.fn->name();
    for (int v : s.out)
      if (v >= 0) os << " -> " << plan.vals[static_cast<std::size_t>(v)].shape.str();
    os << "\n";
  }
  plan.summary = os.str();
}

}  // namespace detail::plan

void Plan::Impl::check_inputs(const VariableList& xs) const {
  if (xs.size() != inputs.size())
    fail<ValueError>("Plan", xs.size(), " inputs given, the plan was compiled for ", inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Val& v = vals[static_cast<std::size_t>(inputs[i])];
    if (!xs[i].defined() || !xs[i].data().defined()) fail<ValueError>("Plan", "input ", i, " holds no data");
    const Tensor& x = xs[i].data();
    if (x.shape() != v.shape)
      fail<ShapeError>("Plan", "input ", i, " is ", x.shape(), ", the plan was compiled for ", v.shape,
                       "; hint: compile one plan per input shape");
    if (x.dtype() != v.dtype)
      fail<DtypeError>("Plan", "input ", i, " is ", x.dtype(), ", the plan was compiled for ", v.dtype);
    if (x.device() != v.device)
      fail<DeviceError>("Plan", "input ", i, " is on ", x.device(), ", the plan was compiled for ", v.device);
  }
}

VariableList Plan::Impl::run(const VariableList& xs) {
  check_inputs(xs);
  if (kernels) return kernels->run(*this, xs);
  std::vector<Tensor>& t = work;  // one slot per value, emptied at the end of each call
  if (t.size() != vals.size()) {
    t.assign(vals.size(), Tensor());
    for (std::size_t i = 0; i < vals.size(); ++i)
      if (vals[i].constant) constants.push_back(static_cast<int>(i));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) t[static_cast<std::size_t>(inputs[i])] = xs[i].data();
  for (int c : constants) {
    const Val& v = vals[static_cast<std::size_t>(c)];
    t[static_cast<std::size_t>(c)] = v.live.defined() ? v.live.data() : v.data;
  }
  auto bp = no_grad();
  auto mode = using_config("train", train);  // the mode it was recorded in (a Function may read it when it runs)
  for (const Step& s : steps) {
    if (!s.program) {
      TensorList in;
      for (int v : s.in) in.push_back(t[static_cast<std::size_t>(v)]);
      TensorList out = s.fn->forward(in);
      for (std::size_t k = 0; k < s.out.size() && k < out.size(); ++k)
        if (s.out[k] >= 0) t[static_cast<std::size_t>(s.out[k])] = std::move(out[k]);
      continue;
    }
    for (const auto& [ext, v] : s.imports) prog->bind(ext, t[static_cast<std::size_t>(v)].raw_data());
    for (const auto& [ext, v] : s.exports) {
      const Val& val = vals[static_cast<std::size_t>(v)];
      Tensor out = val.output ? Tensor::empty(val.shape, float32) : buffers.at(v);
      prog->bind(ext, out.raw_data());
      t[static_cast<std::size_t>(v)] = std::move(out);
    }
    prog->run(s.first, s.last);
  }
  VariableList ys;
  for (int v : outputs) {
    Tensor y = t[static_cast<std::size_t>(v)];
    // A replayed view of a buffer the next call overwrites, or a constant: the caller's own copy.
    bool shared = vals[static_cast<std::size_t>(v)].constant;
    if (!buffers.empty())
      for (const auto& kv : buffers) shared = shared || y.storage().get() == kv.second.storage().get();
    ys.push_back(Variable(shared ? y.copy() : y));
  }
  // The intermediate tensors go back to the allocator now, so that the next call reuses the same
  // (cached) memory.
  for (Tensor& x : t) x = Tensor();
  return ys;
}

Plan::Plan() = default;
Plan::Plan(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Plan::~Plan() = default;
Plan::Plan(const Plan&) = default;
Plan& Plan::operator=(const Plan&) = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

VariableList Plan::operator()(const VariableList& xs) const {
  if (!impl_) fail<ValueError>("Plan", "an empty plan; hint: make one with dezero::compile(model, example_inputs)");
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->run(xs);
}

Variable Plan::operator()(const Variable& x) const {
  VariableList ys = (*this)(VariableList{x});
  return ys.at(0);
}

const std::vector<Shape>& Plan::input_shapes() const {
  static const std::vector<Shape> none;
  return impl_ ? impl_->in_shapes : none;
}
Plan::Stats Plan::stats() const { return impl_ ? impl_->stats : Stats(); }
std::string Plan::summary() const { return impl_ ? impl_->summary : std::string(); }

namespace {

// After lowering, the recorded graph is no longer read: its Functions drop their inputs (and with
// them the example run's intermediate tensors); the replayed Functions stay, held by their steps.
void release_graph(const VariableList& ys) {
  for (const Variable& y : ys) Variable(y).unchain_backward();
}

// Other values of the same shape and dtype: floats scaled and shifted, integers moved by one
// position (a roll of the flat array, so that indices stay in range).
Tensor other_values(const Tensor& x) {
  if (is_floating(x.dtype())) return x * 1.25 + 0.375;
  const std::int64_t n = x.size();
  if (n < 2) return x + 1;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  idx[0] = n - 1;
  for (std::int64_t i = 1; i < n; ++i) idx[static_cast<std::size_t>(i)] = i - 1;
  return x.flatten()[Index(array(idx, Shape{n}).to(x.device()))].reshape(x.shape());
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         a.to_cpu().to_vector<double>() == b.to_cpu().to_vector<double>();
}

bool same_attr(const FunctionAttr& x, const FunctionAttr& y) {
  if (x.index() != y.index()) return false;
  return std::visit(
      [&](const auto& a) -> bool {
        using T = std::decay_t<decltype(a)>;
        const T& b = std::get<T>(y);
        if constexpr (std::is_same_v<T, Tensor>) return same_values(a, b);
        else return a == b;
      },
      x);
}

bool same_attrs(const FunctionAttrs& a, const FunctionAttrs& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !same_attr(a[i].second, b[i].second)) return false;
  return true;
}

// A plan replays what the recorded run did with the example's values. What the function computed
// from the values outside the graph (a tensor made on the host from an input's data, a shape or an
// index taken from it, a branch on it) would be replayed too. So it runs a second time on other
// values and must record the same Functions with the same hyperparameters, reading the same
// constants: otherwise NotImplementedError, naming what differs.
void check_values_fixed(const std::function<VariableList(const VariableList&)>& fn, const VariableList& xs,
                        const VariableList& ys) {
  VariableList xs2;
  for (const Variable& x : xs) xs2.push_back(Variable(other_values(x.data())));
  VariableList ys2;
  {
    auto bp = using_config("enable_backprop", true);
    auto tm = test_mode();
    ys2 = fn(xs2);
  }
  const detail::TracedGraph a = detail::trace_graph(xs, ys), b = detail::trace_graph(xs2, ys2);
  const std::string hint = "; hint: a plan replays the recorded run, so it cannot follow this; run the model "
                           "without a plan, or make the value an input";
  if (ys2.size() != ys.size() || a.order.size() != b.order.size() || a.leaves.size() != b.leaves.size())
    fail<NotImplementedError>("compile", "the function records another graph for other input values (",
                              a.order.size(), " Functions on the example, ", b.order.size(), " on other values)", hint);
  for (std::size_t i = 0; i < a.order.size(); ++i) {
    const Function &f = *a.order[i], &g = *b.order[i];
    if (f.name() != g.name() || f.inputs().size() != g.inputs().size())
      fail<NotImplementedError>("compile", "the function records another graph for other input values (Function ", i,
                                " is ", f.name(), " on the example, ", g.name(), " on other values)", hint);
    if (!same_attrs(f.attributes(), g.attributes()))
      fail<NotImplementedError>("compile", f.name(), " (Function ", i,
                                ") has hyperparameters that depend on the inputs' values", hint);
  }
  for (std::size_t i = 0; i < a.leaves.size(); ++i)
    if (!a.leaves[i].is_same(b.leaves[i]) && !same_values(a.leaves[i].data(), b.leaves[i].data()))
      fail<NotImplementedError>("compile", "a tensor ", a.leaves[i].shape(),
                                " that the graph reads was computed from the inputs' values outside the graph", hint);
}

}  // namespace

Plan compile(const std::function<VariableList(const VariableList&)>& fn, const VariableList& example_inputs,
             const CompileOptions& options) {
  if (!fn) fail<ValueError>("compile", "no function to compile");
  for (std::size_t i = 0; i < example_inputs.size(); ++i)
    if (!example_inputs[i].defined() || !example_inputs[i].data().defined())
      fail<ValueError>("compile", "example input ", i, " holds no data");
  VariableList ys;
  {
    auto bp = using_config("enable_backprop", true);
    auto tm = test_mode();
    ys = fn(example_inputs);
  }
  if (ys.empty()) fail<ValueError>("compile", "the function returned no outputs");
  for (std::size_t i = 0; i < ys.size(); ++i) {
    if (!ys[i].defined() || !ys[i].data().defined())
      fail<ValueError>("compile", "output ", i, " holds no data");
    bool is_input = false;
    for (const Variable& x : example_inputs) is_input = is_input || x.is_same(ys[i]);
    if (!ys[i].creator() && !is_input)
      fail<ValueError>("compile", "output ", i, " ", ys[i].shape(),
                       " has no recorded graph: it is neither computed from the inputs nor one of them; hint: "
                       "do not run the forward under no_grad()");
  }
  auto impl = std::make_shared<Plan::Impl>();
  detail::plan::build_plan(*impl, options, example_inputs, ys, nullptr, "compile");
  check_values_fixed(fn, example_inputs, ys);
  release_graph(ys);
  return Plan(std::move(impl));
}

// --- training steps ------------------------------------------------------------------------------------
struct StepPlan::Impl {
  std::shared_ptr<Plan::Impl> plan;  // inputs: the step's, then the gradient seed; outputs: the loss, then grads
  Model* model = nullptr;
  optimizers::Optimizer* optimizer = nullptr;
  std::vector<std::pair<Parameter, std::size_t>> grads;  // a parameter and its gradient's output
  std::vector<Parameter> no_grads;                        // the model's parameters the loss does not reach
  Variable seed;  // the gradient seed, ones like the loss (a graph-free leaf, made once)
  mutable std::mutex mu;
};

StepPlan::StepPlan() = default;
StepPlan::StepPlan(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
StepPlan::~StepPlan() = default;
StepPlan::StepPlan(const StepPlan&) = default;
StepPlan& StepPlan::operator=(const StepPlan&) = default;
StepPlan::StepPlan(StepPlan&&) noexcept = default;
StepPlan& StepPlan::operator=(StepPlan&&) noexcept = default;

Variable StepPlan::operator()(const VariableList& xs) const {
  if (!impl_) fail<ValueError>("StepPlan", "an empty plan; hint: make one with dezero::compile_step(...)");
  std::lock_guard<std::mutex> lock(impl_->mu);
  const std::size_t n = impl_->plan->inputs.size() - 1;
  if (xs.size() != n)
    fail<ValueError>("StepPlan", xs.size(), " inputs given, the step was compiled for ", n);
  VariableList in(xs.begin(), xs.end());
  in.push_back(impl_->seed);
  VariableList outs = [&] {
    std::lock_guard<std::mutex> plan_lock(impl_->plan->mu);
    return impl_->plan->run(in);
  }();
  for (Parameter& p : impl_->no_grads) p.cleargrad();
  for (auto& [p, k] : impl_->grads) p.set_grad(outs[k]);
  impl_->optimizer->update();
  return outs[0];
}

Plan::Stats StepPlan::stats() const { return impl_ ? impl_->plan->stats : Plan::Stats(); }
std::string StepPlan::summary() const { return impl_ ? impl_->plan->summary : std::string(); }

StepPlan compile_step(Model& model, const std::function<Variable(const VariableList&)>& loss_fn,
                      optimizers::Optimizer& optimizer, const VariableList& example_inputs) {
  if (!loss_fn) fail<ValueError>("compile_step", "no loss function");
  for (std::size_t i = 0; i < example_inputs.size(); ++i)
    if (!example_inputs[i].defined() || !example_inputs[i].data().defined())
      fail<ValueError>("compile_step", "example input ", i, " holds no data");
  const std::vector<Parameter> params = model.params();
  // Record the forward, then the backward with its graph, from a seed of our own (an input of the plan).
  auto bp = using_config("enable_backprop", true);
  Variable loss = loss_fn(example_inputs);
  if (!loss.defined() || !loss.data().defined()) fail<ValueError>("compile_step", "the loss function returned no loss");
  if (!loss.creator())
    fail<ValueError>("compile_step", "the loss ", loss.shape(),
                     " has no recorded graph; hint: do not compute it under no_grad()");
  auto impl = std::make_shared<StepPlan::Impl>();
  impl->seed = Variable(ones_like(loss.data()));
  const Variable& seed = impl->seed;
  model.cleargrads();
  loss.set_grad(seed);
  BackwardOptions bo;
  bo.create_graph = true;
  loss.backward(bo);
  VariableList outs{loss};
  for (const Parameter& p : params) {
    const Variable g = p.grad();
    if (!g.defined()) {
      impl->no_grads.push_back(p);
      continue;
    }
    impl->grads.emplace_back(p, outs.size());
    outs.push_back(g);
  }
  model.cleargrads();  // recording updates nothing
  VariableList ins(example_inputs.begin(), example_inputs.end());
  ins.push_back(seed);
  impl->plan = std::make_shared<Plan::Impl>();
  impl->plan->train = Config::train;
  CompileOptions o;
  o.onednn = false;
  detail::plan::build_plan(*impl->plan, o, ins, outs, &params, "compile_step");
  release_graph(outs);
  impl->model = &model;
  impl->optimizer = &optimizer;
  return StepPlan(std::move(impl));
}

Plan compile(Model& model, const VariableList& example_inputs, const CompileOptions& options) {
  return compile([&model](const VariableList& xs) { return model(xs); }, example_inputs, options);
}

}  // namespace dezero
