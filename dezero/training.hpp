/// \file
/// Training that survives being killed: a Snapshot of the whole training state in one .npz
/// file, a Checkpointer that writes one every N iterations, keeps the last K and resumes from
/// the newest that loads, and a Progress line for long loops.
///
/// ```cpp
///   dezero::training::Snapshot snap;
///   snap.model(model).optimizer(optimizer).loader("train", train_loader).value("epoch", epoch);
///   dezero::training::Checkpointer ckpt("out", snap, {.every = 100, .keep = 3});  // C++17: fill a
///                                                   // CheckpointOptions o; o.every = 100; first
///   std::int64_t it = ckpt.resume().value_or(0);    // the newest snapshot in out/, if any
///   while (epoch < epochs) {
///     for (auto& [x, t] : train_loader) { ...; optimizer.update(); ckpt.step(++it); }
///     ++epoch;
///     if (!ckpt.due(it)) ckpt.save(it);               // and at each epoch's end, unless step() just wrote it
///   }
/// ```
///
/// A run killed at any moment and resumed from its newest snapshot computes the same bits
/// as the run that was never stopped: the snapshot holds the parameters (BatchNorm's
/// statistics included), the optimizer's state, every random stream training draws from
/// (the global one always, the loaders' and any added with generator()), each loader's
/// epoch, sample order and position, and the values the loop keeps (value()).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dezero/dataloaders.hpp"
#include "dezero/layers.hpp"
#include "dezero/npz.hpp"
#include "dezero/optimizers.hpp"
#include "dezero/tensor.hpp"

namespace dezero::training {

// --- Snapshot -----------------------------------------------------------------------------------
/// The whole state of a training run, saved to and loaded from one .npz file.
///
/// A Snapshot refers to what it saves (a model, an optimizer, loaders, streams, values of
/// the loop); each must outlive it. save() writes atomically (a new temporary file, fsync,
/// rename: the previous file stays whole until the new one is complete). load() checks the
/// whole file against everything added (format version, keys, shapes, dtypes, the optimizer's
/// class, each loader's size) and changes nothing when it throws.
///
/// The file is an .npz (NumPy reads it: `np.load(path)`); its keys, format version 1:
///
/// | key | array |
/// |---|---|
/// | `snapshot/format_version` | int64 (): 1 |
/// | `model/<key>` | each parameter under its weight-file key (`model/l0/W`, `model/bn1/avg_mean`) |
/// | `optimizer/class` | int32 (n,): the optimizer's Optimizer::name(), one character code each (`"Adam"`; files written before it hold the C++ name, `"dezero::optimizers::Adam"`, and still resume) |
/// | `optimizer/t`, `optimizer/p<i>/<name>` | Optimizer::state_dict(): the step count, the i-th parameter's state (`optimizer/p0/m`) |
/// | `random/<name>/key` | int64 (624,): MT19937's words (NumPy's get_state()[1]) |
/// | `random/<name>/pos` | int64 (): the next word (get_state()[2]) |
/// | `random/<name>/has_gauss`, `random/<name>/cached_gaussian` | int64 (), float64 (): the cached normal draw |
/// | `loader/<name>/epoch`, `loader/<name>/iteration` | int64 (): epochs done, batches of this epoch handed out |
/// | `loader/<name>/index` | int64 (N,): this epoch's sample order |
/// | `value/<name>` | int64 () or float64 () or float64 (n,): a value of the loop |
///
/// `random/global` is the process-wide stream (always saved); a loader whose stream is not
/// the global one saves it as `random/loader.<name>`. Arrays are written from whatever
/// device they live on and loaded onto the device of the parameter they belong to, so a
/// snapshot made on a GPU resumes on the CPU and the other way round.
class Snapshot {
 public:
  /// The file format this library writes (`snapshot/format_version`); load() refuses others.
  static constexpr std::int64_t kFormatVersion = 1;

  /// Adds the model: its named_params() (parameters and persistent statistics).
  Snapshot& model(L::Layer& model);
  /// Adds the optimizer: its state_dict() and its class (a snapshot of an Adam does not load
  /// into an SGD).
  Snapshot& optimizer(optimizers::Optimizer& optimizer);
  /// Adds a loader under `name`: its epoch, position and sample order (and its stream when
  /// that is not the global one).
  Snapshot& loader(const std::string& name, DataLoader& loader);
  /// Adds a random stream under `name` (one that dropout or a data augmentation draws from).
  /// The global stream is always in the snapshot, as `random/global`.
  Snapshot& generator(const std::string& name, random::Generator gen);
  /// Adds a value of the training loop under `name`, kept by reference: save() reads it,
  /// load() writes it. A learning curve is a std::vector<double>.
  ///@{
  Snapshot& value(const std::string& name, int& v);
  Snapshot& value(const std::string& name, std::int64_t& v);
  Snapshot& value(const std::string& name, double& v);
  Snapshot& value(const std::string& name, std::vector<double>& v);
  ///@}

  /// The arrays save() writes, in that order (on their devices; nothing is copied).
  utils::NamedTensors state() const;
  /// Puts everything added back as `arrays` describe it, after checking all of them.
  /// `where` starts the error messages.
  void load_state(const utils::NamedTensors& arrays, const std::string& where = "Snapshot::load_state");
  /// Writes state() to `path` (an .npz, uncompressed), atomically. An IOError when it cannot
  /// be written (a full disk: the previous file under `path` is untouched, no temporary file
  /// is left).
  void save(const std::string& path) const;
  /// Reads `path` and load_state()s it. IOError for a missing, truncated or corrupt file;
  /// ValueError / ShapeError / DtypeError naming what differs (a key missing or extra, a
  /// shape, a dtype, the optimizer's class, the format version); nothing changes then.
  void load(const std::string& path);

