// dezero/cuda/rtc.cpp - what the runtime-compiled user kernels (cuda/rtc.hpp) share,
// and RawKernel: compiling with NVRTC and caching (detail/nvrtc.hpp), parameter lists
// and the binding of tensor arguments (cuda/rtc_binding.hpp). ElementwiseKernel is in
// rtc_elementwise.cpp, ReductionKernel in rtc_reduce.cpp.
//
// Source is compiled for the device's own architecture (SASS via nvrtcGetCUBIN, or
// PTX for the newest architecture NVRTC knows when the device is newer), loaded
// with the runtime's library API (cudaLibraryLoadData: no link to libcuda) and
// cached per (device, dtype signature) inside the kernel object; elementwise(),
// reduce() and raw() memoize the kernel objects, so clear_memo() drops them.
#include <nvrtc.h>

#include <cctype>
#include <functional>
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

// NVRTC's check lives here: compile() below is its only user.
#define DEZERO_NVRTC_CHECK(call)                                                                               \
  do {                                                                                                         \
    nvrtcResult dz_r_ = (call);                                                                                \
    if (dz_r_ != NVRTC_SUCCESS)                                                                                \
      ::dezero::cuda::detail::throw_error("NVRTC", nvrtcGetErrorString(dz_r_), #call, __FILE__, __LINE__);     \
  } while (0)

namespace dezero::cuda::detail {

using ::dezero::detail::fail;  // the library's one-line errors (fail.hpp)

// --- compile + load ----------------------------------------------------------------------
Compiled compile(const std::string& source, const std::string& name, int device,
                 const std::vector<std::string>& extra_options) {
  int major = 0, minor = 0;
  DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  DEZERO_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  int cc = major * 10 + minor;
  int n_archs = 0;
  DEZERO_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&n_archs));
  std::vector<int> archs(static_cast<std::size_t>(n_archs));
  DEZERO_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  bool sass = false;
  int target = cc;
  for (int a : archs) sass = sass || a == cc;
  if (!sass) {  // a device newer than this NVRTC: PTX for the newest known arch, JIT-compiled by the driver
    target = 0;
    for (int a : archs)
      if (a <= cc && a > target) target = a;
    if (target == 0) target = archs.empty() ? cc : archs.front();
  }
  std::vector<std::string> opts = {(sass ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") +
                                        std::to_string(target),
                                    "--std=c++17", "-default-device"};
  for (auto& o : extra_options) opts.push_back(o);
  std::vector<const char*> copts;
  for (auto& o : opts) copts.push_back(o.c_str());

  nvrtcProgram prog = nullptr;
  DEZERO_NVRTC_CHECK(nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr));
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(copts.size()), copts.data());
  if (r != NVRTC_SUCCESS) {
    std::size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size) nvrtcGetProgramLog(prog, &log[0]);
    throw CudaError("NVRTC: compiling kernel '" + name + "' failed (" + nvrtcGetErrorString(r) + "):\n" + log +
                    "\n--- source ---\n" + source);
  }
  std::string image;
  std::size_t size = 0;
  if (sass) {
    DEZERO_NVRTC_CHECK(nvrtcGetCUBINSize(prog, &size));
    image.resize(size);
    DEZERO_NVRTC_CHECK(nvrtcGetCUBIN(prog, &image[0]));
  } else {
    DEZERO_NVRTC_CHECK(nvrtcGetPTXSize(prog, &size));
    image.resize(size);
    DEZERO_NVRTC_CHECK(nvrtcGetPTX(prog, &image[0]));
  }
  Compiled c;
  detail::ScopedDevice g(device);
  DEZERO_CUDA_CHECK(cudaLibraryLoadData(&c.lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  DEZERO_CUDA_CHECK(cudaLibraryGetKernel(&c.kernel, c.lib, name.c_str()));
  return c;
}

Compiled cached_kernel(std::mutex& mu, std::map<std::string, Compiled>& cache, const std::string& key,
                       const std::string& name, int device, const std::function<std::string()>& make_source) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Compiled compiled = compile(make_source(), name, device, {});
  cache[key] = compiled;
  return compiled;
}

// --- parameter lists ---------------------------------------------------------------------
bool dtype_from_name(const std::string& t, DType* out) {
  static const std::map<std::string, DType> names = {
      {"float32", float32}, {"float", float32}, {"float64", float64}, {"double", float64},
      {"int32", int32},     {"int", int32},     {"int64", int64},     {"long", int64}};
  auto it = names.find(t);
  if (it == names.end()) return false;
  *out = it->second;
  return true;
}

