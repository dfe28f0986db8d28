// dezero/mn/flat.cpp - the "flat" communicator (ChainerMN's): a group of tensors in one buffer, one
// MPI_Allreduce; on 2 ranks the large gradients averaged where they are. The shared operations are
// Communicator's (communicator.cpp); create_communicator("flat") makes one (factory.cpp).
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "dezero/mn/detail.hpp"

namespace dezero::mn {

namespace {

template <class T>
void scaled_copy(const T* src, T* dst, std::int64_t n, T scale) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i] * scale;
}

// The MPI reduction of "flat" on 2 ranks: inout[i] = in[i] / 2 + inout[i] / 2, each half rounded
// on its own (two statements: no fused multiply-add), which is bit for bit what the pack path makes
// (each rank's g * 0.5 summed by MPI_SUM; float addition is commutative). For MPI_FLOAT and
// MPI_DOUBLE.
template <class T>
void add_halves(const T* in, T* inout, int n) {
  for (int i = 0; i < n; ++i) {
    const T a = in[i] * static_cast<T>(0.5);
    const T b = inout[i] * static_cast<T>(0.5);
    inout[i] = a + b;
  }
}

void mean_of_two(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type == MPI_DOUBLE) add_halves(static_cast<const double*>(in), static_cast<double*>(inout), *len);
  else add_halves(static_cast<const float*>(in), static_cast<float*>(inout), *len);
}

// Gradients from this size up are averaged where they are by "flat" on 2 ranks (smaller ones are
// packed: one MPI call for all of them).
constexpr std::int64_t kInPlaceMinBytes = std::int64_t{64} << 10;

// --- "flat": one buffer, one MPI_Allreduce ----------------------------------------------------------
// The group (one dtype, one device) is copied into one host buffer, page-locked when the tensors
// are on a GPU, summed by one MPI_Allreduce in place, and copied back. The buffer is kept for the
// next call (the same model asks for the same size every step).
//
// Host gradients take a shorter way (mean_inplace): each is scaled by 1 / size() as it is copied
// into the buffer, so the sum MPI returns is already the mean, and each gradient then becomes a
// view of its part of the buffer instead of being copied back: one pass over the gradients besides
// MPI's, as many as "naive" makes to scale. The buffer is reused once no gradient refers to it (the
// next step's backward made new ones); a gradient that is still held keeps its buffer.
//
// On 2 ranks with MPI_Allreduce (allreduce_algorithm mpi: every rank on one machine, by default)
// there is no pass of our own for the large gradients (64 KiB and up): each is summed where it is by
// one MPI_Allreduce whose reduction halves both operands (mean_of_two), the same bits as the pack
// path. Packing had cost as much as a third of MPI's own time per step (W5 on loopback, bench/README.md).
// With the ring (allreduce_algorithm ring: ranks on two machines, by default) all the gradients of a
// 2-rank job, large and small, are exchanged whole instead, also where they are (detail::pair_mean,
// ring.cpp): one phase and one round trip, the same bytes, the same bits.
// A gradient whose memory another tensor shares is first copied into a buffer of the
// communicator's (kept between steps, as the pack buffer is), so that nothing else changes; every
// rank makes the same MPI calls either way (the gradients' sizes decide, and they are the same
// everywhere).
class FlatCommunicator : public Communicator {
 public:
  FlatCommunicator() : Communicator("flat") {}

 protected:
  void mean_inplace(std::vector<Tensor*>& grads) override {
    if (grads.empty()) return;
    const DType dt = grads[0]->dtype();
    if (!grads[0]->device().is_cpu() || !is_floating(dt)) {
      Communicator::mean_inplace(grads);
      return;
    }
    std::vector<Tensor*> packed;
    const bool mpi = allreduce_algorithm() == AllreduceAlgorithm::mpi;
    if (size() == 2 && (mpi || allreduce_algorithm() == AllreduceAlgorithm::ring) && (dt == float32 || dt == float64)) {
      std::vector<std::pair<void*, std::int64_t>> spans;  // ring: the large gradients, exchanged at once
      std::size_t k = 0;  // the large gradient's index, for its copy buffer
      for (Tensor* g : grads) {
        // MPI_Allreduce: one call per large gradient, the small ones packed into one more. The
        // exchange: every gradient in the one exchange (no call of its own, so no round trip either).
        if (mpi && static_cast<std::int64_t>(g->nbytes()) < kInPlaceMinBytes) {
          packed.push_back(g);
          continue;
        }
        if (g->storage().use_count() > 1) {  // not this gradient's alone: sum a copy
          if (own_.size() <= k) own_.resize(k + 1);
          Tensor& c = own_[k];
          if (!c.defined() || c.dtype() != dt || c.shape() != g->shape() || c.storage().use_count() > 1)
            c = Tensor::empty(g->shape(), dt, Device::cpu(), "multi_node_mean_grad");
          std::memcpy(c.raw_data(), g->raw_data(), g->nbytes());
          *g = c;
          ++k;
        }
        if (mpi) sum_halves(g->raw_data(), g->size(), dt);
        else spans.emplace_back(g->raw_data(), g->size());
      }
      if (!spans.empty())
        detail::pair_mean(state().world, spans, dt == float32 ? detail::RingSum::float32 : detail::RingSum::float64,
                          ring_segment_bytes(), scratch_, "multi_node_mean_grad");
      if (packed.empty()) return;
    } else {
      packed = grads;
    }
    pack_and_sum(packed, dt);
  }

