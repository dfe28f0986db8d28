// dezero/mn/ring.cpp - dezero::mn's own allreduce for large host buffers
// (CommunicatorOptions::allreduce_algorithm = ring): a ring of point-to-point messages that sends
// and receives 2 (N - 1) / N x S bytes per rank for S bytes over N ranks, the bandwidth bound of
// any allreduce, cut into segments that are pipelined so that every link is busy in both
// directions all the time and each segment is added while the next ones travel.
//
// Why it exists: through TCP (tools/netsim.sh's 1 Gbit/s links) Open MPI 4.1's MPI_Allreduce of
// W1's 7.2 MB took 95-120 ms against the 57.5 ms bound, whichever coll_tuned algorithm. Its
// messages are larger than the TCP transport's eager limit (64 KiB), so each waits for a
// rendezvous reply, and that reply travels in the one TCP stream between the two ranks behind the
// megabytes of data already queued in that direction. The ring's segments (63 KiB by default)
// are sent eagerly, posted well ahead, and need no reply (bench/README.md, issue 32).
//
// The buffer (n elements) is cut into N blocks of n / N elements (the first n % N one more); rank r
// starts the ring with its block r. There are 2 (N - 1) steps: at step t rank r sends block
// (r - t) mod N to rank r + 1 and receives block (r - t - 1) mod N from rank r - 1. In the first
// N - 1 steps (reduce-scatter) what arrives is added to the rank's own values of the block, and the
// sum is what it sends on at the next step; after them rank r holds block (r + 1) mod N summed over
// every rank. In the last N - 1 steps (allgather) the summed blocks travel round and are copied
// into place. A block's sum is made on one rank only and copied everywhere else, so every rank ends
// with the same bits (for 2 ranks a + b, the same as any MPI_Allreduce, since float addition is
// commutative).
//
// Pipelining: a block is sent as segments of segment_bytes; segment k of step t + 1 leaves as soon as
// segment k of step t has arrived and been added (or copied), and the receives of step t + 1 are
// posted while step t's arrive, into the other of two staging buffers. The 16-bit wires add in
// float32 and round each partial sum back (wire.cpp's reductions, the same as their MPI_Op).
//
// What the neighbour sends is checked before it is used: every segment must have exactly the bytes
// this rank expects (both sides derive them from n, which the callers have agreed on).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn::detail {

namespace {

using dezero::detail::fail;

constexpr int kRingTag = 0x5249;  // 'RI': no other point-to-point message on a Communicator uses it

std::size_t element_size(RingSum kind) {
  switch (kind) {
    case RingSum::float32: return 4;
    case RingSum::float64: return 8;
    case RingSum::bfloat16:
    case RingSum::float16: return 2;
  }
  return 1;
}

// dst[i] = src[i] + dst[i] in the element type (the 16-bit ones through float32).
void add_into(RingSum kind, const unsigned char* src, unsigned char* dst, std::int64_t count) {
  switch (kind) {
    case RingSum::float32: {
      const auto* a = reinterpret_cast<const float*>(src);
      auto* b = reinterpret_cast<float*>(dst);
      for (std::int64_t i = 0; i < count; ++i) b[i] = a[i] + b[i];
      return;
    }
    case RingSum::float64: {
      const auto* a = reinterpret_cast<const double*>(src);
      auto* b = reinterpret_cast<double*>(dst);
      for (std::int64_t i = 0; i < count; ++i) b[i] = a[i] + b[i];
      return;
    }
    case RingSum::bfloat16:
    case RingSum::float16: {
      int len = static_cast<int>(count);
      MPI_Datatype type = MPI_UINT16_T;
      wire_sum_function(kind == RingSum::bfloat16 ? GradWireDtype::bfloat16 : GradWireDtype::float16)(
          const_cast<unsigned char*>(src), dst, &len, &type);
      return;
    }
  }
}

// The requests still outstanding when an error leaves the ring: receives are cancelled and
// completed, sends freed (MPI finishes them), so that none refers to this call's buffers later.
struct Outstanding {
  std::vector<MPI_Request> recvs, sends;
  ~Outstanding() {
    for (MPI_Request& q : recvs)
      if (q != MPI_REQUEST_NULL) {
        MPI_Cancel(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
      }
    for (MPI_Request& q : sends)
      if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
  }
};

// MPI_Wait. (A wait that naps between MPI_Tests, to leave the cores to the kernel's forwarding and
// the other threads, was tried on tools/netsim.sh's links and gained nothing.)
void wait_for(MPI_Request* request, MPI_Status* status) { DEZERO_MPI_CHECK(MPI_Wait(request, status)); }

}  // namespace

void ring_allreduce(MPI_Comm comm, void* buffer, std::int64_t n, RingSum kind, std::int64_t segment_bytes,
                    const char* op) {
  int rank = 0, size = 1;
  DEZERO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DEZERO_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size == 1 || n <= 0) return;
  const std::size_t es = element_size(kind);
  const std::int64_t N = size;
  // Elements per segment: at least one, and a count that fits MPI's int in bytes.
  const std::int64_t seg = std::clamp<std::int64_t>(segment_bytes / static_cast<std::int64_t>(es), 1,
                                                    (std::int64_t{1} << 30) / static_cast<std::int64_t>(es));
  const std::int64_t base = n / N, extra = n % N;
  const auto block_off = [&](std::int64_t b) { return b * base + std::min(b, extra); };
  const auto block_len = [&](std::int64_t b) { return base + (b < extra ? 1 : 0); };
  const auto segments = [&](std::int64_t b) { return (block_len(b) + seg - 1) / seg; };
  const auto seg_len = [&](std::int64_t b, std::int64_t k) { return std::min(seg, block_len(b) - k * seg); };
  const auto sent_at = [&](std::int64_t t) { return ((rank - t) % N + N) % N; };  // received at t: sent_at(t + 1)
  const std::int64_t steps = 2 * (N - 1);
  const int right = static_cast<int>((rank + 1) % N), left = static_cast<int>((rank - 1 + N) % N);

