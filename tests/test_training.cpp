// tests/test_training.cpp - training that survives being killed (issue 33): the random streams'
// state (NumPy's get_state), a DataLoader's position, Snapshot (save, load, every refusal leaving
// everything as it was), Checkpointer (every N, keep K, resume from the newest that loads) and
// the Progress line. The kill -9 test is tests/resume (a separate program, run by CTest).
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "support/test_util.hpp"

using namespace dezero;
namespace fs = std::filesystem;
namespace T = dezero::training;

// --- random streams: get_state / set_state ---------------------------------------------------
TEST_CASE("random: get_state is NumPy's, and set_state draws the same numbers again") {
  random::Generator g(42);
  g.random_double();  // two 32-bit words each
  g.random_double();
  random::GeneratorState st = g.get_state();
  // np.random.RandomState(42) after 4 words: key[0] 723970371, key[623] 4088152671, pos 4
  CHECK(st.key[0] == 723970371u);
  CHECK(st.key[623] == 4088152671u);
  CHECK(st.pos == 4);
  CHECK_FALSE(st.has_gauss);
  const double a = g.gauss();  // a pair: one cached
  random::GeneratorState st2 = g.get_state();
  CHECK(st2.has_gauss);
  const std::vector<double> want = g.randn({5}).to_vector<double>();
  g.set_state(st2);
  CHECK(g.randn({5}).to_vector<double>() == want);
  g.set_state(st);
  CHECK(g.gauss() == a);

  // a state no stream can be in is refused, and the stream stays
  random::GeneratorState bad = st;
  bad.pos = 625;
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { g.set_state(bad); }), "pos must be between 0 and 624"));
  bad = random::GeneratorState{};
  bad.pos = 0;
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { g.set_state(bad); }), "all zero"));
  const random::GeneratorState now = g.get_state();
  CHECK(now.key == st.key);

  // the global stream
  random::seed(7);
  random::GeneratorState gs = random::get_state();
  const double r = random::random_double();
  random::set_state(gs);
  CHECK(random::random_double() == r);
}

// --- DataLoader: epoch and position --------------------------------------------------------------
TEST_CASE("DataLoader: epoch(), set_position() and its checks") {
  datasets::Dataset data(arange(10.0, float32).reshape({10, 1}), arange(10.0, int64));
  random::Generator gen(3);
  DataLoader l(data, 4, true, false, gen);
  CHECK(l.epoch() == 0);
  std::vector<std::vector<double>> first;
  for (auto& [x, t] : l) first.push_back(x.to_vector<double>());
  CHECK(first.size() == 3);
  CHECK(l.epoch() == 1);
  const std::vector<std::int64_t> order = l.index();
  l.next();  // batch 0 of epoch 2
  const auto want = l.next()->first.to_vector<double>();
  l.set_position(1, 1, order);
  CHECK(l.next()->first.to_vector<double>() == want);
  CHECK(l.iteration() == 2);

  std::vector<std::int64_t> dup = order;
  dup[1] = dup[0];
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { l.set_position(1, 0, dup); }), "not a permutation"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { l.set_position(1, 4, order); }), "iteration 4 is outside 0..3"));
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { l.set_position(1, 0, {0, 1}); }), "2 entries for 10 samples"));
  CHECK(l.iteration() == 2);  // unchanged
  DataLoader ordered(data, 4, false);
  CHECK(dzt::has(dzt::thrown<ValueError>([&] { ordered.set_position(0, 0, order); }), "not 0, 1, ..., 9"));
}

// --- a small training loop whose every step draws from the streams ------------------------------
namespace {

// MLP with dropout on synthetic data, Adam + weight decay, shuffled batches: one "run".
struct Run {
  datasets::Dataset data;
  models::MLP model;
  optimizers::Adam opt;
  random::Generator drop;
  DataLoader loader;
  T::Snapshot snap;
  std::int64_t it = 0;
  int epoch = 0;
  double best = 0;
  std::vector<double> losses;
  DType dt;

