// tests/support/cudnn.hpp - the skip of the GPU test cases that need cuDNN
// (test_cuda_conv.cpp, test_cuda_pool.cpp, test_cuda_batch_norm.cpp), and the GPU timer of
// their "cudnn timing:" cases.
//
// Without a GPU: "skipped: no CUDA device". With one where cuDNN is not used, the case
// is skipped visibly, with cuda::detail::cudnn_unavailable_reason() (DEZERO_CUDNN=0, the
// loader's error, an old version, cudnnCreate's error on the device), in two lines:
//   skipped: cuDNN is not used here: <reason>
//   cuDNN unavailable: <reason>        (tools/gpu-check.sh looks for this prefix)
// The reason is found by making the device's handle, so a case that goes on has one: no
// REQUIRE on a cuDNN entry point then fails for a reason nobody was told.
#pragma once

#include <string>

#include "support/test_util.hpp"

#ifdef DEZERO_WITH_CUDA
#include "dezero/gpu/conv_algo.hpp"
#endif

namespace dzt {

inline bool skip_without_cudnn() {
  if (skip_without_gpu()) return true;
#ifdef DEZERO_WITH_CUDA
  const std::string why = dezero::cuda::detail::cudnn_unavailable_reason();
  if (why.empty()) return false;
#else
  const std::string why = "dezero was built without CUDA";
#endif
  MESSAGE("skipped: cuDNN is not used here: " << why);
  MESSAGE("cuDNN unavailable: " << why);
  return true;
}

// Microseconds per call of `call` on the GPU: one call first (warm-up, algorithm choice), then
// `reps` between two events on the current stream.
template <class Call>
double gpu_time_us(int reps, Call&& call) {
  call();
  dezero::cuda::Event start, end;
  start.record();
  for (int i = 0; i < reps; ++i) call();
  end.record();
  end.synchronize();
  return 1000.0 * start.elapsed_time(end) / reps;
}

}  // namespace dzt
