// dezero/mn/communicator.cpp - mn::Communicator: the model operations every communicator shares
// (canonical parameter order, the check that every rank holds the same parameters, zero_fill,
// the mean, BatchNorm's running statistics, broadcasts), the "naive" and "flat" ways of summing
// over the ranks, and create_communicator. "pure_nccl" is in nccl.cpp.
//
// The rule that keeps ranks from hanging: every decision that changes which collectives a rank
// runs (is this model the same everywhere? does this parameter have a gradient anywhere?) is
// itself made collectively first, so all ranks take the same branch and an error is thrown on
// every rank at once.
//
// What a peer sends is checked like a file (issue 35): counts, axis counts, extents, dtype codes
// and string lengths are validated, element counts multiplied with overflow checks and capped,
// before anything is allocated or cast. A message that only some ranks received (a broadcast
// header: the root did not decode it) is followed by an agreement (agree(): one MPI_Allreduce of
// an int), so a bad one is a ValueError on every rank, the root's included; what every rank
// received alike (an allgather, an allreduce) every rank judges alike, with no extra collective.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <unistd.h>

#include "dezero/mn/detail.hpp"

namespace dezero::mn {

namespace {

using NamedParams = std::vector<std::pair<std::string, Parameter>>;

constexpr std::int64_t kRingMinBytes = std::int64_t{64} << 10;  // smaller buffers: MPI_Allreduce

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

NamedParams sorted_params(const L::Layer& model) {
  NamedParams ps = model.named_params();
  std::sort(ps.begin(), ps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return ps;
}

std::string describe_param(const std::string& key, const Parameter& p) {
  const Tensor& d = p.data();
  return key + " " + (d.defined() ? d.shape().str() + " " + dtype_name(d.dtype()) : std::string("(no data yet)"));
}

// --- checking what a peer sent -----------------------------------------------------------------------
using detail::kPeerHint;

// The last word of bcast_data's description ("dezero" and the format's number): a description cut
// short, or one in another format, lacks it.
constexpr std::int64_t kDescEnd = 0x64657a65726f0002;

// The most bytes of strings one allgather_strings takes in (the ranks' parameter lists, the
// problems of agree()): far above a real model's list, and below an int's range (MPI's offsets).
constexpr std::int64_t kMaxGatheredBytes = std::int64_t{64} << 20;

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

// The last dtype code (dezero/dtype.hpp's DType: float32, float64, int32, int64, bfloat16, float16).
constexpr DType kLastDtype = DType::Float16;

bool is_dtype_code(std::int64_t code) { return code >= 0 && code <= static_cast<std::int64_t>(kLastDtype); }

// The wire type of a 16-bit dtype (their sums add in float32 and round back, as the wires do).
GradWireDtype wire_of(DType dtype) { return dtype == bfloat16 ? GradWireDtype::bfloat16 : GradWireDtype::float16; }

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
std::string quoted(const std::string& s, std::size_t max = 2000) {
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
      throw ValueError(op + ": rank " + std::to_string(r) + " sent a string length of " + std::to_string(l) +
                       " (a length is at least 0)" + kPeerHint);
    if (l > lens[static_cast<std::size_t>(largest)]) largest = r;
    offs[static_cast<std::size_t>(r)] = static_cast<int>(std::min<std::int64_t>(total, INT_MAX));
    total += l;
  }
  if (total > kMaxGatheredBytes)
    throw ValueError(op + ": rank " + std::to_string(largest) + " sent a string length of " +
                     std::to_string(lens[static_cast<std::size_t>(largest)]) + ": the ranks' strings sum to " +
                     std::to_string(total) + " bytes, more than the " + std::to_string(kMaxGatheredBytes) +
                     " taken in" + (total > INT_MAX ? " (and the sum would overflow an int)" : "") + kPeerHint);
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
  throw ValueError(op + ": a rank reported a problem without saying which" + kPeerHint);
}

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

// Tensors grouped by dtype (then device), each group in the canonical order: the order in which
// every rank hands them to the communicator.
std::vector<std::vector<Tensor>> by_dtype(const std::vector<Tensor>& ts) {
  std::map<std::pair<int, std::string>, std::vector<Tensor>> groups;
  for (const Tensor& t : ts) groups[{static_cast<int>(t.dtype()), t.device().str()}].push_back(t);
  std::vector<std::vector<Tensor>> out;
  for (auto& [k, g] : groups) out.push_back(std::move(g));
  return out;
}

// Collects the running statistics of every BatchNorm under `layer` (their nodes).
void batch_norm_nodes(const L::Layer& layer, std::unordered_set<const VariableNode*>& out) {
  if (auto bn = dynamic_cast<const L::BatchNorm*>(&layer)) {
    out.insert(bn->avg_mean.node().get());
    out.insert(bn->avg_var.node().get());
  }
  for (const auto& e : layer.entries())
    if (e.layer) batch_norm_nodes(*e.layer, out);
}

}  // namespace

// --- Communicator -----------------------------------------------------------------------------------
Communicator::Communicator(std::string name) : name_(std::move(name)), state_(std::make_shared<State>()) {
  detail::require_mpi("mn::create_communicator");
  DEZERO_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &state_->world));
  DEZERO_MPI_CHECK(MPI_Comm_set_errhandler(state_->world, MPI_ERRORS_RETURN));
  DEZERO_MPI_CHECK(MPI_Comm_rank(state_->world, &rank_));
  DEZERO_MPI_CHECK(MPI_Comm_size(state_->world, &size_));
  DEZERO_MPI_CHECK(MPI_Comm_split_type(state_->world, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &state_->intra));
  DEZERO_MPI_CHECK(MPI_Comm_rank(state_->intra, &intra_rank_));
  DEZERO_MPI_CHECK(MPI_Comm_size(state_->intra, &intra_size_));
  detail::register_state(state_);
  algorithm_ = intra_size_ < size_ ? AllreduceAlgorithm::ring : AllreduceAlgorithm::mpi;  // automatic
}

