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
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dezero/mn/detail.hpp"

namespace dezero::mn {

// --- double buffering: one job at a time on a thread of its own ------------------------------------
// The thread owns the private communicator: every MPI call on it is made there, so the main
// thread's collectives (on the user's communicator) never interleave with them on one MPI
// communicator; MPI_THREAD_MULTIPLE lets the two threads call MPI at the same time.
//
// A job averages one step's gradients: `shadows` are Parameters that share the parameters' data
// (only their shapes and dtypes are read) and hold that step's gradient tensors, which the main
// thread no longer uses once the job starts (the parameters then take the previous step's
// averages). wait() returns when no job is in flight and rethrows what the last one threw.
struct MultiNodeOptimizer::Buffering {
  std::shared_ptr<Communicator> comm;  // the private duplicate
  std::mutex mutex;
  std::condition_variable changed;
  std::function<void()> job;  // set by start(), cleared by the thread when done
  bool busy = false, stop = false;
  std::exception_ptr error;
  std::vector<std::pair<std::string, Parameter>> shadows;  // the step in flight, then its averages
  bool have_averages = false;  // shadows hold averaged gradients that no update applied yet
  std::thread thread;

  explicit Buffering(std::shared_ptr<Communicator> c) : comm(std::move(c)) {
    thread = std::thread([this] { run(); });
  }
  ~Buffering() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    changed.notify_all();
    thread.join();  // a job in flight finishes first: it is a collective the other ranks run too
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return busy || stop; });
      if (busy) {
        std::function<void()> todo = std::move(job);
        lock.unlock();
        try {
          todo();
        } catch (...) {
          lock.lock();
          error = std::current_exception();
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
      job = std::move(f);
      busy = true;
    }
    changed.notify_all();
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return !busy; });
    if (error) {
      std::exception_ptr e = error;
      error = nullptr;
      have_averages = false;
      std::rethrow_exception(e);
    }
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
  if (options.double_buffering) {  // refused before any collective, on every rank alike
    if (comm_->name() == "pure_nccl")
      throw NotImplementedError("mn::MultiNodeOptimizer: double_buffering with the pure_nccl communicator is not "
                                "implemented yet; hint: 'flat' or 'naive' take it");
    if (!detail::mpi_thread_multiple())
      throw NotImplementedError("mn::MultiNodeOptimizer: double_buffering needs MPI_THREAD_MULTIPLE, which this MPI "
                                "did not grant to mn::Environment; hint: an MPI built with thread support (Open MPI "
                                "is), or double_buffering = false");
  }
  // Rank 0's values of the parameters that have data now, to every rank (a collective: every rank
  // makes its MultiNodeOptimizer at the same point); lazy ones follow at the update after they appear.
  const auto params = named_targets();  // a ValueError now, not at the first update, when not set up
  comm_->bcast_data(params);
  for (const auto& [key, p] : params)
    if (p.data().defined()) initialised_.push_back(key);
  if (options.double_buffering) {
    CommunicatorOptions private_options;
    private_options.allreduce_grad_dtype = comm_->allreduce_grad_dtype();
    buffering_ = std::make_shared<Buffering>(create_communicator(comm_->name(), private_options));
  }
}

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

bool MultiNodeOptimizer::update() {
  const auto params = named_targets();
  std::vector<std::string> initialised;
  for (const auto& [key, p] : params)
    if (p.data().defined()) initialised.push_back(key);
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
    actual_->update();
    return true;
  }

  // Double buffering. This step's gradients go to the thread in shadow parameters (the same keys,
  // shapes and dtypes, so the private communicator's checks see what the blocking path would);
  // the parameters take the previous step's averages, and the wrapped optimizer applies them.
  Buffering& b = *buffering_;
  std::vector<std::pair<std::string, Parameter>> previous = std::move(b.shadows);
  const bool apply = b.have_averages && previous.size() == params.size();
  std::vector<std::pair<std::string, Parameter>> shadows;
  shadows.reserve(params.size());
  for (const auto& [key, p] : params) {
    Parameter q(p.data());
    if (p.grad().defined()) q.set_grad(p.grad());
    shadows.emplace_back(key, std::move(q));
  }
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
    if (q.grad().defined()) p.set_grad(q.grad());
    else p.cleargrad();
  }
  actual_->update();
  return true;
}

}  // namespace dezero::mn
