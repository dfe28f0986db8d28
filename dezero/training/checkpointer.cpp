// dezero/training/checkpointer.cpp - Checkpointer: snapshot_iter_<N>.npz files in a folder, the
// newest `keep` kept, resume() from the newest one that loads.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "dezero/fail.hpp"
#include "dezero/training.hpp"

namespace fs = std::filesystem;

namespace dezero::training {

namespace {

using dezero::detail::fail;

constexpr const char* kPrefix = "snapshot_iter_";
constexpr const char* kSuffix = ".npz";

// The iteration of a file name "snapshot_iter_<N>.npz", or -1.
std::int64_t iteration_of(const std::string& name) {
  const std::size_t p = std::strlen(kPrefix), s = std::strlen(kSuffix);
  if (name.size() <= p + s || name.compare(0, p, kPrefix) != 0 || name.compare(name.size() - s, s, kSuffix) != 0)
    return -1;
  const std::string digits = name.substr(p, name.size() - p - s);
  if (digits.empty() || digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoll(digits);
}

}  // namespace

Checkpointer::Checkpointer(std::string out_dir, Snapshot& snapshot, CheckpointOptions options)
    : dir_(std::move(out_dir)), snap_(snapshot), opt_(options) {
  if (dir_.empty()) fail<ValueError>("Checkpointer", "the folder name is empty");
  if (opt_.every < 0) fail<ValueError>("Checkpointer", "every must be >= 0, got ", opt_.every);
  if (opt_.keep < 0) fail<ValueError>("Checkpointer", "keep must be >= 0, got ", opt_.keep);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    fail<IOError>("Checkpointer", "cannot create the folder '", dir_, "': ",
                  ec ? ec.message() : std::string("a file of that name is in the way"));
}

std::string Checkpointer::path_of(std::int64_t iteration) const {
  return (fs::path(dir_) / (kPrefix + std::to_string(iteration) + kSuffix)).string();
}

std::vector<std::string> Checkpointer::snapshots() const {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::int64_t it = iteration_of(e.path().filename().string());
    if (it >= 0 && e.is_regular_file(ec)) found.emplace_back(it, e.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

namespace {
// One line to stderr in one write: std::cerr flushes after every <<, so a line built
// from pieces could interleave with another process's output (mpirun's ranks share a
// terminal or a log; the mn_resume test reads such a log).
void tell(const std::string& line) { std::cerr << line; }
}  // namespace

std::optional<std::int64_t> Checkpointer::resume() {
  // A process killed while writing a snapshot leaves its temporary file behind
  // ("snapshot_iter_<N>.npz.<random>.tmp"): never a snapshot, removed here.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(kPrefix, 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) {
      std::error_code rm;
      fs::remove(e.path(), rm);
    }
  }
  for (const std::string& path : snapshots()) {
    try {
      snap_.load(path);
    } catch (const std::exception& e) {  // whatever the reason (a dezero::Error, or out of memory): the one before it
      if (!opt_.quiet)
        tell("dezero: cannot resume from " + path + " (" + e.what() + "); trying the one before it\n");
      continue;
    }
    last_ = iteration_of(fs::path(path).filename().string());
    if (!opt_.quiet) tell("dezero: resumed from " + path + " (iteration " + std::to_string(last_) + ")\n");
    return last_;
  }
  if (!opt_.quiet) tell("dezero: no snapshot to resume from in " + dir_ + "; starting from the beginning\n");
  return std::nullopt;
}

void Checkpointer::load(const std::string& path) {
  snap_.load(path);
  last_ = iteration_of(fs::path(path).filename().string());
}

bool Checkpointer::step(std::int64_t iteration) {
  if (!due(iteration)) return false;
  save(iteration);
  return true;
}

std::string Checkpointer::save(std::int64_t iteration) {
  if (iteration < 0) fail<ValueError>("Checkpointer::save", "iteration ", iteration, " is negative");
  const std::string path = path_of(iteration);
  snap_.save(path);  // replaces a file of the same iteration
  last_ = iteration;
  if (opt_.keep > 0) {
    // The newest `keep` up to this iteration stay, this one first. A file of a later iteration
    // is not this run's (a previous run's, another model's, a copy): never removed here, and it
    // never pushes this run's own snapshots out.
    std::size_t kept = 0;
    for (const std::string& f : snapshots()) {
      const std::int64_t it = iteration_of(fs::path(f).filename().string());
      if (it > iteration) continue;
      if (++kept <= static_cast<std::size_t>(opt_.keep)) continue;
      std::error_code ec;
      fs::remove(f, ec);  // best effort: an old file left over is harmless
    }
  }
  return path;
}

}  // namespace dezero::training