// The ring for float32 and float64 buffers of 64 KiB or more (below that its 2 (N - 1) messages
// cost more than the bandwidth it saves), MPI_Allreduce otherwise.
//
// bfloat16 and float16 buffers are added in float32 and each partial sum rounded back (the 16-bit
// wires' reduction), by the ring or by MPI_Allreduce on 16-bit words.
void Communicator::allreduce_host(void* buffer, std::int64_t n, DType dtype, const char* op) {
  if (is_half(dtype)) {
    sum16(static_cast<std::uint16_t*>(buffer), n, wire_of(dtype), op);
    return;
  }
  const bool floating = dtype == float32 || dtype == float64;
  if (algorithm_ == AllreduceAlgorithm::ring && floating && size_ > 1 &&
      n * static_cast<std::int64_t>(dtype_size(dtype)) >= kRingMinBytes) {
    const auto kind = dtype == float32 ? detail::RingSum::float32 : detail::RingSum::float64;
    detail::ring_allreduce(state_->world, buffer, n, kind, ring_segment_bytes_, op);
    return;
  }
  const std::size_t es = dtype_size(dtype);
  auto* p = static_cast<unsigned char*>(buffer);
  detail::in_chunks(n, [&](std::int64_t off, int count) {
    DEZERO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, p + static_cast<std::size_t>(off) * es, count,
                                   detail::mpi_type(dtype), MPI_SUM, state_->world));
  });
}

Communicator::~Communicator() = default;

// The parameters' keys, shapes and dtypes must be the same on every rank. One 8-byte allgather
// when they are (the hash of this rank's list), the lists themselves only to say what differs.
// (No rank may skip it on its own, say because its list is the one it checked last: another
// rank's may have changed, and that rank would then wait in a collective this one never runs.)
void Communicator::check_same_everywhere(const std::string& op, const NamedParams& params) {
  detail::require_mpi(op.c_str());
  std::string sig;
  for (const auto& [key, p] : params) sig += describe_param(key, p) + "\n";
  const std::uint64_t h = fnv1a(sig);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size_));
  DEZERO_MPI_CHECK(MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, state_->world));
  if (!std::all_of(all.begin(), all.end(), [&](std::uint64_t x) { return x == h; })) differ(op, sig);
}

