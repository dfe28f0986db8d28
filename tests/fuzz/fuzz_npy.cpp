// tests/fuzz/fuzz_npy.cpp - libFuzzer target: arbitrary bytes as one .npy array.
//
// parse_npy returns a Tensor or throws a dezero::Error, never more; a returned array
// round-trips through serialize_npy bit for bit (same dtype, shape and bytes).
#include <cstddef>
#include <cstdint>
#include <string>

#include "dezero/error.hpp"
#include "dezero/npz.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dezero::Tensor t;
  try {
    t = dezero::utils::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const dezero::Error&) {
    return 0;
  }
  dzf::check_same(t, dezero::utils::parse_npy(dezero::utils::serialize_npy(t), "round trip"));
  return 0;
}
