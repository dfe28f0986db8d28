// dezero/cuda/rtc.hpp - dezero::cuda's runtime-compiled user kernels: CuPy's
// ElementwiseKernel, ReductionKernel and RawKernel, compiled with NVRTC on first use.
//
// Needs no CUDA headers. The kernel objects can be made anywhere (parameter lists
// are checked then); calling one needs a GPU (DeviceError otherwise).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "dezero/tensor.hpp"

namespace dezero::cuda {

// --- runtime-compiled kernels (NVRTC) ------------------------------------------------------
// An argument of a user kernel: a tensor (passed as a pointer) or a scalar.
using KernelArg = std::variant<Tensor, double, std::int64_t, std::int32_t, float>;

// cupy.ElementwiseKernel. Parameters are "type name" pairs separated by commas; a type
// is float32/float64/int32/int64 (or float/double/int/long long) or a placeholder such
// as T bound by the dtype of the first argument that uses it; "raw T x" passes the
// whole array to be indexed by hand. Non-raw arrays share one shape (0-d tensors and
// scalars broadcast); `operation` is C++ run for each index `i` in [0, _n). Compiled
// with NVRTC for the device's architecture on first use per (device, dtypes), cached.
//   auto k = cuda::elementwise("T x, T y", "T z", "z = x * y + 1", "fma1");
//   Tensor z = k({x, y})[0];
class ElementwiseKernel {
 public:
  ElementwiseKernel(std::string in_params, std::string out_params, std::string operation, std::string name,
                    std::string preamble = "");
  // Outputs not given are allocated with the broadcast shape on the inputs' device.
  std::vector<Tensor> operator()(const std::vector<KernelArg>& inputs, std::vector<Tensor> outputs = {}) const;
  const std::string& name() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};
ElementwiseKernel elementwise(const std::string& in_params, const std::string& out_params,
                              const std::string& operation, const std::string& name,
                              const std::string& preamble = "");

// cupy.RawKernel: CUDA C++ source with an extern "C" __global__ function `name`.
// Tensors are passed as pointers, scalars by value in their own C++ type.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
class RawKernel {
 public:
  RawKernel(std::string code, std::string name, std::vector<std::string> options = {});
  // Launch on the current stream of the first tensor's device (or the current device).
  void operator()(Dim3 grid, Dim3 block, const std::vector<KernelArg>& args, std::size_t shared_mem = 0) const;
  const std::string& name() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};
RawKernel raw(const std::string& code, const std::string& name, const std::vector<std::string>& options = {});

// cupy.ReductionKernel: y = post_map(reduce over axes of map(x...)). Parameters as for
// elementwise (no raw arrays). For each output element, every input index along the
// reduced axes is mapped with `map_expr` (over the input names), the values are
// combined with `reduce_expr` (over `a` and `b`) starting from `identity` (a C++
// expression; "" = none: reducing an empty axis is then an error), and `post_map_expr`
// stores the result `a` into the outputs. The reduction type is `reduce_type` (a
// dtype name or placeholder; "" = the type of the first output). `_in_ind.size()` and
// `_out_ind.size()` are the input and output sizes (CuPy's names, for means).
// One block per output element, a shared-memory tree reduction; compiled with NVRTC
// per (device, dtypes) on first use, cached like elementwise.
//   auto ssq = cuda::reduce("T x", "T y", "x * x", "a + b", "y = a", "0", "ssq");
//   Tensor y = ssq({x}, Axes(1))[0];               // x: (N, D) -> y: (N,)
class ReductionKernel {
 public:
  ReductionKernel(std::string in_params, std::string out_params, std::string map_expr, std::string reduce_expr,
                  std::string post_map_expr, std::string identity, std::string name, std::string reduce_type = "",
                  std::string preamble = "");
  // axes: Axes() = all (the default), Axes(1), Axes({0, 2}); Axes(std::vector<int>{}) reduces
  // nothing. keepdims keeps reduced axes as length 1. Outputs not given are allocated on
  // the inputs' device with the reduced shape; given ones must have it.
  std::vector<Tensor> operator()(const std::vector<KernelArg>& inputs, const Axes& axes = Axes(),
                                 bool keepdims = false, std::vector<Tensor> outputs = {}) const;
  const std::string& name() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};
ReductionKernel reduce(const std::string& in_params, const std::string& out_params, const std::string& map_expr,
                       const std::string& reduce_expr, const std::string& post_map_expr, const std::string& identity,
                       const std::string& name, const std::string& reduce_type = "",
                       const std::string& preamble = "");

}  // namespace dezero::cuda
