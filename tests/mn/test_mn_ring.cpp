// tests/mn/test_mn_ring.cpp - dezero::mn's ring allreduce (mn/ring.cpp) against MPI_Allreduce, under
// mpirun with 1, 2 (mn_np1, mn_np2, mn_netsim) and 3 ranks (mn_ring_np3, this file's cases only):
// float32, float64 and the 16-bit wires, sizes from 0 to a hundred thousand elements (fewer than the
// ranks, odd ones, one element per segment and one segment per block), every rank with the same
// bits; the communicators' algorithm option; a neighbour that sends a segment of the wrong size.
//
// Over 2 ranks the ring's sum is a + b, MPI's too: random values must agree to the bit. Over more
// ranks the order of the sum differs from MPI's, so the values are small multiples of a power of two
// whose every partial sum is exact in each type (and both must agree exactly).
// (The communicator cases make their collectives on every rank in the same order, like the others.)
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include "dezero/mn/detail.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace dezero;
using mn::detail::RingSum;

namespace {

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// The element at i on `rank`: random bits over 2 ranks, else an exact small multiple of 1/4.
double value(std::int64_t i, int rank, bool exact) {
  std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull +
                    static_cast<std::uint64_t>(rank + 1) * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 29;
  if (exact) return (static_cast<double>(h % 129) - 64.0) * 0.25;
  return (static_cast<double>(h >> 11) / 9007199254740992.0 - 0.5) * 1e3;
}

// This rank's buffer of n elements of `kind`, as bytes.
std::vector<unsigned char> make_buffer(RingSum kind, std::int64_t n, int rank, bool exact) {
  const std::size_t es = kind == RingSum::float64 ? 8 : kind == RingSum::float32 ? 4 : 2;
  std::vector<unsigned char> b(static_cast<std::size_t>(n) * es);
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = value(i, rank, exact);
    if (kind == RingSum::float64) {
      std::memcpy(b.data() + i * 8, &v, 8);
    } else if (kind == RingSum::float32) {
      const auto f = static_cast<float>(v);
      std::memcpy(b.data() + i * 4, &f, 4);
    } else {
      const std::uint16_t h = kind == RingSum::bfloat16 ? mn::detail::float_to_bf16(static_cast<float>(v))
                                                       : mn::detail::float_to_f16(static_cast<float>(v));
      std::memcpy(b.data() + i * 2, &h, 2);
    }
  }
  return b;
}

// MPI_Allreduce's sum of the same buffer, with the library's wire reductions for the 16-bit kinds.
void mpi_sum(RingSum kind, std::vector<unsigned char>& b, std::int64_t n, MPI_Comm comm) {
  if (n == 0) return;
  if (kind == RingSum::float64 || kind == RingSum::float32) {
    const MPI_Datatype type = kind == RingSum::float64 ? MPI_DOUBLE : MPI_FLOAT;
    REQUIRE(MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(n), type, MPI_SUM, comm) == MPI_SUCCESS);
    return;
  }
  MPI_Op op;
  REQUIRE(MPI_Op_create(mn::detail::wire_sum_function(kind == RingSum::bfloat16 ? mn::GradWireDtype::bfloat16
                                                                                : mn::GradWireDtype::float16),
                        1, &op) == MPI_SUCCESS);
  REQUIRE(MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(n), MPI_UINT16_T, op, comm) == MPI_SUCCESS);
  MPI_Op_free(&op);
}

// Whether every rank holds the same bytes (rank 0's, broadcast).
bool same_everywhere(const std::vector<unsigned char>& b, MPI_Comm comm) {
  std::vector<unsigned char> root = b;
  if (!root.empty()) MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_BYTE, 0, comm);
  const int mine = root == b ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

}  // namespace

TEST_CASE("mn ring: the ring's sum is MPI_Allreduce's for float32, float64 and the 16-bit wires, at any size") {
  const int size = world_size(), rank = world_rank();
  const bool exact = size > 2;
  MPI_Comm comm;
  REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  struct Case {
    std::int64_t n, segment_bytes;
  };
  const Case cases[] = {{0, 1 << 20},   {1, 1 << 20},      {2, 4},       {3, 1 << 20},
                        {5, 8},         {size - 1, 1 << 20}, {1001, 1},  {4099, 100},
                        {100003, 4096}, {100003, 1 << 20}};
  for (RingSum kind : {RingSum::float32, RingSum::float64, RingSum::bfloat16, RingSum::float16}) {
    for (const Case& c : cases) {
      CAPTURE(static_cast<int>(kind));
      CAPTURE(c.n);
      CAPTURE(c.segment_bytes);
      std::vector<unsigned char> ring = make_buffer(kind, c.n, rank, exact), mpi = ring;
      mn::detail::ring_allreduce(comm, ring.data(), c.n, kind, c.segment_bytes, "test");
      mpi_sum(kind, mpi, c.n, comm);
      CHECK(ring == mpi);
      CHECK(same_everywhere(ring, comm));
    }
  }
  MPI_Comm_free(&comm);
}

