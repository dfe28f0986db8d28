// dezero/data/dataloaders.cpp - DataLoader / SeqDataLoader: epochs of index batches
// turned into (x, t) batches by Dataset::get_batch (one gather when the transforms
// allow it), and the host -> GPU batch pipeline of DataLoader::to_gpu.
//
// Everything CUDA goes through dezero::cuda (streams, events, pinned memory) and the
// tensor level (detail::copy_from_host_ in tensor/fused.hpp for the batch copies), so
// this file includes no backend header and builds the same with and without CUDA.
#include "dezero/dataloaders.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "dezero/cuda.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/fused.hpp"

namespace dezero {

DataLoader::DataLoader(const datasets::Dataset& dataset, std::int64_t batch_size, bool shuffle, bool drop_last,
                       random::Generator gen)
    : dataset_(dataset), batch_size_(batch_size), shuffle_(shuffle), drop_last_(drop_last),
      data_size_(dataset.size()), gen_(std::move(gen)) {
  if (batch_size <= 0) detail::fail<ValueError>("DataLoader", "batch_size must be positive, got ", batch_size);
  max_iter_ = drop_last ? data_size_ / batch_size : (data_size_ + batch_size - 1) / batch_size;
  reset();
}

// --- host -> GPU pipeline --------------------------------------------------------------
// After batch k is handed out, batch k+1 is gathered on the host (Dataset::get_batch),
// packed into one of two pinned buffers and copied by cudaMemcpyAsync on a side stream;
// an event recorded after the copy is what the compute stream (this thread's current
// stream when the batch is handed out) waits on. Nothing waits on the host except
// reusing a pinned buffer: its previous copy (batch k-1) must be done (an event sync,
// long finished in practice).
//
// Stream safety of the device tensors. The memory pool keeps freed blocks per stream
// and reuses a block only for allocations on the same stream. So the batch tensors are
// allocated on the COMPUTE stream, not the side stream: when the user drops them, their
// blocks return to the compute stream's list and are reused in its order, after the
// kernels that read them. For the side stream to write into a block that may have just
// been recycled from batch k-1, the side stream first waits on an event recorded on the
// compute stream right after the allocation (so the copy of k+1 starts once the compute
// stream has queued everything before step k; it overlaps step k). A batch that is
// dropped before being handed out (reset, to_cpu, another current stream, destruction)
// makes its allocating stream wait on its copy event first, so its blocks cannot be
// reused while the copy still writes into them.
struct DataLoader::Prefetcher {
  int device;
  cuda::Stream copy_stream;  // non-blocking: no implicit ordering with the legacy null stream
  cuda::Event allocated;
  struct Slot {
    cuda::PinnedMemory host;
    cuda::Event copied;
  };
  Slot slots[2];
  int next_slot = 0;
  // The batch in flight.
  std::optional<Batch> batch;
  std::int64_t iteration = -1;
  std::optional<cuda::Stream> stream;  // the compute stream it was allocated on
  Slot* slot = nullptr;

  // Constructed under a DeviceGuard of `id`: the stream and the events belong to it.
  explicit Prefetcher(int id)
      : device(id), copy_stream(true), allocated(false, true), slots{{{}, cuda::Event(false, true)},
                                                                      {{}, cuda::Event(false, true)}} {}
  ~Prefetcher() {
    try {
      cuda::DeviceGuard g(device);
      discard();
      for (auto& s : slots) s.copied.synchronize();  // the pinned buffers go back to the pool next
    } catch (...) {  // never throw from a destructor
    }
  }

  void discard() {
    if (batch && stream) stream->wait_event(slot->copied);
    batch.reset();
    stream.reset();
    slot = nullptr;
    iteration = -1;
  }

  // Starts batch `it` (host tensors `hb`) on its way to the device, allocated on `compute`.
  void start(const Batch& hb, std::int64_t it, const cuda::Stream& compute) {
    discard();
    Slot& s = slots[next_slot];
    next_slot ^= 1;
    const Tensor* parts[2] = {&hb.first, &hb.second};
    std::size_t offsets[2] = {0, 0}, total = 0;
    for (int i = 0; i < 2; ++i) {
      if (!parts[i]->defined() || !parts[i]->device().is_cpu()) continue;
      offsets[i] = total;
      total += (parts[i]->nbytes() + 255) / 256 * 256;
    }
    s.copied.synchronize();  // the copy that last read s.host (two batches ago) is done
    if (s.host.size() < total) s.host = cuda::alloc_pinned_memory(total);
    Batch db;
    Tensor* outs[2] = {&db.first, &db.second};
    const Device dev = Device::cuda(device);
    for (int i = 0; i < 2; ++i) {
      const Tensor& h = *parts[i];
      if (!h.defined()) continue;
      if (!h.device().is_cpu()) {  // a dataset that computes samples on a device: plain transfer
        *outs[i] = h.to(dev);
        continue;
      }
      if (h.nbytes()) std::memcpy(static_cast<char*>(s.host.data()) + offsets[i], h.raw_data(), h.nbytes());
      *outs[i] = Tensor::empty(h.shape(), h.dtype(), dev);  // on the compute (current) stream
    }
    allocated.record(compute);
    copy_stream.wait_event(allocated);
    {
      cuda::StreamGuard on_side(copy_stream);
      for (int i = 0; i < 2; ++i)
        if (parts[i]->defined() && parts[i]->device().is_cpu() && parts[i]->nbytes())
          detail::copy_from_host_(*outs[i], static_cast<char*>(s.host.data()) + offsets[i], parts[i]->nbytes());
    }
    s.copied.record(copy_stream);
    batch = std::move(db);
    iteration = it;
    stream = compute;
    slot = &s;
  }