const char* c_type(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Int32: return "int";
    case DType::Int64: return "long long";
    case DType::BFloat16:
    case DType::Float16:  // NVRTC sources here include no CUDA headers: no __half / __nv_bfloat16
      throw DtypeError(std::string("cuda::elementwise / cuda::reduce: runtime-compiled kernels take float32, "
                                   "float64, int32 and int64 arguments, got ") +
                       dtype_name(t) + "; hint: astype(dezero::float32) first");
  }
  return "?";
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  return true;
}

std::vector<Param> parse_params(const std::string& spec, const std::string& kernel) {
  std::vector<Param> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::stringstream is(item);
    std::vector<std::string> tok;
    std::string w;
    while (is >> w) tok.push_back(w);
    if (tok.empty()) continue;
    Param p;
    std::size_t i = 0;
    if (tok[0] == "raw") {
      p.raw = true;
      i = 1;
    }
    if (tok.size() != i + 2 || !is_identifier(tok[i]) || !is_identifier(tok[i + 1]))
      fail<ValueError>(kernel.c_str(), "cannot parse parameter '", item,
                       "'; expected '[raw] type name' with type float32/float64/int32/int64 or a placeholder like T");
    p.type = tok[i];
    p.name = tok[i + 1];
    out.push_back(p);
  }
  return out;
}

const char* arg_kind(const KernelArg& a) {
  return std::holds_alternative<Tensor>(a) ? "tensor" : "scalar";
}

// --- binding the arguments of one call, their kernel arguments ----------------------------
namespace {
void set_scalar(Slot* s, const KernelArg& a, DType type) {
  double v = std::visit(
      [](const auto& x) -> double {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) return 0.0;
        else return static_cast<double>(x);
      },
      a);
  std::int64_t iv = std::holds_alternative<std::int64_t>(a)   ? std::get<std::int64_t>(a)
                    : std::holds_alternative<std::int32_t>(a) ? std::get<std::int32_t>(a)
                                                              : static_cast<std::int64_t>(v);
  switch (type) {
    case DType::Float32: s->f = static_cast<float>(v); break;
    case DType::Float64: s->d = v; break;
    case DType::Int32: s->i = static_cast<int>(iv); break;
    case DType::Int64: s->l = iv; break;
    case DType::BFloat16:
    case DType::Float16: c_type(type); break;  // throws: no 16-bit kernel arguments
  }
}

// A kernel call gives every input, and either no outputs (they are allocated) or all.
void check_arg_counts(const std::string& op, std::size_t want_in, std::size_t got_in, std::size_t want_out,
                      std::size_t got_out) {
  if (got_in != want_in)
    fail<ValueError>(op.c_str(), "takes ", want_in, " inputs, got ", got_in);
  if (got_out != 0 && got_out != want_out)
    fail<ValueError>(op.c_str(), "takes ", want_out, " outputs, got ", got_out);
}
}  // namespace

