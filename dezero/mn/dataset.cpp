// dezero/mn/dataset.cpp - mn::SubDataset and mn::scatter_dataset (ChainerMN's scatter_dataset
// with force_equal_length): every rank computes the same order itself (from the seed), so no
// sample is sent; each takes its ceil(N / size) consecutive samples of that order, wrapping
// around at the end.
#include <string>
#include <utility>
#include <vector>

#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn {

namespace {
using dezero::detail::fail;
}  // namespace

SubDataset::SubDataset(const datasets::Dataset& base, std::vector<std::int64_t> indices)
    : datasets::Dataset(base.train()), base_(&base), indices_(std::move(indices)) {
  const std::int64_t n = base.size();
  for (std::int64_t i : indices_)
    if (i < 0 || i >= n)
      fail<IndexError>("mn::SubDataset", "index ", i, " is out of range for a dataset of ", n, " samples");
}

std::int64_t SubDataset::size() const { return static_cast<std::int64_t>(indices_.size()); }

Batch SubDataset::get(std::int64_t index) const {
  const std::int64_t n = size();
  if (index < -n || index >= n)
    fail<IndexError>("mn::SubDataset", "index ", index, " is out of range for ", n, " samples");
  return base_->get(indices_[static_cast<std::size_t>(index < 0 ? index + n : index)]);
}

Batch SubDataset::get_batch(const std::vector<std::int64_t>& indices) const {
  std::vector<std::int64_t> mapped;
  mapped.reserve(indices.size());
  const std::int64_t n = size();
  for (std::int64_t i : indices) {
    if (i < -n || i >= n)
      fail<IndexError>("mn::SubDataset", "index ", i, " is out of range for ", n, " samples");
    mapped.push_back(indices_[static_cast<std::size_t>(i < 0 ? i + n : i)]);
  }
  return base_->get_batch(mapped);
}

SubDataset scatter_dataset(const datasets::Dataset& dataset, Communicator& comm, bool shuffle, std::uint64_t seed) {
  const std::int64_t n = dataset.size();
  // Rank 0's size to everyone, then whether any rank's differs: both ranks throw, or neither.
  const std::int64_t root_n =
      comm.bcast(array(std::vector<std::int64_t>{n}, Shape{1}, int64), 0).item<std::int64_t>();
  const std::int64_t differ =
      comm.allreduce(array(std::vector<std::int64_t>{n == root_n ? 0 : 1}, Shape{1}, int64)).item<std::int64_t>();
  if (differ < 0 || differ >= comm.size())
    fail<ValueError>("mn::scatter_dataset", "the ranks' count of datasets that differ from rank 0's is ", differ,
                     ", outside 0 to ", comm.size() - 1, detail::kPeerHint);
  if (differ != 0)
    fail<ValueError>("mn::scatter_dataset", "the ranks' datasets differ in size: rank 0 has ", root_n, " samples and ",
                     differ, " rank(s) do not (rank ", comm.rank(), " has ", n,
                     "); hint: every rank must load the same dataset");
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  if (shuffle) {
    order = random::Generator(seed).permutation(n).to_vector<std::int64_t>();
  } else {
    for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  }
  const std::int64_t parts = comm.size();
  const std::int64_t each = n == 0 ? 0 : (n + parts - 1) / parts;
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(each));
  for (std::int64_t k = 0; k < each; ++k)
    mine.push_back(order[static_cast<std::size_t>((comm.rank() * each + k) % n)]);
  return SubDataset(dataset, std::move(mine));
}

}  // namespace dezero::mn