 private:
  struct Value {
    std::string name;
    int* i32 = nullptr;
    std::int64_t* i64 = nullptr;
    double* f64 = nullptr;
    std::vector<double>* curve = nullptr;
  };
  L::Layer* model_ = nullptr;
  optimizers::Optimizer* optimizer_ = nullptr;
  std::vector<std::pair<std::string, DataLoader*>> loaders_;
  std::vector<std::pair<std::string, random::Generator>> generators_;
  std::vector<Value> values_;
  void check_name(const std::string& what, const std::string& name) const;
};

// --- Checkpointer ------------------------------------------------------------------------------
/// When and where a Checkpointer writes.
struct CheckpointOptions {
  std::int64_t every = 0;  ///< Write a snapshot every this many iterations (0: only on save()).
  int keep = 3;            ///< Keep the newest this many snapshot files, removing older ones (0: keep all).
  bool quiet = false;      ///< Print nothing (by default one line on stderr per resume decision).
};

/// Snapshots of a training loop in a folder: `out/snapshot_iter_<iteration>.npz` (Chainer's
/// name), one every `every` iterations and whenever save() is called, the newest `keep`
/// kept; resume() loads the newest that loads.
class Checkpointer {
 public:
  /// Snapshots of `snapshot` (kept by reference) in `out_dir`, created (0755) when missing.
  /// An IOError when it cannot be created.
  Checkpointer(std::string out_dir, Snapshot& snapshot, CheckpointOptions options = CheckpointOptions());

  /// Loads the newest snapshot in the folder that loads and returns its iteration. A file
  /// that does not load, whatever the reason (truncated by a crash, corrupt, from another model,
  /// too large for memory), is skipped with a line on stderr saying why, and the one before it
  /// is tried. std::nullopt when there is
  /// none (a line says the run starts from the beginning); nothing is changed then. Temporary
  /// files a killed writer left in the folder are removed first.
  std::optional<std::int64_t> resume();
  /// Loads `path` (a file resume() chose, on another rank): Snapshot::load.
  void load(const std::string& path);
  /// Called after iteration `iteration` (counted from 1 over the whole run): writes a
  /// snapshot when due(iteration). Returns whether it wrote one.
  bool step(std::int64_t iteration);
  /// Whether step(iteration) writes a snapshot: `every` > 0 divides `iteration`. A loop that
  /// keeps values on a GPU reads them into the Snapshot's variables first when it is due.
  bool due(std::int64_t iteration) const { return opt_.every > 0 && iteration % opt_.every == 0; }
  /// Writes the snapshot of iteration `iteration` now (at the end of an epoch; it replaces a
  /// file of the same iteration: the values may have changed since, so it always writes), then
  /// removes all but the newest `keep` of the snapshots up to `iteration` (files of later
  /// iterations, another run's, are left alone and never make it remove its own). Returns the path. At an epoch's end,
  /// `if (!due(it)) save(it);` writes each iteration once.
  std::string save(std::int64_t iteration);
  /// The snapshot files in the folder, newest (highest iteration) first.
  std::vector<std::string> snapshots() const;
  /// The file of iteration `iteration`: `out_dir/snapshot_iter_<iteration>.npz`.
  std::string path_of(std::int64_t iteration) const;
  /// The iteration of the snapshot that resume() or the last save() dealt with (0: none).
  std::int64_t last_iteration() const { return last_; }
  const std::string& out_dir() const { return dir_; }  ///< The folder.

 private:
  std::string dir_;
  Snapshot& snap_;
  CheckpointOptions opt_;
  std::int64_t last_ = 0;
};

// --- Progress ----------------------------------------------------------------------------------
/// How a Progress line prints.
struct ProgressOptions {
  bool quiet = false;          ///< Print nothing.
  double interval_s = 10.0;    ///< Not a terminal: a plain line at most this often (and at the end).
  double refresh_s = 0.1;      ///< A terminal: redraw at most this often.
  std::FILE* out = nullptr;    ///< Where to print (default: stderr).
};

/// A progress line for a long loop: iteration, epoch, loss, throughput and time left.
///
/// On a terminal it is one line redrawn in place (`\r`); otherwise (a CI log, a pipe) a plain
/// line every `interval_s` seconds and one at the end, so logs stay readable. Before each line
/// it flushes stdout, so that in a log of both streams the lines a program printed earlier
/// (buffered on stdout) come before it.
///
///   epoch 2/5  iter 900/3000 (30.0%)  loss 0.3121  412.5 it/s  left 0:05
class Progress {
 public:
  /// A loop of `total_iterations`, `iterations_per_epoch` to an epoch (0: no epoch shown),
  /// starting after iteration `start` (a resumed run: throughput counts from there).
  Progress(std::int64_t total_iterations, std::int64_t iterations_per_epoch, std::int64_t start = 0,
           ProgressOptions options = ProgressOptions());
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// After iteration `iteration` (1-based, over the whole run) with the loss to show (NaN: none).
  void update(std::int64_t iteration, double loss);
  /// Ends the line (a terminal gets its final state and a newline); update() after it prints again.
  void finish();
  /// Whether the output is a terminal (the in-place form).
  bool is_terminal() const { return tty_; }

  /// The text of one line, for tests and custom output: `seconds` since `start`.
  static std::string format(std::int64_t iteration, std::int64_t total, std::int64_t per_epoch, std::int64_t start,
                            double loss, double seconds);

 private:
  std::int64_t total_, per_epoch_, start_, last_it_ = 0, printed_it_ = -1;
  ProgressOptions opt_;
  bool tty_ = false, open_ = false;
  double t0_ = 0, last_print_ = -1e300, last_loss_ = 0;
  void print(bool final_line);
};

}  // namespace dezero::training
