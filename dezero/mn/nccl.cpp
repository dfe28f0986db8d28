// dezero/mn/nccl.cpp - the "pure_nccl" communicator: NCCL between GPUs, MPI only to hand out the
// NCCL id (ChainerMN's PureNcclCommunicator). NCCL is loaded at run time, like cuBLAS: the file
// named by $DEZERO_NCCL, else libnccl.so.2 in each folder of $DEZERO_CUDA_LIB_PATH (the
// nvidia-nccl-cu13 wheel's nvidia/nccl/lib, say), else libnccl.so.2 on the loader's path (the
// toolkit's). A program that never makes a pure_nccl collective never loads it. The variables
// are read as dezero/env.hpp says: secure_getenv, absolute paths only (DEZERO_NCCL may also be
// a bare soname); a relative entry is skipped with a warning.
//
// The NCCL communicator is made at the first collective, on the current device (the caller picks
// it from intra_rank()): rank 0 calls ncclGetUniqueId, MPI_Bcast sends the 128-byte id, and every
// rank calls ncclCommInitRank. Collectives run on the current stream of that device, in
// ncclGroupStart / ncclGroupEnd, one call per tensor: no packing is needed between GPUs.
#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dezero/cuda.hpp"
#include "dezero/env.hpp"
#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn::detail {

namespace {
using dezero::detail::fail;
}  // namespace

#ifndef DEZERO_WITH_CUDA

std::shared_ptr<Communicator> make_pure_nccl_communicator() {
  fail<DeviceError>("mn::create_communicator", "'pure_nccl' needs the CUDA backend, and this dezero was built "
                    "without it; hint: use 'flat' (or 'naive') on the CPU");
}

#else

namespace {

// --- the part of NCCL's API that is used (nccl.h is not needed to build) ---------------------------
// Values as in NCCL 2's nccl.h, which has kept them since 2.0.
using ncclComm_t = struct ncclComm*;
struct ncclUniqueId {
  char internal[128];
};
using ncclResult_t = int;  // ncclSuccess = 0
enum ncclDataType_t { ncclInt32 = 2, ncclInt64 = 4, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9 };
enum ncclRedOp_t { ncclSum = 0 };

struct Nccl {
  ncclResult_t (*GetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, std::size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, void*) = nullptr;
  ncclResult_t (*Broadcast)(const void*, void*, std::size_t, ncclDataType_t, int, ncclComm_t, void*) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  std::string loaded_from;
};

// NCCL, loaded once; a DeviceError saying where it looked when it cannot be.
const Nccl& nccl() {
  static const Nccl api = [] {
    std::vector<std::string> candidates;
    if (const char* f = ::dezero::detail::env_path("DEZERO_NCCL", /*bare_names_ok=*/true)) {
      candidates.push_back(f);
    } else {
      for (const std::string& d : ::dezero::detail::env_path_list("DEZERO_CUDA_LIB_PATH"))
        candidates.push_back(d + "/libnccl.so.2");
      candidates.push_back("libnccl.so.2");
    }
    void* h = nullptr;
    std::string tried, errors;
    for (const auto& c : candidates) {
      h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      tried += (tried.empty() ? "" : ", ") + c;
      if (h) {
        Nccl n;
        n.loaded_from = c;
        auto bind = [&](auto& fn, const char* sym) {
          fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, sym));
          if (!fn) fail<DeviceError>("mn", c, " has no ", sym, "; hint: NCCL 2.x is needed");
        };
        bind(n.GetUniqueId, "ncclGetUniqueId");
        bind(n.CommInitRank, "ncclCommInitRank");
        bind(n.CommDestroy, "ncclCommDestroy");
        bind(n.AllReduce, "ncclAllReduce");
        bind(n.Broadcast, "ncclBroadcast");
        bind(n.GroupStart, "ncclGroupStart");
        bind(n.GroupEnd, "ncclGroupEnd");
        bind(n.GetErrorString, "ncclGetErrorString");
        return n;
      }
      const char* e = dlerror();
      errors += std::string(errors.empty() ? "" : "; ") + (e ? e : c.c_str());
    }
    fail<DeviceError>("mn", "'pure_nccl' could not load NCCL (tried ", tried, ": ", errors,
                      "); hint: install NCCL 2 (the toolkit's libnccl2, or pip's nvidia-nccl-cu13) and put its "
                      "folder in DEZERO_CUDA_LIB_PATH, or name the file in DEZERO_NCCL");
  }();
  return api;
}

