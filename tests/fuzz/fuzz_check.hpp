// tests/fuzz/fuzz_check.hpp - the fuzz targets' property checks. A failed check
// prints what failed and aborts, which libFuzzer reports as a crash and saves the
// input (the test program is allowed to abort; the library never does).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "dezero/npz.hpp"
#include "dezero/tensor.hpp"

#define DZ_FUZZ_CHECK(cond)                                                            \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace dzf {

// Same dtype, same shape, same bytes (NaN payloads included): the two arrays'
// .npy serialisations are equal.
inline void check_same(const dezero::Tensor& a, const dezero::Tensor& b) {
  DZ_FUZZ_CHECK(a.dtype() == b.dtype());
  DZ_FUZZ_CHECK(a.shape() == b.shape());
  DZ_FUZZ_CHECK(dezero::utils::serialize_npy(a) == dezero::utils::serialize_npy(b));
}

}  // namespace dzf
