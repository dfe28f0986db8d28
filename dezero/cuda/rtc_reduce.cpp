// dezero/cuda/rtc_reduce.cpp - cupy.ReductionKernel: a user's map / reduce / post-map
// over the reduced axes of its inputs, as a generated kernel with one block per output.
//
// The reduced shape and the generated source are this file's (plan_reduction,
// reduction_source); parameter lists, binding and compiling are rtc.cpp's.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "dezero/gpu/nvrtc.hpp"
#include "dezero/gpu/runtime.hpp"
#include "dezero/cuda/device.hpp"
#include "dezero/cuda/memoize.hpp"
#include "dezero/cuda/rtc.hpp"
#include "dezero/cuda/rtc_binding.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/tensor/strided.hpp"

namespace dezero::cuda {

using ::dezero::detail::fail;  // the library's one-line errors (fail.hpp)

using detail::arg_kind;
using detail::Binding;
using detail::c_type;
using detail::cached_kernel;
using detail::Compiled;
using detail::is_identifier;
using detail::kernel_args;
using detail::Param;
using detail::parse_params;
using detail::Slot;

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
      if (p.raw) fail<ValueError>(op.c_str(), "raw parameter '", p.name, "' is not supported by reduction kernels");
  if (impl_->in.empty()) fail<ValueError>(op.c_str(), "needs at least one input parameter");
  if (impl_->out.empty()) fail<ValueError>(op.c_str(), "needs at least one output parameter");
  if (map_expr.empty() || reduce_expr.empty() || post_map_expr.empty())
    fail<ValueError>(op.c_str(), "map_expr, reduce_expr and post_map_expr must not be empty");
  if (!reduce_type.empty() && !is_identifier(reduce_type))
    fail<ValueError>(op.c_str(), "reduce_type '", reduce_type, "' is not a type name");
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
  if (b.size < 0) fail<ValueError>(op.c_str(), "needs at least one tensor input to define the shape to reduce");
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
        fail<ShapeError>(op.c_str(), "output '", k.out[i].name, "' has shape ", outputs[i].shape(), " but reducing ",
                         shape, " over axes ", axes.str(), keepdims ? " with keepdims" : "", " gives ", out_shape);
  }

  std::string key = std::to_string(device) + ";r" + dtype_name(reduce_dt);
  std::vector<char> bcast(inputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (auto* t = std::get_if<Tensor>(&inputs[i])) {
      if (t->shape() != shape) {
        if (t->size() != 1)
          fail<ShapeError>(op.c_str(), "argument '", k.in[i].name, "' has shape ", t->shape(), " but the kernel reduces ",
                           shape, "; hint: broadcast_to() it first");
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

}  // namespace dezero::cuda
