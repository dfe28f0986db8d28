// bench/snapshot_cost.cpp - what a training snapshot costs (issue 33): the MNIST MLP of
// examples/mnist (784-1000-1000-10, 1.8 M parameters) with Adam's moments after one step, written
// as a Snapshot (parameters, m, v, the random streams, a loader's 60,000-sample order) against
// save_weights(compressed = false) of the same model and Optimizer::save_state. Each is timed
// `--reps` times, alternating, in a scratch folder (default: $TMPDIR or /tmp); the medians and the
// median of the per-round ratios are printed. Target: a snapshot at most 1.5x save_weights.
//
//   snapshot_cost [--reps 15] [--dir DIR]
#include <dezero/dezero.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

using namespace dezero;

namespace {
double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
}  // namespace

int main(int argc, char** argv) try {
  int reps = 15;
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--dir") dir = argv[i + 1];
  }
  if (dir.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir = (t && *t) ? t : "/tmp";
  }
  const std::string base = (std::filesystem::path(dir) / "dezero_snapshot_cost").string();
  std::filesystem::create_directories(base);

  random::seed(0);
  models::MLP model({1000, 1000, 10}, F::relu);
  optimizers::Adam adam;
  adam.setup(model);
  Tensor x = random::rand({100, 784}, float32);
  Tensor t = random::randint(0, 10, {100});
  Variable loss = F::softmax_cross_entropy(model(x), t);
  loss.backward();
  adam.update();
  datasets::Dataset data(zeros({60000, 1}, float32), zeros({60000}, int64));
  DataLoader loader(data, 100);
  std::int64_t it = 1;
  training::Snapshot snap;
  snap.model(model).optimizer(adam).loader("train", loader).value("iteration", it);

  std::int64_t params = 0;
  for (auto& p : model.params()) params += p.data().size();
  std::vector<double> tw, ts, to, ratio;
  for (int r = 0; r < reps; ++r) {
    const double w = seconds_of([&] { model.save_weights(base + "/weights.npz", false); });
    const double s = seconds_of([&] { snap.save(base + "/snapshot.npz"); });
    const double o = seconds_of([&] { adam.save_state(base + "/adam.npz"); });
    tw.push_back(w);
    ts.push_back(s);
    to.push_back(o);
    ratio.push_back(s / w);
  }
  const auto size_of = [&](const char* f) { return std::filesystem::file_size(base + "/" + f) / 1e6; };
  std::printf("MLP 784-1000-1000-10: %lld parameters; Adam after one step; %d rounds in %s\n",
              static_cast<long long>(params), reps, base.c_str());
  std::printf("save_weights(compressed=false): %7.1f ms median (%.1f MB)\n", 1e3 * median(tw), size_of("weights.npz"));
  std::printf("Optimizer::save_state:          %7.1f ms median (%.1f MB)\n", 1e3 * median(to), size_of("adam.npz"));
  std::printf("Snapshot::save:                 %7.1f ms median (%.1f MB)\n", 1e3 * median(ts), size_of("snapshot.npz"));
  std::printf("snapshot / save_weights: %.2fx (median of the per-round ratios; target <= 1.5x)\n", median(ratio));
  std::filesystem::remove_all(base);
  std::printf("%s\n", dezero::cpu_info().summary().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "snapshot_cost: %s\n", e.what());
  return 1;
}
