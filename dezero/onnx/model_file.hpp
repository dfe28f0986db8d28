// dezero/onnx/model_file.hpp - internal: the importer's file access (model_file.cpp): the .onnx
// file, read whole and parsed, and the external data its tensors point to, which must lie in the
// model's folder.
//
// Names: this is namespace dezero::onnx, so ONNX's own classes are spelt ::onnx::ModelProto.
#pragma once

#include <string>

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

}  // namespace dezero::onnx::detail
