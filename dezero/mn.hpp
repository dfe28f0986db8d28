/// \file
/// Data-parallel training across processes: ChainerMN's API in C++ (dezero::mn), on
/// Open MPI between processes and NCCL between GPUs.
///
/// ```cpp
/// int main(int argc, char** argv) {
///   dezero::mn::Environment env(argc, argv);                      // MPI_Init_thread ... MPI_Finalize
///   auto comm = dezero::mn::create_communicator("flat");          // "naive" | "flat" | "pure_nccl"
///   models::MLP model({100, 10});
///   optimizers::SGD sgd(0.1);
///   sgd.setup(model);
///   auto optimizer = dezero::mn::create_multi_node_optimizer(sgd, comm);
///   auto shard = dezero::mn::scatter_dataset(train_set, *comm, true, 0);  // this rank's share
///   DataLoader loader(shard, 100);
///   for (auto& [x, t] : loader) {
///     Variable loss = F::softmax_cross_entropy(model(x), t);
///     model.cleargrads();
///     loss.backward();
///     optimizer.update();                                         // gradients averaged over ranks
///   }
/// }
/// ```
///
/// Run with `mpirun -np 2 program` (README, "Data-parallel training"). Every rank runs the
/// same program on its own share of the data; the gradients are summed over the ranks and
/// divided by their number before each update, so N ranks with batch B take the steps one
/// process takes with batch N B. Parameters always travel in one order, sorted by their
/// named_params() keys, and before the first collective on a model every rank checks that all
/// ranks hold the same keys, shapes and dtypes (a ValueError naming the first difference, on
/// every rank, instead of a hang or mixed-up gradients).
///
/// The classes are in libdezero_mn (CMake target dezero::mn), built when CMake finds MPI
/// (`-DDEZERO_MPI=AUTO|ON|OFF`); is_available() says whether it was. A program that does not
/// use dezero::mn needs no MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dezero/core.hpp"
#include "dezero/datasets.hpp"
#include "dezero/layers.hpp"
#include "dezero/optimizers.hpp"

