// tests/support/main.cpp - the doctest main of dezero_tests.
//
// The suite checks autocast's products against float64 on their rounded operands, on every CPU:
// where the CPU has no 16-bit products the library computes them in float32 unless
// DEZERO_AUTOCAST_EMULATE=1 (tensor/fused.hpp's autocast_compute), so that is set here before
// the library reads it, unless the environment already says otherwise (CTest's
// autocast_float32_fallback runs the case that checks the float32 default with it set to 0).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("DEZERO_AUTOCAST_EMULATE", "1", /*overwrite=*/0);
  return doctest::Context(argc, argv).run();
}