  // lazy: no forward pass before a snapshot loads (the first W gets its shape from the file).
  explicit Run(DType d = float32, int hidden = 8, bool lazy = false)
      : data(random::Generator(1).randn({24, 3}, d), random::Generator(2).randint(0, 2, {24})),
        model({hidden, 2}, F::relu, random::Generator(5)), drop(9), loader(data, 5, true, false, random::Generator(4)),
        dt(d) {
    opt.setup(model);
    opt.add_hook(optimizers::WeightDecay(1e-3));
    if (!lazy) model(data.get_batch({0}).first);  // the lazy weights
    snap.model(model).optimizer(opt).loader("train", loader).generator("dropout", drop);
    snap.value("iteration", it).value("epoch", epoch).value("best", best).value("losses", losses);
  }
  // One step of training; the global stream is drawn from too (as user code might).
  void step() {
    auto b = loader.next();
    if (!b) {
      ++epoch;
      b = loader.next();
    }
    train_on(*b);
    ++it;
  }
  // The update of one batch (the iteration count is the caller's).
  void train_on(const Batch& b) {
    Variable y = F::dropout(model(b.first), 0.3, drop);
    Variable loss = F::softmax_cross_entropy(y, b.second) + 0.0 * random::rand({1}, dt, y.data().device()).sum();
    model.cleargrads();
    loss.backward();
    opt.update();
    losses.push_back(loss.data().item<double>());
    best = std::max(best, -losses.back());
  }
  std::vector<std::string> weights() const {
    std::vector<std::string> out;
    for (auto& [k, p] : model.named_params()) out.push_back(utils::serialize_npy(p.data()));
    for (auto& [k, t] : opt.state_dict()) out.push_back(k + utils::serialize_npy(t));
    return out;
  }
};

}  // namespace

TEST_CASE("Snapshot: save, more steps, load into a fresh run: the same bits, float32 and float64") {
  for (DType dt : {float32, float64}) {
    dzt::TempDir dir;
    const std::string path = (dir.path / "snap.npz").string();
    random::seed(11);
    Run a(dt);
    for (int i = 0; i < 7; ++i) a.step();
    a.snap.save(path);
    const random::GeneratorState global_at_save = random::get_state();
    for (int i = 0; i < 9; ++i) a.step();  // across an epoch boundary (5 batches an epoch)

    random::seed(999);  // a fresh process would start elsewhere
    Run b(dt);
    b.snap.load(path);
    CHECK(b.it == 7);
    CHECK(b.losses.size() == 7);
    CHECK(random::get_state().key == global_at_save.key);
    for (int i = 0; i < 9; ++i) b.step();
    CHECK(b.losses == a.losses);
    CHECK(b.weights() == a.weights());
    CHECK(b.epoch == a.epoch);
    CHECK(b.loader.epoch() == a.loader.epoch());
  }
}

TEST_CASE("Snapshot: the file is an .npz with the documented keys") {
  dzt::TempDir dir;
  const std::string path = (dir.path / "snap.npz").string();
  Run a;
  a.step();
  a.snap.save(path);
  std::map<std::string, Tensor> f;
  for (auto& [k, t] : utils::load_npz(path)) f.emplace(k, t);
  CHECK(f.at("snapshot/format_version").item<std::int64_t>() == 1);
  CHECK(f.count("model/l0/W"));
  CHECK(f.at("optimizer/t").item<std::int64_t>() == 1);
  CHECK(f.count("optimizer/p0/m"));
  std::string cls;
  for (std::int64_t c : f.at("optimizer/class").astype(int64).to_vector<std::int64_t>()) cls += static_cast<char>(c);
  CHECK(cls == "Adam");  // Optimizer::name(): no compiler's spelling in the file
  CHECK(f.at("random/global/key").shape() == Shape{624});
  CHECK(f.count("random/dropout/pos"));
  CHECK(f.count("random/loader.train/cached_gaussian"));
  CHECK(f.at("loader/train/index").shape() == Shape{24});
  CHECK(f.at("loader/train/iteration").item<std::int64_t>() == 1);
  CHECK(f.at("value/losses").shape() == Shape{1});
  CHECK(f.at("value/epoch").dtype() == int64);
}

namespace my_rules {
// A rule of a user's own: its name() is its class name without namespaces.
class SignSGD : public optimizers::TypedOptimizer<SignSGD> {
 protected:
  void update_one(Tensor& param, const Tensor& grad, std::vector<Tensor>&) override { param = param - grad * 0.01; }
};
}  // namespace my_rules

