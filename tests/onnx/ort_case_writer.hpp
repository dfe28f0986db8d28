// tests/onnx/ort_case_writer.hpp - a case for ONNX Runtime, the second judge (CTest onnx_ort):
// a folder with the model and case_b<N>.json, the inputs of a batch of N and dezero's outputs for
// them ({"inputs": {name: {dtype, dims, data}}, "outputs": [{dtype, dims, data}, ...]}).
// tests/onnx/ort_judge.js reads them. Used by ort_cases.cpp and by the export tests, which leave
// a case for each model they write when DEZERO_ORT_CASES names a folder.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <dezero/dezero.hpp>

namespace ort_case {

inline std::string json_of(const dezero::Tensor& t0) {
  const dezero::Tensor t = t0.to_cpu();
  std::ostringstream o;
  o.precision(17);
  o << "{\"dtype\": \"" << dezero::dtype_name(t.dtype()) << "\", \"dims\": [";
  for (int i = 0; i < t.ndim(); ++i) o << (i ? ", " : "") << t.shape()[i];
  o << "], \"data\": [";
  const std::vector<double> v = t.astype(dezero::float64).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  o << "]}";
  return o.str();
}

using Inputs = std::vector<std::pair<std::string, dezero::Variable>>;

// `dir`/case_b<batch>.json.
inline void write(const std::string& dir, std::int64_t batch, const Inputs& in, const dezero::VariableList& out) {
  std::filesystem::create_directories(dir);
  std::ofstream f(dir + "/case_b" + std::to_string(batch) + ".json");
  f << "{\"inputs\": {";
  for (std::size_t i = 0; i < in.size(); ++i)
    f << (i ? ", " : "") << "\"" << in[i].first << "\": " << json_of(in[i].second.data());
  f << "}, \"outputs\": [";
  for (std::size_t i = 0; i < out.size(); ++i) f << (i ? ", " : "") << json_of(out[i].data());
  f << "]}\n";
}

}  // namespace ort_case
