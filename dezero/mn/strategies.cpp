// dezero/mn/strategies.cpp - the communication thread and the two ways MultiNodeOptimizer averages
// on it (mn/strategy.hpp): double buffering (ChainerMN's double_buffering) and overlap (PyTorch
// DDP's buckets posted during backward).
//
// The thread owns the private communicator: every MPI call on it is made there, so the main
// thread's collectives (on the user's communicator) never interleave with them on one MPI
// communicator; MPI_THREAD_MULTIPLE lets the two threads call MPI at the same time. Jobs run one
// after another in the order they were posted, the same order on every rank (each rank's program
// posts them in the same order), so the collectives inside them match.
//
// A job averages gradients held by shadow Parameters: they share the parameters' data (only their
// shapes and dtypes are read) and hold gradient tensors that the main thread does not touch until
// wait() returns.
#include <cstdint>
#include <unordered_map>

#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"
#include "dezero/mn/strategy.hpp"

namespace dezero::mn {

namespace detail {

CommThread::CommThread() : thread_([this] { run(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();  // the jobs posted finish first: they are collectives the other ranks run too
}

void CommThread::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return !jobs_.empty() || stop_; });
    if (!jobs_.empty()) {
      std::function<void()> todo = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      try {
        todo();
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        lock.unlock();
      }
      lock.lock();
      busy_ = false;
      changed_.notify_all();
      continue;
    }
    if (stop_) return;
  }
}

