// tests/support/memory_ceiling.hpp - runs one call in a forked child under a memory ceiling and
// reports what it threw and how far the child's peak RSS (VmHWM) rose: the check for the readers'
// size caps (a decompression bomb must be refused before it allocates). The ceiling
// (RLIMIT_AS: the address space at the fork plus `headroom`) keeps a reader without a cap from
// taking gigabytes of the machine; under AddressSanitizer, which reserves terabytes of address
// space, only the RSS is measured. The child runs no doctest macro, and an alarm ends a child
// that hangs.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <new>
#include <string>

#include <dezero/error.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define DZT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DZT_ASAN 1
#endif
#endif

namespace dzt {

// A "VmXxx:" line of /proc/self/status, in kB (-1 when absent).
inline long long proc_status_kb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  return -1;
}

struct CeilingRun {
  std::string outcome;    // "error: <what()>", "bad_alloc", "returned", "other exception", or how the child died
  long long grew_kb = -1;  // how far VmHWM rose during the call
};

template <class Fn>
CeilingRun run_under_ceiling(Fn fn, long long headroom_bytes = 512ll << 20) {
  int fds[2];
  if (::pipe(fds) != 0) return {"pipe failed", -1};
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return {"fork failed", -1};
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(60);
    { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to the current RSS (Linux >= 4.0)
#ifndef DZT_ASAN
    const long long vm = proc_status_kb("VmSize");
    if (vm > 0) {
      rlimit r{};
      r.rlim_cur = r.rlim_max = static_cast<rlim_t>(vm * 1024 + headroom_bytes);
      ::setrlimit(RLIMIT_AS, &r);
    }
#else
    (void)headroom_bytes;  // no address-space ceiling under ASan: the RSS alone is measured
#endif
    const long long before = proc_status_kb("VmHWM");
    std::string outcome;
    try {
      fn();
      outcome = "returned";
    } catch (const dezero::Error& e) {
      outcome = std::string("error: ") + e.what();
    } catch (const std::bad_alloc&) {
      outcome = "bad_alloc";
    } catch (...) {
      outcome = "other exception";
    }
    const std::string msg = std::to_string(proc_status_kb("VmHWM") - before) + "\n" + outcome;
    for (std::size_t done = 0; done < msg.size();) {
      const ssize_t n = ::write(fds[1], msg.data() + done, msg.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CeilingRun run;
  const auto nl = msg.find('\n');
  if (nl == std::string::npos) {
    run.outcome = WIFSIGNALED(status) ? "the child died of signal " + std::to_string(WTERMSIG(status))
                                      : "the child reported nothing";
    return run;
  }
  run.grew_kb = std::stoll(msg.substr(0, nl));
  run.outcome = msg.substr(nl + 1);
  return run;
}

}  // namespace dzt
