// dezero/mn/optimizer.cpp - mn::MultiNodeOptimizer (ChainerMN's _MultiNodeOptimizer): before the
// wrapped optimizer's update, the gradients are averaged over the ranks. The parameters that have
// data are broadcast from rank 0 when it is made; parameters that get their data later (lazy
// shapes) are broadcast at the next update, which is then skipped, as ChainerMN does (the step's
// gradients came from each rank's own initial weights).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dezero/mn/detail.hpp"

namespace dezero::mn {

MultiNodeOptimizer::MultiNodeOptimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm)
    : actual_(&actual), comm_(std::move(comm)) {
  if (!comm_) throw ValueError("mn::MultiNodeOptimizer: the communicator is null; hint: mn::create_communicator()");
  // Rank 0's values of the parameters that have data now, to every rank (a collective: every rank
  // makes its MultiNodeOptimizer at the same point); lazy ones follow at the update after they appear.
  const auto params = named_targets();  // a ValueError now, not at the first update, when not set up
  comm_->bcast_data(params);
  for (const auto& [key, p] : params)
    if (p.data().defined()) initialised_.push_back(key);
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
  if (initialised != initialised_) {
    // New parameter data (the first update, or lazy shapes set since): rank 0's values to every
    // rank. Every rank builds the same model, so every rank takes this branch; bcast_data checks it.
    comm_->bcast_data(params);
    initialised_ = std::move(initialised);
    return false;
  }
  comm_->multi_node_mean_grad(params);
  actual_->update();
  return true;
}

}  // namespace dezero::mn
