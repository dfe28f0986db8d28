// dezero/onnx/proto.cpp - internal: the importer's side of ONNX's protobuf messages. Node
// errors ("node 'conv1' (Conv, opset 13): ..."), typed attribute access, and TensorProto ->
// host Tensor with every size checked against the bytes present before anything is allocated.
// Nothing here knows about files: external data comes through the caller's reader (import.cpp
// confines it to the model's folder).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "dezero/error.hpp"
#include "dezero/onnx/ops.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::onnx::detail {

namespace {
using dezero::detail::fail;

// The most elements / bytes one tensor of a model may hold (a dims product past these is a
// corrupt or hostile file, refused before any allocation).
constexpr std::int64_t kMaxElements = std::int64_t(1) << 31;
constexpr std::int64_t kMaxBytes = std::int64_t(8) << 30;

const char* elem_type_name(int t) {
  switch (t) {
    case ::onnx::TensorProto::UNDEFINED: return "undefined";
    case ::onnx::TensorProto::FLOAT: return "float";
    case ::onnx::TensorProto::UINT8: return "uint8";
    case ::onnx::TensorProto::INT8: return "int8";
    case ::onnx::TensorProto::UINT16: return "uint16";
    case ::onnx::TensorProto::INT16: return "int16";
    case ::onnx::TensorProto::INT32: return "int32";
    case ::onnx::TensorProto::INT64: return "int64";
    case ::onnx::TensorProto::STRING: return "string";
    case ::onnx::TensorProto::BOOL: return "bool";
    case ::onnx::TensorProto::FLOAT16: return "float16";
    case ::onnx::TensorProto::DOUBLE: return "double";
    case ::onnx::TensorProto::UINT32: return "uint32";
    case ::onnx::TensorProto::UINT64: return "uint64";
    case ::onnx::TensorProto::COMPLEX64: return "complex64";
    case ::onnx::TensorProto::COMPLEX128: return "complex128";
    case ::onnx::TensorProto::BFLOAT16: return "bfloat16";
    default: return nullptr;
  }
}

std::string elem_type_str(int t) {
  const char* n = elem_type_name(t);
  return n ? std::string(n) : "element type " + std::to_string(t);
}

// The size of one element in raw_data (little-endian, packed), for the supported types.
std::size_t raw_elem_size(int t) {
  switch (t) {
    case ::onnx::TensorProto::BOOL:
    case ::onnx::TensorProto::INT8:
    case ::onnx::TensorProto::UINT8: return 1;
    case ::onnx::TensorProto::INT16:
    case ::onnx::TensorProto::UINT16: return 2;
    case ::onnx::TensorProto::FLOAT:
    case ::onnx::TensorProto::INT32: return 4;
    default: return 8;  // DOUBLE, INT64
  }
}

std::string attr_type_str(int t) {
  switch (t) {
    case ::onnx::AttributeProto::FLOAT: return "float";
    case ::onnx::AttributeProto::INT: return "int";
    case ::onnx::AttributeProto::STRING: return "string";
    case ::onnx::AttributeProto::TENSOR: return "tensor";
    case ::onnx::AttributeProto::GRAPH: return "graph";
    case ::onnx::AttributeProto::SPARSE_TENSOR: return "sparse tensor";
    case ::onnx::AttributeProto::TYPE_PROTO: return "type";
    case ::onnx::AttributeProto::FLOATS: return "floats";
    case ::onnx::AttributeProto::INTS: return "ints";
    case ::onnx::AttributeProto::STRINGS: return "strings";
    case ::onnx::AttributeProto::TENSORS: return "tensors";
    case ::onnx::AttributeProto::GRAPHS: return "graphs";
    case ::onnx::AttributeProto::SPARSE_TENSORS: return "sparse tensors";
    case ::onnx::AttributeProto::TYPE_PROTOS: return "types";
    default: return "undefined";
  }
}

// Reads `n` elements of C type Src from packed little-endian bytes into `out` (converted to Dst).
template <class Src, class Dst>
void read_packed(const char* bytes, std::int64_t n, Dst* out) {
  for (std::int64_t k = 0; k < n; ++k) {
    Src v;
    std::memcpy(&v, bytes + k * static_cast<std::int64_t>(sizeof(Src)), sizeof(Src));
    out[k] = static_cast<Dst>(v);
  }
}

}  // namespace