TEST_CASE("Snapshot: a file that names its optimizer as C++ did (before Optimizer::name()) resumes") {
  dzt::TempDir dir;
  const std::string path = (dir.path / "snap.npz").string(), old = (dir.path / "old.npz").string();
  Run a;
  for (int i = 0; i < 2; ++i) a.step();
  a.snap.save(path);
  utils::NamedTensors f = utils::load_npz(path);
  const std::string cpp = "dezero::optimizers::Adam";
  for (auto& [k, t] : f)
    if (k == "optimizer/class") t = array(std::vector<std::int32_t>(cpp.begin(), cpp.end()), int32);
  utils::save_npz(old, f);
  Run b;
  b.step();
  b.snap.load(old);
  CHECK(b.weights() == a.weights());
  CHECK(b.it == a.it);
  CHECK(optimizers::MomentumSGD().name() == "MomentumSGD");
  CHECK(optimizers::AdaGrad().name() == "AdaGrad");
  CHECK(optimizers::AdaDelta().name() == "AdaDelta");
  CHECK(my_rules::SignSGD().name() == "SignSGD");
}

TEST_CASE("Snapshot: a file of another model, optimizer or loop is refused and changes nothing") {
  dzt::TempDir dir;
  const std::string path = (dir.path / "snap.npz").string();
  Run a;
  for (int i = 0; i < 3; ++i) a.step();
  a.snap.save(path);

  Run b(float32, 6);  // another hidden size
  b.step();
  const auto before = b.weights();
  const random::GeneratorState gs = random::get_state();
  std::string msg = dzt::thrown<ShapeError>([&] { b.snap.load(path); });
  CHECK_MESSAGE(dzt::has(msg, "'model/l0/W' has shape (3, 8) but the model's parameter has (3, 6)"), msg);
  CHECK(b.weights() == before);
  CHECK(b.it == 1);
  CHECK(random::get_state().key == gs.key);

  // an SGD where the file has an Adam
  models::MLP m({8, 2}, F::relu);
  m(a.data.get_batch({0}).first);
  optimizers::SGD sgd;
  sgd.setup(m);
  T::Snapshot s2;
  s2.model(m).optimizer(sgd);
  msg = dzt::thrown<ValueError>([&] { s2.load(path); });
  CHECK_MESSAGE(dzt::has(msg, "holds the state of the optimizer Adam, not of this SGD"), msg);

  // a snapshot with less added than the file holds: the extra arrays are named
  T::Snapshot s3;
  s3.model(m);
  msg = dzt::thrown<ValueError>([&] { s3.load(path); });
  CHECK_MESSAGE(dzt::has(msg, "that nothing added to this Snapshot takes"), msg);

  // a weight file is not a snapshot
  a.model.save_weights((dir.path / "w.npz").string());
  msg = dzt::thrown<ValueError>([&] { a.snap.load((dir.path / "w.npz").string()); });
  CHECK_MESSAGE(dzt::has(msg, "no 'snapshot/format_version'"), msg);

  // another format version
  utils::NamedTensors arrays = a.snap.state();
  arrays[0].second = array(std::int64_t{2}, int64);
  msg = dzt::thrown<ValueError>([&] { a.snap.load_state(arrays); });
  CHECK_MESSAGE(dzt::has(msg, "snapshot format 2; this dezero reads format 1"), msg);

  // a loader of another data set size
  datasets::Dataset small(random::randn({10, 3}, float32), random::randint(0, 2, {10}));
  DataLoader other(small, 5);
  T::Snapshot s4;
  s4.loader("train", other);
  utils::NamedTensors only_loader;
  for (auto& [k, t] : a.snap.state())
    if (k.rfind("loader/", 0) == 0 || k.rfind("random/global", 0) == 0 || k == "snapshot/format_version")
      only_loader.emplace_back(k, t);
  msg = dzt::thrown<ValueError>([&] { s4.load_state(only_loader); });
  CHECK_MESSAGE(dzt::has(msg, "loader 'train' was at epoch 0, batch 3 of 24 samples"), msg);
}