  void allreduce_sum_inplace(std::vector<Tensor>& tensors) override {
    if (tensors.empty()) return;
    const DType dt = tensors[0].dtype();
    const std::size_t es = dtype_size(dt);
    const bool gpu = !tensors[0].device().is_cpu();
    std::int64_t total = 0;
    for (const Tensor& t : tensors) total += t.size();
    buffer_.reserve(static_cast<std::size_t>(total) * es, gpu);
    auto* buf = static_cast<unsigned char*>(buffer_.data());
    std::size_t at = 0;
    for (const Tensor& t : tensors) {
      detail::copy_to_host(t, buf + at);
      at += t.nbytes();
    }
    detail::wait_for_copies(tensors);
    allreduce_host(buf, total, dt, "allreduce");
    at = 0;
    for (const Tensor& t : tensors) {
      detail::copy_from_host(buf + at, t);
      at += t.nbytes();
    }
    detail::wait_for_copies(tensors);
  }

 private:
  // n elements of float32 or float64 at p replaced by their mean over the 2 ranks, in place.
  void sum_halves(void* p, std::int64_t n, DType dt) {
    State& st = state();
    if (st.mean_of_two == MPI_OP_NULL) {
      DEZERO_MPI_CHECK(MPI_Op_create(&mean_of_two, 1, &st.mean_of_two));
      State* sp = &st;
      st.release.push_back([sp] { MPI_Op_free(&sp->mean_of_two); });
    }
    const std::size_t es = dtype_size(dt);
    auto* bytes = static_cast<unsigned char*>(p);
    detail::in_chunks(n, [&](std::int64_t off, int count) {
      DEZERO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bytes + static_cast<std::size_t>(off) * es, count,
                                     detail::mpi_type(dt), st.mean_of_two, st.world));
    });
  }

  // The gradients scaled into one buffer, summed, and left as views of it (the class comment).
  void pack_and_sum(std::vector<Tensor*>& grads, DType dt) {
    std::int64_t total = 0;
    for (const Tensor* g : grads) total += g->size();
    if (!mean_buffer_.defined() || mean_buffer_.dtype() != dt || mean_buffer_.size() != total ||
        mean_buffer_.storage().use_count() > 1)
      mean_buffer_ = Tensor::empty(Shape{total}, dt, Device::cpu(), "multi_node_mean_grad");
    const double scale = 1.0 / static_cast<double>(size());
    std::int64_t at = 0;
    for (const Tensor* g : grads) {
      if (dt == float32) scaled_copy(static_cast<const float*>(g->raw_data()), mean_buffer_.data<float>() + at,
                                     g->size(), static_cast<float>(scale));
      else scaled_copy(static_cast<const double*>(g->raw_data()), mean_buffer_.data<double>() + at, g->size(), scale);
      at += g->size();
    }
    allreduce_host(mean_buffer_.raw_data(), total, dt, "multi_node_mean_grad");
    at = 0;
    for (Tensor* g : grads) {
      Tensor view(mean_buffer_.storage(), mean_buffer_.offset() + at, g->shape(), dt);
      at += g->size();
      *g = std::move(view);
    }
  }

  detail::HostBuffer buffer_;
  Tensor mean_buffer_;       // host gradients' means (pack_and_sum)
  std::vector<Tensor> own_;  // copies of shared large gradients, summed in place (mean_inplace on 2 ranks)
  std::vector<unsigned char> scratch_;  // the peer's segments (pair_mean, 2 ranks with the ring)
};

}  // namespace

std::shared_ptr<Communicator> detail::make_flat_communicator() { return std::make_shared<FlatCommunicator>(); }

}  // namespace dezero::mn