TEST_CASE("mn ring: the communicators' algorithm option; ring and mpi give the same means, 16-bit wires too") {
  CHECK(std::string(mn::allreduce_algorithm_name(mn::AllreduceAlgorithm::ring)) == "ring");
  CHECK(mn::allreduce_algorithm_from_name("mpi") == mn::AllreduceAlgorithm::mpi);
  CHECK_THROWS_AS(mn::allreduce_algorithm_from_name("tree"), ValueError);
  CHECK_THROWS_AS(mn::create_communicator("flat", {mn::GradWireDtype::same, mn::AllreduceAlgorithm::ring, 0}),
                  ValueError);
  auto automatic = mn::create_communicator("flat");
  CHECK(automatic->allreduce_algorithm() == (automatic->intra_size() < automatic->size() ? mn::AllreduceAlgorithm::ring
                                                                                        : mn::AllreduceAlgorithm::mpi));
  const bool exact = automatic->size() > 2;
  for (const char* name : {"naive", "flat"}) {
    for (auto wire : {mn::GradWireDtype::same, mn::GradWireDtype::bfloat16}) {
      // Over 3 ranks the 16-bit roundings of the means depend on the order of the sum (the first case
      // checks the ring's 16-bit sums there on exact values).
      if (exact && wire != mn::GradWireDtype::same) continue;
      CAPTURE(name);
      CAPTURE(mn::grad_wire_dtype_name(wire));
      // Two parameters over the ring's 64 KiB threshold (float32 and float64), one under it.
      std::vector<Tensor> grads[2];
      for (auto algorithm : {mn::AllreduceAlgorithm::ring, mn::AllreduceAlgorithm::mpi}) {
        auto comm = mn::create_communicator(name, {wire, algorithm, 3000});
        CHECK(comm->allreduce_algorithm() == algorithm);
        std::vector<std::pair<std::string, Parameter>> params;
        const std::int64_t sizes[] = {40000, 9000, 7};
        const DType dtypes[] = {float32, float64, float32};
        for (int j = 0; j < 3; ++j) {
          std::vector<double> v(static_cast<std::size_t>(sizes[j]));
          for (std::int64_t i = 0; i < sizes[j]; ++i)
            v[static_cast<std::size_t>(i)] = value(i + j, comm->rank(), exact);
          Parameter p(zeros(Shape{sizes[j]}, dtypes[j]));
          p.set_grad(Variable(from_blob(v.data(), Shape{sizes[j]}, float64, dtypes[j])));
          params.emplace_back("p" + std::to_string(j), p);
        }
        comm->multi_node_mean_grad(params);
        auto& out = grads[algorithm == mn::AllreduceAlgorithm::ring ? 0 : 1];
        for (auto& kp : params) out.push_back(kp.second.grad().data());
      }
      for (std::size_t j = 0; j < 3; ++j) CHECK(utils::array_equal(grads[0][j], grads[1][j]));
    }
  }
}

TEST_CASE("mn ring: a neighbour that sends a segment of the wrong size is an error on both ranks, not a hang") {
  const int size = world_size(), rank = world_rank();
  if (size != 2) return;
  MPI_Comm comm;
  REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  // Rank 1 sums 1002 elements where rank 0 sums 1000: rank 1 receives 500 where it expects 501 (a
  // ValueError naming the sizes); rank 0 receives 501 into a 500 (MPI's truncation error).
  const std::int64_t n = rank == 1 ? 1002 : 1000;
  std::vector<float> b(static_cast<std::size_t>(n), 1.0f);
  if (rank == 1) {
    CHECK_THROWS_WITH_AS(mn::detail::ring_allreduce(comm, b.data(), n, RingSum::float32, 1 << 20, "forged"),
                         doctest::Contains("forged: rank 0 sent 2000 bytes of segment 0 of block 0 at ring step 0, "
                                           "where rank 1 expects 2004"),
                         ValueError);
  } else {
    CHECK_THROWS_AS(mn::detail::ring_allreduce(comm, b.data(), n, RingSum::float32, 1 << 20, "forged"), Error);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&comm);
}