void Communicator::differ(const std::string& op, const std::string& sig) {
  const std::vector<std::string> sigs = allgather_strings(state_->world, sig, size_, op);
  throw ValueError(op + ": the ranks' parameters differ: " + first_difference(sigs) +
                   "; hint: every rank must build the same model, and a model with lazy shapes must have run a "
                   "forward pass on every rank (or be broadcast with bcast_data) before its first collective");
}

void Communicator::bcast_data(L::Layer& model) { bcast_data(sorted_params(model)); }

// Rank 0's parameters to everyone: the keys are checked first, then rank 0 sends, for every
// parameter, whether it has data and its shape and dtype; a rank whose parameter has data of
// another shape or dtype says so (on every rank), one that has no data yet gets rank 0's.
void Communicator::bcast_data(const NamedParams& params) {
  const char* op = "bcast_data";
  detail::require_mpi(op);
  std::string keys;
  for (const auto& kp : params) keys += kp.first + "\n";
  {
    const std::uint64_t h = fnv1a(keys);
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size_));
    DEZERO_MPI_CHECK(MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, state_->world));
    if (!std::all_of(all.begin(), all.end(), [&](std::uint64_t x) { return x == h; }))
      throw ValueError(std::string(op) + ": the ranks' parameter keys differ: " +
                       first_difference(allgather_strings(state_->world, keys, size_, op)) +
                       "; hint: every rank must build the same model");
  }
  // Rank 0's description: per parameter [has data, dtype, ndim, dims...], then kDescEnd.
  std::vector<std::int64_t> desc;
  if (rank_ == 0) {
    for (const auto& kp : params) {
      const Tensor& d = kp.second.data();
      desc.push_back(d.defined() ? 1 : 0);
      desc.push_back(d.defined() ? static_cast<std::int64_t>(d.dtype()) : 0);
      desc.push_back(d.defined() ? d.ndim() : 0);
      if (d.defined())
        for (auto e : d.shape()) desc.push_back(e);
    }
    desc.push_back(kDescEnd);
  }
  std::int64_t n = static_cast<std::int64_t>(desc.size());
  DEZERO_MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT64_T, 0, state_->world));
  // Its length: 3 to 3 + kMaxAxes words per parameter (the keys are the same everywhere), and the end mark.
  const std::string from = std::string(op) + ": rank " + std::to_string(rank_) + " received from rank 0";
  const auto np = static_cast<std::int64_t>(params.size());
  const std::int64_t least = 3 * np + 1, most = (3 + detail::kMaxAxes) * np + 1;
  agree(state_->world, size_, op,
        n >= least && n <= most
            ? std::string()
            : from + " a description length " + std::to_string(n) + " where " + std::to_string(np) +
                  " parameters take " + std::to_string(least) + " to " + std::to_string(most) + " words" + kPeerHint);
  if (rank_ != 0) desc.assign(static_cast<std::size_t>(n), 0);
  detail::in_chunks(n, [&](std::int64_t off, int count) {
    DEZERO_MPI_CHECK(MPI_Bcast(desc.data() + off, count, MPI_INT64_T, 0, state_->world));
  });

  // Decoded and checked before anything is made: what each parameter gets.
  struct Incoming {
    Parameter p;
    Shape shape;
    DType dtype;
    bool fresh;  // has no data yet: made now
  };
  std::vector<Incoming> incoming;
  std::string problem;
  if (desc[static_cast<std::size_t>(n - 1)] != kDescEnd)
    problem = from + " a description shorter than the " + std::to_string(n) + " words it declared (its end mark " +
              std::to_string(kDescEnd) + " is " + std::to_string(desc[static_cast<std::size_t>(n - 1)]) + ")" +
              kPeerHint;
  const std::int64_t body = n - 1;
  std::int64_t at = 0, fresh_bytes = 0;
  for (const auto& [key, p] : params) {
    if (!problem.empty()) break;
    const std::string where = from + ", for parameter " + quoted(key, 200) + ",";
    if (at + 3 > body) {
      problem = from + " a description that ends inside the description of parameter " + quoted(key, 200) +
                " (word " + std::to_string(at) + " of " + std::to_string(body) + ")" + kPeerHint;
      break;
    }
    const std::int64_t has = desc[static_cast<std::size_t>(at)], code = desc[static_cast<std::size_t>(at + 1)],
                       nd = desc[static_cast<std::size_t>(at + 2)];
    if (has != 0 && has != 1) {
      problem = where + " a has-data flag " + std::to_string(has) + " (0 or 1)" + kPeerHint;
      break;
    }
    std::int64_t bytes = 0;
    const std::string bad = nd >= 0 && nd <= detail::kMaxAxes && at + 3 + nd > body
                                ? "axis count " + std::to_string(nd) + ", past the description's end"
                                : check_declared(nd, desc.data() + at + 3, code, bytes);
    if (!bad.empty()) {
      problem = where + " " + bad + kPeerHint;
      break;
    }
    Shape shape;
    for (std::int64_t k = 0; k < nd; ++k) shape.push_back(desc[static_cast<std::size_t>(at + 3 + k)]);
    const DType dt = static_cast<DType>(code);
    at += 3 + nd;
    if (!has) continue;
    const Tensor& d = p.data();
    if (!d.defined()) {
      fresh_bytes += bytes;  // both at most memory_cap(): no overflow
      if (fresh_bytes > memory_cap()) {
        problem = where + " shapes whose data add up to " + std::to_string(fresh_bytes) +
                  " bytes, more than this machine's memory (" + std::to_string(memory_cap()) + " bytes)" + kPeerHint;
        break;
      }
      incoming.push_back({p, shape, dt, true});
    } else if (d.shape() != shape || d.dtype() != dt) {
      problem = std::string(op) + ": the ranks' parameters differ: rank " + std::to_string(rank_) + " has " +
                describe_param(key, p) + " where rank 0 has " + key + " " + shape.str() + " " + dtype_name(dt) +
                "; hint: every rank must build the same model";
      break;
    } else {
      incoming.push_back({p, shape, dt, false});
    }
  }
  if (problem.empty() && at != body)
    problem = from + " a description of " + std::to_string(body) + " words for parameters that take " +
              std::to_string(at) + " words" + kPeerHint;
  // The first rank's problem, on every rank.
  agree(state_->world, size_, op, problem);

  // Where a parameter without data is made: the device of the model's other parameters.
  Device home = Device::cpu();
  for (const auto& kp : params)
    if (kp.second.data().defined()) {
      home = kp.second.data().device();
      break;
    }
  std::vector<Tensor> payload;
  std::vector<std::pair<Parameter, Tensor>> fresh;  // parameters that get their data now
  for (auto& in : incoming) {
    if (in.fresh) {
      Tensor t = zeros(in.shape, in.dtype, home);  // zeros, not leftovers, if a peer sends less than it declared
      payload.push_back(t);
      fresh.emplace_back(in.p, t);
    } else {
      payload.push_back(in.p.data());
    }
  }
  for (auto& group : by_dtype(payload)) bcast_inplace(group, 0);
  for (auto& [p, t] : fresh) p.set_data(t);
}