/// Data-parallel training across processes (ChainerMN): environment, communicators, the
/// multi-node optimizer and dataset scattering.
namespace dezero::mn {

/// Whether this build of dezero has dezero::mn (libdezero_mn, built when CMake found MPI).
/// Without it the other names of this header are declared but not defined: linking a program
/// that uses them fails.
bool is_available();

// --- Environment ----------------------------------------------------------------------------------
/// MPI for the program's lifetime: MPI_Init_thread (asking for MPI_THREAD_MULTIPLE, which a
/// double-buffering MultiNodeOptimizer needs for its communication thread) when made, MPI_Finalize
/// when destroyed. Make one at the top of main, before any communicator.
///
/// An exception must not leave the other ranks waiting in a collective that this rank will never
/// reach. So when the environment is destroyed while an exception unwinds the stack (an exception
/// thrown out of the scope that holds it), it runs no collective and no MPI_Finalize: it writes
/// "dezero::mn: rank R: ..." on stderr and aborts the whole job (MPI_Abort, exit code 1) as the
/// process ends, after the handler that caught the exception (the examples' report_error) has
/// printed its message. An exception that no handler catches is reported by a terminate handler
/// with its message, which then calls MPI_Abort. This is the one place where dezero ends a process.
///
/// A rank that waits in one MPI call longer than DEZERO_MN_TIMEOUT seconds (default 1800; 0 waits
/// for ever) also aborts the job, naming the call: a peer that stopped sending without failing
/// would otherwise hold it for ever. A DEZERO_MN_TIMEOUT that is not a number is a ValueError here.
class Environment {
 public:
  /// Initialises MPI with the program's arguments (MPI may remove its own from them). Throws
  /// dezero::Error when MPI is already initialised or cannot be.
  Environment(int& argc, char**& argv);
  /// Initialises MPI without the program's arguments.
  Environment();
  /// Finalises MPI (after freeing every communicator's MPI and NCCL resources), or aborts the job
  /// while an exception unwinds (see the class comment).
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  int rank() const;  ///< This process's rank in MPI_COMM_WORLD.
  int size() const;  ///< The number of processes in MPI_COMM_WORLD.
  /// Whether MPI granted MPI_THREAD_MULTIPLE (any thread may call MPI at any time).
  bool thread_multiple() const;
};

// --- Evaluation -----------------------------------------------------------------------------------
/// Sums for an evaluation that spans the ranks: each rank adds its batches, then
/// Communicator::allreduce_evaluation() sums them over the ranks, so that loss() and accuracy()
/// are those of the whole test set (weighted by the samples), not a mean of the ranks' means.
struct Evaluation {
  double loss_sum = 0;  ///< Sum over batches of the mean loss times the batch's sample count.
  double correct = 0;   ///< Sum over batches of the accuracy times the batch's sample count.
  double count = 0;     ///< The number of samples.
  /// Adds one batch of `n` samples whose mean loss is `mean_loss` and accuracy `accuracy`.
  void add(double mean_loss, double accuracy, std::int64_t n) {
    const double w = static_cast<double>(n);
    loss_sum += mean_loss * w;
    correct += accuracy * w;
    count += w;
  }
  double loss() const { return count > 0 ? loss_sum / count : 0.0; }      ///< The mean loss per sample.
  double accuracy() const { return count > 0 ? correct / count : 0.0; }  ///< The fraction correct.
};

// --- Communicator ---------------------------------------------------------------------------------
/// The type gradients travel in between the ranks (ChainerMN's allreduce_grad_dtype).
/// - same: each gradient's own dtype (float32 stays float32): the averaged gradient is exact up to
///   the order of the sum.
/// - bfloat16 / float16: half the bytes on the wire. Each rank scales its floating gradients by
///   1 / size() first (PyTorch's fp16 compression hook's rule, so that the sum cannot overflow
///   where the mean would not), rounds them to the 16-bit type (nearest, ties to even), and the
///   ranks sum them with an MPI reduction that adds in float32 and rounds each partial sum back;
///   the result is widened into the gradient's own dtype. Parameters, their master values and the
///   optimizer's state stay in their dtype. bfloat16 keeps float32's range with 8 significant bits
///   (relative error up to 2^-8 per rounding); float16 has 11 bits but overflows past 65504 and
///   loses gradients below 2^-24 (6e-8), so it needs gradients of moderate size (loss scaling,
///   which is not part of this option, keeps them there). A non-finite gradient stays non-finite.
///   Integer gradients always travel in their own type, and so do bfloat16 and float16 gradients
///   (scaled, then summed in float32 with each partial sum rounded back, whatever this option says).
///   The conversions are dezero/half.hpp's.
enum class GradWireDtype : std::uint8_t { same, bfloat16, float16 };

/// The name of a GradWireDtype: "same", "bfloat16" or "float16".
const char* grad_wire_dtype_name(GradWireDtype dtype);
/// The GradWireDtype of a name ("same", "bfloat16" or "float16"; a ValueError for any other).
GradWireDtype grad_wire_dtype_from_name(const std::string& name);

/// How a communicator sums a host buffer of gradients over the ranks (the "naive" and "flat"
/// communicators, the 16-bit wires included; "pure_nccl" has NCCL's own).
/// - mpi: MPI_Allreduce; the MPI library picks its algorithm.
/// - ring: dezero's ring (reduce-scatter, then allgather), pipelined in segments of
///   CommunicatorOptions::ring_segment_bytes with point-to-point messages on the communicator's own
///   duplicate of MPI_COMM_WORLD: 2 (N - 1) / N x S bytes leave and arrive per rank for S bytes on
///   N ranks, the least any allreduce moves, and the links stay busy in both directions. A block's
///   sum is made on one rank and copied to the others, so every rank gets the same bits; over 2
///   ranks the result is the same as MPI_Allreduce's (a + b); over more the order of the sum
///   differs from MPI's, so the last bits may. Buffers under 64 KiB and other dtypes than
///   float32 and float64 (and the 16-bit wires) go to MPI_Allreduce: there latency counts, not
///   bandwidth. Through TCP (tools/netsim.sh) it reached the link's rate where Open MPI 4.1's
///   MPI_Allreduce took twice as long (bench/README.md).
/// - automatic: ring when the ranks are on more than one machine (intra_size() < size()), mpi when
///   all share one (there MPI's shared-memory allreduce is faster than any ring of messages).
enum class AllreduceAlgorithm : std::uint8_t { automatic, mpi, ring };

/// The name of an AllreduceAlgorithm: "automatic", "mpi" or "ring".
const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm);
/// The AllreduceAlgorithm of a name ("automatic", "mpi" or "ring"; a ValueError for any other).
AllreduceAlgorithm allreduce_algorithm_from_name(const std::string& name);

