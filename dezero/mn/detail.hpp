// dezero/mn/detail.hpp - internal to dezero/mn/: the MPI state behind a Communicator, the
// MPI error check, dtype <-> MPI_Datatype, and the host staging of GPU tensors (staging.cpp,
// with the CUDA runtime when the build has CUDA). Only libdezero_mn sees <mpi.h>: the public
// header dezero/mn.hpp does not include it, so a program that uses dezero::mn compiles
// without MPI's headers.
#pragma once

// The C API only: without these, <mpi.h> pulls in the MPI-2 C++ bindings (deprecated, and noisy
// under -Wextra).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dezero/mn.hpp"

namespace dezero::mn {

// --- the MPI state of one Communicator ------------------------------------------------------------
// A duplicate of MPI_COMM_WORLD (errors returned, not fatal) and its split by machine. The
// Environment frees every live State before MPI_Finalize (a Communicator that outlives the
// Environment then holds nothing); `release` hooks free what a subclass added (NCCL).
struct Communicator::State {
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm intra = MPI_COMM_NULL;
  std::vector<std::function<void()>> release;  // run once, before the MPI communicators go
  MPI_Op wire_sum[2] = {MPI_OP_NULL, MPI_OP_NULL};  // the 16-bit sums (bfloat16, float16), made on first use
  MPI_Op mean_of_two = MPI_OP_NULL;  // a / 2 + b / 2 for float and double ("flat" on 2 ranks), made on first use
  bool freed = false;
  void free() noexcept;
  ~State() { free(); }
};

namespace detail {

// The end of every message about something a peer sent that does not fit: what usually causes it.
inline constexpr const char* kPeerHint =
    "; hint: the ranks run different programs or versions of dezero, or a peer is not a dezero rank";

// Throws dezero::Error "<op>: <call> failed: <MPI's message> (file:line)" unless rc is MPI_SUCCESS;
// a message longer than the receiver expected (MPI_ERR_TRUNCATE: a peer that sends another count
// than the collective's) is a ValueError saying so.
void check_mpi(int rc, const char* call, const char* file, int line);

// While one lives, this thread is in the MPI call `call`: the Environment's watchdog aborts the
// job when a call lasts longer than DEZERO_MN_TIMEOUT seconds (default 1800; 0 waits forever),
// naming the call and the rank, so that a peer that stops sending never leaves the others waiting
// for ever. One slot per thread; the clock read and two stores cost nothing beside MPI.
class MpiCall {
 public:
  MpiCall(const char* call, const char* file, int line) noexcept;
  ~MpiCall();
  MpiCall(const MpiCall&) = delete;
  MpiCall& operator=(const MpiCall&) = delete;
};
#define DEZERO_MPI_CHECK(call)                                                  \
  ::dezero::mn::detail::check_mpi(                                              \
      [&] {                                                                     \
        const ::dezero::mn::detail::MpiCall dezero_mpi_call_(#call, __FILE__, __LINE__); \
        return (call);                                                          \
      }(),                                                                      \
      #call, __FILE__, __LINE__)

// The most axes a tensor has (dezero::kMaxNdim): the limit on an axis count a peer sends.
constexpr std::int64_t kMaxAxes = ::dezero::kMaxNdim;

// The MPI_Datatype of a dtype (float32 -> MPI_FLOAT, ...), for sums: DtypeError for bfloat16 and
// float16, which MPI cannot add.
MPI_Datatype mpi_type(DType dtype);
// The MPI_Datatype that moves a dtype's elements unchanged (broadcasts): mpi_type's, and
// MPI_UINT16_T for bfloat16 and float16.
MPI_Datatype mpi_transfer_type(DType dtype);

// dezero::Error naming `op` unless an Environment has initialised MPI and not finalised it.
void require_mpi(const char* op);

// Whether MPI is initialised (and not finalised) with MPI_THREAD_MULTIPLE.
bool mpi_thread_multiple();

// The States of the live communicators, freed by ~Environment before MPI_Finalize.
void register_state(const std::shared_ptr<Communicator::State>& state);
void free_all_states() noexcept;

// --- what a peer sends, checked like a file (peer.cpp) ---------------------------------------------
// The most bytes a peer's header may make this rank allocate: this machine's physical memory.
std::int64_t memory_cap();
// The last dtype code (dezero/dtype.hpp's DType: float32, float64, int32, int64, bfloat16, float16).
constexpr DType kLastDtype = DType::Float16;
// Whether `code` is a DType's.
bool is_dtype_code(std::int64_t code);
// Checks a declared tensor: `nd` axes with extents `dims`, dtype `code`. Returns "" when sound (and
// its bytes in `bytes`), else what is wrong ("axis count 1000 (at most 12)").
std::string check_declared(std::int64_t nd, const std::int64_t* dims, std::int64_t code, std::int64_t& bytes);
// A peer's text, fit to quote in a message: control bytes escaped, at most `max` bytes.
std::string quoted(const std::string& s, std::size_t max = 2000);
// Every rank's string, on every rank (MPI_Allgatherv), lengths checked and capped alike everywhere.
std::vector<std::string> allgather_strings(MPI_Comm comm, const std::string& mine, int size, const std::string& op);
// Every rank says whether it found `problem`; when some rank did, every rank throws ValueError with
// the first rank's problem (so that no rank goes on to a collective the others have left).
void agree(MPI_Comm comm, int size, const std::string& op, const std::string& problem);
// "rank 1 has l1/W (4, 3) float32 where rank 0 has l1/W (4, 2) float32": the first rank and line
// of `sigs` (one string of lines per rank) that differ from rank 0's.
std::string first_difference(const std::vector<std::string>& sigs);

// --- the communicators (naive.cpp, flat.cpp, nccl.cpp), made by create_communicator ---------------
std::shared_ptr<Communicator> make_naive_communicator();
std::shared_ptr<Communicator> make_flat_communicator();
std::shared_ptr<Communicator> make_pure_nccl_communicator();
// Buffers smaller than this are summed by MPI_Allreduce even when the algorithm is the ring.
constexpr std::int64_t kRingMinBytes = std::int64_t{64} << 10;

// --- the 16-bit gradient wire (wire.cpp) -------------------------------------------------------------
// Round to nearest even; NaN stays NaN, past the range is infinity.
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t h);
std::uint16_t float_to_f16(float f);
float f16_to_float(std::uint16_t h);
// dst[i] = round16(src[i] * scale) and dst[i] = widen(src[i]), for i in [0, n).
void pack16(GradWireDtype dtype, const float* src, float scale, std::int64_t n, std::uint16_t* dst);
void unpack16(GradWireDtype dtype, const std::uint16_t* src, std::int64_t n, float* dst);
// The MPI reduction (on MPI_UINT16_T) that adds two vectors of `dtype` in float32 and rounds back.
MPI_User_function* wire_sum_function(GradWireDtype dtype);

// --- dezero's ring allreduce (ring.cpp) -------------------------------------------------------------
// What the ring adds: float32, float64, or 16-bit words of a wire dtype added in float32.
enum class RingSum { float32, float64, bfloat16, float16 };
// Sums `buffer` (n elements of `kind`) over the ranks of `comm` in place: reduce-scatter then
// allgather in a ring, in segments of `segment_bytes`. Every rank gets the same bits. `op` names
// the collective in errors (a neighbour that sends a segment of the wrong size: ValueError).
void ring_allreduce(MPI_Comm comm, void* buffer, std::int64_t n, RingSum kind, std::int64_t segment_bytes,
                    const char* op);

// The mean over exactly 2 ranks of float32 or float64 buffers, in place (the flat communicator's
// large host gradients, allreduce_algorithm ring): each rank sends every buffer whole to the other,
// in segments of `segment_bytes` posted at once, and as each of the peer's segments arrives (into
// `scratch`, kept by the caller between calls) computes in * 0.5 + own * 0.5 where it is: the same
// bytes on each link as the ring (S each way for 2 ranks) in one phase instead of two, no pack,
// and the pack path's bits on both ranks. A segment of the wrong size is a ValueError naming `op`.
void pair_mean(MPI_Comm comm, const std::vector<std::pair<void*, std::int64_t>>& spans, RingSum kind,
               std::int64_t segment_bytes, std::vector<unsigned char>& scratch, const char* op);

// MPI counts are ints: calls `fn(offset, count)` over [0, n) in pieces of at most 2^30 elements.
void in_chunks(std::int64_t n, const std::function<void(std::int64_t, int)>& fn);

// --- host staging (staging.cpp) ---------------------------------------------------------------------
// A host buffer for MPI: page-locked (cuda::alloc_pinned_memory) when `pinned` and the build
// has CUDA and a GPU, else ordinary memory.
class HostBuffer {
 public:
  HostBuffer() = default;
  void reserve(std::size_t nbytes, bool pinned);
  void* data() const { return data_; }

 private:
  std::vector<unsigned char> plain_;
  std::shared_ptr<void> pinned_;  // keeps the page-locked block
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
  bool is_pinned_ = false;
};
// The bytes of `t` (contiguous) to `dst` / from `src`: memcpy on the host; on a GPU an
// asynchronous copy on the current stream of t's device. wait() blocks until those copies
// are done (before MPI reads a staged buffer, and before the next use of `src`).
void copy_to_host(const Tensor& t, void* dst);
void copy_from_host(const void* src, const Tensor& t);
void wait_for_copies(const std::vector<Tensor>& tensors);

}  // namespace detail
}  // namespace dezero::mn
