// tests/onnx/onnx_test_util.hpp - what the ONNX test files share, on top of tests/support/test_util.hpp:
// a scratch folder with the paths of files in it, and the message of an error of an expected class.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "support/test_util.hpp"

namespace dezero_onnx_test {

// dzt::TempDir (a fresh folder, removed with everything in it) and the path of a file in it.
struct TempDir : dzt::TempDir {
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The message of the error `fn` throws, which must be an E: another class, or none, fails the test.
template <class E>
std::string error_of(const std::function<void()>& fn) {
  std::string m = dzt::thrown<E>(fn);
  if (m == "NO THROW" || m.rfind("WRONG TYPE: ", 0) == 0) FAIL("expected the error class, got: " << m);
  return m;
}

inline bool contains(const std::string& s, const std::string& part) { return dzt::has(s, part); }

}  // namespace dezero_onnx_test