void Communicator::multi_node_mean_grad(L::Layer& model, bool zero_fill) {
  multi_node_mean_grad(sorted_params(model), zero_fill);
}

// One MPI_Allreduce (MPI_MAX over int64) settles everything every rank must agree on before the
// sums: whether the parameter lists are the same (the halves of their hash, and their negatives:
// max(h) == -max(-h) exactly when all are equal), and per parameter whether some rank has a
// gradient, whether every rank has one, and of which dtype (the largest and, negated, the smallest
// code among those that have one).
void Communicator::multi_node_mean_grad(const NamedParams& params, bool zero_fill) {
  const auto t0 = std::chrono::steady_clock::now();
  const char* op = "multi_node_mean_grad";
  detail::require_mpi(op);
  std::string sig;
  for (const auto& [key, p] : params) sig += describe_param(key, p) + "\n";
  const std::uint64_t h = fnv1a(sig);
  const std::size_t n = params.size();
  const auto hi = static_cast<std::int64_t>(h >> 32), lo = static_cast<std::int64_t>(h & 0xffffffffu);
  std::vector<std::int64_t> v{hi, -hi, lo, -lo}, all(4 + 4 * n);
  std::vector<char> local_has(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Parameter& p = params[i].second;
    local_has[i] = p.has_grad() && p.grad().data().defined();
    const std::int64_t code = local_has[i] ? static_cast<std::int64_t>(p.grad().data().dtype()) : -1;
    v.push_back(code);                         // max: some rank's dtype, -1 when no rank has a gradient
    v.push_back(local_has[i] ? -code : -1000);  // max: minus the smallest dtype among the ranks that have one
    v.push_back(local_has[i] ? 1 : 0);         // max: some rank has one
    v.push_back(local_has[i] ? -1 : 0);        // max: minus "every rank has one"
  }
  DEZERO_MPI_CHECK(MPI_Allreduce(v.data(), all.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_MAX,
                                 state_->world));
  if (all[0] != -all[1] || all[2] != -all[3]) differ(op, sig);
  std::vector<Tensor*> grads;
  std::unordered_set<const VariableNode*> seen;  // a gradient node shared by two parameters counts once
  for (std::size_t i = 0; i < n; ++i) {
    const auto& [key, p] = params[i];
    const std::int64_t* a = &all[4 + 4 * i];
    const std::int64_t top = a[0], bottom = -a[1];
    const bool some = a[2] == 1, every = a[3] == -1;
    // What the ranks sent, checked alike on every rank (every rank has the same sums): a few
    // integer comparisons per parameter.
    if ((a[2] != 0 && a[2] != 1) || (a[3] != 0 && a[3] != -1) || (every && !some) ||
        (some ? !is_dtype_code(top) || !is_dtype_code(bottom) || bottom > top : top != -1 || a[1] != -1000))
      throw ValueError(std::string(op) + ": the ranks' flags for " + quoted(key, 200) +
                       " are impossible: largest dtype code " + std::to_string(top) + ", smallest dtype code " +
                       std::to_string(bottom) + ", some-rank flag " + std::to_string(a[2]) + ", every-rank flag " +
                       std::to_string(-a[3]) + " (a rank sent a dtype code outside 0 to " +
                       std::to_string(static_cast<int>(kLastDtype)) + " or a flag outside 0 and 1)" + kPeerHint);
    if (!some) continue;  // no rank has a gradient for it
    if (top != bottom)
      throw ValueError(std::string(op) + ": the gradient of " + key + " is " +
                       dtype_name(static_cast<DType>(bottom)) + " on some ranks and " +
                       dtype_name(static_cast<DType>(top)) + " on others; hint: feed every rank data of the same dtype");
    if (!every) {
      if (!zero_fill)
        throw ValueError(std::string(op) + ": " + key + " has a gradient on some ranks and none on others; hint: "
                         "multi_node_mean_grad(model, zero_fill = true) lets the missing ones count as zeros");
      if (!local_has[i]) {
        Parameter q = p;
        q.set_grad(Variable(zeros(p.data().shape(), static_cast<DType>(top), p.data().device())));
      }
    }
    VariableNode* g = p.node()->grad.get();
    if (seen.insert(g).second) grads.push_back(&g->data);
  }
  if (size_ > 1) {  // over one rank the mean is the gradient itself
    // By dtype, then device: the order every rank hands them over in.
    std::map<std::pair<int, std::string>, std::vector<Tensor*>> groups;
    for (Tensor* g : grads) groups[{static_cast<int>(g->dtype()), g->device().str()}].push_back(g);
    for (auto& [k, group] : groups) {
      const auto dt = static_cast<DType>(k.first);
      if (is_half(dt)) mean_half_wire(group, wire_of(dt));  // 16-bit gradients travel in their own type
      else if (wire_dtype_ != GradWireDtype::same && is_floating(dt)) mean_half_wire(group, wire_dtype_);
      else mean_inplace(group);
    }
  }
  ++mean_grad_calls_;
  mean_grad_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Communicator::mean_inplace(std::vector<Tensor*>& grads) {
  std::vector<Tensor> ts;
  for (Tensor* g : grads) ts.push_back(*g);
  allreduce_sum_inplace(ts);
  for (Tensor& t : ts) t *= 1.0 / static_cast<double>(size_);
}

// --- the 16-bit wire (allreduce_grad_dtype) -----------------------------------------------------------
// One group (a dtype and a device) of gradients g_i, n elements in all: each rank packs
// round16(g_i / size()) into one buffer of n 16-bit words, one MPI_Allreduce with the reduction of
// wire.cpp (add in float32, round back) sums them, and each gradient is overwritten with the widened
// sums, in place as mean_inplace scales in place. GPU gradients go through host copies (the NCCL
// communicator refuses the option at creation).
// n 16-bit words of `wire` at `buffer` summed over the ranks in place (add in float32, round back):
// the ring for 64 KiB and up when it is the algorithm, else MPI_Allreduce with the wire's MPI_Op.
void Communicator::sum16(std::uint16_t* buffer, std::int64_t n, GradWireDtype wire, const char* op) {
  const int which = wire == GradWireDtype::bfloat16 ? 0 : 1;
  if (algorithm_ == AllreduceAlgorithm::ring && size_ > 1 && n * 2 >= kRingMinBytes) {
    detail::ring_allreduce(state_->world, buffer, n, which == 0 ? detail::RingSum::bfloat16 : detail::RingSum::float16,
                           ring_segment_bytes_, op);
    return;
  }
  if (state_->wire_sum[which] == MPI_OP_NULL) {
    DEZERO_MPI_CHECK(MPI_Op_create(detail::wire_sum_function(wire), 1, &state_->wire_sum[which]));
    State* st = state_.get();
    st->release.push_back([st, which] { MPI_Op_free(&st->wire_sum[which]); });
  }
  detail::in_chunks(n, [&](std::int64_t off, int count) {
    DEZERO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer + off, count, MPI_UINT16_T, state_->wire_sum[which],
                                   state_->world));
  });
}