/// CommunicatorOptions::ring_segment_bytes's default (63 KiB).
constexpr std::int64_t kDefaultRingSegmentBytes = 63 << 10;

/// Options of create_communicator, ChainerMN's keyword arguments:
/// `create_communicator("flat", {.allreduce_grad_dtype = mn::GradWireDtype::bfloat16})`.
struct CommunicatorOptions {
  /// The type the gradients travel in (see GradWireDtype); "naive" and "flat" take all three,
  /// "pure_nccl" only `same` for now (a NotImplementedError at creation otherwise).
  GradWireDtype allreduce_grad_dtype = GradWireDtype::same;
  /// How host buffers are summed (see AllreduceAlgorithm).
  AllreduceAlgorithm allreduce_algorithm = AllreduceAlgorithm::automatic;
  /// The ring's message size in bytes (at least 1; more than a block is one message per block).
  /// The default, 63 KiB, stays under Open MPI's TCP eager limit (64 KiB with its header): a
  /// larger message waits for a rendezvous handshake whose reply queues behind the bulk data in
  /// the same TCP stream, which halved the rate on tools/netsim.sh's links (bench/README.md).
  std::int64_t ring_segment_bytes = kDefaultRingSegmentBytes;
};

/// A group of processes that train one model together (ChainerMN's CommunicatorBase), over a
/// duplicate of MPI_COMM_WORLD. Made by create_communicator(); every rank must make the same
/// communicators in the same order and call the same collectives in the same order.
///
/// The model methods take the parameters in one canonical order (sorted by named_params() key)
/// and check, before the first collective on a model and again whenever its parameters change
/// (lazy shapes), that every rank holds the same keys, shapes and dtypes: otherwise every rank
/// throws a ValueError naming the first difference.
///
/// What another rank sends is checked as a file is, before anything is allocated or cast: axis
/// counts (at most a tensor's 12), extents and lengths (not negative, their products and sums in
/// 64 bits without overflow, no more bytes than this machine's memory), dtype codes, flags, and
/// that a description is as long as it says. A message that fails is a ValueError naming the
/// collective, the ranks, the field and its value, thrown on every rank of the communicator
/// (the ranks agree on it before any throws), and the communicator stays usable. The peers are
/// still trusted with the values themselves: a rank that sends wrong numbers of the right form
/// changes the results of every rank.
class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const std::string& name() const { return name_; }  ///< "naive", "flat" or "pure_nccl".
  /// What a communicator may do beyond the operations every one has (supports()).
  enum class Capability : std::uint8_t {
    /// Summing on a thread of its own while the next step computes (MultiNodeOptimizerOptions's
    /// double_buffering and overlap): "naive" and "flat"; not "pure_nccl" yet.
    comm_thread,
  };
  /// Whether this communicator has `capability`.
  virtual bool supports(Capability capability) const;
  /// The type gradients travel in (CommunicatorOptions::allreduce_grad_dtype).
  GradWireDtype allreduce_grad_dtype() const { return wire_dtype_; }
  /// How host buffers are summed (CommunicatorOptions::allreduce_algorithm; `automatic` resolved:
  /// mpi or ring).
  AllreduceAlgorithm allreduce_algorithm() const { return algorithm_; }
  /// The ring's message size (CommunicatorOptions::ring_segment_bytes).
  std::int64_t ring_segment_bytes() const { return ring_segment_bytes_; }
  int rank() const { return rank_; }                 ///< This process's rank.
  int size() const { return size_; }                 ///< The number of processes.
  /// This process's rank among the processes on its machine (the GPU it should use).
  int intra_rank() const { return intra_rank_; }
  int intra_size() const { return intra_size_; }  ///< The number of processes on this machine.

  /// Every parameter of `model` from rank 0 to the other ranks (values, and shapes for the
  /// parameters whose lazy shapes only rank 0 has set yet). Afterwards every rank's parameters
  /// are bit-identical to rank 0's. Throws ValueError when the ranks' keys differ, or a rank's
  /// set parameter has another shape or dtype than rank 0's.
  void bcast_data(L::Layer& model);
  /// The gradients of `model`'s parameters summed over the ranks and divided by size(), in place.
  /// A parameter with a gradient on some ranks and none on others takes part as zeros where it
  /// has none (zero_fill, and it then gets the averaged gradient on every rank); with
  /// zero_fill = false that is a ValueError on every rank. A parameter without a gradient on any
  /// rank is left alone. Throws ValueError when the ranks' parameters differ (keys, shapes,
  /// dtypes) or a gradient's dtype differs between ranks.
  void multi_node_mean_grad(L::Layer& model, bool zero_fill = true);
  /// BatchNorm's running statistics (avg_mean, avg_var) averaged over the ranks, in place (the
  /// same tensors). They are not gradients: no optimizer or hook sees them.
  void allreduce_persistent(L::Layer& model);

  /// The element-wise sum of `t` over the ranks (same shape and dtype on every rank, else every
  /// rank throws ValueError). A new tensor on t's device; `t` is unchanged. bfloat16 and float16
  /// are added in float32, each partial sum rounded back to the dtype.
  Tensor allreduce(const Tensor& t);
  /// Rank `root`'s tensor on every rank (a new tensor; on the other ranks `t` may be undefined,
  /// and the result takes root's shape and dtype and t's device, or the CPU). Throws ValueError
  /// for a root outside [0, size()) or an undefined tensor on the root, and on every rank when a
  /// receiving rank finds the root's header unsound (see the class comment).
  Tensor bcast(const Tensor& t, int root = 0);
  /// Waits until every rank has called barrier().
  void barrier();
  /// `local` summed over the ranks: the evaluation of the whole test set (Evaluation).
  Evaluation allreduce_evaluation(const Evaluation& local);

  /// The parameter-set operations on an explicit list of (key, parameter), in the list's order
  /// (used by MultiNodeOptimizer for an optimizer set up on a parameter list). The keys must be
  /// the same on every rank.
  ///@{
  void bcast_data(const std::vector<std::pair<std::string, Parameter>>& params);
  void multi_node_mean_grad(const std::vector<std::pair<std::string, Parameter>>& params, bool zero_fill = true);
  ///@}

  /// Seconds spent in multi_node_mean_grad since the communicator was made (a benchmark figure).
  double mean_grad_seconds() const { return mean_grad_seconds_; }
  /// The number of multi_node_mean_grad calls since the communicator was made.
  std::int64_t mean_grad_calls() const { return mean_grad_calls_; }

  /// \cond INTERNAL
  struct State;
  /// \endcond

 protected:
  /// Made by create_communicator(): `name` is one of the three, MPI must be initialised.
  explicit Communicator(std::string name);
  /// Sums the tensors over the ranks in place (running statistics, allreduce()), all of one
  /// dtype and device, in the canonical order.
  virtual void allreduce_sum_inplace(std::vector<Tensor>& tensors) = 0;
  /// Replaces each gradient (`*grads[i]`, the data of a gradient node; one dtype and device) by its
  /// mean over the ranks. The default sums in place, then scales by 1 / size(); "flat" on the host
  /// scales while it packs and leaves each gradient a view of its buffer, which saves two passes.
  virtual void mean_inplace(std::vector<Tensor*>& grads);
  /// Broadcasts the tensors from rank `root` in place (parameter values, bcast()).
  virtual void bcast_inplace(std::vector<Tensor>& tensors, int root);
  /// Sums `n` elements of `dtype` at `buffer` (host memory) over the ranks in place, with the
  /// communicator's allreduce_algorithm(); `op` names the collective in errors.
  void allreduce_host(void* buffer, std::int64_t n, DType dtype, const char* op);
  /// The shared MPI state (the communicator and its rank split), for the subclasses.
  State& state() const { return *state_; }

 private:
  friend std::shared_ptr<Communicator> create_communicator(const std::string&, const CommunicatorOptions&);
  void check_same_everywhere(const std::string& op, const std::vector<std::pair<std::string, Parameter>>& params);
  // The mean of a group of floating gradients through a 16-bit wire (allreduce_grad_dtype, or the
  // gradients' own 16-bit type), and the sum of 16-bit words it makes.
  void mean_half_wire(std::vector<Tensor*>& grads, GradWireDtype wire);
  void sum16(std::uint16_t* buffer, std::int64_t n, GradWireDtype wire, const char* op);
  [[noreturn]] void differ(const std::string& op, const std::string& signature);

  std::string name_;
  int rank_ = 0, size_ = 1, intra_rank_ = 0, intra_size_ = 1;
  std::shared_ptr<State> state_;
  GradWireDtype wire_dtype_ = GradWireDtype::same;
  AllreduceAlgorithm algorithm_ = AllreduceAlgorithm::mpi;
  std::int64_t ring_segment_bytes_ = kDefaultRingSegmentBytes;
  std::vector<std::uint16_t> wire_buffer_;  // the 16-bit gradients of mean_half_wire, kept between steps
  double mean_grad_seconds_ = 0;
  std::int64_t mean_grad_calls_ = 0;
};

