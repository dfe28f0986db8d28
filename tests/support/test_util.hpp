// tests/support/test_util.hpp - shared helpers for the doctest suites.
//
// One test body, every device: ON_EACH_DEVICE runs the body as a
// "cpu" subcase and a "cuda" subcase; without a CUDA device the second prints
// "skipped: no CUDA device" and asserts nothing.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <dezero/dezero.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace dzt {

// The message of the E thrown by f; "NO THROW" or "WRONG TYPE: ..." otherwise.
template <class E>
std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG TYPE: ") + e.what();
  }
  return "NO THROW";
}
inline bool has(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

inline void on_each_device(const std::function<void(dezero::Device)>& body) {
  SUBCASE("cpu") { body(dezero::Device::cpu()); }
  SUBCASE("cuda") {
    if (!dezero::cuda::is_available()) {
      MESSAGE("skipped: no CUDA device");
    } else {
      body(dezero::Device::cuda(0));
    }
  }
}

// GPU-only test cases start with `if (dzt::skip_without_gpu()) return;`.
inline bool skip_without_gpu() {
  if (dezero::cuda::is_available()) return false;
  MESSAGE("skipped: no CUDA device");
  return true;
}

// Host values of a tensor or variable, as doubles.
inline std::vector<double> vals(const dezero::Tensor& t) { return t.to_vector<double>(); }
inline std::vector<double> vals(const dezero::Variable& v) { return v.data().to_vector<double>(); }

// A float32 tensor of shape s with deterministic values in [-1, 1) that are not exact in
// bfloat16 or float16 (a fixed linear congruential generator started at seed).
inline dezero::Tensor filled(const dezero::Shape& s, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (auto& e : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    e = float((seed >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f + 1.0f / 1024;
  }
  return dezero::array(v, s);
}

inline bool allclose(const dezero::Tensor& a, const dezero::Tensor& b, double rtol = 1e-4, double atol = 1e-5) {
  return dezero::utils::array_allclose(a, b, rtol, atol);
}

// |got - want| <= atol + rtol |want| element by element; false with `where` naming the
// first element that is not (or the sizes), for CHECK_MESSAGE.
inline bool close_vectors(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol,
                          std::string& where) {
  if (got.size() != want.size()) {
    where = "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
    return false;
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {
      where = "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " != " + std::to_string(want[i]);
      return false;
    }
  return true;
}

// --- files and the environment ---------------------------------------------------------------
// The folder of the test data (tests/data): $DEZERO_TEST_DATA_DIR when it is set (a copy of the
// folder carried elsewhere, e.g. in the GPU bundle), else the source tree's, compiled in.
inline std::string data_dir() {
  const char* d = std::getenv("DEZERO_TEST_DATA_DIR");
  return d != nullptr && *d != '\0' ? std::string(d) : std::string(DEZERO_TEST_DATA_DIR);
}

// A fresh directory under the system's temporary folder, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dezero_test_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path.string(); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(path), {}));
  }
  // The names in the folder (or in `dir`), sorted (to check that no temporary file is left behind).
  std::vector<std::string> names() const { return names_of(path); }
  static std::vector<std::string> names_of(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// Runs one scope in another working directory, then goes back.
struct ScopedCwd {
  std::filesystem::path old = std::filesystem::current_path();
  explicit ScopedCwd(const std::filesystem::path& p) { std::filesystem::current_path(p); }
  ~ScopedCwd() {
    std::error_code ec;
    std::filesystem::current_path(old, ec);
  }
  ScopedCwd(const ScopedCwd&) = delete;
  ScopedCwd& operator=(const ScopedCwd&) = delete;
};

// Sets an environment variable for one scope, then restores (or unsets) it.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const std::string& value) : name(n) {
    if (const char* o = std::getenv(n.c_str())) old = o;
    setenv(n.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace dzt
