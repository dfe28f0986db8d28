// dezero/mn/optimizer.cpp - mn::MultiNodeOptimizer (ChainerMN's _MultiNodeOptimizer): before the
// wrapped optimizer's update, the gradients are averaged over the ranks. The parameters that have
// data are broadcast from rank 0 when it is made; parameters that get their data later (lazy
// shapes) are broadcast at the next update, which is then skipped, as ChainerMN does (the step's
// gradients came from each rank's own initial weights).
//
// Double buffering (ChainerMN's double_buffering): a communication thread averages step k's
// gradients on a private duplicate of the communicator while the main thread applies step k-1's
// averages and goes on to step k+1's forward and backward.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dezero/mn/detail.hpp"

namespace dezero::mn {

// --- the communication thread: jobs in order, on a communicator of its own -----------------------------
// The thread owns the private communicator: every MPI call on it is made there, so the main
// thread's collectives (on the user's communicator) never interleave with them on one MPI
// communicator; MPI_THREAD_MULTIPLE lets the two threads call MPI at the same time. Jobs run one
// after another in the order they were posted, the same order on every rank (each rank's program
// posts them in the same order), so the collectives inside them match.
//
// A job averages gradients held by shadow Parameters: they share the parameters' data (only their
// shapes and dtypes are read) and hold gradient tensors that the main thread does not touch until
// wait() returns. wait() returns when every posted job has run and rethrows the first error.
namespace {

// A stand-in for `p` that a job averages: it shares p's data (only its shape and dtype are read) and
// holds p's gradient tensor in a gradient node of its own, so the thread never touches p's nodes.
Parameter shadow_of(const Parameter& p) {
  Parameter q(p.data());
  const Variable g = p.grad();
  if (g.defined()) q.set_grad(Variable(g.data()));
  return q;
}

}  // namespace

struct MultiNodeOptimizer::Buffering {
  std::shared_ptr<Communicator> comm;  // the private duplicate
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> jobs;
  bool busy = false, stop = false;
  std::exception_ptr error;
  std::thread thread;

  // Double buffering: the step in flight, then its averages.
  std::vector<std::pair<std::string, Parameter>> shadows;
  bool have_averages = false;  // shadows hold averaged gradients that no update applied yet
  double shadows_scale = 1.0;  // the loss scale the shadows' gradients were computed with

  // Overlap: buckets of parameters (indices into `params`, the canonical order), posted as their
  // gradients become final. Until the first pass with hooks has been seen, `buckets` is empty and
  // the hooks only record the order in which the gradients became final (`order`).
  struct Overlap {
    std::int64_t bucket_bytes = 0, first_bucket_bytes = 0;
    std::vector<std::pair<std::string, Parameter>> params;
    std::unordered_map<const VariableNode*, std::size_t> index;
    std::vector<HookHandle> hooks;
    std::vector<std::size_t> order;                // the ready order of the recording pass
    std::vector<std::vector<std::size_t>> buckets;  // frozen after the recording pass
    std::vector<std::size_t> bucket_of;            // parameter -> its bucket
    std::vector<std::size_t> missing;              // per bucket: gradients not final yet in this pass
    std::vector<char> ready_now;                   // per parameter: final in this pass
    std::size_t next = 0;                          // the next bucket to post
    bool refused = false;  // a second pass before update() was refused: its accumulation is dropped
    std::vector<std::vector<std::pair<std::string, Parameter>>> posted;  // per bucket: its shadows
    std::vector<std::vector<const VariableNode*>> posted_grads;  // per bucket: the gradients' nodes posted
  };
  std::unique_ptr<Overlap> overlap;

