// tests/fuzz/fuzz_snapshot.cpp - libFuzzer target: arbitrary bytes as a training snapshot.
//
// The bytes go through parse_npz (what Snapshot::load reads) and, when they parse, through
// Snapshot::load_state's checks against a small run: MLP 3-4-2, Adam after one step, a shuffled
// DataLoader of 6 samples, a dropout stream and the loop's values. Either the snapshot is taken
// whole, or a dezero::Error comes back and everything is exactly as it was (the run's
// Snapshot::state() serialises to the same bytes); anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dezero/dezero.hpp"
#include "fuzz_check.hpp"

namespace {

struct Run {
  dezero::datasets::Dataset data{dezero::random::Generator(1).randn({6, 3}, dezero::float32),
                                 dezero::random::Generator(2).randint(0, 2, {6})};
  dezero::models::MLP model{{4, 2}};
  dezero::optimizers::Adam adam;
  dezero::DataLoader loader{data, 4, true, false, dezero::random::Generator(4)};
  dezero::random::Generator drop{5};
  dezero::training::Snapshot snap;
  std::int64_t it = 1;
  int epoch = 0;
  double best = 0.5;
  std::vector<double> curve{1.0, 0.5};
  Run() {
    adam.setup(model);
    dezero::Variable loss = dezero::F::softmax_cross_entropy(model(loader.next()->first), data.get_batch({0, 1, 2, 3}).second);
    loss.backward();
    adam.update();
    snap.model(model).optimizer(adam).loader("train", loader).generator("dropout", drop);
    snap.value("iteration", it).value("epoch", epoch).value("best", best).value("curve", curve);
  }
  std::string bytes() const { return dezero::utils::serialize_npz(snap.state(), false); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Run run;  // one run for the whole session: a refused input must leave it as it was
  dezero::utils::NamedTensors arrays;
  try {
    arrays = dezero::utils::parse_npz(std::string(reinterpret_cast<const char*>(data), size), "fuzz_snapshot.npz");
  } catch (const dezero::Error&) {
    return 0;
  }
  const std::string before = run.bytes();
  try {
    run.snap.load_state(arrays, "fuzz");
  } catch (const dezero::Error&) {
    DZ_FUZZ_CHECK(run.bytes() == before);  // nothing changed
    return 0;
  }
  // Taken whole: what the run saves now is what the input said (same keys and values).
  dezero::utils::NamedTensors again = run.snap.state();
  DZ_FUZZ_CHECK(again.size() == arrays.size());
  DZ_FUZZ_CHECK(run.loader.iteration() >= 0 && run.loader.iteration() <= run.loader.size());
  return 0;
}
