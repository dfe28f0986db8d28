// dezero/onnx/model_file.hpp - internal: the importer's file access (model_file.cpp): the .onnx
// file, read whole and parsed, and the external data its tensors point to, which must lie in the
// model's folder.
//
// Names: this is namespace dezero::onnx, so ONNX's own classes are spelt ::onnx::ModelProto.
#pragma once

#include <string>

#include "dezero/onnx.hpp"

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

namespace dezero::onnx::detail {

// The model file at `path` into `proto`: IOError when it cannot be read, has more than protobuf's
// 2 GiB, or is not an ONNX model. `where` starts the messages ("onnx import: '<path>'").
void read_model_file(const std::string& path, const std::string& where, ::onnx::ModelProto& proto);

// The folder of the model file at `path`, resolved (realpath); IOError when it cannot be.
std::string model_folder(const std::string& path, const std::string& where);

// The `bytes` bytes of a tensor's external_data (what its dims and type need): `location`
// relative to `dir_real` (model_folder()), opened one component at a time from the folder with
// O_NOFOLLOW, so it never leaves it (no absolute path, no '..', no symbolic link at all, even
// when the folders change while it is read); a regular file only (a FIFO is refused, never
// waited on); `offset` and `length` checked against the file and `bytes` before anything is
// read. Errors are ValueError (a bad entry) or IOError.
std::string read_external_data(const ::onnx::TensorProto& t, const std::string& dir_real, const std::string& where,
                               std::uint64_t bytes);

// --- what the file declares, checked before anything is built (import_check.cpp) -----------------
// Whether `domain` is ONNX's default one (the only one dezero imports).
inline bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Every node of `g` against the op table at `opset`: NotImplementedError for a domain, op, opset or
// attribute dezero does not import, ValueError for a malformed node (a Constant's form included).
void check_nodes(const ::onnx::GraphProto& g, int opset);

// A graph input's or output's declared type: `elem_type` 0 when the file gives none; shape -1 for
// a dimension that is a symbol or unknown. `role` is "input" or "output" (for the messages).
ValueInfo value_info_of(const ::onnx::ValueInfoProto& v, const std::string& where, const std::string& role,
                        int& elem_type);

}  // namespace dezero::onnx::detail