// --- errors ---------------------------------------------------------------------------------------
std::string describe_node(const ::onnx::NodeProto& node, int opset) {
  std::string who;
  if (!node.name().empty()) who = "node '" + node.name() + "'";
  else if (node.output_size() > 0 && !node.output(0).empty()) who = "node with output '" + node.output(0) + "'";
  else who = "an unnamed node";
  std::string op = node.op_type().empty() ? std::string("<no op_type>") : node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") op = node.domain() + "." + op;
  return who + " (" + op + ", opset " + std::to_string(opset) + ")";
}

void unsupported(const ::onnx::NodeProto& node, int opset, const std::string& what) {
  fail<NotImplementedError>("onnx import", describe_node(node, opset), ": ", what);
}

void malformed(const ::onnx::NodeProto& node, int opset, const std::string& what) {
  fail<ValueError>("onnx import", describe_node(node, opset), ": ", what);
}

// --- attributes -----------------------------------------------------------------------------------
const ::onnx::AttributeProto* Attrs::find(const std::string& name) const {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) {
      if (!a.ref_attr_name().empty())
        malformed(node, opset, "attribute '" + name + "' refers to a function attribute ('" + a.ref_attr_name() +
                                   "'), which only a function body may do");
      return &a;
    }
  }
  return nullptr;
}

namespace {
// The attribute's type, or the one its set field implies in files that leave `type` out.
int attr_type(const ::onnx::AttributeProto& a) {
  if (a.type() != ::onnx::AttributeProto::UNDEFINED) return a.type();
  if (a.has_i()) return ::onnx::AttributeProto::INT;
  if (a.has_f()) return ::onnx::AttributeProto::FLOAT;
  if (a.has_s()) return ::onnx::AttributeProto::STRING;
  if (a.has_t()) return ::onnx::AttributeProto::TENSOR;
  if (a.ints_size() > 0) return ::onnx::AttributeProto::INTS;
  if (a.floats_size() > 0) return ::onnx::AttributeProto::FLOATS;
  return ::onnx::AttributeProto::UNDEFINED;
}

[[noreturn]] void wrong_type(const Attrs& at, const ::onnx::AttributeProto& a, const char* want) {
  malformed(at.node, at.opset, "attribute '" + a.name() + "' is of type " + attr_type_str(attr_type(a)) + ", expected " +
                                   want);
}
}  // namespace

std::int64_t Attrs::i(const std::string& name, std::int64_t def) const {
  const auto* a = find(name);
  if (!a) return def;
  if (attr_type(*a) != ::onnx::AttributeProto::INT) wrong_type(*this, *a, "int");
  return a->i();
}

float Attrs::f(const std::string& name, float def) const {
  const auto* a = find(name);
  if (!a) return def;
  int t = attr_type(*a);
  if (t == ::onnx::AttributeProto::INT) return static_cast<float>(a->i());  // alpha=1 written as an int
  if (t != ::onnx::AttributeProto::FLOAT) wrong_type(*this, *a, "float");
  return a->f();
}

std::string Attrs::s(const std::string& name, const std::string& def) const {
  const auto* a = find(name);
  if (!a) return def;
  if (attr_type(*a) != ::onnx::AttributeProto::STRING) wrong_type(*this, *a, "string");
  return a->s();
}

