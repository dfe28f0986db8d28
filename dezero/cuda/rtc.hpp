/// \file
/// The runtime-compiled user kernels of dezero::cuda: CuPy's
/// ElementwiseKernel, ReductionKernel and RawKernel, compiled with NVRTC on first use.
///
/// Needs no CUDA headers. The kernel objects can be made anywhere (parameter lists
/// are checked then); calling one needs a GPU (DeviceError otherwise).
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
/// An argument of a user kernel: a tensor (passed as a pointer) or a scalar.
using KernelArg = std::variant<Tensor, double, std::int64_t, std::int32_t, float>;

/// A user-defined element-wise CUDA kernel (cupy.ElementwiseKernel).
///
/// cupy.ElementwiseKernel. Parameters are "type name" pairs separated by commas; a type
/// is float32/float64/int32/int64 (or float/double/int/long long) or a placeholder such
/// as T bound by the dtype of the first argument that uses it; "raw T x" passes the
/// whole array to be indexed by hand. Non-raw arrays share one shape (0-d tensors and
/// scalars broadcast); `operation` is C++ run for each index `i` in [0, _n). Compiled
/// with NVRTC for the device's architecture on first use per (device, dtypes), cached.
///
/// ```cpp
///   auto k = cuda::elementwise("T x, T y", "T z", "z = x * y + 1", "fma1");
///   Tensor z = k({x, y})[0];
/// ```
///
/// A kernel object is a shared handle (copies share the compiled code). Without a GPU it can
/// be made, but calling it throws a DeviceError.
class ElementwiseKernel {
 public:
  /// A kernel `name` (a C identifier) with the given parameter lists, `operation` and
  /// `preamble` (code put before the kernel). In a build with the CUDA backend a bad name
  /// or parameter, or no output parameter, is a ValueError here, with or without a GPU.
  ElementwiseKernel(std::string in_params, std::string out_params, std::string operation, std::string name,
                    std::string preamble = "");
  /// Runs the kernel on the inputs' device, on its current stream; returns the outputs.
  /// Outputs not given are allocated with the broadcast shape on the inputs' device.
  /// ValueError for a wrong number of arguments or an undefined tensor; DeviceError for a host
  /// tensor, tensors on different devices, or no GPU; DtypeError when a tensor's dtype does not
  /// fit its parameter; ShapeError when the shapes do not broadcast; CudaError when NVRTC
  /// cannot compile the code (with its log).
  std::vector<Tensor> operator()(const std::vector<KernelArg>& inputs, std::vector<Tensor> outputs = {}) const;
  const std::string& name() const;  ///< The kernel's name.

  /// \cond INTERNAL
  struct Impl;
  /// \endcond

 private:
  std::shared_ptr<Impl> impl_;
};
/// An ElementwiseKernel, memoized per argument list (cupy.ElementwiseKernel made once):
/// calling it again with the same strings gives the same kernel, compiled code included.
/// Works without a GPU (calling the kernel needs one).
ElementwiseKernel elementwise(const std::string& in_params, const std::string& out_params,
                              const std::string& operation, const std::string& name,
                              const std::string& preamble = "");

/// The grid or block size of a RawKernel launch (CUDA's dim3): 1 along unset axes.
struct Dim3 {
  /// The extents along x, y and z.
  ///@{
  unsigned x = 1, y = 1, z = 1;
  ///@}
};
/// A CUDA C++ kernel written by hand (cupy.RawKernel).
///
/// cupy.RawKernel: CUDA C++ source with an `extern "C" __global__` function `name`.
/// Tensors are passed as pointers, scalars by value in their own C++ type.
/// Compiled with NVRTC on first use per device, cached. Without a GPU it can be made, but
/// calling it throws a DeviceError.
class RawKernel {
 public:
  /// The kernel `name` of `code`, compiled with the NVRTC `options` (e.g. "-DN=4").
  RawKernel(std::string code, std::string name, std::vector<std::string> options = {});
  /// Launch on the current stream of the first tensor's device (or the current device).
  /// `grid` blocks of `block` threads, with `shared_mem` bytes of dynamic shared memory.
  /// DeviceError for a host tensor or without a GPU; CudaError when NVRTC cannot compile the
  /// code or the launch fails.
  void operator()(Dim3 grid, Dim3 block, const std::vector<KernelArg>& args, std::size_t shared_mem = 0) const;
  const std::string& name() const;  ///< The kernel's name.

  /// \cond INTERNAL
  struct Impl;
  /// \endcond

 private:
  std::shared_ptr<Impl> impl_;
};
/// A RawKernel, memoized per argument list like elementwise(); works without a GPU.
RawKernel raw(const std::string& code, const std::string& name, const std::vector<std::string>& options = {});

/// A user-defined reduction CUDA kernel (cupy.ReductionKernel).
///
/// cupy.ReductionKernel: y = post_map(reduce over axes of map(x...)). Parameters as for
/// elementwise (no raw arrays). For each output element, every input index along the
/// reduced axes is mapped with `map_expr` (over the input names), the values are
/// combined with `reduce_expr` (over `a` and `b`) starting from `identity` (a C++
/// expression; "" = none: reducing an empty axis is then an error), and `post_map_expr`
/// stores the result `a` into the outputs. The reduction type is `reduce_type` (a
/// dtype name or placeholder; "" = the type of the first output). `_in_ind.size()` and
/// `_out_ind.size()` are the input and output sizes (CuPy's names, for means).
/// One block per output element, a shared-memory tree reduction; compiled with NVRTC
/// per (device, dtypes) on first use, cached like elementwise.
///
/// ```cpp
///   auto ssq = cuda::reduce("T x", "T y", "x * x", "a + b", "y = a", "0", "ssq");
///   Tensor y = ssq({x}, Axes(1))[0];               // x: (N, D) -> y: (N,)
/// ```
///
/// Without a GPU a kernel can be made, but calling it throws a DeviceError.
class ReductionKernel {
 public:
  /// A kernel `name` (a C identifier) from the pieces described in the class. In a build with
  /// the CUDA backend a bad name, parameter or reduce_type, a raw parameter, no input or no
  /// output, or an empty map, reduce or post-map expression is a ValueError here.
  ReductionKernel(std::string in_params, std::string out_params, std::string map_expr, std::string reduce_expr,
                  std::string post_map_expr, std::string identity, std::string name, std::string reduce_type = "",
                  std::string preamble = "");
  /// Runs the reduction on the inputs' device, on its current stream; returns the outputs.
  /// axes: Axes() = all (the default), Axes(1), Axes({0, 2}); Axes(std::vector<int>{}) reduces
  /// nothing. keepdims keeps reduced axes as length 1. Outputs not given are allocated on
  /// the inputs' device with the reduced shape; given ones must have it.
  /// Errors as for ElementwiseKernel; also ValueError for an empty reduction without identity.
  std::vector<Tensor> operator()(const std::vector<KernelArg>& inputs, const Axes& axes = Axes(),
                                 bool keepdims = false, std::vector<Tensor> outputs = {}) const;
  const std::string& name() const;  ///< The kernel's name.

  /// \cond INTERNAL
  struct Impl;
  /// \endcond

 private:
  std::shared_ptr<Impl> impl_;
};
/// A ReductionKernel, memoized per argument list like elementwise(); works without a GPU.
ReductionKernel reduce(const std::string& in_params, const std::string& out_params, const std::string& map_expr,
                       const std::string& reduce_expr, const std::string& post_map_expr, const std::string& identity,
                       const std::string& name, const std::string& reduce_type = "",
                       const std::string& preamble = "");

}  // namespace dezero::cuda
