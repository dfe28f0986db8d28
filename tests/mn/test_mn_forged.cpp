// tests/mn/test_mn_forged.cpp - dezero::mn against a peer that sends forged messages (issue 35,
// finding 3), under mpirun -np 2 (skipped on one rank). One rank, the forger, makes the raw MPI
// calls the library's sender makes, with one field forged (an axis count of 1000, negative counts,
// a huge count, a dtype code of 99, string lengths whose sum overflows an int, a description
// shorter than it said, a falsified sum); the other rank calls the library. The library's rank must
// throw a ValueError that names the collective, the peer, the field and its value; the forger,
// which takes part in the library's agreement step as a real rank would, must see that every rank
// was told (the message it gathers is the one the others throw); and a correct collective
// afterwards works.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/mn.hpp>

#include "dezero/backend/backend.hpp"
#include "dezero/mn/detail.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace dezero;
namespace L = dezero::L;

static_assert(mn::detail::kMaxAxes == dezero::detail::kMaxDims, "mn's limit on a peer's axis count is Tensor's");

namespace {

// A communicator whose MPI communicator the test can reach, so that the forger sends on the
// same one as the library: the library's own "naive" sum.
class OpenCommunicator : public mn::Communicator {
 public:
  OpenCommunicator() : mn::Communicator("naive") {}
  MPI_Comm world() const { return state().world; }
  std::int64_t forged_addend = 0;  // added to the first element of each int64 tensor this rank sums

 protected:
  void allreduce_sum_inplace(std::vector<Tensor>& tensors) override {
    for (Tensor& t : tensors) {
      if (t.dtype() == int64 && t.size() > 0) t.data<std::int64_t>()[0] += forged_addend;
      REQUIRE(MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(t.size()), mn::detail::mpi_type(t.dtype()),
                            MPI_SUM, world()) == MPI_SUCCESS);
    }
  }
};

const char* const kHint = "the ranks run different programs or versions of dezero, or a peer is not a dezero rank";

// The library's allgather of strings: the lengths, then the bytes.
std::vector<std::string> raw_allgather_strings(MPI_Comm comm, const std::string& mine) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), offs(static_cast<std::size_t>(size));
  REQUIRE(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm) == MPI_SUCCESS);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offs[static_cast<std::size_t>(r)] = total;
    total += lens[static_cast<std::size_t>(r)];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  REQUIRE(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, comm) ==
          MPI_SUCCESS);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offs[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
  return out;
}

// The library's agreement after decoding, on the forger's side (it found nothing wrong): every
// rank's flag, and when some rank objected, the first objection, which every rank then throws.
std::string raw_agree(MPI_Comm comm) {
  int mine = 1, all = 0;
  REQUIRE(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) == MPI_SUCCESS);
  if (all == 1) return "";
  for (const std::string& s : raw_allgather_strings(comm, ""))
    if (!s.empty()) return s;
  return "(every rank objected without a message)";
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The communicator still works: rank 1's tensor to every rank, and a sum.
void check_still_works(mn::Communicator& comm) {
  Tensor b = comm.bcast(comm.rank() == 1 ? arange(6.0).reshape({2, 3}) : Tensor(), 1);
  CHECK(utils::array_equal(b, arange(6.0).reshape({2, 3})));
  CHECK(utils::array_equal(comm.allreduce(ones({3})), full({3}, static_cast<double>(comm.size()))));
}

// --- bcast: the 34-slot header [ndim, dtype, dims...] -------------------------------------------
struct HeaderCase {
  const char* name;
  std::vector<std::int64_t> head;  // the first slots; the rest are 0
  const char* words;
};

const std::vector<HeaderCase> kHeaderCases = {
    {"axis count 1000", {1000, 1, 2, 3}, "axis count 1000 (at most 12)"},
    {"negative axis count", {-7, 1}, "axis count -7"},
    {"dtype code 99", {1, 99, 4}, "dtype code 99"},
    {"negative extent", {2, 1, 3, -4}, "extent -4 of axis 1"},
    {"element count that overflows", {3, 1, 1ll << 40, 1ll << 40, 1ll << 40}, "overflows"},
    {"more bytes than this machine has", {2, 1, 1ll << 25, 1ll << 25}, "more than this machine's memory"},
};

