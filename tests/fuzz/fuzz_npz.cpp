// tests/fuzz/fuzz_npz.cpp - libFuzzer target: arbitrary bytes as an .npz archive.
//
// dezero::utils::parse_npz (the reader behind load_npz / load_weights) must either
// return arrays or throw a dezero::Error; anything else (a crash, a sanitizer report,
// a std:: exception, an allocation the 2 GiB limit stops) is a finding.
// What it returns must survive a round trip: serialize_npz, then parse_npz again,
// gives the same names, dtypes, shapes and bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dezero/error.hpp"
#include "dezero/npz.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dezero::utils::NamedTensors arrays;
  try {
    arrays = dezero::utils::parse_npz(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npz");
  } catch (const dezero::Error&) {
    return 0;  // rejected with a message: the expected outcome for most inputs
  }
  for (bool compressed : {false, true}) {
    auto again = dezero::utils::parse_npz(dezero::utils::serialize_npz(arrays, compressed), "round trip");
    DZ_FUZZ_CHECK(again.size() == arrays.size());
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      DZ_FUZZ_CHECK(again[i].first == arrays[i].first);
      dzf::check_same(arrays[i].second, again[i].second);
    }
  }
  return 0;
}
