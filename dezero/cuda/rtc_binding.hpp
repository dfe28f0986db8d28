// dezero/cuda/rtc_binding.hpp - what the two kinds of user kernel (rtc_elementwise.cpp,
// rtc_reduce.cpp) share on the tensor side: parameter lists, argument slots and the
// binding of tensor arguments to parameters. rtc.cpp implements it.
//
// Internal: not installed, included only by rtc*.cpp; it includes public headers only,
// like the installed headers next to it. The CUDA side (compile, cache) is
// detail/nvrtc.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dezero/cuda/rtc.hpp"
#include "dezero/tensor.hpp"

namespace dezero::cuda::detail {

// --- parameter lists: "T x, raw T y, float32 c" ------------------------------------------
struct Param {
  bool raw = false;
  std::string type;  // a dezero dtype name or a placeholder
  std::string name;
};

// A dezero dtype name (float32, ...) or its C name (float, ...); false for anything else.
bool dtype_from_name(const std::string& t, DType* out);
// The C type of a dtype in generated source ("long long" for int64).
const char* c_type(DType t);
bool is_identifier(const std::string& s);
// "[raw] type name, ..."; ValueError naming `kernel` for an item that is not.
std::vector<Param> parse_params(const std::string& spec, const std::string& kernel);
// "tensor" or "scalar" (part of a kernel's cache key).
const char* arg_kind(const KernelArg& a);

// --- binding the arguments of one call ---------------------------------------------------
// The tensor arguments of one call of a user kernel (elementwise or reduce): each must
// be on the same CUDA device as the others and have its parameter's concrete dtype or
// bind its type placeholder (T, ...) consistently. The largest tensor that counts
// toward the shape gives the shape the kernel runs over.
struct Binding {
  // Checks the argument counts and binds every tensor argument. Outputs count toward
  // the shape only when `outputs_set_shape` (elementwise; a reduction's shape is its
  // inputs'); raw arguments never do.
  Binding(std::string op_name, const std::vector<Param>& in_params, const std::vector<KernelArg>& inputs,
          const std::vector<Param>& out_params, const std::vector<Tensor>& outputs, bool outputs_set_shape);
  std::string op;
  std::map<std::string, DType> bound;  // placeholder -> dtype
  int device = -1;
  Shape shape;
  std::int64_t size = -1;

  void bind(const Param& p, const Tensor& t, bool sets_shape);

  // The dtype of `type` (a concrete name or a bound placeholder) for `what` (in errors).
  DType type_of(const std::string& type, const std::string& what) const;
  DType type_of(const Param& p) const;
};

// --- kernel arguments --------------------------------------------------------------------
// A kernel argument slot: a device pointer or a scalar in the parameter's C++ type.
struct Slot {
  union {
    const void* ptr;
    float f;
    double d;
    int i;
    long long l;
  };
};

// cudaLaunchKernel's argument list in parameter order: a device pointer per tensor
// input, a scalar input converted to its parameter's type, then the outputs. The
// values live in `slots` (sized here, so the pointers stay valid); the caller
// appends its own trailing arguments (sizes, dims).
std::vector<void*> kernel_args(const std::vector<KernelArg>& inputs, const std::vector<Param>& in_params,
                               const std::vector<Tensor>& outputs, const Binding& b, std::vector<Slot>& slots);

}  // namespace dezero::cuda::detail