TEST_CASE("Snapshot: every truncation of a file is an IOError, flipped bytes never crash; nothing changes") {
  dzt::TempDir dir;
  const std::string path = (dir.path / "snap.npz").string(), cut = (dir.path / "cut.npz").string();
  Run a(float32, 2);
  a.step();
  a.snap.save(path);
  a.step();
  const auto before = a.weights();
  const std::string bytes = dzt::read_bytes(path);
  // Every prefix length: the reader refuses each (in memory: the bytes load() would read), and
  // every 97th goes through a file and load() itself.
  std::size_t refused = 0, refused_files = 0, files = 0;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      a.snap.load_state(utils::parse_npz(bytes.substr(0, n), "cut"));
    } catch (const IOError&) {
      ++refused;
    }
    if (n % 97 == 0) {
      ++files;
      dzt::write_bytes(cut, bytes.substr(0, n));
      try {
        a.snap.load(cut);
      } catch (const IOError&) {
        ++refused_files;
      }
    }
  }
  CHECK(refused == bytes.size());
  CHECK(refused_files == files);
  CHECK(a.weights() == before);
  CHECK(a.it == 2);
  int flips = 0, loaded = 0;
  for (std::size_t i = 0; i < bytes.size(); i += 13) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    dzt::write_bytes(cut, bad);
    try {
      a.snap.load(cut);
      ++loaded;  // a flip inside a number's bytes loads: the file format has no checksum of values
      a.snap.load(path);
    } catch (const Error&) {
      ++flips;
    }
  }
  CHECK(flips > 0);
  MESSAGE(flips << " flipped files refused, " << loaded << " loaded (a flip inside array data)");
}

TEST_CASE("Snapshot: made on a GPU, it resumes on the CPU (and the other way round) with the same values") {
  if (dzt::skip_without_gpu()) return;
  dzt::TempDir dir;
  const std::string path = (dir.path / "snap.npz").string();
  Run a;
  a.model.to_gpu();
  a.loader.to_gpu();
  for (int i = 0; i < 3; ++i) a.step();
  a.snap.save(path);
  Run b;  // on the CPU
  b.snap.load(path);
  CHECK(b.model.params()[0].data().device() == Device::cpu());
  a.model.to_cpu();
  CHECK(a.weights() == b.weights());
  Run c;
  c.model.to_gpu();
  c.snap.load(path);  // each tensor onto its parameter's device
  CHECK(c.model.params()[0].data().device().is_cuda());
  for (auto& [k, t] : c.opt.state_dict())
    if (k != "t") CHECK(t.device().is_cuda());
}

// --- Checkpointer -----------------------------------------------------------------------------------
TEST_CASE("Checkpointer: every N iterations, keep K, resume from the newest that loads") {
  dzt::TempDir dir;
  const std::string out = (dir.path / "out").string();
  Run a;
  T::Checkpointer ck(out, a.snap, {/*every=*/2, /*keep=*/2, /*quiet=*/true});
  for (int i = 0; i < 7; ++i) {
    a.step();
    ck.step(a.it);
  }
  CHECK(ck.save(a.it) == ck.path_of(7));
  CHECK(ck.snapshots() == std::vector<std::string>{ck.path_of(7), ck.path_of(6)});
  CHECK(dzt::TempDir::names_of(out) == std::vector<std::string>{"snapshot_iter_6.npz", "snapshot_iter_7.npz"});

  // the newest is cut short (a crash during a copy, say): resume takes the one before it
  const std::string full = dzt::read_bytes(ck.path_of(7));
  dzt::write_bytes(ck.path_of(7), full.substr(0, full.size() / 2));
  Run b;
  T::Checkpointer cb(out, b.snap, {0, 3, false});
  std::optional<std::int64_t> at = cb.resume();
  REQUIRE(at.has_value());
  CHECK(*at == 6);
  CHECK(b.it == 6);

  // an empty folder: nothing to resume, and nothing changes
  Run c;
  T::Checkpointer cc((dir.path / "empty").string(), c.snap);
  const auto before = c.weights();
  CHECK_FALSE(cc.resume().has_value());
  CHECK(c.weights() == before);
}

namespace {
// The loop of the README and training.hpp: step() after each iteration, and at an epoch's end
// save() unless step() has just written that iteration. Returns the iterations written.
std::vector<std::int64_t> readme_loop(Run& r, T::Checkpointer& ck, int epochs) {
  std::vector<std::int64_t> written;
  while (r.epoch < epochs) {
    for (auto& b : r.loader) {
      r.train_on(b);
      if (ck.step(++r.it)) written.push_back(r.it);
    }
    ++r.epoch;
    if (!ck.due(r.it)) written.push_back((ck.save(r.it), r.it));
  }
  return written;
}
}  // namespace

