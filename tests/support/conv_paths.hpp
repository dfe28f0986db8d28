// tests/support/conv_paths.hpp - runs a test body on both routes of the convolutions and pooling.
//
// body() once through the backend's library path (on the host cpu/im2col.cpp's image-by-image
// products and oneDNN, cuDNN on a GPU where it is built) and once through tensor/conv.cpp's batched
// im2col + GEMM and the backend's own pooling kernels (pool.cu on a GPU), so that both paths meet
// the same values. The library path is switched back on afterwards, also when body() throws.
#pragma once

#include <doctest/doctest.h>

#include <functional>

#include "dezero/tensor/fused.hpp"  // detail::set_conv_library_path

namespace dzt {

inline void on_each_conv_path(const std::function<void()>& body) {
  struct Restore {
    ~Restore() { dezero::detail::set_conv_library_path(true); }
  } restore;
  for (bool lib : {true, false}) {
    CAPTURE(lib);
    dezero::detail::set_conv_library_path(lib);
    body();
  }
}

}  // namespace dzt