  explicit Buffering(std::shared_ptr<Communicator> c) : comm(std::move(c)) {
    thread = std::thread([this] { run(); });
  }
  ~Buffering() {
    if (overlap)
      for (HookHandle& h : overlap->hooks) h.remove();
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    changed.notify_all();
    thread.join();  // the jobs posted finish first: they are collectives the other ranks run too
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return !jobs.empty() || stop; });
      if (!jobs.empty()) {
        std::function<void()> todo = std::move(jobs.front());
        jobs.pop_front();
        busy = true;
        lock.unlock();
        try {
          todo();
        } catch (...) {
          lock.lock();
          if (!error) error = std::current_exception();
          lock.unlock();
        }
        lock.lock();
        busy = false;
        changed.notify_all();
        continue;
      }
      if (stop) return;
    }
  }

  void start(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      jobs.push_back(std::move(f));
    }
    changed.notify_all();
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return jobs.empty() && !busy; });
    if (error) {
      std::exception_ptr e = error;
      error = nullptr;
      have_averages = false;
      std::rethrow_exception(e);
    }
  }

  // --- overlap ---------------------------------------------------------------------------------------
  // A hook: parameter `v`'s gradient is final for this pass (on the thread that runs backward).
  void on_ready(const Variable& v) {
    Overlap& o = *overlap;
    const auto it = o.index.find(v.node().get());
    if (it == o.index.end()) return;
    const std::size_t i = it->second;
    if (o.ready_now[i]) {
      o.refused = true;
      throw ValueError("mn::MultiNodeOptimizer: " + o.params[i].first + "'s gradient became final twice before "
                       "update() (a second backward() without an update in between); hint: with overlap, make one "
                       "backward() per update(), or use overlap = false to accumulate gradients over passes");
    }
    o.ready_now[i] = 1;
    if (o.buckets.empty()) {
      o.order.push_back(i);
      return;
    }
    if (--o.missing[o.bucket_of[i]] == 0)
      while (o.next < o.buckets.size() && o.missing[o.next] == 0) post(o.next++);
  }

  // Bucket b to the thread, with shadows of its parameters that hold their gradients now.
  void post(std::size_t b) {
    Overlap& o = *overlap;
    std::vector<std::pair<std::string, Parameter>> shadows_b;
    std::vector<const VariableNode*> grads_b;
    for (std::size_t i : o.buckets[b]) {
      const Parameter& p = o.params[i].second;
      const Variable g = p.grad();
      grads_b.push_back(g.defined() ? g.node().get() : nullptr);
      shadows_b.emplace_back(o.params[i].first, shadow_of(p));
    }
    o.posted[b] = shadows_b;
    o.posted_grads[b] = std::move(grads_b);
    std::shared_ptr<Communicator> priv = comm;
    start([priv, shadows_b] { priv->multi_node_mean_grad(shadows_b); });
  }

  // The buckets from the recording pass's order (then the parameters whose gradients did not
  // become final, in the canonical order): consecutive parameters up to first_bucket_bytes for the
  // first bucket and bucket_bytes for the others, at least one parameter each (DDP's rule).
  void freeze_buckets() {
    Overlap& o = *overlap;
    std::vector<std::size_t> all = o.order;
    std::vector<char> seen(o.params.size(), 0);
    for (std::size_t i : all) seen[i] = 1;
    for (std::size_t i = 0; i < o.params.size(); ++i)
      if (!seen[i]) all.push_back(i);
    o.buckets.clear();
    std::int64_t bytes = 0;
    for (std::size_t i : all) {
      const Tensor& d = o.params[i].second.data();
      const std::int64_t n = d.defined() ? static_cast<std::int64_t>(d.nbytes()) : 0;
      const std::int64_t cap = o.buckets.size() == 1 ? o.first_bucket_bytes : o.bucket_bytes;  // the open bucket's
      if (o.buckets.empty() || (bytes > 0 && bytes + n > cap)) {
        o.buckets.emplace_back();
        bytes = 0;
      }
      o.buckets.back().push_back(i);
      bytes += n;
    }
    o.bucket_of.assign(o.params.size(), 0);
    for (std::size_t b = 0; b < o.buckets.size(); ++b)
      for (std::size_t i : o.buckets[b]) o.bucket_of[i] = b;
  }

  // Ready for the next pass.
  void reset_pass() {
    Overlap& o = *overlap;
    o.ready_now.assign(o.params.size(), 0);
    o.order.clear();
    o.next = 0;
    o.missing.assign(o.buckets.size(), 0);
    for (std::size_t b = 0; b < o.buckets.size(); ++b) o.missing[b] = o.buckets[b].size();
    o.posted.assign(o.buckets.size(), {});
    o.posted_grads.assign(o.buckets.size(), {});
    o.refused = false;
  }
};

