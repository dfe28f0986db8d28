// tests/support/fixtures.hpp - reads the NumPy reference values in tests/data/*.txt (written by
// tools/make_fixtures.py; the format is described there).
//
//   dzt::fx("tensor.txt", "bc_add")       -> Tensor with the stored dtype and shape
//   dzt::fx_text("print.txt", "str_int1d") -> the stored text
// Files are parsed once and cached. A missing file or name is a test failure
// (a std::runtime_error naming both), never an empty value.
#pragma once

#include <dezero/tensor.hpp>
#include <dezero/utils.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace dzt {

struct FixtureFile {
  std::map<std::string, dezero::Tensor> arrays;
  std::map<std::string, std::string> texts;
};

inline FixtureFile parse_fixture_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("fixtures: cannot open " + path + " (run tools/make_fixtures.py)");
  FixtureFile ff;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream hs(line);
    std::string kind, name;
    hs >> kind >> name;
    if (kind == "array") {
      std::string dt;
      int nd = 0;
      hs >> dt >> nd;
      dezero::Shape shape;
      for (int i = 0; i < nd; ++i) {
        std::int64_t d;
        hs >> d;
        shape.push_back(d);
      }
      std::string vals;
      std::getline(in, vals);
      std::istringstream vs(vals);
      std::vector<double> dv;
      std::vector<std::int64_t> iv;
      std::string tok;
      bool isf = dt == "float32" || dt == "float64";
      while (vs >> tok) {
        if (isf) dv.push_back(std::strtod(tok.c_str(), nullptr));
        else iv.push_back(std::strtoll(tok.c_str(), nullptr, 10));
      }
      dezero::DType dtype = dt == "float32" ? dezero::float32
                            : dt == "float64" ? dezero::float64
                            : dt == "int32" ? dezero::int32 : dezero::int64;
      ff.arrays[name] = isf ? dezero::array(dv, shape, dtype) : dezero::array(iv, shape, dtype);
    } else if (kind == "text") {
      int n = 0;
      hs >> n;
      std::string text;
      for (int i = 0; i < n; ++i) {
        std::string l;
        std::getline(in, l);
        text += (i ? "\n" : "") + l;
      }
      ff.texts[name] = text;
    } else {
      throw std::runtime_error("fixtures: " + path + ": unexpected line: " + line);
    }
  }
  return ff;
}

inline const FixtureFile& fixture_file(const std::string& file) {
  static std::map<std::string, FixtureFile> cache;
  auto it = cache.find(file);
  if (it == cache.end()) it = cache.emplace(file, parse_fixture_file(data_dir() + "/" + file)).first;
  return it->second;
}

inline dezero::Tensor fx(const std::string& file, const std::string& name) {
  const auto& f = fixture_file(file);
  auto it = f.arrays.find(name);
  if (it == f.arrays.end()) throw std::runtime_error("fixtures: no array '" + name + "' in " + file);
  return it->second;
}

inline const std::string& fx_text(const std::string& file, const std::string& name) {
  const auto& f = fixture_file(file);
  auto it = f.texts.find(name);
  if (it == f.texts.end()) throw std::runtime_error("fixtures: no text '" + name + "' in " + file);
  return it->second;
}

}  // namespace dzt

namespace dzt {

// Same shape and values within tolerance (NumPy's allclose, tight by default: the
// fixtures are float64 computed the same way up to rounding).
inline bool close(const dezero::Tensor& a, const dezero::Tensor& b, double rtol = 1e-12, double atol = 1e-12) {
  if (!a.defined() || !b.defined() || a.shape() != b.shape()) return false;
  return dezero::utils::array_allclose(a, b, rtol, atol);
}
inline bool close(const dezero::Variable& a, const dezero::Tensor& b, double rtol = 1e-12, double atol = 1e-12) {
  return close(a.data(), b, rtol, atol);
}

}  // namespace dzt
