// tests/mn/test_netsim.cpp - the simulated cluster of tools/netsim.sh, checked from inside: run by the
// mn_netsim CTest (dezero_mn_tests under `tools/netsim.sh -n 2 --rate 1gbit --delay 0.2ms`), where every
// rank is on a machine of its own (a network namespace) and each link is shaped by tc. Outside netsim
// (mn_np1, mn_np2) the case says "skipped: not under tools/netsim.sh".
//
// What it asserts: each rank owns its machine's address (10.231.0.<rank + 1>, so the ranks really are
// in different namespaces), and an MPI_Allreduce of 8 MB takes at least 70% of the time the link's rate
// allows for it (any allreduce moves 2 (N - 1) / N of the bytes through each rank's link: 67 ms at
// 1 Gbit/s for 2 ranks, where loopback takes about 1 ms), so the bytes crossed the shaped links.
#include <doctest/doctest.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// tc's rate units (1gbit, 500mbit, 10kbps ...) in bits per second; 0 for "none" or what it cannot read.
double rate_bits(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return 0;
  const double value = std::strtod(text.substr(0, i).c_str(), nullptr);
  const std::string unit = text.substr(i);
  const double scale = unit == "bit" ? 1 : unit == "kbit" ? 1e3 : unit == "mbit" ? 1e6 : unit == "gbit" ? 1e9
                       : unit == "bps" ? 8 : unit == "kbps" ? 8e3 : unit == "mbps" ? 8e6 : unit == "gbps" ? 8e9 : 0;
  return value * scale;
}

bool has_local_ipv4(const std::string& want) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
    found = want == buf;
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

TEST_CASE("netsim: every rank on its own machine, and the links shaped to their rate") {
  const char* rate_env = std::getenv("NETSIM_RATE");
  if (!rate_env) {
    MESSAGE("skipped: not under tools/netsim.sh");
    return;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string mine = "10.231.0." + std::to_string(rank + 1);
  CHECK_MESSAGE(has_local_ipv4(mine), "rank ", rank, " does not own ", mine);
  const double bits = rate_bits(rate_env);
  if (size < 2 || bits <= 0) {
    MESSAGE("skipped: the rate check needs 2 or more ranks and a shaped link (NETSIM_RATE=", std::string(rate_env), ")");
    return;
  }

  // 2^21 floats = 8 MB; every rank contributes rank + 1, so every element must end as N (N + 1) / 2.
  const int count = 1 << 21;
  std::vector<float> data(count);
  std::vector<double> ms;
  for (int rep = 0; rep < 4; ++rep) {
    std::fill(data.begin(), data.end(), float(rank + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) * 1e3;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // the slowest rank's time
    if (rep > 0) ms.push_back(t);  // the first one also opens the connections
  }
  const float want = float(size * (size + 1) / 2);
  CHECK(std::all_of(data.begin(), data.end(), [&](float v) { return v == want; }));
  std::sort(ms.begin(), ms.end());
  const double bytes = 4.0 * count * 2.0 * (size - 1) / size;
  const double bound_ms = bytes * 8.0 / bits * 1e3;
  MESSAGE("allreduce of 8 MB over ", size, " ranks at ", std::string(rate_env), ": median ", ms[ms.size() / 2],
          " ms (the link's bound: ", bound_ms, " ms)");
  CHECK(ms[ms.size() / 2] >= 0.7 * bound_ms);
}