MultiNodeOptimizer create_multi_node_optimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm,
                                               const MultiNodeOptimizerOptions& options) {
  return MultiNodeOptimizer(actual, std::move(comm), options);
}

MultiNodeOptimizer::MultiNodeOptimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm)
    : MultiNodeOptimizer(actual, std::move(comm), MultiNodeOptimizerOptions{}) {}

MultiNodeOptimizer::MultiNodeOptimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm,
                                       const MultiNodeOptimizerOptions& options)
    : actual_(&actual), comm_(std::move(comm)) {
  if (!comm_) throw ValueError("mn::MultiNodeOptimizer: the communicator is null; hint: mn::create_communicator()");
  if (options.double_buffering || options.overlap) {  // refused before any collective, on every rank alike
    const std::string what = options.double_buffering ? "double_buffering" : "overlap";
    if (options.double_buffering && options.overlap)
      throw NotImplementedError("mn::MultiNodeOptimizer: double_buffering and overlap together are not implemented; "
                                "hint: choose one");
    if (!comm_->supports(Communicator::Capability::comm_thread))
      throw NotImplementedError("mn::MultiNodeOptimizer: " + what + " with the " + comm_->name() +
                                " communicator is not implemented yet; hint: 'flat' or 'naive' take it");
    if (!detail::mpi_thread_multiple())
      throw NotImplementedError("mn::MultiNodeOptimizer: " + what + " needs MPI_THREAD_MULTIPLE, which this MPI "
                                "did not grant to mn::Environment; hint: an MPI built with thread support (Open MPI "
                                "is), or " + what + " = false");
    if (options.overlap && (options.bucket_bytes <= 0 || options.first_bucket_bytes <= 0))
      throw ValueError("mn::MultiNodeOptimizer: bucket_bytes " + std::to_string(options.bucket_bytes) +
                       " and first_bucket_bytes " + std::to_string(options.first_bucket_bytes) +
                       " must be positive; hint: DDP's sizes are 25 MB and 1 MB");
  }
  // Rank 0's values of the parameters that have data now, to every rank (a collective: every rank
  // makes its MultiNodeOptimizer at the same point); lazy ones follow at the update after they appear.
  const auto params = named_targets();  // a ValueError now, not at the first update, when not set up
  comm_->bcast_data(params);
  for (const auto& [key, p] : params)
    if (p.data().defined()) initialised_.push_back(key);
  if (options.double_buffering || options.overlap) {
    CommunicatorOptions private_options;
    private_options.allreduce_grad_dtype = comm_->allreduce_grad_dtype();
    private_options.allreduce_algorithm = comm_->allreduce_algorithm();
    private_options.ring_segment_bytes = comm_->ring_segment_bytes();
    buffering_ = std::make_shared<Buffering>(create_communicator(comm_->name(), private_options));
  }
  if (options.overlap) {
    auto o = std::make_unique<Buffering::Overlap>();
    o->bucket_bytes = options.bucket_bytes;
    o->first_bucket_bytes = options.first_bucket_bytes;
    o->params = params;
    Buffering* state = buffering_.get();
    for (std::size_t i = 0; i < params.size(); ++i) {
      Parameter p = params[i].second;
      o->index.emplace(p.node().get(), i);
      o->hooks.push_back(p.register_post_accumulate_grad_hook([state](const Variable& v) { state->on_ready(v); }));
    }
    buffering_->overlap = std::move(o);
    buffering_->reset_pass();
  }
}

bool MultiNodeOptimizer::double_buffering() const { return buffering_ && !buffering_->overlap; }
bool MultiNodeOptimizer::overlap() const { return buffering_ && buffering_->overlap; }