  auto* buf = static_cast<unsigned char*>(buffer);
  const std::size_t stage_bytes = static_cast<std::size_t>(block_len(0)) * es;  // block 0 is a longest one
  std::vector<unsigned char> stage(2 * stage_bytes);
  // send_req[t][k], recv_req[t][k]; every request is kept until it is waited for.
  std::vector<std::vector<MPI_Request>> send_req(static_cast<std::size_t>(steps));
  std::vector<std::vector<MPI_Request>> recv_req(static_cast<std::size_t>(steps));
  Outstanding pending;

  const auto post_recvs = [&](std::int64_t t) {
    const std::int64_t b = sent_at(t + 1);
    unsigned char* dst = stage.data() + static_cast<std::size_t>(t % 2) * stage_bytes;
    auto& reqs = recv_req[static_cast<std::size_t>(t)];
    reqs.assign(static_cast<std::size_t>(segments(b)), MPI_REQUEST_NULL);
    for (std::int64_t k = 0; k < segments(b); ++k)
      DEZERO_MPI_CHECK(MPI_Irecv(dst + static_cast<std::size_t>(k * seg) * es, static_cast<int>(seg_len(b, k) * es),
                                 MPI_BYTE, left, kRingTag, comm, &reqs[static_cast<std::size_t>(k)]));
  };
  const auto post_send = [&](std::int64_t t, std::int64_t k) {
    const std::int64_t b = sent_at(t);
    auto& reqs = send_req[static_cast<std::size_t>(t)];
    if (reqs.empty()) reqs.assign(static_cast<std::size_t>(segments(b)), MPI_REQUEST_NULL);
    DEZERO_MPI_CHECK(MPI_Isend(buf + static_cast<std::size_t>(block_off(b) + k * seg) * es,
                               static_cast<int>(seg_len(b, k) * es), MPI_BYTE, right, kRingTag, comm,
                               &reqs[static_cast<std::size_t>(k)]));
  };
  const auto track = [&] {  // the requests the guard must clean up if anything throws
    pending.recvs.clear();
    pending.sends.clear();
    for (auto& v : recv_req) pending.recvs.insert(pending.recvs.end(), v.begin(), v.end());
    for (auto& v : send_req) pending.sends.insert(pending.sends.end(), v.begin(), v.end());
  };

  try {
    post_recvs(0);
    for (std::int64_t k = 0; k < segments(rank); ++k) post_send(0, k);
    for (std::int64_t t = 0; t < steps; ++t) {
      if (t + 1 < steps) post_recvs(t + 1);  // into the other staging buffer, free since step t - 1
      const std::int64_t b = sent_at(t + 1);
      const unsigned char* src = stage.data() + static_cast<std::size_t>(t % 2) * stage_bytes;
      for (std::int64_t k = 0; k < segments(b); ++k) {
        MPI_Status status;
        wait_for(&recv_req[static_cast<std::size_t>(t)][static_cast<std::size_t>(k)], &status);
        int got = -1;
        DEZERO_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &got));
        const std::int64_t len = seg_len(b, k);
        if (got != static_cast<std::int64_t>(len * es))
          fail<ValueError>(op, "rank ", left, " sent ", got, " bytes of segment ", k, " of block ", b, " at ring step ",
                           t, ", where rank ", rank, " expects ", len * static_cast<std::int64_t>(es), " (", n,
                           " elements in all); hint: every rank must reduce buffers of the same size in the same "
                           "order");
        unsigned char* dst = buf + static_cast<std::size_t>(block_off(b) + k * seg) * es;
        const unsigned char* in = src + static_cast<std::size_t>(k * seg) * es;
        if (t < N - 1) {
          add_into(kind, in, dst, len);
        } else {
          // The segment was sent from here at step t - (N - 1): that send must be done before it is overwritten.
          wait_for(&send_req[static_cast<std::size_t>(t - (N - 1))][static_cast<std::size_t>(k)], MPI_STATUS_IGNORE);
          std::memcpy(dst, in, static_cast<std::size_t>(len) * es);
        }
        if (t + 1 < steps) post_send(t + 1, k);
      }
    }
    for (auto& reqs : send_req)
      for (MPI_Request& q : reqs) wait_for(&q, MPI_STATUS_IGNORE);
  } catch (...) {
    track();
    throw;
  }
}