TEST_CASE("Checkpointer: the README's loop writes each snapshot once, and resumes from either kind to the same bits") {
  // 24 samples in batches of 5: 5 iterations an epoch. every = 5 falls on each epoch's end.
  for (std::int64_t every : {5, 3}) {
    CAPTURE(every);
    dzt::TempDir dir;
    random::seed(11);
    Run whole;
    T::Checkpointer cw((dir.path / "whole").string(), whole.snap, {every, 0, true});
    const std::vector<std::int64_t> written = readme_loop(whole, cw, 3);
    if (every == 5) CHECK(written == std::vector<std::int64_t>{5, 10, 15});
    else CHECK(written == std::vector<std::int64_t>{3, 5, 6, 9, 10, 12, 15});

    // Stopped after two epochs, resumed by a new process from what the loop wrote last.
    const std::string out = (dir.path / "cut").string();
    {
      random::seed(11);
      Run first;
      T::Checkpointer c1(out, first.snap, {every, 0, true});
      readme_loop(first, c1, 2);
    }
    Run resumed(float32, 8, /*lazy=*/true);  // no warm-up pass: the snapshot gives W its shape
    CHECK_FALSE(resumed.model.params()[0].data().defined());
    T::Checkpointer c2(out, resumed.snap, {every, 0, true});
    CHECK(c2.resume() == std::optional<std::int64_t>(10));
    readme_loop(resumed, c2, 3);
    CHECK(resumed.losses == whole.losses);
    CHECK(resumed.weights() == whole.weights());
    CHECK(resumed.it == 15);
  }
}

TEST_CASE("Checkpointer: later-numbered files of another run never make it delete its own snapshots") {
  dzt::TempDir dir;
  const std::string out = (dir.path / "out").string();
  fs::create_directories(out);
  // Another model's snapshots, and junk, at higher iterations than this run will reach.
  {
    random::seed(3);
    Run other(float32, 16);
    other.step();
    T::Checkpointer co(out, other.snap, {0, 0, true});
    co.save(900);
    co.save(901);
  }
  dzt::write_bytes(out + "/snapshot_iter_902.npz", "not a snapshot");
  Run a;
  T::Checkpointer ck(out, a.snap, {0, /*keep=*/2, true});
  CHECK_FALSE(ck.resume().has_value());  // none of them loads into this model
  for (int i = 0; i < 3; ++i) {
    a.step();
    const std::string p = ck.save(a.it);
    CHECK_MESSAGE(fs::exists(p), p);  // what save() returns is there
  }
  CHECK(dzt::TempDir::names_of(out) == std::vector<std::string>{"snapshot_iter_2.npz", "snapshot_iter_3.npz",
                                                                "snapshot_iter_900.npz", "snapshot_iter_901.npz",
                                                                "snapshot_iter_902.npz"});
  // Killed now: a new process resumes from this run's newest.
  Run b;
  T::Checkpointer cb(out, b.snap, {0, 2, true});
  CHECK(cb.resume() == std::optional<std::int64_t>(3));
  CHECK(b.weights() == a.weights());
}

TEST_CASE("Checkpointer: a full disk during a snapshot is an IOError; the previous one stays whole") {
  if (geteuid() != 0) {
    MESSAGE("skipped: mounting a small tmpfs needs root");
    return;
  }
  dzt::TempDir dir;
  const std::string mnt = (dir.path / "small").string();
  fs::create_directories(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
    MESSAGE("skipped: cannot mount a tmpfs here (" << std::strerror(errno) << ")");
    return;
  }
  struct Unmount {
    std::string p;
    ~Unmount() { umount(p.c_str()); }
  } unmount{mnt};
  Run a(float32, 64);  // a snapshot of about 19 KB: the third does not fit beside two others... nor the first
  a.step();
  T::Checkpointer ck(mnt, a.snap, {0, 0, true});
  ck.save(1);
  const std::string first = dzt::read_bytes(ck.path_of(1));
  // fill the disk, leaving less than one snapshot
  {
    std::string pad(64 * 1024 - 2 * first.size() + first.size() / 2, 'x');
    dzt::write_bytes(mnt + "/pad", pad);
  }
  a.step();
  std::string msg = dzt::thrown<IOError>([&] { ck.save(2); });
  CHECK_MESSAGE(dzt::has(msg, "disk"), msg);
  CHECK(dzt::read_bytes(ck.path_of(1)) == first);
  CHECK(dzt::TempDir::names_of(mnt) == std::vector<std::string>{"pad", "snapshot_iter_1.npz"});
  Run b(float32, 64);
  T::Checkpointer cb(mnt, b.snap, {0, 0, true});
  CHECK(cb.resume() == std::optional<std::int64_t>(1));
}