// --- bcast_data: [n], then n words: per parameter [has data, dtype, ndim, dims...], then an end mark
constexpr std::int64_t kDescEnd = 0x64657a65726f0002;  // the library's end mark (communicator.cpp)

struct DescCase {
  const char* name;
  std::int64_t n;                  // the declared length
  std::vector<std::int64_t> desc;  // what is sent (when the length is sound)
  const char* words;
};

// The model on the library's rank is L::Linear(2) with no in_size: "W" (no data yet) and "b" (2,).
const std::vector<DescCase> kDescCases = {
    {"huge length", 1ll << 62, {}, "description length 4611686018427387904"},
    {"negative length", -5, {}, "description length -5"},
    {"axis count 1000", 10, {1, 1, 1000, 3, 2, 1, 1, 1, 2, kDescEnd}, "axis count 1000 (at most 12)"},
    {"dtype code 99", 10, {1, 99, 2, 3, 2, 1, 1, 1, 2, kDescEnd}, "dtype code 99"},
    {"negative extent", 10, {1, 1, 2, 3, -2, 1, 1, 1, 2, kDescEnd}, "extent -2 of axis 1"},
    {"overflowing elements", 11, {1, 1, 3, 1ll << 40, 1ll << 40, 1ll << 40, 1, 1, 1, 2, kDescEnd}, "overflows"},
    {"more bytes than memory", 10, {1, 1, 2, 1ll << 25, 1ll << 25, 1, 1, 1, 2, kDescEnd}, "more than this machine"},
    {"has-data flag 5", 10, {5, 1, 2, 3, 2, 1, 1, 1, 2, kDescEnd}, "has-data flag 5"},
    {"shorter than declared", 10, {1, 1, 2, 3, 2, 1, 1, 1, 2}, "shorter than the 10 words it declared"},
    {"a parameter cut off", 8, {1, 1, 2, 3, 2, 1, 1, kDescEnd}, "ends inside the description of parameter b"},
};

}  // namespace

TEST_CASE("mn forged: a bcast header with a forged field is a ValueError on every rank") {
  OpenCommunicator comm;
  if (comm.size() != 2) {
    MESSAGE("skipped: needs exactly 2 ranks");
    return;
  }
  const int forger = 1;
  for (const auto& c : kHeaderCases) SUBCASE(c.name) {
    if (comm.rank() == forger) {
      std::int64_t head[34] = {0};
      std::copy(c.head.begin(), c.head.end(), head);
      REQUIRE(MPI_Bcast(head, 34, MPI_INT64_T, forger, comm.world()) == MPI_SUCCESS);
      const std::string told = raw_agree(comm.world());  // what the root, were it a dezero rank, throws
      CHECK(told.find(c.words) != std::string::npos);
      CHECK(told.find("bcast: rank 0 received from the root, rank 1,") != std::string::npos);
      CHECK(told.find(kHint) != std::string::npos);
    } else {
      CHECK_THROWS_WITH_AS(comm.bcast(Tensor(), forger), doctest::Contains(c.words), ValueError);
    }
    check_still_works(comm);
  }
}