// --- 2 ranks: one exchange ---------------------------------------------------------------------------
// For 2 ranks the ring's two phases (send half, add, send the sum back) move the same bytes as
// sending everything once; the exchange needs no second phase, so no segment waits for an addition
// on the other rank, and it works on the gradients where they are (the pack's scaled copy is
// gone). Every rank computes peer * 0.5 + own * 0.5 for every element: float addition commutes, so
// both ranks hold the same bits, and they are the pack path's (each rank's g * 0.5, then a + b).
namespace {
constexpr int kPairTag = 0x5041;  // 'PA'

template <class T>
void mean_into(const unsigned char* in, unsigned char* own, std::int64_t count) {
  const auto* a = reinterpret_cast<const T*>(in);
  auto* b = reinterpret_cast<T*>(own);
  for (std::int64_t i = 0; i < count; ++i) {
    const T x = a[i] * static_cast<T>(0.5);
    const T y = b[i] * static_cast<T>(0.5);
    b[i] = x + y;
  }
}
}  // namespace

void pair_mean(MPI_Comm comm, const std::vector<std::pair<void*, std::int64_t>>& spans, RingSum kind,
               std::int64_t segment_bytes, std::vector<unsigned char>& scratch, const char* op) {
  int rank = 0, size = 1;
  DEZERO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  DEZERO_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size != 2 || (kind != RingSum::float32 && kind != RingSum::float64))
    fail<ValueError>(op, "pair_mean needs 2 ranks and float32 or float64, got ", size, " ranks");
  const std::int64_t es = static_cast<std::int64_t>(element_size(kind));
  const std::int64_t seg = std::clamp<std::int64_t>(segment_bytes / es, 1, (std::int64_t{1} << 30) / es);
  const int peer = 1 - rank;
  // The segments in order: (span, first element, elements), and where each lands in scratch.
  struct Segment {
    unsigned char* own;
    std::int64_t count;
    std::size_t at;  // byte offset in scratch
  };
  std::vector<Segment> segs;
  std::size_t total = 0;
  for (const auto& [p, n] : spans)
    for (std::int64_t k = 0; k < n; k += seg) {
      const std::int64_t c = std::min(seg, n - k);
      segs.push_back({static_cast<unsigned char*>(p) + static_cast<std::size_t>(k * es), c, total});
      total += static_cast<std::size_t>(c * es);
    }
  if (segs.empty()) return;
  if (scratch.size() < total) scratch.resize(total);
  Outstanding pending;
  std::vector<MPI_Request> recvs(segs.size(), MPI_REQUEST_NULL), sends(segs.size(), MPI_REQUEST_NULL);
  try {
    for (std::size_t i = 0; i < segs.size(); ++i)
      DEZERO_MPI_CHECK(MPI_Irecv(scratch.data() + segs[i].at, static_cast<int>(segs[i].count * es), MPI_BYTE, peer,
                                 kPairTag, comm, &recvs[i]));
    for (std::size_t i = 0; i < segs.size(); ++i)
      DEZERO_MPI_CHECK(MPI_Isend(segs[i].own, static_cast<int>(segs[i].count * es), MPI_BYTE, peer, kPairTag, comm,
                                 &sends[i]));
    for (std::size_t i = 0; i < segs.size(); ++i) {
      MPI_Status status;
      wait_for(&recvs[i], &status);
      int got = -1;
      DEZERO_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &got));
      if (got != segs[i].count * es)
        fail<ValueError>(op, "rank ", peer, " sent ", got, " bytes of segment ", i, ", where rank ", rank, " expects ",
                         segs[i].count * es, " (", total,
                         " bytes in all); hint: every rank must average gradients of the same sizes in the same order");
      wait_for(&sends[i], MPI_STATUS_IGNORE);  // the peer has (or MPI holds) this segment: it may change now
      if (kind == RingSum::float32) mean_into<float>(scratch.data() + segs[i].at, segs[i].own, segs[i].count);
      else mean_into<double>(scratch.data() + segs[i].at, segs[i].own, segs[i].count);
    }
  } catch (...) {
    pending.recvs = recvs;
    pending.sends = sends;
    throw;
  }
}

}  // namespace dezero::mn::detail