// --- Progress -----------------------------------------------------------------------------------------
TEST_CASE("Progress: what the program printed to stdout comes first in a log of both streams") {
  dzt::TempDir dir;
  const std::string log = (dir.path / "log").string();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the child: stdout and stderr into one file, as `prog > log 2>&1`
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(2);
    std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16);  // a file: fully buffered, as it is by default
    std::printf("dataset: chosen first\n");
    {
      T::Progress p(2, 0);
      p.update(1, 0.5);
      p.finish();
    }
    std::printf("after\n");
    std::fflush(stdout);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string text = dzt::read_bytes(log);
  const auto first = text.find("dataset: chosen first"), line = text.find("iter 1/2"), after = text.find("after");
  CHECK_MESSAGE(first < line, text);
  CHECK_MESSAGE(line < after, text);
}

TEST_CASE("Progress: the line's text, and plain lines when the output is not a terminal") {
  CHECK(T::Progress::format(900, 3000, 600, 0, 0.31214, 4.0) ==
        "epoch 2/5  iter 900/3000 (30.0%)  loss 0.3121  225.0 it/s  left 0:09");
  CHECK(T::Progress::format(1, 10, 0, 0, std::nan(""), 0.0) == "iter 1/10 (10.0%)");
  CHECK(T::Progress::format(50, 100, 10, 40, 1.0, 1.0) ==
        "epoch 5/10  iter 50/100 (50.0%)  loss 1.0000  10.0 it/s  left 0:05");
  CHECK(T::Progress::format(1, 100000, 0, 0, 1.0, 1.0).find("left 27:46:39") != std::string::npos);

  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  {
    T::ProgressOptions o;
    o.out = f;
    o.interval_s = 1e9;  // only the first line, then the end
    T::Progress p(20, 10, 0, o);
    CHECK_FALSE(p.is_terminal());
    for (int i = 1; i <= 20; ++i) p.update(i, 0.5);
    p.finish();
  }
  std::rewind(f);
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f)) text += buf;
  std::fclose(f);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  CHECK(dzt::has(text, "iter 1/20"));
  CHECK(dzt::has(text, "epoch 2/2  iter 20/20 (100.0%)"));

  // On a terminal (a pseudo-terminal here): one line redrawn in place, ended by a newline.
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  std::FILE* tty = std::fopen(::ptsname(master), "w");
  REQUIRE(tty);
  {
    T::ProgressOptions o;
    o.out = tty;
    o.refresh_s = 0;  // every update redraws
    T::Progress p(3, 0, 0, o);
    CHECK(p.is_terminal());
    for (int i = 1; i <= 3; ++i) p.update(i, 0.25);
    p.finish();
  }
  std::fclose(tty);
  std::string shown;
  char tb[512];
  for (ssize_t got; (got = ::read(master, tb, sizeof tb)) > 0;) {
    shown.append(tb, static_cast<std::size_t>(got));
    if (shown.find("(100.0%)") != std::string::npos && shown.find('\n') != std::string::npos) break;
  }
  ::close(master);
  CHECK(dzt::has(shown, "\riter 1/3 (33.3%)  loss 0.2500"));
  CHECK(dzt::has(shown, "\033[K"));
  CHECK(dzt::has(shown, "\riter 3/3 (100.0%)"));
  CHECK(std::count(shown.begin(), shown.end(), '\n') == 1);

  T::ProgressOptions q;
  q.quiet = true;
  std::FILE* g = std::tmpfile();
  q.out = g;
  {
    T::Progress p(5, 0, 0, q);
    for (int i = 1; i <= 5; ++i) p.update(i, 0.1);
    p.finish();
  }
  CHECK(std::ftell(g) == 0);
  std::fclose(g);
}
