// dezero/mn/peer.cpp - what a peer sends, checked like a file (issue 35): counts, axis counts,
// extents, dtype codes and string lengths validated, element counts multiplied with overflow checks
// and capped by this machine's memory, before anything is allocated or cast; every rank's string
// gathered on every rank; agree(), the one collective after a message only some ranks received,
// so that a bad one is a ValueError on every rank at once. Used by communicator.cpp (broadcasts,
// the parameter lists, the gradients' presence) and declared in detail.hpp.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include <unistd.h>

#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn::detail {

// The most bytes of strings one allgather_strings takes in (the ranks' parameter lists, the
// problems of agree()): far above a real model's list, and below an int's range (MPI's offsets).
namespace {
using dezero::detail::fail;

constexpr std::int64_t kMaxGatheredBytes = std::int64_t{64} << 20;

}  // namespace

// The most bytes a peer's header may make this rank allocate: this machine's physical memory (no
// tensor the root really has can be larger on a receiver that is to hold it).
std::int64_t memory_cap() {
  static const std::int64_t cap = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0 || pages > INT64_MAX / page) return std::int64_t{1} << 40;
    return static_cast<std::int64_t>(pages) * static_cast<std::int64_t>(page);
  }();
  return cap;
}

bool is_dtype_code(std::int64_t code) { return code >= 0 && code <= static_cast<std::int64_t>(kLastDtype); }

// Checks a declared tensor: `nd` axes with extents `dims`, dtype `code`. Returns "" when sound (and
// its bytes in `bytes`), else what is wrong ("axis count 1000 (at most 12)").
std::string check_declared(std::int64_t nd, const std::int64_t* dims, std::int64_t code, std::int64_t& bytes) {
  if (nd < 0 || nd > detail::kMaxAxes)
    return "axis count " + std::to_string(nd) + " (at most " + std::to_string(detail::kMaxAxes) + ")";
  if (!is_dtype_code(code))
    return "dtype code " + std::to_string(code) + " (the dtypes are 0 to " +
           std::to_string(static_cast<int>(kLastDtype)) + ")";
  std::int64_t elements = 1;
  bool overflow = false;
  for (std::int64_t k = 0; k < nd; ++k) {
    const std::int64_t e = dims[k];
    if (e < 0) return "extent " + std::to_string(e) + " of axis " + std::to_string(k);
    if (e != 0 && elements > INT64_MAX / e) overflow = true;
    else elements *= e;
  }
  const auto es = static_cast<std::int64_t>(dtype_size(static_cast<DType>(code)));
  std::string shape = "(";
  for (std::int64_t k = 0; k < nd; ++k) shape += (k ? ", " : "") + std::to_string(dims[k]);
  shape += nd == 1 ? ",)" : ")";
  if (overflow || elements > INT64_MAX / es) return "shape " + shape + ", whose element count overflows 64 bits";
  bytes = elements * es;
  if (bytes > memory_cap())
    return "shape " + shape + " of " + std::to_string(bytes) + " bytes, more than this machine's memory (" +
           std::to_string(memory_cap()) + " bytes)";
  return "";
}

// A peer's text, fit to quote in a message: control bytes escaped, at most `max` bytes.
std::string quoted(const std::string& s, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

// Every rank's string, on every rank (MPI_Allgatherv). Every rank receives the same lengths, so
// every rank finds the same fault in them and throws the same ValueError.
std::vector<std::string> allgather_strings(MPI_Comm comm, const std::string& mine, int size, const std::string& op) {
  const auto share = static_cast<std::size_t>(kMaxGatheredBytes / size);  // this rank's own is cut to its share
  const std::string own = mine.size() > share ? mine.substr(0, share) : mine;
  int len = static_cast<int>(own.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), offs(static_cast<std::size_t>(size));
  DEZERO_MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm));
  std::int64_t total = 0;
  int largest = 0;
  for (int r = 0; r < size; ++r) {
    const int l = lens[static_cast<std::size_t>(r)];
    if (l < 0)
      fail<ValueError>(op.c_str(), "rank ", r, " sent a string length of ", l, " (a length is at least 0)", kPeerHint);
    if (l > lens[static_cast<std::size_t>(largest)]) largest = r;
    offs[static_cast<std::size_t>(r)] = static_cast<int>(std::min<std::int64_t>(total, INT_MAX));
    total += l;
  }
  if (total > kMaxGatheredBytes)
    fail<ValueError>(op.c_str(), "rank ", largest, " sent a string length of ", lens[static_cast<std::size_t>(largest)],
                     ": the ranks' strings sum to ", total, " bytes, more than the ", kMaxGatheredBytes, " taken in",
                     total > INT_MAX ? " (and the sum would overflow an int)" : "", kPeerHint);
  std::string all(static_cast<std::size_t>(total), '\0');
  DEZERO_MPI_CHECK(MPI_Allgatherv(own.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, comm));
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offs[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
  return out;
}

// Every rank says whether it found `problem` (one MPI_Allreduce); when some rank did, every rank
// throws ValueError with the first rank's problem, so that no rank goes on to a collective the
// others have left. The text is a peer's: the message says which rank sent it (its place in the
// gather, which the text cannot forge) before quoting it.
void agree(MPI_Comm comm, int size, const std::string& op, const std::string& problem) {
  int mine = problem.empty() ? 1 : 0, all = 0;
  DEZERO_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm));
  if (all == 1) return;
  const std::vector<std::string> said = allgather_strings(comm, problem, size, op);
  for (std::size_t r = 0; r < said.size(); ++r)
    if (!said[r].empty())
      throw ValueError("dezero::mn " + op + ": rank " + std::to_string(r) + " found a problem: " + quoted(said[r], 8000));
  fail<ValueError>(op.c_str(), "a rank reported a problem without saying which", kPeerHint);
}

namespace {
std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

// "rank 1 has l1/W (4, 3) float32 where rank 0 has l1/W (4, 2) float32", for the first rank and
// line that differ from rank 0's.
std::string first_difference(const std::vector<std::string>& sigs) {
  const std::vector<std::string> ref = lines_of(sigs[0]);
  for (std::size_t r = 1; r < sigs.size(); ++r) {
    const std::vector<std::string> mine = lines_of(sigs[r]);
    const std::size_t n = std::max(ref.size(), mine.size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::string a = i < ref.size() ? ref[i] : "nothing more";
      const std::string b = i < mine.size() ? mine[i] : "nothing more";
      if (a != b)
        return "rank " + std::to_string(r) + " has " + quoted(b, 500) + " where rank 0 has " + quoted(a, 500);
    }
  }
  return "the ranks differ";
}

}  // namespace dezero::mn::detail