void check_nccl(ncclResult_t rc, const char* call) {
  if (rc != 0)
    fail<CudaError>("mn", call, " failed: ", nccl().GetErrorString(rc), " (NCCL error ", rc, ")");
}

ncclDataType_t nccl_type(DType dt) {
  switch (dt) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int32: return ncclInt32;
    case DType::Int64: return ncclInt64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;  // NCCL 2.10 and later
  }
  fail<DtypeError>("mn", "no NCCL datatype for this dtype");
}

class PureNcclCommunicator : public Communicator {
 public:
  PureNcclCommunicator() : Communicator("pure_nccl") {
    // The NCCL communicator goes before the MPI ones, and before MPI_Finalize.
    state().release.push_back([this] { destroy(); });
  }
  ~PureNcclCommunicator() override {
    destroy();
    state().release.clear();  // the hook above points at this object
  }
  bool supports(Capability) const override { return false; }  // no comm thread yet

 protected:
  void allreduce_sum_inplace(std::vector<Tensor>& tensors) override {
    ncclComm_t c = comm_for(tensors, "multi_node_mean_grad / allreduce");
    void* stream = cuda::Stream::current().handle();
    check_nccl(nccl().GroupStart(), "ncclGroupStart");
    for (Tensor& t : tensors)
      check_nccl(nccl().AllReduce(t.raw_data(), t.raw_data(), static_cast<std::size_t>(t.size()), nccl_type(t.dtype()),
                                  ncclSum, c, stream),
                 "ncclAllReduce");
    check_nccl(nccl().GroupEnd(), "ncclGroupEnd");
  }

  void bcast_inplace(std::vector<Tensor>& tensors, int root) override {
    ncclComm_t c = comm_for(tensors, "bcast_data / bcast");
    void* stream = cuda::Stream::current().handle();
    check_nccl(nccl().GroupStart(), "ncclGroupStart");
    for (Tensor& t : tensors)
      check_nccl(nccl().Broadcast(t.raw_data(), t.raw_data(), static_cast<std::size_t>(t.size()), nccl_type(t.dtype()),
                                  root, c, stream),
                 "ncclBroadcast");
    check_nccl(nccl().GroupEnd(), "ncclGroupEnd");
  }

 private:
  // The NCCL communicator of the current device, made at the first collective. Every tensor must
  // be on that device.
  ncclComm_t comm_for(const std::vector<Tensor>& tensors, const char* op) {
    if (!cuda::is_available())
      fail<DeviceError>("mn::pure_nccl", op, " needs a CUDA device, and there is none; hint: use "
                        "the 'flat' communicator on the CPU");
    const int dev = cuda::Device().id();
    for (const Tensor& t : tensors)
      if (t.device() != Device::cuda(dev))
        fail<DeviceError>("mn::pure_nccl", op, ": a tensor on ", t.device(), " but the current device is cuda:", dev,
                          "; hint: model.to_gpu() after cuda::Device(comm->intra_rank()).use()");
    if (comm_) {
      if (dev != device_)
        fail<DeviceError>("mn::pure_nccl", "the NCCL communicator was made on cuda:", device_,
                          ", the current device is cuda:", dev, "; hint: keep one device per rank");
      return comm_;
    }
    ncclUniqueId id{};
    if (rank() == 0) check_nccl(nccl().GetUniqueId(&id), "ncclGetUniqueId");
    DEZERO_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, state().world));
    check_nccl(nccl().CommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
    device_ = dev;
    return comm_;
  }

  void destroy() noexcept {
    if (comm_) {
      nccl().CommDestroy(comm_);
      comm_ = nullptr;
    }
  }

  ncclComm_t comm_ = nullptr;
  int device_ = -1;
};

}  // namespace

std::shared_ptr<Communicator> make_pure_nccl_communicator() { return std::make_shared<PureNcclCommunicator>(); }

#endif

}  // namespace dezero::mn::detail