TEST_CASE("mn forged: a bcast_data description with a forged field is a ValueError on every rank") {
  OpenCommunicator comm;
  if (comm.size() != 2) {
    MESSAGE("skipped: needs exactly 2 ranks");
    return;
  }
  const int forger = 0;  // bcast_data's root
  for (const auto& c : kDescCases) SUBCASE(c.name) {
    L::Linear lazy(2);  // "W" without data, "b" (2,)
    if (comm.rank() == forger) {
      std::uint64_t h = fnv1a("W\nb\n"), all[2] = {0, 0};
      REQUIRE(MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm.world()) == MPI_SUCCESS);
      std::int64_t n = c.n;
      REQUIRE(MPI_Bcast(&n, 1, MPI_INT64_T, forger, comm.world()) == MPI_SUCCESS);
      std::string told = raw_agree(comm.world());  // the length
      if (told.empty()) {
        std::vector<std::int64_t> desc = c.desc;
        REQUIRE(MPI_Bcast(desc.data(), static_cast<int>(desc.size()), MPI_INT64_T, forger, comm.world()) ==
                MPI_SUCCESS);
        told = raw_agree(comm.world());  // the description
      }
      CHECK(told.find(c.words) != std::string::npos);
      CHECK(told.find("bcast_data: rank 1 received from rank 0") != std::string::npos);
      CHECK(told.find(kHint) != std::string::npos);
    } else {
      CHECK_THROWS_WITH_AS(comm.bcast_data(lazy), doctest::Contains(c.words), ValueError);
      CHECK_FALSE(lazy.W.data().defined());  // nothing was made from the forged description
    }
    check_still_works(comm);
  }
  // A sound description still works after all that: rank 0's parameters reach rank 1.
  L::Linear model(2, [] {
    L::LinearOptions o;
    o.in_size = 3;
    return o;
  }());
  if (comm.rank() == 0) model.W.set_data(full({3, 2}, 5.0));
  comm.bcast_data(model);
  CHECK(utils::array_equal(model.W.data(), full({3, 2}, 5.0)));
}

TEST_CASE("mn forged: string lengths that are negative or overflow an int when summed") {
  OpenCommunicator comm;
  if (comm.size() != 2) {
    MESSAGE("skipped: needs exactly 2 ranks");
    return;
  }
  const int forger = 1;
  for (int forged : {INT_MAX, -5}) SUBCASE(forged > 0 ? "a length of INT_MAX" : "a negative length") {
    // allreduce checks the shapes first (a hash); a hash that differs makes every rank gather
    // every rank's list of parameters to say what differs: the forger's length is the lie.
    if (comm.rank() == forger) {
      std::uint64_t h = 12345, all[2] = {0, 0};
      REQUIRE(MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm.world()) == MPI_SUCCESS);
      int lens[2] = {0, 0};
      REQUIRE(MPI_Allgather(&forged, 1, MPI_INT, lens, 1, MPI_INT, comm.world()) == MPI_SUCCESS);
      // The library stops here on every rank: each saw the same lengths.
    } else {
      const std::string words = "allreduce: rank 1 sent a string length of " + std::to_string(forged);
      CHECK_THROWS_WITH_AS(comm.allreduce(ones({3})), doctest::Contains(words.c_str()), ValueError);
    }
    check_still_works(comm);
  }
  // Two lengths that each fit but whose sum does not.
  SUBCASE("lengths whose sum overflows an int") {
    if (comm.rank() == forger) {
      std::uint64_t h = 12345, all[2] = {0, 0};
      REQUIRE(MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm.world()) == MPI_SUCCESS);
      int len = INT_MAX - 10, lens[2] = {0, 0};
      REQUIRE(MPI_Allgather(&len, 1, MPI_INT, lens, 1, MPI_INT, comm.world()) == MPI_SUCCESS);
    } else {
      CHECK_THROWS_WITH_AS(comm.allreduce(ones({3})), doctest::Contains("overflow"), ValueError);
    }
    check_still_works(comm);
  }
}

