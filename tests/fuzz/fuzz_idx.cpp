// tests/fuzz/fuzz_idx.cpp - libFuzzer target: arbitrary bytes as an MNIST IDX file.
//
// datasets::read_idx reads a path (plain or gzip, through zlib), so each input is
// written to an in-memory file (memfd) and read back through /proc/self/fd. The reader
// returns a uint8-valued tensor whose element count is what the header promised and
// the file held, or throws a dezero::Error.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dezero/datasets.hpp"
#include "dezero/error.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = [] {
    int f = memfd_create("fuzz_idx", 0);
    if (f < 0) {
      std::perror("fuzz_idx: memfd_create");
      std::abort();
    }
    return f;
  }();
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  DZ_FUZZ_CHECK(ftruncate(fd, 0) == 0);
  DZ_FUZZ_CHECK(pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  try {
    dezero::Tensor t = dezero::datasets::read_idx(path);
    // Every element is a byte value: the reader converted exactly what was there.
    DZ_FUZZ_CHECK(t.ndim() >= 1 && t.ndim() <= 4);
    if (t.size() > 0) {
      dezero::Tensor lo = t.min(), hi = t.max();
      DZ_FUZZ_CHECK(lo.astype(dezero::float64).item<double>() >= 0.0);
      DZ_FUZZ_CHECK(hi.astype(dezero::float64).item<double>() <= 255.0);
    }
  } catch (const dezero::Error&) {
  }
  return 0;
}
