// cuda/cuda_rtc.cpp - runtime-compiled user kernels (CuPy's ElementwiseKernel,
// ReductionKernel and RawKernel) through NVRTC.
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
#include <vector>

#include "dezero/cuda/detail/runtime.hpp"
#include "dezero/cuda.hpp"
#include "dezero/tensor/strided.hpp"

#define DEZERO_NVRTC_CHECK(call)                                                                               \
  do {                                                                                                         \
    nvrtcResult dz_r_ = (call);                                                                                \
    if (dz_r_ != NVRTC_SUCCESS)                                                                                \
      ::dezero::cuda::detail::throw_error("NVRTC", nvrtcGetErrorString(dz_r_), #call, __FILE__, __LINE__);     \
  } while (0)

namespace dezero::cuda {

namespace {

using detail::current_device;

// --- compile + load ---------------------------------------------------------------------
struct Compiled {
  cudaLibrary_t lib = nullptr;
  cudaKernel_t kernel = nullptr;
};

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

// --- parameter lists: "T x, raw T y, float32 c" ------------------------------------------------
struct Param {
  bool raw = false;
  std::string type;  // a dezero dtype name or a placeholder
  std::string name;
};

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
      throw ValueError(kernel + ": cannot parse parameter '" + item +
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
  }
}

// A kernel call gives every input, and either no outputs (they are allocated) or all.
void check_arg_counts(const std::string& op, std::size_t want_in, std::size_t got_in, std::size_t want_out,
                      std::size_t got_out) {
  if (got_in != want_in)
    throw ValueError(op + ": takes " + std::to_string(want_in) + " inputs, got " + std::to_string(got_in));
  if (got_out != 0 && got_out != want_out)
    throw ValueError(op + ": takes " + std::to_string(want_out) + " outputs, got " + std::to_string(got_out));
}

// The tensor arguments of one call of a user kernel (elementwise or reduce): each must
// be on the same CUDA device as the others and have its parameter's concrete dtype or
// bind its type placeholder (T, ...) consistently. The largest tensor that counts
// toward the shape gives the shape the kernel runs over.
struct Binding {
  // Checks the argument counts and binds every tensor argument. Outputs count toward
  // the shape only when `outputs_set_shape` (elementwise; a reduction's shape is its
  // inputs'); raw arguments never do.
  Binding(std::string op_name, const std::vector<Param>& in_params, const std::vector<KernelArg>& inputs,
          const std::vector<Param>& out_params, const std::vector<Tensor>& outputs, bool outputs_set_shape)
      : op(std::move(op_name)) {
    check_arg_counts(op, in_params.size(), inputs.size(), out_params.size(), outputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (auto* t = std::get_if<Tensor>(&inputs[i])) bind(in_params[i], *t, !in_params[i].raw);
    for (std::size_t i = 0; i < outputs.size(); ++i)
      bind(out_params[i], outputs[i], outputs_set_shape && !out_params[i].raw);
  }
  std::string op;
  std::map<std::string, DType> bound;  // placeholder -> dtype
  int device = -1;
  Shape shape;
  std::int64_t size = -1;

  void bind(const Param& p, const Tensor& t, bool sets_shape) {
    if (!t.defined()) throw ValueError(op + ": argument '" + p.name + "' is an undefined tensor");
    if (!t.device().is_cuda())
      throw DeviceError(op + ": argument '" + p.name + "' lives on " + t.device().str() +
                        "; hint: move it with to_gpu()");
    if (device < 0) device = t.device().index();
    else if (device != t.device().index())
      throw DeviceError(op + ": arguments are on cuda:" + std::to_string(device) + " and " + t.device().str());
    DType fixed;
    if (dtype_from_name(p.type, &fixed)) {
      if (fixed != t.dtype())
        throw DtypeError(op + ": argument '" + p.name + "' must be " + dtype_name(fixed) + ", got " +
                         dtype_name(t.dtype()));
    } else {
      auto it = bound.find(p.type);
      if (it == bound.end()) bound[p.type] = t.dtype();
      else if (it->second != t.dtype())
        throw DtypeError(op + ": type " + p.type + " is bound to " + dtype_name(it->second) + " but argument '" +
                         p.name + "' is " + dtype_name(t.dtype()));
    }
    if (sets_shape && t.size() > size) {
      size = t.size();
      shape = t.shape();
    }
  }

  // The dtype of `type` (a concrete name or a bound placeholder) for `what` (in errors).
  DType type_of(const std::string& type, const std::string& what) const {
    DType t;
    if (dtype_from_name(type, &t)) return t;
    auto it = bound.find(type);
    if (it == bound.end())
      throw DtypeError(op + ": cannot tell the type " + type + " of " + what +
                       " (no tensor argument uses it); hint: give an output tensor or use a concrete type");
    return it->second;
  }
  DType type_of(const Param& p) const { return type_of(p.type, "'" + p.name + "'"); }
};

// cudaLaunchKernel's argument list in parameter order: a device pointer per tensor
// input, a scalar input converted to its parameter's type, then the outputs. The
// values live in `slots` (sized here, so the pointers stay valid); the caller
// appends its own trailing arguments (sizes, dims).
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


// The kernel for `key` (device, bound types, argument kinds) from a user kernel's cache,
// or compiled from make_source() and cached; under the lock, so NVRTC runs once a key.
Compiled cached_kernel(std::mutex& mu, std::map<std::string, Compiled>& cache, const std::string& key,
                       const std::string& name, int device, const std::function<std::string()>& make_source) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Compiled compiled = compile(make_source(), name, device, {});
  cache[key] = compiled;
  return compiled;
}
}  // namespace

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
  if (b.size < 0) throw ValueError(op + ": needs at least one non-raw tensor argument to define the size");
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
    throw ShapeError(op + ": argument '" + p.name + "' has shape " + t.shape().str() + " but the kernel runs over " +
                     shape.str() + "; hint: broadcast_to() it first");
  };
  std::vector<char> bcast_in(inputs.size(), 0), bcast_out(outputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (auto* t = std::get_if<Tensor>(&inputs[i])) bcast_in[i] = check_shape(k.in[i], *t);
    else if (k.in[i].raw) throw ValueError(op + ": raw argument '" + k.in[i].name + "' must be a tensor");
    key += std::string(",") + arg_kind(inputs[i]) + dtype_name(type_of(k.in[i])) + (bcast_in[i] ? "b" : "");
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    bcast_out[i] = check_shape(k.out[i], outputs[i]);
    if (bcast_out[i]) throw ShapeError(op + ": output '" + k.out[i].name + "' must have shape " + shape.str());
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

// --- ReductionKernel --------------------------------------------------------------------------
// The input (iteration shape) is seen as (outputs, reduced): an output index and a reduction
// index each decompose over their own axes (merged where contiguous) into an element offset.
// Block b computes outputs b, b + gridDim.x, ...: its threads stride over the reduced index,
// then a shared-memory tree (blockDim a power of two) combines their partial results.
namespace {
constexpr int kRedMaxDims = ::dezero::detail::kMaxDims;
struct RedDims {  // same layout as _dz_dims in the generated source
  int nd_out = 0, nd_red = 0;
  long long out_shape[kRedMaxDims] = {}, out_stride[kRedMaxDims] = {};
  long long red_shape[kRedMaxDims] = {}, red_stride[kRedMaxDims] = {};
};

// Axes of `shape` with their contiguous strides, merged where one continues the next.
void merged_axes(const std::vector<std::pair<long long, long long>>& dims, int* nd, long long* shape,
                 long long* stride) {
  *nd = 0;
  for (auto [n, st] : dims) {
    if (n == 1) continue;
    if (*nd > 0 && stride[*nd - 1] == n * st) {
      shape[*nd - 1] *= n;
      stride[*nd - 1] = st;
    } else {
      shape[*nd] = n;
      stride[*nd] = st;
      ++*nd;
    }
  }
}

// Splits `shape` (contiguous) into output axes and reduced axes.
struct RedPlan {
  Shape out_shape;
  std::int64_t r = 1;  // elements reduced into each output
  RedDims dims;
};
RedPlan plan_reduction(const std::string& op, const Shape& shape, const Axes& axes, bool keepdims) {
  std::vector<int> red = ::dezero::detail::normalize_axes(op.c_str(), axes, shape.ndim());
  std::vector<bool> is_red(static_cast<std::size_t>(shape.ndim()), false);
  for (int a : red) is_red[static_cast<std::size_t>(a)] = true;
  std::vector<std::int64_t> out_dims;
  std::vector<std::pair<long long, long long>> out_axes, red_axes;
  std::vector<std::int64_t> strides = ::dezero::detail::contiguous_strides(shape);
  RedPlan plan;
  for (int a = 0; a < shape.ndim(); ++a) {
    auto ua = static_cast<std::size_t>(a);
    if (is_red[ua]) {
      red_axes.emplace_back(shape[a], strides[ua]);
      plan.r *= shape[a];
      if (keepdims) out_dims.push_back(1);
    } else {
      out_axes.emplace_back(shape[a], strides[ua]);
      out_dims.push_back(shape[a]);
    }
  }
  plan.out_shape = Shape(out_dims);
  merged_axes(out_axes, &plan.dims.nd_out, plan.dims.out_shape, plan.dims.out_stride);
  merged_axes(red_axes, &plan.dims.nd_red, plan.dims.red_shape, plan.dims.red_stride);
  return plan;
}
}  // namespace

struct ReductionKernel::Impl {
  std::vector<Param> in, out;
  std::string map_expr, reduce_expr, post_map_expr, identity, name, reduce_type, preamble;
  std::mutex mu;
  std::map<std::string, Compiled> cache;  // key: device, bound types, broadcast pattern
};

ReductionKernel::ReductionKernel(std::string in_params, std::string out_params, std::string map_expr,
                                 std::string reduce_expr, std::string post_map_expr, std::string identity,
                                 std::string name, std::string reduce_type, std::string preamble)
    : impl_(std::make_shared<Impl>()) {
  if (!is_identifier(name)) throw ValueError("reduce: the kernel name '" + name + "' is not a C identifier");
  const std::string op = "reduce '" + name + "'";
  impl_->in = parse_params(in_params, op);
  impl_->out = parse_params(out_params, op);
  for (auto* list : {&impl_->in, &impl_->out})
    for (auto& p : *list)
      if (p.raw) throw ValueError(op + ": raw parameter '" + p.name + "' is not supported by reduction kernels");
  if (impl_->in.empty()) throw ValueError(op + ": needs at least one input parameter");
  if (impl_->out.empty()) throw ValueError(op + ": needs at least one output parameter");
  if (map_expr.empty() || reduce_expr.empty() || post_map_expr.empty())
    throw ValueError(op + ": map_expr, reduce_expr and post_map_expr must not be empty");
  if (!reduce_type.empty() && !is_identifier(reduce_type))
    throw ValueError(op + ": reduce_type '" + reduce_type + "' is not a type name");
  impl_->map_expr = std::move(map_expr);
  impl_->reduce_expr = std::move(reduce_expr);
  impl_->post_map_expr = std::move(post_map_expr);
  impl_->identity = std::move(identity);
  impl_->name = std::move(name);
  impl_->reduce_type = reduce_type.empty() ? impl_->out[0].type : std::move(reduce_type);
  impl_->preamble = std::move(preamble);
}

// The CUDA source of a reduction kernel for bound types (see the section comment).
std::string reduction_source(const ReductionKernel::Impl& k, const std::map<std::string, DType>& bound,
                             DType reduce_dt, const std::vector<DType>& in_types, const std::vector<char>& in_tensor,
                             const std::vector<char>& bcast, const std::vector<DType>& out_types) {
  const bool has_id = !k.identity.empty();
  std::ostringstream src;
  src << k.preamble << "\n";
  for (auto& kv : bound) src << "typedef " << c_type(kv.second) << " " << kv.first << ";\n";
  src << "typedef float float32;\ntypedef double float64;\ntypedef int int32;\ntypedef long long int64;\n"
      << "typedef " << c_type(reduce_dt) << " _type_reduce;\n"
      << "struct _dz_ind { long long _n; __device__ long long size() const { return _n; } };\n"
      << "struct _dz_dims { int nd_out, nd_red; long long out_shape[" << kRedMaxDims << "], out_stride["
      << kRedMaxDims << "], red_shape[" << kRedMaxDims << "], red_stride[" << kRedMaxDims << "]; };\n"
      << "__device__ __forceinline__ _type_reduce _dz_reduce(const _type_reduce a, const _type_reduce b) {\n"
      << "  return (" << k.reduce_expr << ");\n}\n";
  src << "extern \"C\" __global__ void " << k.name << "(";
  for (std::size_t i = 0; i < k.in.size(); ++i) {
    const Param& p = k.in[i];
    const char* ct = c_type(in_types[i]);
    if (in_tensor[i]) src << "const " << ct << "* __restrict__ _p_" << p.name;
    else src << ct << " " << p.name;
    src << ", ";
  }
  for (std::size_t i = 0; i < k.out.size(); ++i) src << c_type(out_types[i]) << "* _p_" << k.out[i].name << ", ";
  src << "const _dz_dims _d, long long _n_out, long long _r) {\n"
      << "  extern __shared__ __align__(16) unsigned char _dz_smem[];\n"
      << "  _type_reduce* _sv = reinterpret_cast<_type_reduce*>(_dz_smem);\n";
  if (!has_id) src << "  bool* _sf = reinterpret_cast<bool*>(_sv + blockDim.x);\n";
  src << "  const _dz_ind _in_ind{_n_out * _r}, _out_ind{_n_out};\n"
      << "  (void)_in_ind; (void)_out_ind;\n"
      << "  const unsigned _tid = threadIdx.x;\n"
      << "  for (long long _o = blockIdx.x; _o < _n_out; _o += gridDim.x) {\n"
      << "    long long _base = 0;\n"
      << "    for (long long _t = _o, _k = _d.nd_out - 1; _k >= 0; --_k) {\n"
      << "      _base += (_t % _d.out_shape[_k]) * _d.out_stride[_k];\n"
      << "      _t /= _d.out_shape[_k];\n"
      << "    }\n";
  if (has_id) src << "    _type_reduce _acc = static_cast<_type_reduce>(" << k.identity << ");\n";
  else src << "    _type_reduce _acc = _type_reduce();\n    bool _has = false;\n";
  src << "    for (long long _j = _tid; _j < _r; _j += blockDim.x) {\n"
      << "      long long _off = _base;\n"
      << "      for (long long _t = _j, _k = _d.nd_red - 1; _k >= 0; --_k) {\n"
      << "        _off += (_t % _d.red_shape[_k]) * _d.red_stride[_k];\n"
      << "        _t /= _d.red_shape[_k];\n"
      << "      }\n"
      << "      (void)_off;\n";
  for (std::size_t i = 0; i < k.in.size(); ++i) {
    const Param& p = k.in[i];
    if (!in_tensor[i]) continue;
    src << "      const " << c_type(in_types[i]) << " " << p.name << " = _p_" << p.name
        << (bcast[i] ? "[0]" : "[_off]") << ";\n";
  }
  src << "      const _type_reduce _v = static_cast<_type_reduce>(" << k.map_expr << ");\n";
  if (has_id) src << "      _acc = _dz_reduce(_acc, _v);\n";
  else src << "      _acc = _has ? _dz_reduce(_acc, _v) : _v;\n      _has = true;\n";
  src << "    }\n"
      << "    _sv[_tid] = _acc;\n";
  if (!has_id) src << "    _sf[_tid] = _has;\n";
  src << "    __syncthreads();\n"
      << "    for (unsigned _s = blockDim.x >> 1; _s > 0; _s >>= 1) {\n"
      << "      if (_tid < _s) {\n";
  if (has_id) {
    src << "        _sv[_tid] = _dz_reduce(_sv[_tid], _sv[_tid + _s]);\n";
  } else {
    src << "        if (_sf[_tid + _s]) {\n"
        << "          _sv[_tid] = _sf[_tid] ? _dz_reduce(_sv[_tid], _sv[_tid + _s]) : _sv[_tid + _s];\n"
        << "          _sf[_tid] = true;\n"
        << "        }\n";
  }
  src << "      }\n"
      << "      __syncthreads();\n"
      << "    }\n"
      << "    if (_tid == 0) {\n"
      << "      const _type_reduce a = _sv[0];\n";
  for (std::size_t i = 0; i < k.out.size(); ++i)
    src << "      " << c_type(out_types[i]) << "& " << k.out[i].name << " = _p_" << k.out[i].name << "[_o];\n";
  src << "      " << k.post_map_expr << ";\n"
      << "    }\n"
      << "    __syncthreads();\n"
      << "  }\n}\n";
  return src.str();
}

const std::string& ReductionKernel::name() const { return impl_->name; }

std::vector<Tensor> ReductionKernel::operator()(const std::vector<KernelArg>& inputs, const Axes& axes,
                                                 bool keepdims, std::vector<Tensor> outputs) const {
  check_cuda_available();
  const Impl& k = *impl_;
  const std::string op = "reduce '" + k.name + "'";
  Binding b(op, k.in, inputs, k.out, outputs, /*outputs_set_shape=*/false);  // the largest input's shape
  if (b.size < 0) throw ValueError(op + ": needs at least one tensor input to define the shape to reduce");
  const int device = b.device;
  const Shape& shape = b.shape;
  const std::map<std::string, DType>& bound = b.bound;
  auto type_of = [&](const Param& p) { return b.type_of(p); };
  DType reduce_dt = b.type_of(k.reduce_type, "the reduction");

  // Reduced axes -> output shape; inputs are the full shape or one element.
  RedPlan plan = plan_reduction(op, shape, axes, keepdims);
  const Shape& out_shape = plan.out_shape;
  const std::int64_t r = plan.r;
  std::int64_t n_out = out_shape.numel();
  if (r == 0 && n_out > 0 && k.identity.empty())
    throw ValueError(op + ": zero-size reduction over axes " + axes.str() + " of shape " + shape.str() +
                     " with no identity; hint: give the kernel an identity");
  if (outputs.empty()) {
    for (auto& p : k.out) outputs.push_back(Tensor::empty(out_shape, type_of(p), dezero::Device::cuda(device)));
  } else {
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].shape() != out_shape)
        throw ShapeError(op + ": output '" + k.out[i].name + "' has shape " + outputs[i].shape().str() +
                         " but reducing " + shape.str() + " over axes " + axes.str() +
                         (keepdims ? " with keepdims" : "") + " gives " + out_shape.str());
  }

  std::string key = std::to_string(device) + ";r" + dtype_name(reduce_dt);
  std::vector<char> bcast(inputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (auto* t = std::get_if<Tensor>(&inputs[i])) {
      if (t->shape() != shape) {
        if (t->size() != 1)
          throw ShapeError(op + ": argument '" + k.in[i].name + "' has shape " + t->shape().str() +
                           " but the kernel reduces " + shape.str() + "; hint: broadcast_to() it first");
        bcast[i] = 1;
      }
    }
    key += std::string(",") + arg_kind(inputs[i]) + dtype_name(type_of(k.in[i])) + (bcast[i] ? "b" : "");
  }
  for (auto& p : k.out) key += std::string(";") + dtype_name(type_of(p));

  Compiled compiled = cached_kernel(impl_->mu, impl_->cache, key, k.name, device, [&] {
    std::vector<DType> in_types, out_types;
    std::vector<char> in_tensor;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      in_types.push_back(type_of(k.in[i]));
      in_tensor.push_back(std::holds_alternative<Tensor>(inputs[i]) ? 1 : 0);
    }
    for (auto& p : k.out) out_types.push_back(type_of(p));
    return reduction_source(k, bound, reduce_dt, in_types, in_tensor, bcast, out_types);
  });

  RedDims dims = plan.dims;
  std::vector<Slot> slots;
  std::vector<void*> args = kernel_args(inputs, k.in, outputs, b, slots);
  long long n_out_arg = n_out, r_arg = r;
  args.push_back(&dims);
  args.push_back(&n_out_arg);
  args.push_back(&r_arg);
  if (n_out > 0) {
    unsigned block = 32;
    while (block < 256 && static_cast<std::int64_t>(block) < r) block <<= 1;
    std::size_t shmem = block * (dtype_size(reduce_dt) + (k.identity.empty() ? 1 : 0));
    long long blocks = std::min<long long>(n_out, 1 << 20);
    detail::ScopedDevice g(device);
    DEZERO_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(compiled.kernel),
                                   dim3(static_cast<unsigned>(blocks)), dim3(block), args.data(), shmem,
                                   detail::current_stream(device)));
  }
  return outputs;
}

ReductionKernel reduce(const std::string& in_params, const std::string& out_params, const std::string& map_expr,
                       const std::string& reduce_expr, const std::string& post_map_expr, const std::string& identity,
                       const std::string& name, const std::string& reduce_type, const std::string& preamble) {
  static auto memo = memoize([](std::string a, std::string b, std::string c, std::string d, std::string e,
                                std::string f, std::string g, std::string h, std::string i) {
    return ReductionKernel(a, b, c, d, e, f, g, h, i);
  });
  return memo(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, reduce_type, preamble);
}

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