/// A communicator by ChainerMN's name:
/// - "naive": one MPI_Allreduce per parameter, through host memory (GPU tensors are copied);
/// - "flat": every gradient packed into one host buffer per dtype and one MPI_Allreduce (GPU
///   tensors staged through page-locked host memory; no CUDA-aware MPI is assumed);
/// - "pure_nccl": NCCL between GPUs (the parameters must be on the GPU): rank 0 makes the NCCL id
///   and broadcasts it over MPI, and the NCCL communicator is made at the first collective, on the
///   current device (use `cuda::Device(comm->intra_rank()).use()` first). NCCL (libnccl.so.2) is
///   loaded at that point; without a GPU, or without NCCL, that collective throws DeviceError.
/// Any other name is a ValueError that lists the three. Needs an Environment (dezero::Error
/// otherwise).
std::shared_ptr<Communicator> create_communicator(const std::string& name = "naive");
/// The same, with ChainerMN's keyword arguments (CommunicatorOptions). A pure_nccl communicator
/// with a 16-bit allreduce_grad_dtype is a NotImplementedError.
std::shared_ptr<Communicator> create_communicator(const std::string& name, const CommunicatorOptions& options);

// --- MultiNodeOptimizer ---------------------------------------------------------------------------
/// Options of create_multi_node_optimizer (ChainerMN's keyword arguments).
struct MultiNodeOptimizerOptions {
  /// ChainerMN's double_buffering: update() applies the gradients averaged over the ranks at the
  /// previous update() while this step's are being averaged on a communication thread, so the
  /// averaging overlaps the next forward and backward pass. The price is one step of staleness:
  /// the k-th update applies the mean of the (k-1)-th step's gradients (computed with the weights
  /// of that step), the first update() only starts an averaging and changes nothing (it returns
  /// false), and the gradients of the last step are never applied. The thread averages on a
  /// communicator of its own (a duplicate of the one given, made when the optimizer is made: a
  /// collective), so the program's other collectives may run meanwhile; that needs MPI to grant
  /// MPI_THREAD_MULTIPLE (Environment::thread_multiple()): otherwise, and for "pure_nccl", making
  /// the optimizer is a NotImplementedError. An error in the averaging is rethrown by the next
  /// update().
  bool double_buffering = false;
  /// PyTorch DDP's overlap: each parameter's gradient is averaged while backward() still runs. A
  /// grad-ready hook (Variable::register_post_accumulate_grad_hook) on every parameter marks its
  /// gradient final; the parameters are grouped in buckets (the order in which their gradients
  /// become final, recorded in the first pass, which averages blocking; the first bucket up to
  /// first_bucket_bytes, the others up to bucket_bytes of parameter data), and a bucket whose
  /// gradients are all final goes to a communication thread at once, which averages it on a
  /// communicator of its own; update() sends what is left (parameters without a gradient on this
  /// rank: zero_fill as always) and waits only for what is still in flight. The averages are the
  /// blocking path's (on 2 ranks bit for bit; on more, MPI may sum a bucket in another order than
  /// the whole). Needs MPI_THREAD_MULTIPLE; not with pure_nccl nor with double_buffering (a
  /// NotImplementedError), nor with several backward() passes per update() (the second pass's
  /// hook throws a ValueError, and the update() after it applies the first pass's averages:
  /// gradient accumulation needs overlap = false). Between backward() and update() a parameter's
  /// gradient is this rank's own and may already be on its way: change gradients in an optimizer
  /// hook (WeightDecay, GradientClipping: they run in update(), on the averages); a gradient
  /// replaced or cleared there is a ValueError in update(), and one changed in place is averaged
  /// as it was sent. Every rank takes rank 0's bucket order, so a parameter that has no gradient
  /// on some ranks keeps zero_fill's meaning.
  bool overlap = false;
  std::int64_t bucket_bytes = std::int64_t{25} << 20;      ///< A bucket's size with overlap (DDP: 25 MB).
  std::int64_t first_bucket_bytes = std::int64_t{1} << 20;  ///< The first bucket's size (DDP: 1 MB).
};

