// tests/fuzz/fuzz_cifar.cpp - libFuzzer target: arbitrary bytes as cifar-10-binary.tar.gz.
//
// CIFAR-10's reader (datasets::detail::read_cifar10_archive, the core of datasets::CIFAR10:
// libarchive's gzip and tar, zlib's trailer check, the member, record and label checks and the
// sample cap) reads a path, so each input is written to an in-memory file (memfd) and read back
// through /proc/self/fd, once as the test split and once as the training split. The cap is
// lowered to 64 samples so that an input inflating to megabytes is refused quickly. What loads
// is (N, 3, 32, 32) int32 pixels in [0, 255] and (N,) int64 labels in [0, 9], 1 <= N <= 64; all
// else is a dezero::Error. Without libarchive every input is an IOError (nothing is tested).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dezero/data/files.hpp"
#include "dezero/datasets.hpp"
#include "dezero/error.hpp"
#include "fuzz_check.hpp"

namespace {
constexpr std::int64_t kCap = 64;

double item(const dezero::Tensor& t) { return t.astype(dezero::float64).item<double>(); }

void check(const std::string& path, bool train) {
  try {
    auto [x, t] = dezero::datasets::detail::read_cifar10_archive(path, train);
    const std::int64_t n = t.size();
    DZ_FUZZ_CHECK(n >= 1 && n <= kCap);
    DZ_FUZZ_CHECK(x.dtype() == dezero::int32 && t.dtype() == dezero::int64);
    DZ_FUZZ_CHECK(x.shape() == dezero::Shape({n, 3, 32, 32}));
    DZ_FUZZ_CHECK(t.shape() == dezero::Shape({n}));
    DZ_FUZZ_CHECK(item(x.min()) >= 0.0 && item(x.max()) <= 255.0);
    DZ_FUZZ_CHECK(item(t.min()) >= 0.0 && item(t.max()) <= 9.0);
  } catch (const dezero::Error&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = [] {
    dezero::datasets::set_max_cifar_samples(kCap);
    int f = memfd_create("fuzz_cifar", 0);
    if (f < 0) {
      std::perror("fuzz_cifar: memfd_create");
      std::abort();
    }
    return f;
  }();
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  DZ_FUZZ_CHECK(ftruncate(fd, 0) == 0);
  DZ_FUZZ_CHECK(pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  check(path, false);
  check(path, true);
  return 0;
}
