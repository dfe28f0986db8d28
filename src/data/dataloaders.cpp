// dataloaders.cpp - DataLoader / SeqDataLoader: epochs of index batches turned into
// (x, t) batches by Dataset::get_batch (one gather when the transforms allow it).
#include "dezero/dataloaders.hpp"

#include <algorithm>
#include <string>

#include "dezero/cuda.hpp"

namespace dezero {

DataLoader::DataLoader(const datasets::Dataset& dataset, std::int64_t batch_size, bool shuffle, bool drop_last)
    : dataset_(dataset), batch_size_(batch_size), shuffle_(shuffle), drop_last_(drop_last),
      data_size_(dataset.size()) {
  if (batch_size <= 0) throw ValueError("DataLoader: batch_size must be positive, got " + std::to_string(batch_size));
  max_iter_ = drop_last ? data_size_ / batch_size : (data_size_ + batch_size - 1) / batch_size;
  reset();
}

void DataLoader::reset() {
  iteration_ = 0;
  if (shuffle_) {
    index_ = random::permutation(data_size_).to_vector<std::int64_t>();
  } else {
    index_.resize(static_cast<std::size_t>(data_size_));
    for (std::int64_t i = 0; i < data_size_; ++i) index_[static_cast<std::size_t>(i)] = i;
  }
}

std::vector<std::int64_t> DataLoader::batch_indices(std::int64_t iteration) const {
  std::int64_t begin = iteration * batch_size_;
  std::int64_t end = std::min(begin + batch_size_, data_size_);
  return std::vector<std::int64_t>(index_.begin() + begin, index_.begin() + end);
}

std::optional<Batch> DataLoader::next() {
  if (iteration_ >= max_iter_) {
    reset();
    return std::nullopt;
  }
  if (dataset_.size() != data_size_)
    throw ValueError("DataLoader: the dataset changed size from " + std::to_string(data_size_) + " to " +
                     std::to_string(dataset_.size()) + " samples; make a new DataLoader");
  Batch b = dataset_.get_batch(batch_indices(iteration_));
  ++iteration_;
  if (b.first.defined() && b.first.device() != device_) b.first = b.first.to(device_);
  if (b.second.defined() && b.second.device() != device_) b.second = b.second.to(device_);
  return b;
}

void DataLoader::to_gpu(int id) {
  if (!cuda::is_available())
    throw DeviceError("DataLoader::to_gpu(" + std::to_string(id) +
                      "): no CUDA device is available (dezero was built without CUDA, or this machine has no GPU); "
                      "keep the loader on the CPU");
  if (id < 0 || id >= cuda::device_count())
    throw DeviceError("DataLoader::to_gpu(" + std::to_string(id) + "): there is no cuda:" + std::to_string(id) + " (" +
                      std::to_string(cuda::device_count()) + " CUDA devices)");
  device_ = Device::cuda(id);
}

SeqDataLoader::SeqDataLoader(const datasets::Dataset& dataset, std::int64_t batch_size)
    : DataLoader(dataset, batch_size, false) {}

std::vector<std::int64_t> SeqDataLoader::batch_indices(std::int64_t iteration) const {
  std::int64_t jump = data_size_ / batch_size_;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(batch_size_));
  for (std::int64_t i = 0; i < batch_size_; ++i) idx[static_cast<std::size_t>(i)] = (i * jump + iteration) % data_size_;
  return idx;
}

}  // namespace dezero