TEST_CASE("mn forged: multi_node_mean_grad's flags and dtype codes from a peer") {
  OpenCommunicator comm;
  if (comm.size() != 2) {
    MESSAGE("skipped: needs exactly 2 ranks");
    return;
  }
  const int forger = 1;
  struct GradCase {
    const char* name;
    std::int64_t code, minus_min, some, minus_every;
    const char* words;
  };
  // The library's rank has no gradient: it sends -1, -1000, 0, 0 for its parameter.
  const std::vector<GradCase> cases = {
      {"dtype code 99", 99, -99, 1, 0, "largest dtype code 99"},
      {"negative dtype code", -7, 7, 1, 0, "smallest dtype code -7"},
      {"some-flag 7", 1, -1, 7, 0, "some-rank flag 7"},
  };
  for (const auto& c : cases) SUBCASE(c.name) {
    L::Linear model(2, [] {
      L::LinearOptions o;
      o.in_size = 3;
      o.nobias = true;
      return o;
    }());
    if (comm.rank() == forger) {
      // The hash halves at their least, so that the library's rank's are the maxima; one parameter.
      std::vector<std::int64_t> v{INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, c.code, c.minus_min, c.some,
                                  c.minus_every},
          all(v.size());
      REQUIRE(MPI_Allreduce(v.data(), all.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_MAX, comm.world()) ==
              MPI_SUCCESS);
    } else {
      CHECK_THROWS_WITH_AS(comm.multi_node_mean_grad(model), doctest::Contains(c.words), ValueError);
      CHECK_FALSE(model.W.has_grad());
    }
    check_still_works(comm);
  }
}

TEST_CASE("mn forged: scatter_dataset's count of ranks whose dataset differs") {
  OpenCommunicator comm;
  if (comm.size() != 2) {
    MESSAGE("skipped: needs exactly 2 ranks");
    return;
  }
  // Rank 1 adds -1 to its flag (0: same size as rank 0's) as it is summed: the sum is -1.
  datasets::Dataset data(arange(7.0).reshape({7, 1}), arange(7, int64));
  comm.forged_addend = comm.rank() == 1 ? -1 : 0;
  CHECK_THROWS_WITH_AS(mn::scatter_dataset(data, comm), doctest::Contains("datasets that differ from rank 0's is -1"),
                       ValueError);
  comm.forged_addend = 0;
  CHECK(mn::scatter_dataset(data, comm).size() == 4);
  check_still_works(comm);
}

namespace {
// The message of the ValueError f throws; "NO THROW" or "WRONG TYPE: ..." otherwise.
std::string dzt_thrown_value(const std::function<void()>& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG TYPE: ") + e.what();
  }
  return "NO THROW";
}
}  // namespace

TEST_CASE("mn forged: a message longer than the collective's is a ValueError, and a peer's problem names its rank") {
  OpenCommunicator comm;
  if (comm.size() != 2) {
    MESSAGE("skipped: needs exactly 2 ranks");
    return;
  }
  const int forger = 1;
  // The bcast header is 34 words; the forger sends 35 (issue 43, item 9: MPI_ERR_TRUNCATE was a
  // plain dezero::Error naming nothing).
  if (comm.rank() == forger) {
    std::int64_t head[35] = {1, 1, 2};
    REQUIRE(MPI_Bcast(head, 35, MPI_INT64_T, forger, comm.world()) == MPI_SUCCESS);
  } else {
    const std::string msg = dzt_thrown_value([&] { comm.bcast(Tensor(), forger); });
    CHECK_MESSAGE(msg.find("a peer sent a longer message than this rank, rank 0, expected (MPI_ERR_TRUNCATE") !=
                      std::string::npos,
                  msg);
    CHECK_MESSAGE(msg.find(kHint) != std::string::npos, msg);
  }
  check_still_works(comm);

  // A problem text a peer sends is quoted after the rank that sent it, whatever it says.
  if (comm.rank() == forger) {
    std::int64_t head[34] = {1, 1, 4};  // a sound header: rank 0 finds nothing wrong
    REQUIRE(MPI_Bcast(head, 34, MPI_INT64_T, forger, comm.world()) == MPI_SUCCESS);
    int mine = 0, all = 0;  // the forger objects, with a text that pretends to be rank 0's
    REQUIRE(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm.world()) == MPI_SUCCESS);
    raw_allgather_strings(comm.world(), "rank 0 says: stop");
  } else {
    const std::string msg = dzt_thrown_value([&] { comm.bcast(Tensor(), forger); });
    CHECK_MESSAGE(msg.find("dezero::mn bcast: rank 1 found a problem: ") == 0, msg);
    CHECK_MESSAGE(msg.find("rank 0 says: stop") != std::string::npos, msg);
  }
  check_still_works(comm);
}