Binding::Binding(std::string op_name, const std::vector<Param>& in_params, const std::vector<KernelArg>& inputs,
                 const std::vector<Param>& out_params, const std::vector<Tensor>& outputs, bool outputs_set_shape)
    : op(std::move(op_name)) {
  check_arg_counts(op, in_params.size(), inputs.size(), out_params.size(), outputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (auto* t = std::get_if<Tensor>(&inputs[i])) bind(in_params[i], *t, !in_params[i].raw);
  for (std::size_t i = 0; i < outputs.size(); ++i)
    bind(out_params[i], outputs[i], outputs_set_shape && !out_params[i].raw);
}

void Binding::bind(const Param& p, const Tensor& t, bool sets_shape) {
  if (!t.defined()) fail<ValueError>(op.c_str(), "argument '", p.name, "' is an undefined tensor");
  if (!t.device().is_cuda())
    fail<DeviceError>(op.c_str(), "argument '", p.name, "' lives on ", t.device(), "; hint: move it with to_gpu()");
  if (device < 0) device = t.device().index();
  else if (device != t.device().index())
    fail<DeviceError>(op.c_str(), "arguments are on cuda:", device, " and ", t.device());
  DType fixed;
  if (dtype_from_name(p.type, &fixed)) {
    if (fixed != t.dtype())
      fail<DtypeError>(op.c_str(), "argument '", p.name, "' must be ", fixed, ", got ", t.dtype());
  } else {
    auto it = bound.find(p.type);
    if (it == bound.end()) bound[p.type] = t.dtype();
    else if (it->second != t.dtype())
      fail<DtypeError>(op.c_str(), "type ", p.type, " is bound to ", it->second, " but argument '", p.name, "' is ",
                       t.dtype());
  }
  if (sets_shape && t.size() > size) {
    size = t.size();
    shape = t.shape();
  }
}

DType Binding::type_of(const std::string& type, const std::string& what) const {
  DType t;
  if (dtype_from_name(type, &t)) return t;
  auto it = bound.find(type);
  if (it == bound.end())
    fail<DtypeError>(op.c_str(), "cannot tell the type ", type, " of ", what,
                     " (no tensor argument uses it); hint: give an output tensor or use a concrete type");
  return it->second;
}
DType Binding::type_of(const Param& p) const { return type_of(p.type, "'" + p.name + "'"); }

std::vector<void*> kernel_args(const std::vector<KernelArg>& inputs, const std::vector<Param>& in_params,
                               const std::vector<Tensor>& outputs, const Binding& b, std::vector<Slot>& slots) {
  slots.assign(inputs.size() + outputs.size(), Slot{});
  std::vector<void*> args;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Slot& s = slots[i];
    if (auto* t = std::get_if<Tensor>(&inputs[i])) s.ptr = t->raw_data();
    else set_scalar(&s, inputs[i], b.type_of(in_params[i]));
    args.push_back(&s);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    slots[inputs.size() + i].ptr = outputs[i].raw_data();
    args.push_back(&slots[inputs.size() + i]);
  }
  return args;
}

}  // namespace dezero::cuda::detail

namespace dezero::cuda {

using detail::compile;
using detail::Compiled;
using detail::current_device;

// --- RawKernel -----------------------------------------------------------------------------------
struct RawKernel::Impl {
  std::string code, name;
  std::vector<std::string> options;
  std::mutex mu;
  std::map<int, Compiled> per_device;
};

RawKernel::RawKernel(std::string code, std::string name, std::vector<std::string> options)
    : impl_(std::make_shared<Impl>()) {
  impl_->code = std::move(code);
  impl_->name = std::move(name);
  impl_->options = std::move(options);
}
const std::string& RawKernel::name() const { return impl_->name; }

void RawKernel::operator()(Dim3 grid, Dim3 block, const std::vector<KernelArg>& args, std::size_t shared_mem) const {
  check_cuda_available();
  int device = -1;
  for (auto& a : args)
    if (auto* t = std::get_if<Tensor>(&a)) {
      if (!t->device().is_cuda())
        throw DeviceError("raw kernel '" + impl_->name + "': a tensor argument lives on " + t->device().str() +
                          "; hint: move it with to_gpu()");
      if (device < 0) device = t->device().index();
    }
  if (device < 0) device = current_device();
  Compiled c;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->per_device.find(device);
    if (it == impl_->per_device.end()) it = impl_->per_device.emplace(device, compile(impl_->code, impl_->name, device, impl_->options)).first;
    c = it->second;
  }
  std::vector<std::variant<const void*, double, std::int64_t, std::int32_t, float>> values;
  values.reserve(args.size());
  for (auto& a : args) {
    if (auto* t = std::get_if<Tensor>(&a)) values.emplace_back(static_cast<const void*>(t->raw_data()));
    else if (auto* d = std::get_if<double>(&a)) values.emplace_back(*d);
    else if (auto* l = std::get_if<std::int64_t>(&a)) values.emplace_back(*l);
    else if (auto* i = std::get_if<std::int32_t>(&a)) values.emplace_back(*i);
    else values.emplace_back(std::get<float>(a));
  }
  std::vector<void*> ptrs;
  for (auto& v : values) ptrs.push_back(std::visit([](auto& x) -> void* { return const_cast<void*>(static_cast<const void*>(&x)); }, v));
  detail::ScopedDevice g(device);
  DEZERO_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(c.kernel), dim3(grid.x, grid.y, grid.z),
                                 dim3(block.x, block.y, block.z), ptrs.data(), shared_mem,
                                 detail::current_stream(device)));
}

RawKernel raw(const std::string& code, const std::string& name, const std::vector<std::string>& options) {
  static auto memo = memoize([](std::string c, std::string n, std::vector<std::string> o) { return RawKernel(c, n, o); });
  return memo(code, name, options);
}

}  // namespace dezero::cuda
