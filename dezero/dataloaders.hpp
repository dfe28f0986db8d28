// dezero/dataloaders.hpp - DataLoader and SeqDataLoader (DeZero's dataloaders.py).
//
//   DataLoader train_loader(train_set, 100);          // shuffle = true
//   for (int epoch = 0; epoch < 5; ++epoch)
//     for (auto& [x, t] : train_loader) { ... }       // x: (100, ...), t: (100,)
//
// Like DeZero, the loader draws its first permutation (from `gen`: by default
// random::permutation's global stream, so seeds reproduce DeZero; a random::Generator
// gives the loader an order of its own) when it is built and a new one each time an
// epoch ends; every
// range-for that runs to the end is one epoch. A loop left early resumes where it
// stopped; reset() starts the epoch over. A loader holds a reference to its dataset,
// which must outlive it.
//
// to_gpu() with a dataset in host memory: each batch is gathered on the host into
// pinned memory and copied to the device on a side stream, one batch ahead, so the
// copy of batch k+1 overlaps the computation on batch k (see dataloaders.cpp for
// the stream ordering). With a dataset already on the GPU (Dataset::to_gpu) batches
// are gathered on the device and nothing goes through the host.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "dezero/datasets.hpp"

namespace dezero {

// DataLoader's options by name: DataLoader(train_set, 100, {.shuffle = false}) in C++20.
struct DataLoaderOptions {
  bool shuffle = true;
  bool drop_last = false;  // leave out the last, smaller batch (DeZero always keeps it)
  random::Generator gen = random::Generator::global();  // the stream the permutations are drawn from
};

class DataLoader {
 public:
  // drop_last: leave out the last, smaller batch (DeZero always keeps it).
  DataLoader(const datasets::Dataset& dataset, std::int64_t batch_size, bool shuffle = true, bool drop_last = false,
             random::Generator gen = random::Generator::global());
  DataLoader(const datasets::Dataset& dataset, std::int64_t batch_size, const DataLoaderOptions& options)
      : DataLoader(dataset, batch_size, options.shuffle, options.drop_last, options.gen) {}
  DataLoader(const datasets::Dataset&& dataset, std::int64_t batch_size, bool shuffle = true, bool drop_last = false,
             random::Generator gen = random::Generator::global()) = delete;  // would dangle
  DataLoader(const datasets::Dataset&& dataset, std::int64_t batch_size, const DataLoaderOptions& options) = delete;
  virtual ~DataLoader() = default;

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;

    iterator() = default;
    const Batch& operator*() const { return *batch_; }
    const Batch* operator->() const { return &*batch_; }
    iterator& operator++() {
      advance();
      return *this;
    }
    bool operator==(const iterator& o) const { return loader_ == o.loader_; }
    bool operator!=(const iterator& o) const { return loader_ != o.loader_; }

   private:
    friend class DataLoader;
    explicit iterator(DataLoader* loader) : loader_(loader) { advance(); }
    void advance() {
      batch_ = loader_->next();
      if (!batch_) loader_ = nullptr;
    }
    DataLoader* loader_ = nullptr;
    std::optional<Batch> batch_;
  };

  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }

  // The next batch (x, t) on device(); at the end of an epoch: reset() and std::nullopt
  // (DeZero's StopIteration).
  std::optional<Batch> next();
  // A new epoch: iteration 0 and a new permutation (or 0..N-1 without shuffle).
  void reset();

  std::int64_t size() const { return max_iter_; }  // batches per epoch
  std::int64_t max_iter() const { return max_iter_; }
  std::int64_t data_size() const { return data_size_; }
  std::int64_t batch_size() const { return batch_size_; }
  std::int64_t iteration() const { return iteration_; }
  bool shuffle() const { return shuffle_; }
  const std::vector<std::int64_t>& index() const { return index_; }  // this epoch's sample order
  const datasets::Dataset& dataset() const { return dataset_; }

  // Batches are produced on this device (the dataset stays where it is).
  Device device() const { return device_; }
  void to_cpu();
  void to_gpu(int id = 0);

 protected:
  // The dataset indices of batch `iteration` of this epoch.
  virtual std::vector<std::int64_t> batch_indices(std::int64_t iteration) const;

  const datasets::Dataset& dataset_;
  std::int64_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  std::int64_t data_size_;
  std::int64_t max_iter_;
  std::int64_t iteration_ = 0;
  std::vector<std::int64_t> index_;
  Device device_;
  random::Generator gen_;

 private:
  // The host -> device pipeline of to_gpu() (pinned buffers, side stream, the batch in
  // flight). Created on first use; a copied loader starts without one.
  struct Prefetcher;
  struct PrefetcherHandle {
    std::unique_ptr<Prefetcher> p;
    PrefetcherHandle();
    PrefetcherHandle(const PrefetcherHandle&);             // a copy starts empty
    PrefetcherHandle& operator=(const PrefetcherHandle&);  // keeps its own
    ~PrefetcherHandle();
  };
  PrefetcherHandle prefetcher_;
  std::optional<Batch> next_from_host_to_gpu();
};

// Step 60: batch_size parallel streams through the data in order (for truncated BPTT):
// batch k holds samples (i * jump + k) % N for i < batch_size, jump = N / batch_size.
class SeqDataLoader : public DataLoader {
 public:
  SeqDataLoader(const datasets::Dataset& dataset, std::int64_t batch_size);
  SeqDataLoader(const datasets::Dataset&& dataset, std::int64_t batch_size) = delete;

 protected:
  std::vector<std::int64_t> batch_indices(std::int64_t iteration) const override;
};

}  // namespace dezero
