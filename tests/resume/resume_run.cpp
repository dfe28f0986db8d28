// tests/resume/resume_run.cpp - the training run that tests/resume/kill_resume.py kills with SIGKILL
// at random moments and resumes (issue 33). Every step draws from three random streams (the
// loader's shuffling, dropout's own Generator, the global stream), so a resumed run that lost any
// of them would print other losses.
//
//   resume_run --out DIR --dtype float32|float64 --iterations N --snapshot-every K
//
// MLP 32-64-64-4 with dropout 0.3 on 200 synthetic samples (batch 10: 20 batches an epoch), Adam +
// WeightDecay. Each iteration prints "iter <i> loss <hex>" (the float64 loss, exactly); at the end
// the model's and the optimizer's state go to DIR/final.npz and "done" is printed. It resumes
// from the newest snapshot in DIR (training::Checkpointer) and writes one every K iterations.
#include <dezero/dezero.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace dezero;

int main(int argc, char** argv) try {
  std::string out, dtype = "float32";
  std::int64_t iterations = 60, every = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--out") out = v;
    else if (a == "--dtype") dtype = v;
    else if (a == "--iterations") iterations = std::stoll(v);
    else if (a == "--snapshot-every") every = std::stoll(v);
    else throw ValueError("unknown option " + a);
  }
  if (out.empty()) throw ValueError("--out DIR is needed");
  const DType dt = dtype == "float64" ? float64 : float32;

  random::seed(0);
  random::Generator data_gen(1), init_gen(2), drop(3), shuffle(4);
  datasets::Dataset data(data_gen.randn({200, 32}, dt), data_gen.randint(0, 4, {200}));
  models::MLP model({64, 64, 4}, F::relu, init_gen);
  model(data.get_batch({0}).first);  // the weights exist before a snapshot loads into them
  optimizers::Adam opt(0.01);
  opt.setup(model);
  opt.add_hook(optimizers::WeightDecay(1e-4));
  DataLoader loader(data, 10, true, false, shuffle);

  std::int64_t it = 0;
  training::Snapshot snap;
  snap.model(model).optimizer(opt).loader("train", loader).generator("dropout", drop).value("iteration", it);
  training::CheckpointOptions co;
  co.every = every;
  co.keep = 2;
  training::Checkpointer ckpt(out, snap, co);
  ckpt.resume();

  while (it < iterations) {
    auto b = loader.next();
    if (!b) b = loader.next();  // an epoch's end: the next permutation was drawn
    Variable h = F::dropout(model(b->first), 0.3, drop);
    Variable loss = F::softmax_cross_entropy(h, b->second);
    loss = loss + 0.0 * random::rand({1}, dt).sum();  // a draw from the global stream each step
    model.cleargrads();
    loss.backward();
    opt.update();
    ++it;
    std::printf("iter %lld loss %a\n", static_cast<long long>(it), loss.data().item<double>());
    std::fflush(stdout);
    ckpt.step(it);
  }
  utils::NamedTensors final_state;
  for (auto& [k, p] : model.named_params()) final_state.emplace_back("model/" + k, p.data());
  for (auto& [k, t] : opt.state_dict()) final_state.emplace_back("optimizer/" + k, t);
  utils::save_npz(out + "/final.npz", final_state, false);
  std::printf("done\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "resume_run: %s\n", e.what());
  return 1;
}
