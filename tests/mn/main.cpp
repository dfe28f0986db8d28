// tests/mn/main.cpp - the doctest main of dezero_mn_tests, run by CTest under mpirun (-np 1 and
// -np 2, tests/CMakeLists.txt): every rank runs every test case, whose collectives are the same
// on every rank. MPI lives for the whole run (mn::Environment).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dezero/mn.hpp>

int main(int argc, char** argv) {
  dezero::mn::Environment env(argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