MultiNodeOptimizer create_multi_node_optimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm) {
  return MultiNodeOptimizer(actual, std::move(comm));
}

// The wrapped optimizer's parameters with their keys, sorted: the model's named_params() keys,
// or "p<i>" for the i-th parameter of a list given to setup().
std::vector<std::pair<std::string, Parameter>> MultiNodeOptimizer::named_targets() const {
  std::vector<std::pair<std::string, Parameter>> out;
  if (L::Layer* model = actual_->target()) {
    out = model->named_params();
  } else {
    std::vector<Parameter> ps = actual_->target_params();
    for (std::size_t i = 0; i < ps.size(); ++i) out.emplace_back("p" + std::to_string(i), ps[i]);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

MultiNodeOptimizer& MultiNodeOptimizer::loss_scaling(std::int64_t interval, std::optional<double> scale) {
  actual_->loss_scaling(interval, scale);
  return *this;
}

bool MultiNodeOptimizer::last_step_skipped() const { return reached_actual_ && actual_->last_step_skipped(); }

void MultiNodeOptimizer::backward(Variable loss, const BackwardOptions& options) {
  actual_->backward(std::move(loss), options);
}

// The wrapped optimizer's update() on the averaged gradients: false when loss scaling skipped it.
bool MultiNodeOptimizer::update_actual() {
  reached_actual_ = true;
  actual_->update();
  return !actual_->last_step_skipped();
}

bool MultiNodeOptimizer::update() {
  reached_actual_ = false;
  const auto params = named_targets();
  std::vector<std::string> initialised;
  for (const auto& [key, p] : params)
    if (p.data().defined()) initialised.push_back(key);
  if (buffering_ && buffering_->overlap) return update_overlapped(params, std::move(initialised));
  if (buffering_) buffering_->wait();  // the previous step's averages (or its error)
  if (initialised != initialised_) {
    // New parameter data (the first update, or lazy shapes set since): rank 0's values to every
    // rank. Every rank builds the same model, so every rank takes this branch; bcast_data checks it.
    comm_->bcast_data(params);
    initialised_ = std::move(initialised);
    if (buffering_) buffering_->have_averages = false;  // averages of a step before the broadcast
    return false;
  }
  if (!buffering_) {
    comm_->multi_node_mean_grad(params);
    return update_actual();
  }

  // Double buffering. This step's gradients go to the thread in shadow parameters (the same keys,
  // shapes and dtypes, so the private communicator's checks see what the blocking path would);
  // the parameters take the previous step's averages, and the wrapped optimizer applies them.
  Buffering& b = *buffering_;
  std::vector<std::pair<std::string, Parameter>> previous = std::move(b.shadows);
  const bool apply = b.have_averages && previous.size() == params.size();
  // Loss scaling: the previous step's gradients carry the scale of their backward(); the wrapped
  // optimizer divides by today's (the same on every rank), so they are brought to it first.
  const double scale_now = actual_->loss_scale(), rescale = scale_now / b.shadows_scale;
  b.shadows_scale = scale_now;  // this step's backward() ran after the last update: with today's scale
  std::vector<std::pair<std::string, Parameter>> shadows;
  shadows.reserve(params.size());
  for (const auto& [key, p] : params) shadows.emplace_back(key, shadow_of(p));
  b.shadows = shadows;
  b.have_averages = false;
  std::shared_ptr<Communicator> priv = b.comm;
  Buffering* state = &b;
  b.start([priv, shadows, state] {
    priv->multi_node_mean_grad(shadows);
    state->have_averages = true;  // read by the main thread only after wait()
  });
  if (!apply) return false;
  for (std::size_t i = 0; i < params.size(); ++i) {
    Parameter p = params[i].second;
    const Parameter& q = previous[i].second;
    if (!q.grad().defined()) p.cleargrad();
    else if (rescale == 1.0 || !is_floating(q.grad().dtype())) p.set_grad(q.grad());
    else p.set_grad(Variable(q.grad().data() * rescale));
  }
  return update_actual();
}

// Overlap. The buckets whose gradients all became final during backward were posted by the hooks;
// the rest (parameters without a gradient on this rank, or whose gradient never became final) go
// now, in bucket order, then update() waits for the thread and hands the averages to the
// parameters. The first pass only records the order in which gradients become final and averages
// blocking, as overlap = false does.
bool MultiNodeOptimizer::update_overlapped(const std::vector<std::pair<std::string, Parameter>>& params,
                                           std::vector<std::string> initialised) {
  Buffering& b = *buffering_;
  Buffering::Overlap& o = *b.overlap;
  if (o.buckets.empty()) {  // the recording pass: nothing was posted
    const bool broadcast = initialised != initialised_;
    if (broadcast) {
      comm_->bcast_data(params);
      initialised_ = std::move(initialised);
    }
    // Every rank takes rank 0's order, so that the buckets are the same everywhere even where a rank
    // has no gradient for some parameters (checked as any peer's message is).
    std::vector<std::int64_t> mine(o.order.begin(), o.order.end());
    const Tensor order = comm_->bcast(comm_->rank() == 0 ? array(mine, Shape{static_cast<std::int64_t>(mine.size())},
                                                                 int64)
                                                         : Tensor(), 0);
    const std::int64_t n = order.ndim() == 1 ? order.size() : -1;
    std::vector<char> seen(o.params.size(), 0);
    o.order.clear();
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t i = order.data<std::int64_t>()[k];
      if (i < 0 || i >= static_cast<std::int64_t>(o.params.size()) || seen[static_cast<std::size_t>(i)])
        throw ValueError("mn::MultiNodeOptimizer: rank 0 sent a bucket order with parameter index " +
                         std::to_string(i) + " (of " + std::to_string(o.params.size()) +
                         ", or twice); hint: the ranks run different models or versions of dezero");
      seen[static_cast<std::size_t>(i)] = 1;
      o.order.push_back(static_cast<std::size_t>(i));
    }
    if (n < 0)
      throw ValueError("mn::MultiNodeOptimizer: rank 0 sent a bucket order of " + std::to_string(order.ndim()) +
                       " axes (1 expected); hint: the ranks run different versions of dezero");
    b.freeze_buckets();
    b.reset_pass();
    if (broadcast) return false;
    comm_->multi_node_mean_grad(params);
    return update_actual();
  }
  while (o.next < o.buckets.size()) b.post(o.next++);
  try {
    b.wait();
  } catch (...) {
    b.reset_pass();
    throw;
  }
  // A gradient replaced or cleared after it was sent would be silently overwritten: refuse it (on
  // every rank alike only if every rank does the same; the averages themselves are consistent).
  for (std::size_t k = 0; k < o.buckets.size() && !o.refused; ++k)
    for (std::size_t j = 0; j < o.buckets[k].size(); ++j) {
      const Variable g = o.params[o.buckets[k][j]].second.grad();
      if ((g.defined() ? g.node().get() : nullptr) != o.posted_grads[k][j]) {
        const std::string key = o.params[o.buckets[k][j]].first;
        b.reset_pass();
        throw ValueError("mn::MultiNodeOptimizer: the gradient of " + key + " was replaced or cleared between "
                         "backward() and update(), after overlap had sent it; hint: change gradients in an "
                         "optimizer hook (it runs in update(), on the averages), or use overlap = false");
      }
    }
  for (std::size_t k = 0; k < o.buckets.size(); ++k)
    for (std::size_t j = 0; j < o.buckets[k].size(); ++j) {
      Parameter p = o.params[o.buckets[k][j]].second;
      const Parameter& q = o.posted[k][j].second;
      if (q.grad().defined()) p.set_grad(q.grad());
      else p.cleargrad();
    }
  b.reset_pass();
  if (initialised != initialised_) {  // parameters that got their data only now: rank 0's values first
    comm_->bcast_data(params);
    initialised_ = std::move(initialised);
    return false;
  }
  return update_actual();
}

}  // namespace dezero::mn