void Communicator::mean_half_wire(std::vector<Tensor*>& grads, GradWireDtype wire) {
  std::int64_t total = 0;
  for (const Tensor* g : grads) total += g->size();
  wire_buffer_.resize(static_cast<std::size_t>(total));
  std::uint16_t* words = wire_buffer_.data();
  const double scale = 1.0 / static_cast<double>(size_);
  std::vector<Tensor> host(grads.size());  // float32 host copies of the gradients that are not one
  std::int64_t at = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = *grads[i];
    const bool direct = g.device().is_cpu() && g.dtype() == float32;
    if (!direct) host[i] = g.to(Device::cpu()).astype(float32);
    const float* src = direct ? g.data<float>() : host[i].data<float>();
    detail::pack16(wire, src, static_cast<float>(scale), g.size(), words + at);
    at += g.size();
  }
  sum16(words, total, wire, "multi_node_mean_grad");
  at = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    Tensor& g = *grads[i];
    const bool direct = g.device().is_cpu() && g.dtype() == float32;
    float* dst = direct ? g.data<float>() : host[i].data<float>();
    detail::unpack16(wire, words + at, g.size(), dst);
    at += g.size();
    if (!direct) copyto(g, host[i].astype(g.dtype()));
  }
}

void Communicator::allreduce_persistent(L::Layer& model) {
  std::unordered_set<const VariableNode*> nodes;
  batch_norm_nodes(model, nodes);
  NamedParams stats;
  for (auto& kp : sorted_params(model))
    if (nodes.count(kp.second.node().get()) && kp.second.data().defined()) stats.push_back(kp);
  check_same_everywhere("allreduce_persistent", stats);
  std::vector<Tensor> ts;
  for (auto& kp : stats) ts.push_back(kp.second.data());
  for (auto& group : by_dtype(ts)) {
    allreduce_sum_inplace(group);
    if (size_ > 1)
      for (Tensor& t : group) t *= 1.0 / static_cast<double>(size_);
  }
}

