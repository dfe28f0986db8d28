// dezero/mn/optimizer.cpp - mn::MultiNodeOptimizer (ChainerMN's _MultiNodeOptimizer): before the
// wrapped optimizer's update, the gradients are averaged over the ranks. The parameters that have
// data are broadcast from rank 0 when it is made; parameters that get their data later (lazy
// shapes) are broadcast at the next update, which is then skipped, as ChainerMN does (the step's
// gradients came from each rank's own initial weights).
//
// Double buffering (ChainerMN's double_buffering: a communication thread averages step k's
// gradients on a private duplicate of the communicator while the main thread applies step k-1's
// averages) and overlap (DDP's buckets, averaged during backward) are two strategies behind one
// interface, MultiNodeOptimizer::Strategy (mn/strategy.hpp, strategies.cpp).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"
#include "dezero/mn/strategy.hpp"

namespace dezero::mn {

namespace {
using dezero::detail::fail;
}  // namespace

MultiNodeOptimizer create_multi_node_optimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm,
                                               const MultiNodeOptimizerOptions& options) {
  return MultiNodeOptimizer(actual, std::move(comm), options);
}

MultiNodeOptimizer::MultiNodeOptimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm)
    : MultiNodeOptimizer(actual, std::move(comm), MultiNodeOptimizerOptions{}) {}

MultiNodeOptimizer::MultiNodeOptimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm,
                                       const MultiNodeOptimizerOptions& options)
    : actual_(&actual), comm_(std::move(comm)) {
  if (!comm_) fail<ValueError>("mn::MultiNodeOptimizer", "the communicator is null; hint: mn::create_communicator()");
  if (options.double_buffering || options.overlap) {  // refused before any collective, on every rank alike
    const std::string what = options.double_buffering ? "double_buffering" : "overlap";
    if (options.double_buffering && options.overlap)
      fail<NotImplementedError>("mn::MultiNodeOptimizer",
                                "double_buffering and overlap together are not implemented; hint: choose one");
    if (!comm_->supports(Communicator::Capability::comm_thread))
      fail<NotImplementedError>("mn::MultiNodeOptimizer", what, " with the ", comm_->name(),
                                " communicator is not implemented yet; hint: 'flat' or 'naive' take it");
    if (!detail::mpi_thread_multiple())
      fail<NotImplementedError>("mn::MultiNodeOptimizer", what, " needs MPI_THREAD_MULTIPLE, which this MPI "
                                "did not grant to mn::Environment; hint: an MPI built with thread support (Open MPI "
                                "is), or ", what, " = false");
    if (options.overlap && (options.bucket_bytes <= 0 || options.first_bucket_bytes <= 0))
      fail<ValueError>("mn::MultiNodeOptimizer", "bucket_bytes ", options.bucket_bytes, " and first_bucket_bytes ",
                       options.first_bucket_bytes, " must be positive; hint: DDP's sizes are 25 MB and 1 MB");
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
    std::shared_ptr<Communicator> priv = create_communicator(comm_->name(), private_options);
    strategy_ = options.overlap
                    ? detail::make_overlap(std::move(priv), params, options.bucket_bytes, options.first_bucket_bytes)
                    : detail::make_double_buffering(std::move(priv));
  }
}

bool MultiNodeOptimizer::double_buffering() const { return strategy_ && !strategy_->overlaps(); }
bool MultiNodeOptimizer::overlap() const { return strategy_ && strategy_->overlaps(); }

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

// New parameter data (the first update, or lazy shapes set since): rank 0's values to every rank,
// and true (the caller skips this step: its gradients came from each rank's own initial weights).
// Every rank builds the same model, so every rank takes this branch; bcast_data checks it.
bool MultiNodeOptimizer::broadcast_if_new(const std::vector<std::pair<std::string, Parameter>>& params,
                                          std::vector<std::string>& initialised) {
  if (initialised == initialised_) return false;
  comm_->bcast_data(params);
  initialised_ = std::move(initialised);
  return true;
}

bool MultiNodeOptimizer::update() {
  reached_actual_ = false;
  const auto params = named_targets();
  std::vector<std::string> initialised;
  for (const auto& [key, p] : params)
    if (p.data().defined()) initialised.push_back(key);
  if (strategy_) return strategy_->update(*this, params, std::move(initialised));  // on the thread
  if (broadcast_if_new(params, initialised)) return false;
  comm_->multi_node_mean_grad(params);
  return update_actual();
}

}  // namespace dezero::mn