/// An optimizer that was set up on a model, made to train across the ranks (ChainerMN's
/// create_multi_node_optimizer): update() averages the gradients over the ranks
/// (Communicator::multi_node_mean_grad), then runs the wrapped optimizer's update(), hooks
/// included. It keeps a reference to the optimizer, which must outlive it.
///
/// Making it broadcasts rank 0's values of every parameter that has data (a collective: make it at
/// the same point on every rank). Parameters that get their data later (lazy L::Linear /
/// L::Conv2d shapes set by the first forward pass) are broadcast from rank 0 at the next update(),
/// and that update() then changes nothing (as in ChainerMN, which does this at every first
/// update): the gradients of that step were computed with each rank's own initial weights, so they
/// are dropped. That costs one step of training at the start; a model whose shapes are all given
/// (L::Linear(10, {.in_size = 784})) loses nothing.
class MultiNodeOptimizer {
 public:
  /// Wraps `actual`, which must have been set up (setup(model) or a parameter list; ValueError
  /// otherwise), and broadcasts rank 0's parameters (see the class comment).
  MultiNodeOptimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm);
  /// The same with ChainerMN's keyword arguments (MultiNodeOptimizerOptions). A copy of a
  /// double-buffering optimizer shares its communication thread and its averaging in flight.
  MultiNodeOptimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm,
                     const MultiNodeOptimizerOptions& options);
  /// Averages the gradients over the ranks, then updates (see the class comment for the first
  /// update after parameters appear, and MultiNodeOptimizerOptions::double_buffering). Returns
  /// false when this update changed no parameter (a broadcast, double buffering's first step, or a
  /// step that loss scaling skipped).
  bool update();

  /// Loss scaling (Optimizer::loss_scaling) of the wrapped optimizer: turns it on there and returns
  /// `*this`. Compute the gradients with backward() below. The wrapped optimizer judges the
  /// gradients after they have been averaged: every rank then holds the same bits (every allreduce
  /// here gives all ranks the same result), and a gradient that is not finite on one rank makes its
  /// average not finite on every rank (an inf or a NaN survives the sum), so every rank skips the
  /// same steps and keeps the same scale. With double buffering an update applies the previous
  /// step's gradients, which backward() scaled by the scale of that time: when a skipped step has
  /// halved the scale (or a good run doubled it) since, they are rescaled to the current scale
  /// (by a power of two: exact) before the wrapped optimizer divides by it.
  MultiNodeOptimizer& loss_scaling(std::int64_t interval = 1000, std::optional<double> scale = std::nullopt);
  /// The wrapped optimizer's Optimizer::loss_scale().
  double loss_scale() const { return actual_->loss_scale(); }
  /// The wrapped optimizer's Optimizer::last_step_skipped(): whether the last update() of this
  /// optimizer reached it and it skipped the step (the same on every rank).
  bool last_step_skipped() const;
  /// The wrapped optimizer's Optimizer::backward(): loss.backward(options) with the first gradient
  /// loss_scale(). With overlap the buckets are averaged during it, as during loss.backward().
  void backward(Variable loss, const BackwardOptions& options = {});
  /// Whether update() works with double buffering (MultiNodeOptimizerOptions).
  bool double_buffering() const;
  bool overlap() const;  ///< Whether update() works with overlap (MultiNodeOptimizerOptions).
  optimizers::Optimizer& actual_optimizer() const { return *actual_; }  ///< The wrapped optimizer.
  const std::shared_ptr<Communicator>& communicator() const { return comm_; }  ///< Its communicator.

  /// \cond INTERNAL
  struct Strategy;  // double buffering or overlap, on a thread (mn/strategy.hpp)
  /// \endcond

 private:
  std::vector<std::pair<std::string, Parameter>> named_targets() const;
  bool broadcast_if_new(const std::vector<std::pair<std::string, Parameter>>& params,
                        std::vector<std::string>& initialised);
  bool update_actual();
  optimizers::Optimizer* actual_;
  std::shared_ptr<Communicator> comm_;
  std::vector<std::string> initialised_;  // keys whose data had been broadcast, sorted
  std::shared_ptr<Strategy> strategy_;    // null: update() averages blocking
  bool reached_actual_ = false;           // the last update() ran the wrapped optimizer's update()
};

