/// \file
/// DataLoader and SeqDataLoader (DeZero's dataloaders.py).
///
/// ```cpp
///   DataLoader train_loader(train_set, 100);          // shuffle = true
///   for (int epoch = 0; epoch < 5; ++epoch)
///     for (auto& [x, t] : train_loader) { ... }       // x: (100, ...), t: (100,)
/// ```
///
/// Like DeZero, the loader draws its first permutation (from `gen`: by default
/// random::permutation's global stream, so seeds reproduce DeZero; a random::Generator
/// gives the loader an order of its own) when it is built and a new one each time an
/// epoch ends; every
/// range-for that runs to the end is one epoch. A loop left early resumes where it
/// stopped; reset() starts the epoch over. A loader holds a reference to its dataset,
/// which must outlive it.
///
/// to_gpu() with a dataset in host memory: each batch is gathered on the host into
/// pinned memory and copied to the device on a side stream, one batch ahead, so the
/// copy of batch k+1 overlaps the computation on batch k (see dataloaders.cpp for
/// the stream ordering). With a dataset already on the GPU (Dataset::to_gpu) batches
/// are gathered on the device and nothing goes through the host.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "dezero/datasets.hpp"

namespace dezero {

/// DataLoader's options by name: DataLoader(train_set, 100, {.shuffle = false}) in C++20.
///
/// An aggregate spelling DeZero's keyword arguments; in C++17 set the fields by hand
/// (`DataLoaderOptions o; o.drop_last = true;`) or use DataLoader's positional constructor.
struct DataLoaderOptions {
  bool shuffle = true;  ///< Draw a new permutation of the samples each epoch (false: in order 0..N-1, DeZero's shuffle).
  bool drop_last = false;  ///< Leave out the last, smaller batch (DeZero always keeps it).
  random::Generator gen = random::Generator::global();  ///< The stream the permutations are drawn from (default: the global one, so seeds reproduce DeZero).
};

/// Iterates over a Dataset in mini-batches (DeZero's DataLoader).
///
/// Each batch is a Batch (x, t) of `batch_size` samples (the last one smaller unless
/// drop_last), x: (B, ...) and t: (B, ...) (undefined for unlabelled data), produced on
/// device(). A range-for that runs to the end is one epoch, after which a new permutation
/// is drawn; a loop left early resumes where it stopped, and reset() starts the epoch over.
/// The loader holds a reference to its dataset, which must outlive it.
///
/// ```cpp
///   datasets::MNIST train_set(true);
///   DataLoader train_loader(train_set, 100);
///   for (auto& [x, t] : train_loader) { ... }          // x: (100, 784) float32, t: (100,) int64
/// ```
class DataLoader {
 public:
  /// A loader of `dataset` (kept by reference) in batches of `batch_size`, shuffled each
  /// epoch when `shuffle`, with permutations drawn from `gen`.
  /// drop_last: leave out the last, smaller batch (DeZero always keeps it).
  /// ValueError when batch_size is not positive.
  DataLoader(const datasets::Dataset& dataset, std::int64_t batch_size, bool shuffle = true, bool drop_last = false,
             random::Generator gen = random::Generator::global());
  /// The same with the options by name: DataLoader(train_set, 100, {.shuffle = false}).
  DataLoader(const datasets::Dataset& dataset, std::int64_t batch_size, const DataLoaderOptions& options)
      : DataLoader(dataset, batch_size, options.shuffle, options.drop_last, options.gen) {}
  /// Deleted: a loader of a temporary dataset would dangle.
  ///@{
  DataLoader(const datasets::Dataset&& dataset, std::int64_t batch_size, bool shuffle = true, bool drop_last = false,
             random::Generator gen = random::Generator::global()) = delete;
  DataLoader(const datasets::Dataset&& dataset, std::int64_t batch_size, const DataLoaderOptions& options) = delete;
  ///@}
  virtual ~DataLoader() = default;

  /// The input iterator of a range-for: each step is next(); the end is an epoch's end.
  class iterator {
   public:
    /// std::iterator_traits: an input iterator over `const Batch`.
    ///@{
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;
    ///@}

    iterator() = default;  ///< The end iterator.
    /// The current batch.
    ///@{
    const Batch& operator*() const { return *batch_; }
    const Batch* operator->() const { return &*batch_; }
    ///@}
    /// Moves to the next batch (becomes the end iterator at the end of the epoch).
    iterator& operator++() {
      advance();
      return *this;
    }
    /// Equal when both are the end or both iterate the same loader.
    ///@{
    bool operator==(const iterator& o) const { return loader_ == o.loader_; }
    bool operator!=(const iterator& o) const { return loader_ != o.loader_; }
    ///@}

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

