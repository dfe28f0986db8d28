// dezero/training/progress.cpp - Progress: one line redrawn in place on a terminal, plain lines
// at an interval elsewhere (CI logs and pipes stay readable).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "dezero/fail.hpp"
#include "dezero/training.hpp"

namespace dezero::training {

namespace {

using dezero::detail::fail;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string clock_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long long t = static_cast<long long>(s + 0.5);
  char buf[48];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", t / 60, t % 60);
  return buf;
}

}  // namespace

std::string Progress::format(std::int64_t iteration, std::int64_t total, std::int64_t per_epoch, std::int64_t start,
                             double loss, double seconds) {
  std::string line;
  char buf[160];
  if (per_epoch > 0) {
    const std::int64_t epochs = (total + per_epoch - 1) / per_epoch;
    const std::int64_t epoch = iteration <= 0 ? 1 : std::min(epochs, (iteration - 1) / per_epoch + 1);
    std::snprintf(buf, sizeof buf, "epoch %lld/%lld  ", static_cast<long long>(epoch), static_cast<long long>(epochs));
    line += buf;
  }
  const double pct = total > 0 ? 100.0 * static_cast<double>(iteration) / static_cast<double>(total) : 0.0;
  std::snprintf(buf, sizeof buf, "iter %lld/%lld (%.1f%%)", static_cast<long long>(iteration),
                static_cast<long long>(total), pct);
  line += buf;
  if (!std::isnan(loss)) {
    std::snprintf(buf, sizeof buf, "  loss %.4f", loss);
    line += buf;
  }
  const std::int64_t done = iteration - start;
  if (done > 0 && seconds > 0) {
    const double rate = static_cast<double>(done) / seconds;
    std::snprintf(buf, sizeof buf, "  %.1f it/s  left %s", rate,
                  clock_text(static_cast<double>(total - iteration) / rate).c_str());
    line += buf;
  }
  return line;
}

Progress::Progress(std::int64_t total_iterations, std::int64_t iterations_per_epoch, std::int64_t start,
                   ProgressOptions options)
    : total_(total_iterations), per_epoch_(iterations_per_epoch), start_(start), last_it_(start), opt_(options) {
  if (total_ < 0 || per_epoch_ < 0 || start_ < 0)
    fail<ValueError>("Progress", "total_iterations, iterations_per_epoch and start must be >= 0");
  if (!opt_.out) opt_.out = stderr;
  tty_ = isatty(fileno(opt_.out)) != 0;
  t0_ = now_s();
}

Progress::~Progress() {
  if (open_) std::fputc('\n', opt_.out);
}

void Progress::print(bool final_line) {
  printed_it_ = last_it_;
  const std::string line = format(last_it_, total_, per_epoch_, start_, last_loss_, now_s() - t0_);
  // What the program printed to stdout before this line goes out first: stdout into a file or
  // a pipe is fully buffered while stderr is not, so in a log of both streams ("> log 2>&1")
  // the progress lines would otherwise come before the lines printed ahead of them.
  if (opt_.out != stdout) std::fflush(stdout);
  if (tty_) {
    // the line redrawn in place; "\033[K" clears what a longer earlier line left
    std::fprintf(opt_.out, "\r%s\033[K", line.c_str());
    open_ = true;
    if (final_line) {
      std::fputc('\n', opt_.out);
      open_ = false;
    }
  } else {
    std::fprintf(opt_.out, "%s\n", line.c_str());
  }
  std::fflush(opt_.out);
}

void Progress::update(std::int64_t iteration, double loss) {
  last_it_ = iteration;
  last_loss_ = loss;
  if (opt_.quiet) return;
  const double t = now_s();
  const double gap = tty_ ? opt_.refresh_s : opt_.interval_s;
  if (t - last_print_ < gap && iteration < total_) return;
  last_print_ = t;
  print(iteration >= total_ && tty_);
}

void Progress::finish() {
  if (opt_.quiet) return;
  if (printed_it_ != last_it_ || open_) print(true);  // the last state, and the terminal's newline
  last_print_ = -1e300;
}

}  // namespace dezero::training