Tensor Communicator::allreduce(const Tensor& t) {
  if (!t.defined()) throw ValueError("mn::Communicator::allreduce: the tensor is undefined");
  check_same_everywhere("allreduce", NamedParams{{"tensor", Parameter(t)}});
  std::vector<Tensor> one{t.copy()};
  allreduce_sum_inplace(one);
  return one[0];
}

Tensor Communicator::bcast(const Tensor& t, int root) {
  detail::require_mpi("bcast");
  if (root < 0 || root >= size_)
    throw ValueError("mn::Communicator::bcast: root " + std::to_string(root) + " is not a rank (size " +
                     std::to_string(size_) + ")");
  std::int64_t head[2 + 32] = {0};
  if (rank_ == root) {
    if (!t.defined()) head[0] = -1;
    else if (t.ndim() > 32) head[0] = -2;
    else {
      head[0] = t.ndim();
      head[1] = static_cast<std::int64_t>(t.dtype());
      for (int k = 0; k < t.ndim(); ++k) head[2 + k] = t.shape()[static_cast<std::size_t>(k)];
    }
  }
  DEZERO_MPI_CHECK(MPI_Bcast(head, 34, MPI_INT64_T, root, state_->world));
  if (head[0] == -1) throw ValueError("mn::Communicator::bcast: the tensor on the root rank is undefined");
  if (head[0] == -2) throw ValueError("mn::Communicator::bcast: the tensor on the root rank has more than 32 axes");
  // The root's header, checked by every other rank; the root learns the verdict from agree().
  std::int64_t bytes = 0;
  std::string problem;
  if (rank_ != root) {
    const std::string bad = check_declared(head[0], head + 2, head[1], bytes);
    if (!bad.empty())
      problem = "bcast: rank " + std::to_string(rank_) + " received from the root, rank " + std::to_string(root) +
                ", a header with " + bad + kPeerHint;
  }
  agree(state_->world, size_, "bcast", problem);
  Shape shape;
  for (int k = 0; k < head[0]; ++k) shape.push_back(head[2 + k]);
  // Zeros, not empty memory: a payload shorter than the header said leaves zeros, not old bytes.
  std::vector<Tensor> one{rank_ == root ? t.copy()
                                        : zeros(shape, static_cast<DType>(head[1]),
                                                t.defined() ? t.device() : Device::cpu())};
  bcast_inplace(one, root);
  return one[0];
}

