// dezero/cuda/rtc_elementwise.cpp - cupy.ElementwiseKernel: a user's element-wise
// operation over tensors of one shape, as a generated grid-stride kernel.
//
// The generated kernel takes a pointer per tensor argument and a value per scalar,
// binds each non-raw array to its name by value (inputs, [0] for a broadcast single
// element) or by reference (outputs) at index `i`, and runs the operation once per
// index. Placeholder types become typedefs; the kernel is compiled per (device, bound
// types, argument kinds, broadcast pattern). Parameter lists, binding and compiling
// are rtc.cpp's.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "dezero/gpu/nvrtc.hpp"
#include "dezero/gpu/runtime.hpp"
#include "dezero/cuda/device.hpp"
#include "dezero/cuda/memoize.hpp"
#include "dezero/cuda/rtc.hpp"
#include "dezero/cuda/rtc_binding.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::cuda {

using ::dezero::detail::fail;  // the library's one-line errors (fail.hpp)

using detail::arg_kind;
using detail::Binding;
using detail::c_type;
using detail::cached_kernel;
using detail::Compiled;
using detail::current_device;
using detail::is_identifier;
using detail::kernel_args;
using detail::Param;
using detail::parse_params;
using detail::Slot;

// --- ElementwiseKernel -----------------------------------------------------------------------
struct ElementwiseKernel::Impl {
  std::vector<Param> in, out;
  std::string operation, name, preamble;
  std::mutex mu;
  std::map<std::string, Compiled> cache;  // key: device, bound types, broadcast pattern
};

ElementwiseKernel::ElementwiseKernel(std::string in_params, std::string out_params, std::string operation,
                                     std::string name, std::string preamble)
    : impl_(std::make_shared<Impl>()) {
  if (!is_identifier(name)) throw ValueError("elementwise: the kernel name '" + name + "' is not a C identifier");
  impl_->in = parse_params(in_params, "elementwise '" + name + "'");
  impl_->out = parse_params(out_params, "elementwise '" + name + "'");
  if (impl_->out.empty()) throw ValueError("elementwise '" + name + "': needs at least one output parameter");
  impl_->operation = std::move(operation);
  impl_->name = std::move(name);
  impl_->preamble = std::move(preamble);
}

const std::string& ElementwiseKernel::name() const { return impl_->name; }

std::vector<Tensor> ElementwiseKernel::operator()(const std::vector<KernelArg>& inputs,
                                                   std::vector<Tensor> outputs) const {
  check_cuda_available();
  const Impl& k = *impl_;
  const std::string op = "elementwise '" + k.name + "'";
  Binding b(op, k.in, inputs, k.out, outputs, /*outputs_set_shape=*/true);
  if (b.device < 0) b.device = current_device();
  if (b.size < 0) fail<ValueError>(op.c_str(), "needs at least one non-raw tensor argument to define the size");
  const int device = b.device;
  const Shape& shape = b.shape;
  const std::int64_t size = b.size;
  const std::map<std::string, DType>& bound = b.bound;
  auto type_of = [&](const Param& p) { return b.type_of(p); };
  if (outputs.empty())
    for (auto& p : k.out) outputs.push_back(Tensor::empty(shape, type_of(p), dezero::Device::cuda(device)));

  // Check broadcasting (a non-raw tensor is the full shape or a single element) and build the key.
  std::string key = std::to_string(device);
  auto check_shape = [&](const Param& p, const Tensor& t) -> bool {  // true: broadcast element
    if (p.raw) return false;
    if (t.shape() == shape) return false;
    if (t.size() == 1) return true;
    fail<ShapeError>(op.c_str(), "argument '", p.name, "' has shape ", t.shape(), " but the kernel runs over ", shape,
                     "; hint: broadcast_to() it first");
  };
  std::vector<char> bcast_in(inputs.size(), 0), bcast_out(outputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (auto* t = std::get_if<Tensor>(&inputs[i])) bcast_in[i] = check_shape(k.in[i], *t);
    else if (k.in[i].raw) fail<ValueError>(op.c_str(), "raw argument '", k.in[i].name, "' must be a tensor");
    key += std::string(",") + arg_kind(inputs[i]) + dtype_name(type_of(k.in[i])) + (bcast_in[i] ? "b" : "");
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    bcast_out[i] = check_shape(k.out[i], outputs[i]);
    if (bcast_out[i]) fail<ShapeError>(op.c_str(), "output '", k.out[i].name, "' must have shape ", shape);
    key += std::string(";") + dtype_name(type_of(k.out[i]));
  }

  // Source: placeholders become typedefs; non-raw arrays are bound by value (inputs) or reference (outputs).
  Compiled compiled = cached_kernel(impl_->mu, impl_->cache, key, k.name, device, [&] {
    std::ostringstream src;
    src << k.preamble << "\n";
    for (auto& kv : bound) src << "typedef " << c_type(kv.second) << " " << kv.first << ";\n";
    src << "typedef float float32;\ntypedef double float64;\ntypedef int int32;\ntypedef long long int64;\n";
    src << "extern \"C\" __global__ void " << k.name << "(";
    bool first = true;
    auto sep = [&] {
      if (!first) src << ", ";
      first = false;
    };
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      sep();
      const Param& p = k.in[i];
      const char* ct = c_type(type_of(p));
      if (std::holds_alternative<Tensor>(inputs[i]))
        src << "const " << ct << "* __restrict__ " << (p.raw ? p.name : "_p_" + p.name);
      else
        src << ct << " " << p.name;
    }
    for (auto& p : k.out) {
      sep();
      src << c_type(type_of(p)) << "* " << (p.raw ? p.name : "_p_" + p.name);
    }
    sep();
    src << "long long _n) {\n"
        << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < _n;"
        << " i += (long long)blockDim.x * gridDim.x) {\n";
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Param& p = k.in[i];
      if (p.raw || !std::holds_alternative<Tensor>(inputs[i])) continue;
      src << "    const " << c_type(type_of(p)) << " " << p.name << " = _p_" << p.name << (bcast_in[i] ? "[0]" : "[i]")
          << ";\n";
    }
    for (auto& p : k.out)
      if (!p.raw) src << "    " << c_type(type_of(p)) << "& " << p.name << " = _p_" << p.name << "[i];\n";
    src << "    " << k.operation << ";\n  }\n}\n";
    return src.str();
  });

  std::vector<Slot> slots;
  std::vector<void*> args = kernel_args(inputs, k.in, outputs, b, slots);
  long long n = size;
  args.push_back(&n);
  if (n > 0) {
    detail::ScopedDevice g(device);
    long long blocks = std::min<long long>((n + 255) / 256, 1 << 20);
    DEZERO_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(compiled.kernel), dim3(static_cast<unsigned>(blocks)),
                                   dim3(256), args.data(), 0, detail::current_stream(device)));
  }
  return outputs;
}

ElementwiseKernel elementwise(const std::string& in_params, const std::string& out_params,
                              const std::string& operation, const std::string& name, const std::string& preamble) {
  static auto memo = memoize([](std::string a, std::string b, std::string c, std::string d, std::string e) {
    return ElementwiseKernel(a, b, c, d, e);
  });
  return memo(in_params, out_params, operation, name, preamble);
}

}  // namespace dezero::cuda