  /// An iterator at the next batch (it takes that batch: next() is called).
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }  ///< The end iterator.

  /// The next batch (x, t) on device(); at the end of an epoch: reset() and std::nullopt
  /// (DeZero's StopIteration).
  /// ValueError when the dataset's size changed since the loader was built.
  std::optional<Batch> next();
  /// A new epoch: iteration 0 and a new permutation (or 0..N-1 without shuffle).
  void reset();

  std::int64_t size() const { return max_iter_; }  ///< Batches per epoch.
  std::int64_t max_iter() const { return max_iter_; }  ///< Batches per epoch (DeZero's max_iter), as size().
  std::int64_t data_size() const { return data_size_; }  ///< The number of samples, N.
  std::int64_t batch_size() const { return batch_size_; }  ///< Samples per batch (the last may have fewer).
  std::int64_t iteration() const { return iteration_; }  ///< The batches of this epoch handed out so far.
  bool shuffle() const { return shuffle_; }  ///< Whether each epoch draws a new permutation.
  const std::vector<std::int64_t>& index() const { return index_; }  ///< This epoch's sample order.
  const datasets::Dataset& dataset() const { return dataset_; }  ///< The dataset, kept by reference.
  /// The epochs run to their end so far (each end draws the next epoch's permutation).
  std::int64_t epoch() const { return epoch_; }
  /// The stream the permutations are drawn from (a handle to it).
  random::Generator generator() const { return gen_; }
  /// Puts the loader where a snapshot found it (Snapshot::loader): `epoch` epochs done,
  /// `iteration` batches of this epoch handed out, in the sample order `index`.
  ///
  /// A ValueError, changing nothing, when iteration is outside 0..size(), index is not a
  /// permutation of 0..N-1 (without shuffle: not 0..N-1 in order) or epoch is negative. The
  /// stream (generator()) is not part of it: a snapshot saves each stream once.
  void set_position(std::int64_t epoch, std::int64_t iteration, const std::vector<std::int64_t>& index);

  /// Batches are produced on this device (the dataset stays where it is).
  Device device() const { return device_; }
  void to_cpu();  ///< Produces the batches in host memory from now on.
  /// Produces the batches on CUDA device `id` from now on (the dataset stays where it is).
  /// DeviceError without a GPU or when there is no device `id`.
  void to_gpu(int id = 0);

 protected:
  /// The dataset indices of batch `iteration` of this epoch.
  virtual std::vector<std::int64_t> batch_indices(std::int64_t iteration) const;

  const datasets::Dataset& dataset_;  ///< The dataset (must outlive the loader).
  std::int64_t batch_size_;           ///< Samples per batch.
  bool shuffle_;                      ///< Draw a permutation each epoch.
  bool drop_last_;                    ///< Leave out the last, smaller batch.
  std::int64_t data_size_;            ///< N, the dataset's size when the loader was built.
  std::int64_t max_iter_;             ///< Batches per epoch.
  std::int64_t iteration_ = 0;        ///< The next batch of this epoch.
  std::int64_t epoch_ = 0;            ///< Epochs run to their end.
  std::vector<std::int64_t> index_;   ///< This epoch's sample order.
  Device device_;                     ///< Where the batches are produced.
  random::Generator gen_;             ///< The stream the permutations are drawn from (default: the global one, so seeds reproduce DeZero).

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

/// A loader of parallel streams through the data in order, for truncated BPTT (DeZero's SeqDataLoader).
///
/// Step 60: batch_size parallel streams through the data in order (for truncated BPTT):
/// batch k holds samples `(i * jump + k) % N` for i < batch_size, jump = N / batch_size.
class SeqDataLoader : public DataLoader {
 public:
  /// A loader of `dataset` (kept by reference, never shuffled) with `batch_size` streams.
  SeqDataLoader(const datasets::Dataset& dataset, std::int64_t batch_size);
  /// Deleted: a loader of a temporary dataset would dangle.
  SeqDataLoader(const datasets::Dataset&& dataset, std::int64_t batch_size) = delete;

 protected:
  /// Batch `iteration`: samples `(i * jump + iteration) % N` for i < batch_size.
  std::vector<std::int64_t> batch_indices(std::int64_t iteration) const override;
};

}  // namespace dezero