/// A MultiNodeOptimizer of `actual` on `comm`, by value (ChainerMN's create_multi_node_optimizer).
MultiNodeOptimizer create_multi_node_optimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm);
/// The same with ChainerMN's keyword arguments: `create_multi_node_optimizer(adam, comm, {.double_buffering = true})`.
MultiNodeOptimizer create_multi_node_optimizer(optimizers::Optimizer& actual, std::shared_ptr<Communicator> comm,
                                               const MultiNodeOptimizerOptions& options);

// --- scatter_dataset ------------------------------------------------------------------------------
/// A view of some samples of a dataset, in a given order (ChainerMN's SubDataset): get(i) is the
/// dataset's get(indices[i]). It keeps a reference to the dataset, which must outlive it.
class SubDataset : public datasets::Dataset {
 public:
  /// The samples `indices` of `base` (each in [0, base.size()); IndexError otherwise).
  SubDataset(const datasets::Dataset& base, std::vector<std::int64_t> indices);
  SubDataset(const datasets::Dataset&& base, std::vector<std::int64_t> indices) = delete;  ///< Would dangle.
  std::int64_t size() const override;                                             ///< indices().size().
  Batch get(std::int64_t index) const override;                          ///< base.get(indices()[index]).
  Batch get_batch(const std::vector<std::int64_t>& indices) const override;  ///< One base.get_batch.
  const std::vector<std::int64_t>& indices() const { return indices_; }  ///< The base's indices, in order.

 private:
  const datasets::Dataset* base_;
  std::vector<std::int64_t> indices_;
};

/// This rank's share of `dataset` (ChainerMN's scatter_dataset with force_equal_length): the
/// samples in order (or permuted by a random::Generator seeded with `seed`, the same permutation
/// on every rank) cut into size() parts of ceil(N / size()) samples each, the last ones wrapping
/// around to the first samples, so that every rank has the same number of samples and runs the
/// same number of steps (uneven step counts are the classic data-parallel deadlock). Every sample
/// is in some rank's share. Every rank must pass a dataset of the same size (ValueError
/// otherwise, on every rank).
SubDataset scatter_dataset(const datasets::Dataset& dataset, Communicator& comm, bool shuffle = false,
                           std::uint64_t seed = 0);
/// Would dangle: the share keeps a reference to the dataset.
SubDataset scatter_dataset(const datasets::Dataset&& dataset, Communicator& comm, bool shuffle = false,
                           std::uint64_t seed = 0) = delete;

}  // namespace dezero::mn
