// dezero/cpu/onednn_stub.cpp - the oneDNN entry points of a build made without oneDNN
// (cmake -DDEZERO_ONEDNN=OFF, or AUTO where libdnnl-dev is missing): built instead of
// onednn_conv.cpp. Nothing is handled here, so every float32 convolution runs on
// im2col + SGEMM (im2col.cpp), and is_onednn_available() is false.
#include "dezero/cpu/kernels.hpp"
#include "dezero/onednn.hpp"

namespace dezero::detail::cpu {

bool onednn_usable() { return false; }
bool onednn_enabled() { return false; }
bool onednn_conv2d_forward(DType, const void*, const void*, const void*, void*, const ConvGeom&) { return false; }
bool onednn_conv2d_backward_data(DType, const void*, const void*, void*, const ConvGeom&) { return false; }
bool onednn_conv2d_backward_filter(DType, const void*, const void*, void*, const ConvGeom&) { return false; }
bool onednn_gemm_lowp(DType, bool, bool, std::int64_t, std::int64_t, std::int64_t, const void*, DType, std::int64_t,
                      const void*, DType, std::int64_t, const float*, float*, std::int64_t, bool) {
  return false;
}
void onednn_cap_isa(int) {}

}  // namespace dezero::detail::cpu

namespace dezero {
bool is_onednn_available() { return false; }
bool cpu_supports_bf16() { return false; }
bool cpu_supports_fp16() { return false; }
}  // namespace dezero