void Communicator::barrier() {
  detail::require_mpi("barrier");
  DEZERO_MPI_CHECK(MPI_Barrier(state_->world));
}

Evaluation Communicator::allreduce_evaluation(const Evaluation& local) {
  detail::require_mpi("allreduce_evaluation");
  double v[3] = {local.loss_sum, local.correct, local.count}, s[3] = {0, 0, 0};
  DEZERO_MPI_CHECK(MPI_Allreduce(v, s, 3, MPI_DOUBLE, MPI_SUM, state_->world));
  Evaluation out;
  out.loss_sum = s[0];
  out.correct = s[1];
  out.count = s[2];
  return out;
}

// One MPI_Bcast per tensor, through host memory for a GPU tensor.
void Communicator::bcast_inplace(std::vector<Tensor>& tensors, int root) {
  for (Tensor& t : tensors) {
    const MPI_Datatype type = detail::mpi_transfer_type(t.dtype());
    const std::size_t es = dtype_size(t.dtype());
    if (t.device().is_cpu()) {
      auto* p = static_cast<unsigned char*>(t.raw_data());
      detail::in_chunks(t.size(), [&](std::int64_t off, int count) {
        DEZERO_MPI_CHECK(MPI_Bcast(p + static_cast<std::size_t>(off) * es, count, type, root, state_->world));
      });
    } else {
      std::vector<unsigned char> host(t.nbytes());
      if (rank_ == root) {
        detail::copy_to_host(t, host.data());
        detail::wait_for_copies({t});
      }
      detail::in_chunks(t.size(), [&](std::int64_t off, int count) {
        DEZERO_MPI_CHECK(MPI_Bcast(host.data() + static_cast<std::size_t>(off) * es, count, type, root, state_->world));
      });
      detail::copy_from_host(host.data(), t);
      detail::wait_for_copies({t});
    }
  }
}

// --- "naive": one MPI_Allreduce per tensor ----------------------------------------------------------
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

class NaiveCommunicator : public Communicator {
 public:
  NaiveCommunicator() : Communicator("naive") {}

