// dezero/onnx/available.cpp - onnx::is_available(), in libdezero itself (not libdezero_onnx), so
// that a program can ask whether this build has dezero::onnx without linking libonnx.
#include "dezero/onnx.hpp"

namespace dezero::onnx {

bool is_available() {
#ifdef DEZERO_WITH_ONNX
  return true;
#else
  return false;
#endif
}

}  // namespace dezero::onnx
