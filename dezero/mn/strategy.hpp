// dezero/mn/strategy.hpp - internal to dezero/mn/: how MultiNodeOptimizer::update() averages the
// gradients when a communication thread does it (MultiNodeOptimizerOptions's double_buffering and
// overlap, strategies.cpp), behind one interface; optimizer.cpp averages them itself otherwise.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dezero/mn.hpp"

namespace dezero::mn {

namespace detail {

using NamedParams = std::vector<std::pair<std::string, Parameter>>;

// The communication thread: jobs run one after another in the order they were posted, on a
// thread of their own. wait() returns when every posted job has run and rethrows the first error
// since the last wait(). The destructor lets the posted jobs finish (they are collectives the
// other ranks run too), then joins.
class CommThread {
 public:
  CommThread();
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;
  void start(std::function<void()> job);
  void wait();

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: it starts once the rest is built
};

}  // namespace detail

// A way of averaging on the communication thread. update() is MultiNodeOptimizer::update() for
// it, from the point where the parameters (`params`, sorted by key) and the keys that have data
// (`initialised`) are known: it returns whether the wrapped optimizer updated.
struct MultiNodeOptimizer::Strategy {
  explicit Strategy(std::shared_ptr<Communicator> private_comm) : comm(std::move(private_comm)) {}
  virtual ~Strategy() = default;
  virtual bool update(MultiNodeOptimizer& o, const detail::NamedParams& params,
                      std::vector<std::string> initialised) = 0;
  virtual bool overlaps() const = 0;

  std::shared_ptr<Communicator> comm;  // the private duplicate: only the thread calls MPI on it
  detail::CommThread thread;           // after comm: joined before comm goes

 protected:
  // MultiNodeOptimizer's own steps, for the strategies (which are not its members).
  static bool broadcast_if_new(MultiNodeOptimizer& o, const detail::NamedParams& params,
                               std::vector<std::string>& initialised) {
    return o.broadcast_if_new(params, initialised);
  }
  static bool update_actual(MultiNodeOptimizer& o) { return o.update_actual(); }
  static Communicator& shared_comm(MultiNodeOptimizer& o) { return *o.comm_; }
  static double loss_scale(const MultiNodeOptimizer& o) { return o.actual_->loss_scale(); }
};

namespace detail {
// The two strategies (strategies.cpp). Overlap registers its gradient hooks on `params`.
std::shared_ptr<MultiNodeOptimizer::Strategy> make_double_buffering(std::shared_ptr<Communicator> private_comm);
std::shared_ptr<MultiNodeOptimizer::Strategy> make_overlap(std::shared_ptr<Communicator> private_comm,
                                                           const NamedParams& params, std::int64_t bucket_bytes,
                                                           std::int64_t first_bucket_bytes);
}  // namespace detail

}  // namespace dezero::mn