std::vector<std::int64_t> Attrs::ints(const std::string& name, std::vector<std::int64_t> def) const {
  const auto* a = find(name);
  if (!a) return def;
  int t = attr_type(*a);
  // An empty list leaves `type` as its only trace.
  if (t != ::onnx::AttributeProto::INTS) wrong_type(*this, *a, "ints");
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> Attrs::floats(const std::string& name, std::vector<float> def) const {
  const auto* a = find(name);
  if (!a) return def;
  if (attr_type(*a) != ::onnx::AttributeProto::FLOATS) wrong_type(*this, *a, "floats");
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

Tensor Attrs::tensor(const std::string& name) const {
  const auto* a = find(name);
  if (!a) malformed(node, opset, "attribute '" + name + "' is missing");
  if (attr_type(*a) != ::onnx::AttributeProto::TENSOR) wrong_type(*this, *a, "tensor");
  // tensor_from_proto's message, less its "onnx import: " (the node's description comes first).
  auto reason = [](const Error& e) {
    std::string m = e.what();
    const std::string prefix = "onnx import: ";
    return m.compare(0, prefix.size(), prefix) == 0 ? m.substr(prefix.size()) : m;
  };
  try {
    return tensor_from_proto(a->t(), "attribute '" + name + "'");
  } catch (const NotImplementedError& e) {
    unsupported(node, opset, reason(e));
  } catch (const Error& e) {
    malformed(node, opset, reason(e));
  }
}

// --- element types --------------------------------------------------------------------------------
bool supported_elem_type(int t) {
  switch (t) {
    case ::onnx::TensorProto::FLOAT:
    case ::onnx::TensorProto::DOUBLE:
    case ::onnx::TensorProto::INT32:
    case ::onnx::TensorProto::INT64:
    case ::onnx::TensorProto::BOOL:
    case ::onnx::TensorProto::INT8:
    case ::onnx::TensorProto::UINT8:
    case ::onnx::TensorProto::INT16:
    case ::onnx::TensorProto::UINT16: return true;
    default: return false;
  }
}

DType dtype_of_elem_type(int t) {
  switch (t) {
    case ::onnx::TensorProto::FLOAT: return float32;
    case ::onnx::TensorProto::DOUBLE: return float64;
    case ::onnx::TensorProto::INT32: return int32;
    case ::onnx::TensorProto::INT64:
    case ::onnx::TensorProto::BOOL:
    case ::onnx::TensorProto::INT8:
    case ::onnx::TensorProto::UINT8:
    case ::onnx::TensorProto::INT16:
    case ::onnx::TensorProto::UINT16: return int64;
    default:
      fail<NotImplementedError>("onnx import", "element type ", elem_type_str(t),
                                " is not supported (dezero has float32, float64, int32 and int64)");
  }
}

// --- TensorProto -> Tensor ------------------------------------------------------------------------
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& what, const ExternalReader& read_external) {
  const std::string where = "onnx import: " + what + (t.name().empty() || what.find(t.name()) != std::string::npos
                                                            ? std::string()
                                                            : " ('" + t.name() + "')");
  if (t.has_segment()) fail<NotImplementedError>(where.c_str(), "segmented tensors are not supported");
  const int et = t.data_type();
  if (!supported_elem_type(et))
    fail<NotImplementedError>(where.c_str(), "element type ", elem_type_str(et),
                              " is not supported (dezero reads float, double, int32, int64, and bool/int8/uint8/"
                              "int16/uint16 as int64)");
  const DType dtype = dtype_of_elem_type(et);

  // Dims: each non-negative, the product under the caps (checked before multiplying further).
  if (t.dims_size() > 12)
    fail<NotImplementedError>(where.c_str(), t.dims_size(), " dimensions (dezero has at most 12)");
  std::int64_t n = 1;
  std::vector<std::int64_t> dims;
  dims.reserve(static_cast<std::size_t>(t.dims_size()));
  for (std::int64_t d : t.dims()) {
    if (d < 0) fail<ValueError>(where.c_str(), "negative dimension ", d);
    if (d != 0 && n > kMaxElements / d)
      fail<ValueError>(where.c_str(), "the dimensions' product overflows (more than 2^31 elements)");
    n *= d;
    dims.push_back(d);
  }
  if (n > kMaxElements) fail<ValueError>(where.c_str(), "more than 2^31 elements");
  const std::size_t esize = raw_elem_size(et);
  if (n * static_cast<std::int64_t>(std::max(esize, dtype_size(dtype))) > kMaxBytes)
    fail<ValueError>(where.c_str(), "more than 8 GiB of data");
  const std::size_t raw_bytes = static_cast<std::size_t>(n) * esize;

  // Where the data is: external file, raw_data, or the typed field.
  std::string external;
  const std::string* raw = nullptr;
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    if (!read_external)
      fail<NotImplementedError>(where.c_str(), "external data is not supported here (only for initializers)");
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "length") {
        const std::string& v = kv.value();
        bool digits = !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoull(v) != raw_bytes)
          fail<ValueError>(where.c_str(), "external data length '", v, "' differs from the ", raw_bytes,
                           " bytes its dims and type need");
      }
    }
    external = read_external(t, raw_bytes);
    raw = &external;
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }

  // The data present must be exactly what the dims need, checked before allocating.
  auto count_error = [&](std::int64_t have, const char* field) {
    return ValueError(where + ": " + std::to_string(have) + " values in " + field + " for " + std::to_string(n) +
                      " elements (dims " + Shape(dims).str() + ")");
  };
  if (raw) {
    if (raw->size() != raw_bytes)
      fail<ValueError>(where.c_str(), raw->size(), " bytes of data for ", n, " ", elem_type_str(et), " elements (",
                       raw_bytes, " bytes expected)");
  } else {
    switch (et) {
      case ::onnx::TensorProto::FLOAT:
        if (t.float_data_size() != n) throw count_error(t.float_data_size(), "float_data");
        break;
      case ::onnx::TensorProto::DOUBLE:
        if (t.double_data_size() != n) throw count_error(t.double_data_size(), "double_data");
        break;
      case ::onnx::TensorProto::INT64:
        if (t.int64_data_size() != n) throw count_error(t.int64_data_size(), "int64_data");
        break;
      default:  // INT32, and BOOL, INT8, UINT8, INT16, UINT16 one per int32
        if (t.int32_data_size() != n) throw count_error(t.int32_data_size(), "int32_data");
        break;
    }
  }

  Tensor out = Tensor::empty(Shape(dims), dtype, Device::cpu(), "onnx import");
  if (raw) {
    const char* b = raw->data();
    switch (et) {
      case ::onnx::TensorProto::FLOAT: read_packed<float>(b, n, out.data<float>()); break;
      case ::onnx::TensorProto::DOUBLE: read_packed<double>(b, n, out.data<double>()); break;
      case ::onnx::TensorProto::INT32: read_packed<std::int32_t>(b, n, out.data<std::int32_t>()); break;
      case ::onnx::TensorProto::INT64: read_packed<std::int64_t>(b, n, out.data<std::int64_t>()); break;
      case ::onnx::TensorProto::BOOL:
      case ::onnx::TensorProto::UINT8: read_packed<std::uint8_t>(b, n, out.data<std::int64_t>()); break;
      case ::onnx::TensorProto::INT8: read_packed<std::int8_t>(b, n, out.data<std::int64_t>()); break;
      case ::onnx::TensorProto::INT16: read_packed<std::int16_t>(b, n, out.data<std::int64_t>()); break;
      case ::onnx::TensorProto::UINT16: read_packed<std::uint16_t>(b, n, out.data<std::int64_t>()); break;
      default: break;
    }
    if (et == ::onnx::TensorProto::BOOL) {
      auto* p = out.data<std::int64_t>();
      for (std::int64_t k = 0; k < n; ++k) p[k] = p[k] != 0;
    }
    return out;
  }

  // The typed fields: float_data (float), double_data, int64_data, int32_data (int32 and the
  // small integer types, one per element).
  switch (et) {
    case ::onnx::TensorProto::FLOAT:
      if (n) std::memcpy(out.data<float>(), t.float_data().data(), static_cast<std::size_t>(n) * sizeof(float));
      break;
    case ::onnx::TensorProto::DOUBLE:
      if (n) std::memcpy(out.data<double>(), t.double_data().data(), static_cast<std::size_t>(n) * sizeof(double));
      break;
    case ::onnx::TensorProto::INT64:
      if (n) std::memcpy(out.data<std::int64_t>(), t.int64_data().data(), static_cast<std::size_t>(n) * 8);
      break;
    case ::onnx::TensorProto::INT32:
      if (n) std::memcpy(out.data<std::int32_t>(), t.int32_data().data(), static_cast<std::size_t>(n) * 4);
      break;
    default: {  // BOOL, INT8, UINT8, INT16, UINT16 in int32_data
      auto* p = out.data<std::int64_t>();
      for (std::int64_t k = 0; k < n; ++k) {
        std::int32_t v = t.int32_data(static_cast<int>(k));
        switch (et) {
          case ::onnx::TensorProto::BOOL: p[k] = v != 0; break;
          case ::onnx::TensorProto::INT8: p[k] = static_cast<std::int8_t>(v); break;
          case ::onnx::TensorProto::UINT8: p[k] = static_cast<std::uint8_t>(v); break;
          case ::onnx::TensorProto::INT16: p[k] = static_cast<std::int16_t>(v); break;
          default: p[k] = static_cast<std::uint16_t>(v); break;
        }
      }
      break;
    }
  }
  return out;
}

// --- OpContext ------------------------------------------------------------------------------------
const Variable& OpContext::input(std::size_t i) const {
  if (!has_input(i))
    malformed("input " + std::to_string(i) + " is missing (the node has " + std::to_string(num_inputs()) +
              " inputs, some may be empty)");
  return *inputs_[i];
}

Tensor OpContext::host_input(std::size_t i) const { return input(i).data().to_cpu(); }

std::vector<std::int64_t> OpContext::int_list(std::size_t i) const {
  Tensor t = host_input(i);
  if (!is_integer(t.dtype()))
    malformed("input " + std::to_string(i) + " must be an integer tensor, got " + dtype_name(t.dtype()));
  if (t.ndim() > 1)
    malformed("input " + std::to_string(i) + " must be 0-d or 1-d, got shape " + t.shape().str());
  if (t.dtype() == int32) {
    auto v = t.to_vector<std::int32_t>();
    return std::vector<std::int64_t>(v.begin(), v.end());
  }
  return t.to_vector<std::int64_t>();
}

}  // namespace dezero::onnx::detail
