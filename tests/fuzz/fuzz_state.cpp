// tests/fuzz/fuzz_state.cpp - libFuzzer target: arbitrary bytes as an optimizer state file.
//
// The bytes go through parse_npz (what load_state reads) and, when they parse, through
// Optimizer::load_state_dict's checks against a small model (MLP 3-4-2, Adam after one step).
// Either the state is taken whole, or a dezero::Error comes back and the optimizer is exactly
// as it was (its state_dict() serialises to the same bytes); anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dezero/error.hpp"
#include "dezero/functions.hpp"
#include "dezero/models.hpp"
#include "dezero/npz.hpp"
#include "dezero/optimizers.hpp"
#include "fuzz_check.hpp"

namespace {

struct Setup {
  dezero::models::MLP model{{4, 2}};
  dezero::optimizers::Adam adam;
  Setup() {
    dezero::random::Generator gen(3);
    dezero::Variable x(gen.randn({2, 3}, dezero::float32));
    adam.setup(model);
    dezero::Variable loss = dezero::F::sum(model(x));
    loss.backward();
    adam.update();
  }
};

std::string bytes_of(const dezero::optimizers::Optimizer& o) {
  return dezero::utils::serialize_npz(o.state_dict(), false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Setup s;  // one model for the whole run: a refused input must leave it as it was
  dezero::utils::NamedTensors arrays;
  try {
    arrays = dezero::utils::parse_npz(std::string(reinterpret_cast<const char*>(data), size), "fuzz_state.npz");
  } catch (const dezero::Error&) {
    return 0;
  }
  const std::string before = bytes_of(s.adam);
  try {
    s.adam.load_state_dict(arrays, "fuzz");
  } catch (const dezero::Error&) {
    DZ_FUZZ_CHECK(bytes_of(s.adam) == before);  // nothing changed
    return 0;
  }
  // Taken: t is the file's, and every state tensor has its parameter's shape and dtype.
  const auto sd = s.adam.state_dict();
  DZ_FUZZ_CHECK(!sd.empty() && sd[0].first == "t" && sd[0].second.item<std::int64_t>() >= 0);
  const auto params = s.model.params();
  for (std::size_t k = 1; k < sd.size(); ++k) {
    const std::string& key = sd[k].first;  // "p<i>/m" or "p<i>/v"
    const std::size_t i = static_cast<std::size_t>(std::stoul(key.substr(1, key.find('/') - 1)));
    DZ_FUZZ_CHECK(i < params.size());
    DZ_FUZZ_CHECK(sd[k].second.shape() == params[i].data().shape());
    DZ_FUZZ_CHECK(sd[k].second.dtype() == params[i].data().dtype());
  }
  return 0;
}