 protected:
  void allreduce_sum_inplace(std::vector<Tensor>& tensors) override {
    for (Tensor& t : tensors) {
      unsigned char* p = nullptr;
      std::vector<unsigned char> host;
      if (t.device().is_cpu()) {
        p = static_cast<unsigned char*>(t.raw_data());
      } else {
        host.resize(t.nbytes());
        detail::copy_to_host(t, host.data());
        detail::wait_for_copies({t});
        p = host.data();
      }
      allreduce_host(p, t.size(), t.dtype(), "allreduce");
      if (!t.device().is_cpu()) {
        detail::copy_from_host(host.data(), t);
        detail::wait_for_copies({t});
      }
    }
  }
};

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

namespace detail {
std::shared_ptr<Communicator> make_pure_nccl_communicator();  // nccl.cpp
}

const char* grad_wire_dtype_name(GradWireDtype dtype) {
  switch (dtype) {
    case GradWireDtype::same: return "same";
    case GradWireDtype::bfloat16: return "bfloat16";
    case GradWireDtype::float16: return "float16";
  }
  return "unknown";
}

const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::automatic: return "automatic";
    case AllreduceAlgorithm::mpi: return "mpi";
    case AllreduceAlgorithm::ring: return "ring";
  }
  return "unknown";
}

AllreduceAlgorithm allreduce_algorithm_from_name(const std::string& name) {
  for (auto a : {AllreduceAlgorithm::automatic, AllreduceAlgorithm::mpi, AllreduceAlgorithm::ring})
    if (name == allreduce_algorithm_name(a)) return a;
  throw ValueError("mn: no allreduce algorithm '" + name +
                   "'; hint: the algorithms are 'automatic', 'mpi' and 'ring'");
}

GradWireDtype grad_wire_dtype_from_name(const std::string& name) {
  for (auto d : {GradWireDtype::same, GradWireDtype::bfloat16, GradWireDtype::float16})
    if (name == grad_wire_dtype_name(d)) return d;
  throw ValueError("mn: no gradient wire type '" + name + "'; hint: the types are 'same', 'bfloat16' and 'float16'");
}

std::shared_ptr<Communicator> create_communicator(const std::string& name, const CommunicatorOptions& options) {
  const auto wire = options.allreduce_grad_dtype;
  if (wire != GradWireDtype::same && wire != GradWireDtype::bfloat16 && wire != GradWireDtype::float16)
    throw ValueError("mn::create_communicator: allreduce_grad_dtype " +
                     std::to_string(static_cast<int>(wire)) + " is not a GradWireDtype");
  if (name == "pure_nccl" && wire != GradWireDtype::same)
    throw NotImplementedError(std::string("mn::create_communicator: pure_nccl with allreduce_grad_dtype ") +
                              grad_wire_dtype_name(wire) + " is not implemented yet; hint: 'flat' or 'naive' "
                              "take it (GPU gradients are staged through host memory)");
  const auto algorithm = options.allreduce_algorithm;
  if (algorithm != AllreduceAlgorithm::automatic && algorithm != AllreduceAlgorithm::mpi &&
      algorithm != AllreduceAlgorithm::ring)
    throw ValueError("mn::create_communicator: allreduce_algorithm " + std::to_string(static_cast<int>(algorithm)) +
                     " is not an AllreduceAlgorithm");
  if (options.ring_segment_bytes < 1)
    throw ValueError("mn::create_communicator: ring_segment_bytes " + std::to_string(options.ring_segment_bytes) +
                     " is not positive; hint: the default is 63 KiB (kDefaultRingSegmentBytes)");
  std::shared_ptr<Communicator> comm = create_communicator(name);
  comm->wire_dtype_ = wire;
  if (algorithm != AllreduceAlgorithm::automatic) comm->algorithm_ = algorithm;
  comm->ring_segment_bytes_ = options.ring_segment_bytes;
  return comm;
}

std::shared_ptr<Communicator> create_communicator(const std::string& name) {
  if (name == "naive") return std::make_shared<NaiveCommunicator>();
  if (name == "flat") return std::make_shared<FlatCommunicator>();
  if (name == "pure_nccl") return detail::make_pure_nccl_communicator();
  throw ValueError("mn::create_communicator: no communicator '" + name +
                   "'; hint: the communicators are 'naive', 'flat' and 'pure_nccl'");
}

}  // namespace dezero::mn