  // The batch in flight, ordered on `compute` after its copy.
  Batch take(const cuda::Stream& compute) {
    compute.wait_event(slot->copied);
    Batch b = std::move(*batch);
    batch.reset();
    stream.reset();
    slot = nullptr;
    iteration = -1;
    return b;
  }
};

DataLoader::PrefetcherHandle::PrefetcherHandle() = default;
DataLoader::PrefetcherHandle::PrefetcherHandle(const PrefetcherHandle&) {}
DataLoader::PrefetcherHandle& DataLoader::PrefetcherHandle::operator=(const PrefetcherHandle&) { return *this; }
DataLoader::PrefetcherHandle::~PrefetcherHandle() = default;

std::optional<Batch> DataLoader::next_from_host_to_gpu() {
  cuda::DeviceGuard g(device_.index());
  auto& pf = prefetcher_.p;
  if (!pf || pf->device != device_.index()) {
    pf.reset();
    pf = std::make_unique<Prefetcher>(device_.index());
  }
  cuda::Stream compute = cuda::Stream::current();
  if (!pf->batch || pf->iteration != iteration_ || *pf->stream != compute)
    pf->start(dataset_.get_batch(batch_indices(iteration_)), iteration_, compute);  // not prefetched: now
  Batch b = pf->take(compute);
  ++iteration_;
  // One ahead, within the epoch (the next permutation is drawn when it starts, as on the CPU).
  // A failure here (say, a transform throwing) is left to the call that needs that batch.
  if (iteration_ < max_iter_) {
    try {
      pf->start(dataset_.get_batch(batch_indices(iteration_)), iteration_, compute);
    } catch (const std::exception&) {
      pf->discard();
    }
  }
  return b;
}

void DataLoader::reset() {
  if (prefetcher_.p) {
    cuda::DeviceGuard g(prefetcher_.p->device);
    prefetcher_.p->discard();
  }
  iteration_ = 0;
  if (shuffle_) {
    index_ = gen_.permutation(data_size_).to_vector<std::int64_t>();
  } else {
    index_.resize(static_cast<std::size_t>(data_size_));
    for (std::int64_t i = 0; i < data_size_; ++i) index_[static_cast<std::size_t>(i)] = i;
  }
}

void DataLoader::set_position(std::int64_t epoch, std::int64_t iteration, const std::vector<std::int64_t>& index) {
  const char* where = "DataLoader::set_position";
  if (epoch < 0) detail::fail<ValueError>(where, "epoch ", epoch, " is negative");
  if (iteration < 0 || iteration > max_iter_)
    detail::fail<ValueError>(where, "iteration ", iteration, " is outside 0..", max_iter_, " (", max_iter_,
                             " batches per epoch); hint: was the snapshot made with another batch size or data set?");
  if (static_cast<std::int64_t>(index.size()) != data_size_)
    detail::fail<ValueError>(where, "the sample order has ", index.size(), " entries for ", data_size_,
                             " samples; hint: was the snapshot made with another data set?");
  std::vector<char> seen(index.size(), 0);
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::int64_t k = index[i];
    if (k < 0 || k >= data_size_ || seen[static_cast<std::size_t>(k)] || (!shuffle_ && k != static_cast<std::int64_t>(i)))
      detail::fail<ValueError>(where, "the sample order is not ", shuffle_ ? "a permutation of 0.." : "0, 1, ..., ",
                               data_size_ - 1, " (entry ", i, " is ", k, ")");
    seen[static_cast<std::size_t>(k)] = 1;
  }
  if (prefetcher_.p) {
    cuda::DeviceGuard g(prefetcher_.p->device);
    prefetcher_.p->discard();
  }
  epoch_ = epoch;
  iteration_ = iteration;
  index_ = index;
}

std::vector<std::int64_t> DataLoader::batch_indices(std::int64_t iteration) const {
  std::int64_t begin = iteration * batch_size_;
  std::int64_t end = std::min(begin + batch_size_, data_size_);
  return std::vector<std::int64_t>(index_.begin() + begin, index_.begin() + end);
}

std::optional<Batch> DataLoader::next() {
  if (iteration_ >= max_iter_) {
    ++epoch_;
    reset();
    return std::nullopt;
  }
  if (dataset_.size() != data_size_)
    detail::fail<ValueError>("DataLoader", "the dataset changed size from ", data_size_, " to ", dataset_.size(),
                             " samples; make a new DataLoader");
  if (device_.is_cuda() && !dataset_.device().is_cuda()) return next_from_host_to_gpu();
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
  if (device_ != Device::cuda(id)) prefetcher_.p.reset();
  device_ = Device::cuda(id);
}

void DataLoader::to_cpu() {
  prefetcher_.p.reset();
  device_ = Device::cpu();
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