void CommThread::start(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void CommThread::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return jobs_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace detail

namespace {

using dezero::detail::fail;
using detail::NamedParams;

// A stand-in for `p` that a job averages: it shares p's data (only its shape and dtype are read) and
// holds p's gradient tensor in a gradient node of its own, so the thread never touches p's nodes.
Parameter shadow_of(const Parameter& p) {
  Parameter q(p.data());
  const Variable g = p.grad();
  if (g.defined()) q.set_grad(Variable(g.data()));
  return q;
}

// --- double buffering ------------------------------------------------------------------------------
// Step k's gradients go to the thread in shadow parameters (the same keys, shapes and dtypes, so
// the private communicator's checks see what the blocking path would); the parameters take step
// k-1's averages, and the wrapped optimizer applies them while the thread averages step k.
class DoubleBuffering : public MultiNodeOptimizer::Strategy {
 public:
  using Strategy::Strategy;
  // The job in flight writes have_averages_: it finishes before this object's members go (the base's
  // thread would join only after them).
  ~DoubleBuffering() override {
    try {
      thread.wait();
    } catch (...) {  // an error of a step nobody will apply: the job is over, which is what matters
    }
  }
  bool overlaps() const override { return false; }

  bool update(MultiNodeOptimizer& o, const NamedParams& params, std::vector<std::string> initialised) override {
    try {
      thread.wait();  // the previous step's averages (or its error)
    } catch (...) {
      have_averages_ = false;
      throw;
    }
    if (broadcast_if_new(o, params, initialised)) {
      have_averages_ = false;  // averages of a step before the broadcast
      return false;
    }
    NamedParams previous = std::move(shadows_);
    const bool apply = have_averages_ && previous.size() == params.size();
    // Loss scaling: the previous step's gradients carry the scale of their backward(); the wrapped
    // optimizer divides by today's (the same on every rank), so they are brought to it first.
    const double scale_now = loss_scale(o), rescale = scale_now / shadows_scale_;
    shadows_scale_ = scale_now;  // this step's backward() ran after the last update: with today's scale
    NamedParams shadows;
    shadows.reserve(params.size());
    for (const auto& [key, p] : params) shadows.emplace_back(key, shadow_of(p));
    shadows_ = shadows;
    have_averages_ = false;
    std::shared_ptr<Communicator> priv = comm;
    thread.start([priv, shadows, this] {
      priv->multi_node_mean_grad(shadows);
      have_averages_ = true;  // read by the main thread only after wait()
    });
    if (!apply) return false;
    for (std::size_t i = 0; i < params.size(); ++i) {
      Parameter p = params[i].second;
      const Parameter& q = previous[i].second;
      if (!q.grad().defined()) p.cleargrad();
      else if (rescale == 1.0 || !is_floating(q.grad().dtype())) p.set_grad(q.grad());
      else p.set_grad(Variable(q.grad().data() * rescale));
    }
    return update_actual(o);
  }

 private:
  NamedParams shadows_;        // the step in flight, then its averages
  bool have_averages_ = false;  // shadows_ hold averaged gradients that no update applied yet
  double shadows_scale_ = 1.0;  // the loss scale the shadows' gradients were computed with
};

// --- overlap ----------------------------------------------------------------------------------------
// Buckets of parameters (indices into `params_`, the canonical order), posted as their gradients
// become final. Until the first pass with hooks has been seen, `buckets_` is empty and the hooks
// only record the order in which the gradients became final (`order_`).
class Overlap : public MultiNodeOptimizer::Strategy {
 public:
  Overlap(std::shared_ptr<Communicator> private_comm, const NamedParams& params, std::int64_t bucket_bytes,
          std::int64_t first_bucket_bytes)
      : Strategy(std::move(private_comm)),
        bucket_bytes_(bucket_bytes),
        first_bucket_bytes_(first_bucket_bytes),
        params_(params) {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      Parameter p = params_[i].second;
      index_.emplace(p.node().get(), i);
      hooks_.push_back(p.register_post_accumulate_grad_hook([this](const Variable& v) { on_ready(v); }));
    }
    reset_pass();
  }
  ~Overlap() override {
    for (HookHandle& h : hooks_) h.remove();
  }
  bool overlaps() const override { return true; }

  // The buckets whose gradients all became final during backward were posted by the hooks; the
  // rest (parameters without a gradient on this rank, or whose gradient never became final) go now,
  // in bucket order, then update() waits for the thread and hands the averages to the parameters.
  // The first pass only records the order in which gradients become final and averages blocking,
  // as overlap = false does.
  bool update(MultiNodeOptimizer& o, const NamedParams& params, std::vector<std::string> initialised) override {
    if (buckets_.empty()) return record(o, params, initialised);
    while (next_ < buckets_.size()) post(next_++);
    try {
      thread.wait();
    } catch (...) {
      reset_pass();
      throw;
    }
    // A gradient replaced or cleared after it was sent would be silently overwritten: refuse it (on
    // every rank alike only if every rank does the same; the averages themselves are consistent).
    for (std::size_t k = 0; k < buckets_.size() && !refused_; ++k)
      for (std::size_t j = 0; j < buckets_[k].size(); ++j) {
        const Variable g = params_[buckets_[k][j]].second.grad();
        if ((g.defined() ? g.node().get() : nullptr) != posted_grads_[k][j]) {
          const std::string key = params_[buckets_[k][j]].first;
          reset_pass();
          fail<ValueError>("mn::MultiNodeOptimizer", "the gradient of ", key, " was replaced or cleared between "
                           "backward() and update(), after overlap had sent it; hint: change gradients in an "
                           "optimizer hook (it runs in update(), on the averages), or use overlap = false");
        }
      }
    for (std::size_t k = 0; k < buckets_.size(); ++k)
      for (std::size_t j = 0; j < buckets_[k].size(); ++j) {
        Parameter p = params_[buckets_[k][j]].second;
        const Parameter& q = posted_[k][j].second;
        if (q.grad().defined()) p.set_grad(q.grad());
        else p.cleargrad();
      }
    reset_pass();
    if (broadcast_if_new(o, params, initialised)) return false;  // data only now: rank 0's values first
    return update_actual(o);
  }

 private:
  // The recording pass: nothing was posted. Every rank takes rank 0's order, so that the buckets
  // are the same everywhere even where a rank has no gradient for some parameters (checked as any
  // peer's message is); this step averages blocking.
  bool record(MultiNodeOptimizer& o, const NamedParams& params, std::vector<std::string>& initialised) {
    const bool broadcast = broadcast_if_new(o, params, initialised);
    Communicator& c = shared_comm(o);
    std::vector<std::int64_t> mine(order_.begin(), order_.end());
    const Tensor order =
        c.bcast(c.rank() == 0 ? array(mine, Shape{static_cast<std::int64_t>(mine.size())}, int64) : Tensor(), 0);
    const std::int64_t n = order.ndim() == 1 ? order.size() : -1;
    std::vector<char> seen(params_.size(), 0);
    order_.clear();
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t i = order.data<std::int64_t>()[k];
      if (i < 0 || i >= static_cast<std::int64_t>(params_.size()) || seen[static_cast<std::size_t>(i)])
        fail<ValueError>("mn::MultiNodeOptimizer", "rank 0 sent a bucket order with parameter index ", i, " (of ",
                         params_.size(), ", or twice); hint: the ranks run different models or versions of dezero");
      seen[static_cast<std::size_t>(i)] = 1;
      order_.push_back(static_cast<std::size_t>(i));
    }
    if (n < 0)
      fail<ValueError>("mn::MultiNodeOptimizer", "rank 0 sent a bucket order of ", order.ndim(),
                       " axes (1 expected); hint: the ranks run different versions of dezero");
    freeze_buckets();
    reset_pass();
    if (broadcast) return false;
    c.multi_node_mean_grad(params);
    return update_actual(o);
  }

  // A hook: parameter `v`'s gradient is final for this pass (on the thread that runs backward).
  void on_ready(const Variable& v) {
    const auto it = index_.find(v.node().get());
    if (it == index_.end()) return;
    const std::size_t i = it->second;
    if (ready_now_[i]) {
      refused_ = true;
      fail<ValueError>("mn::MultiNodeOptimizer", params_[i].first, "'s gradient became final twice before "
                       "update() (a second backward() without an update in between); hint: with overlap, make one "
                       "backward() per update(), or use overlap = false to accumulate gradients over passes");
    }
    ready_now_[i] = 1;
    if (buckets_.empty()) {
      order_.push_back(i);
      return;
    }
    if (--missing_[bucket_of_[i]] == 0)
      while (next_ < buckets_.size() && missing_[next_] == 0) post(next_++);
  }

  // Bucket b to the thread, with shadows of its parameters that hold their gradients now.
  void post(std::size_t b) {
    NamedParams shadows_b;
    std::vector<const VariableNode*> grads_b;
    for (std::size_t i : buckets_[b]) {
      const Parameter& p = params_[i].second;
      const Variable g = p.grad();
      grads_b.push_back(g.defined() ? g.node().get() : nullptr);
      shadows_b.emplace_back(params_[i].first, shadow_of(p));
    }
    posted_[b] = shadows_b;
    posted_grads_[b] = std::move(grads_b);
    std::shared_ptr<Communicator> priv = comm;
    thread.start([priv, shadows_b] { priv->multi_node_mean_grad(shadows_b); });
  }

  // The buckets from the recording pass's order (then the parameters whose gradients did not
  // become final, in the canonical order): consecutive parameters up to first_bucket_bytes for the
  // first bucket and bucket_bytes for the others, at least one parameter each (DDP's rule).
  void freeze_buckets() {
    std::vector<std::size_t> all = order_;
    std::vector<char> seen(params_.size(), 0);
    for (std::size_t i : all) seen[i] = 1;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (!seen[i]) all.push_back(i);
    buckets_.clear();
    std::int64_t bytes = 0;
    for (std::size_t i : all) {
      const Tensor& d = params_[i].second.data();
      const std::int64_t n = d.defined() ? static_cast<std::int64_t>(d.nbytes()) : 0;
      const std::int64_t cap = buckets_.size() == 1 ? first_bucket_bytes_ : bucket_bytes_;  // the open bucket's
      if (buckets_.empty() || (bytes > 0 && bytes + n > cap)) {
        buckets_.emplace_back();
        bytes = 0;
      }
      buckets_.back().push_back(i);
      bytes += n;
    }
    bucket_of_.assign(params_.size(), 0);
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      for (std::size_t i : buckets_[b]) bucket_of_[i] = b;
  }

  // Ready for the next pass.
  void reset_pass() {
    ready_now_.assign(params_.size(), 0);
    order_.clear();
    next_ = 0;
    missing_.assign(buckets_.size(), 0);
    for (std::size_t b = 0; b < buckets_.size(); ++b) missing_[b] = buckets_[b].size();
    posted_.assign(buckets_.size(), {});
    posted_grads_.assign(buckets_.size(), {});
    refused_ = false;
  }

  std::int64_t bucket_bytes_ = 0, first_bucket_bytes_ = 0;
  NamedParams params_;
  std::unordered_map<const VariableNode*, std::size_t> index_;
  std::vector<HookHandle> hooks_;
  std::vector<std::size_t> order_;                // the ready order of the recording pass
  std::vector<std::vector<std::size_t>> buckets_;  // frozen after the recording pass
  std::vector<std::size_t> bucket_of_;            // parameter -> its bucket
  std::vector<std::size_t> missing_;              // per bucket: gradients not final yet in this pass
  std::vector<char> ready_now_;                   // per parameter: final in this pass
  std::size_t next_ = 0;                          // the next bucket to post
  bool refused_ = false;  // a second pass before update() was refused: its accumulation is dropped
  std::vector<NamedParams> posted_;                          // per bucket: its shadows
  std::vector<std::vector<const VariableNode*>> posted_grads_;  // per bucket: the gradients' nodes posted
};

}  // namespace

std::shared_ptr<MultiNodeOptimizer::Strategy> detail::make_double_buffering(
    std::shared_ptr<Communicator> private_comm) {
  return std::make_shared<DoubleBuffering>(std::move(private_comm));
}

std::shared_ptr<MultiNodeOptimizer::Strategy> detail::make_overlap(std::shared_ptr<Communicator> private_comm,
                                                                   const NamedParams& params,
                                                                   std::int64_t bucket_bytes,
                                                                   std::int64_t first_bucket_bytes) {
  return std::make_shared<Overlap>(std::move(private_comm), params, bucket_bytes, first_bucket_bytes);
}

}  // namespace dezero::mn
