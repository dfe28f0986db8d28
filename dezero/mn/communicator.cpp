// dezero/mn/communicator.cpp - mn::Communicator: the model operations every communicator shares
// (canonical parameter order, the check that every rank holds the same parameters, zero_fill,
// the mean, BatchNorm's running statistics, broadcasts). The ways of summing over the ranks are
// its subclasses: "naive" (naive.cpp), "flat" (flat.cpp), "pure_nccl" (nccl.cpp), made by
// create_communicator (factory.cpp); the checks on what peers send are in peer.cpp, the 16-bit
// gradient wire in wire.cpp.
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

#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn {

namespace {

using NamedParams = std::vector<std::pair<std::string, Parameter>>;

using dezero::detail::fail;
using detail::agree;
using detail::allgather_strings;
using detail::check_declared;
using detail::first_difference;
using detail::is_dtype_code;
using detail::kLastDtype;
using detail::kPeerHint;
using detail::kRingMinBytes;
using detail::memory_cap;
using detail::quoted;

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

// The last word of bcast_data's description ("dezero" and the format's number): a description cut
// short, or one in another format, lacks it.
constexpr std::int64_t kDescEnd = 0x64657a65726f0002;

// The wire type of a 16-bit dtype (their sums add in float32 and round back, as the wires do).
GradWireDtype wire_of(DType dtype) { return dtype == bfloat16 ? GradWireDtype::bfloat16 : GradWireDtype::float16; }

std::string describe_param(const std::string& key, const Parameter& p) {
  const Tensor& d = p.data();
  return key + " " + (d.defined() ? d.shape().str() + " " + dtype_name(d.dtype()) : std::string("(no data yet)"));
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

bool Communicator::supports(Capability capability) const { return capability == Capability::comm_thread; }

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
  fail<ValueError>(op.c_str(), "the ranks' parameters differ: ", first_difference(sigs),
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
      fail<ValueError>(op, "the ranks' parameter keys differ: ",
                       first_difference(allgather_strings(state_->world, keys, size_, op)),
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
      fail<ValueError>(op, "the ranks' flags for ", quoted(key, 200), " are impossible: largest dtype code ", top,
                       ", smallest dtype code ", bottom, ", some-rank flag ", a[2], ", every-rank flag ", -a[3],
                       " (a rank sent a dtype code outside 0 to ", static_cast<int>(kLastDtype),
                       " or a flag outside 0 and 1)", kPeerHint);
    if (!some) continue;  // no rank has a gradient for it
    if (top != bottom)
      fail<ValueError>(op, "the gradient of ", key, " is ", static_cast<DType>(bottom), " on some ranks and ",
                       static_cast<DType>(top), " on others; hint: feed every rank data of the same dtype");
    if (!every) {
      if (!zero_fill)
        fail<ValueError>(op, key, " has a gradient on some ranks and none on others; hint: "
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
  if (!t.defined()) fail<ValueError>("mn::Communicator::allreduce", "the tensor is undefined");
  check_same_everywhere("allreduce", NamedParams{{"tensor", Parameter(t)}});
  std::vector<Tensor> one{t.copy()};
  allreduce_sum_inplace(one);
  return one[0];
}

Tensor Communicator::bcast(const Tensor& t, int root) {
  detail::require_mpi("bcast");
  if (root < 0 || root >= size_)
    fail<ValueError>("mn::Communicator::bcast", "root ", root, " is not a rank (size ", size_, ")");
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
  if (head[0] == -1) fail<ValueError>("mn::Communicator::bcast", "the tensor on the root rank is undefined");
  if (head[0] == -2) fail<ValueError>("mn::Communicator::bcast", "the tensor on the root rank has more than 32 axes");
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

}  // namespace dezero::mn
