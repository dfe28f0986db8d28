// dezero/mn/factory.cpp - create_communicator: a communicator by name ("naive", "flat",
// "pure_nccl") with its options checked, and the names of the options' enums.
#include <memory>
#include <string>

#include "dezero/fail.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn {

namespace {
using dezero::detail::fail;
}  // namespace

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
  fail<ValueError>("mn", "no allreduce algorithm '", name, "'; hint: the algorithms are 'automatic', 'mpi' and 'ring'");
}

GradWireDtype grad_wire_dtype_from_name(const std::string& name) {
  for (auto d : {GradWireDtype::same, GradWireDtype::bfloat16, GradWireDtype::float16})
    if (name == grad_wire_dtype_name(d)) return d;
  fail<ValueError>("mn", "no gradient wire type '", name, "'; hint: the types are 'same', 'bfloat16' and 'float16'");
}

std::shared_ptr<Communicator> create_communicator(const std::string& name, const CommunicatorOptions& options) {
  const auto wire = options.allreduce_grad_dtype;
  if (wire != GradWireDtype::same && wire != GradWireDtype::bfloat16 && wire != GradWireDtype::float16)
    fail<ValueError>("mn::create_communicator", "allreduce_grad_dtype ", static_cast<int>(wire),
                     " is not a GradWireDtype");
  if (name == "pure_nccl" && wire != GradWireDtype::same)
    fail<NotImplementedError>("mn::create_communicator", "pure_nccl with allreduce_grad_dtype ",
                              grad_wire_dtype_name(wire), " is not implemented yet; hint: 'flat' or 'naive' "
                              "take it (GPU gradients are staged through host memory)");
  const auto algorithm = options.allreduce_algorithm;
  if (algorithm != AllreduceAlgorithm::automatic && algorithm != AllreduceAlgorithm::mpi &&
      algorithm != AllreduceAlgorithm::ring)
    fail<ValueError>("mn::create_communicator", "allreduce_algorithm ", static_cast<int>(algorithm),
                     " is not an AllreduceAlgorithm");
  if (options.ring_segment_bytes < 1)
    fail<ValueError>("mn::create_communicator", "ring_segment_bytes ", options.ring_segment_bytes,
                     " is not positive; hint: the default is 63 KiB (kDefaultRingSegmentBytes)");
  std::shared_ptr<Communicator> comm = create_communicator(name);
  comm->wire_dtype_ = wire;
  if (algorithm != AllreduceAlgorithm::automatic) comm->algorithm_ = algorithm;
  comm->ring_segment_bytes_ = options.ring_segment_bytes;
  return comm;
}

std::shared_ptr<Communicator> create_communicator(const std::string& name) {
  if (name == "naive") return detail::make_naive_communicator();
  if (name == "flat") return detail::make_flat_communicator();
  if (name == "pure_nccl") return detail::make_pure_nccl_communicator();
  fail<ValueError>("mn::create_communicator", "no communicator '", name,
                   "'; hint: the communicators are 'naive', 'flat' and 'pure_nccl'");
}

}  // namespace dezero::mn