TEST_CASE("mn flat: on 2 ranks large gradients are averaged where they are, bit for bit a / 2 + b / 2") {
  // "flat" on 2 ranks averages gradients of 64 KiB and up where they are (no pack): with
  // MPI_Allreduce by a reduction that halves both operands, with the ring by one exchange of the
  // whole gradients (pair_mean; small segments, so that a gradient spans many). Either way the pack
  // path's bits (each rank's g * 0.5, then a + b), also where (a + b) / 2 would differ: past half of
  // float's range (a + b overflows) and in the subnormals (halving rounds). A gradient whose memory
  // another tensor shares is not changed.
  for (auto algorithm : {mn::AllreduceAlgorithm::mpi, mn::AllreduceAlgorithm::ring}) {
  const std::string algorithm_name = mn::allreduce_algorithm_name(algorithm);
  CAPTURE(algorithm_name);
  auto comm = mn::create_communicator("flat", {mn::GradWireDtype::same, algorithm, 3000});
  const int P = comm->size(), rank = comm->rank();
  if (P > 2) return;  // (mn_ring_np3: the 2-rank paths only)
  const std::int64_t n = 20000;  // 80 KB of float32, 160 KB of float64
  auto values = [&](int r, DType dt) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value(i, r, false);
    const double big = dt == float32 ? 3.0e38 : 1.7e308, tiny = dt == float32 ? 1.4e-45 : 4.9e-324;
    v[0] = big;
    v[1] = -big;
    v[2] = tiny * (r + 1);
    v[3] = -tiny * 3;
    v[4] = tiny * 5;
    return v;
  };
  for (DType dt : {float32, float64}) {
    CAPTURE(dtype_name(dt));
    for (int round = 0; round < 2; ++round) {  // the second reuses the communicator's buffers
      std::vector<std::pair<std::string, Parameter>> params;
      Tensor held;  // shares p1's gradient
      for (int j = 0; j < 3; ++j) {
        const std::int64_t m = j == 2 ? 5 : n;  // p2 is small: packed
        std::vector<double> v = values(rank, dt);
        v.resize(static_cast<std::size_t>(m));
        Parameter p(zeros(Shape{m}, dt));
        p.set_grad(Variable(from_blob(v.data(), Shape{m}, float64, dt)));
        if (j == 1) held = p.grad().data();
        params.emplace_back("p" + std::to_string(j), p);
      }
      const Tensor before = held.copy();
      comm->multi_node_mean_grad(params);
      CHECK(utils::array_equal(held, before));
      for (int j = 0; j < 3; ++j) {
        const Tensor g = params[static_cast<std::size_t>(j)].second.grad().data();
        const std::int64_t m = g.size();
        std::vector<double> a = values(0, dt), b = values(P > 1 ? 1 : 0, dt);
        bool ok = true;
        std::int64_t first_bad = -1;
        for (std::int64_t i = 0; i < m && ok; ++i) {
          const auto k = static_cast<std::size_t>(i);
          if (dt == float32) {
            const float x = static_cast<float>(a[k]) * 0.5f, y = static_cast<float>(b[k]) * 0.5f;
            const float want = P > 1 ? x + y : static_cast<float>(rank == 0 ? a[k] : b[k]);
            const float got = g.data<float>()[i];
            ok = std::memcmp(&want, &got, 4) == 0;
          } else {
            const double x = a[k] * 0.5, y = b[k] * 0.5;
            const double want = P > 1 ? x + y : (rank == 0 ? a[k] : b[k]);
            const double got = g.data<double>()[i];
            ok = std::memcmp(&want, &got, 8) == 0;
          }
          if (!ok) first_bad = i;
        }
        CAPTURE(j);
        CAPTURE(first_bad);
        CHECK(ok);
      }
    }
  }
  }
}

TEST_CASE("mn flat: pair_mean refuses a peer's segment of the wrong size, on both ranks, without a hang") {
  const int size = world_size(), rank = world_rank();
  if (size != 2) return;
  MPI_Comm comm;
  REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  // Rank 1 averages 999 elements where rank 0 averages 1000, in segments of 500: rank 0's second
  // segment gets 1996 bytes where it expects 2000 (a ValueError naming the sizes); rank 1 receives
  // 2000 bytes into 1996 (MPI's truncation error).
  const std::int64_t n = rank == 1 ? 999 : 1000;
  std::vector<float> b(static_cast<std::size_t>(n), 1.0f);
  std::vector<unsigned char> scratch;
  const std::vector<std::pair<void*, std::int64_t>> spans{{b.data(), n}};
  if (rank == 0) {
    CHECK_THROWS_WITH_AS(mn::detail::pair_mean(comm, spans, RingSum::float32, 2000, scratch, "forged"),
                         doctest::Contains("forged: rank 1 sent 1996 bytes of segment 1, where rank 0 expects 2000"),
                         ValueError);
  } else {
    CHECK_THROWS_AS(mn::detail::pair_mean(comm, spans, RingSum::float32, 2000, scratch, "forged"), Error);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&comm);
}
