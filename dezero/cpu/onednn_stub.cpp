// dezero/cpu/onednn_stub.cpp - the oneDNN entry points of a build made without oneDNN
// (cmake -DDEZERO_ONEDNN=OFF, or AUTO where libdnnl-dev is missing): built instead of
// onednn_conv.cpp. Nothing is handled here, so every float32 convolution runs on
// im2col + SGEMM (im2col.cpp), and is_onednn_available() is false; the plan's program
// (onednn_program.hpp) is never available, so plan/plan.cpp runs every op itself.
#include <stdexcept>

#include "dezero/cpu/kernels.hpp"
#include "dezero/cpu/onednn_program.hpp"
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

namespace dezero::detail::cpu {

struct OnednnProgram::Impl {};
namespace {
[[noreturn]] void no_onednn() { throw std::logic_error("onednn program: this build has no oneDNN"); }
}  // namespace
bool OnednnProgram::available() { return false; }
OnednnProgram::OnednnProgram() = default;
OnednnProgram::~OnednnProgram() = default;
int OnednnProgram::external(const Dims&) { no_onednn(); }
int OnednnProgram::conv(int, const ConvGeom&, const float*, const float*, const std::vector<PostOp>&) { return -1; }
int OnednnProgram::pool(int, bool, const Dims&, const Dims&, const Dims&, const Dims&) { return -1; }
int OnednnProgram::eltwise(int, const std::vector<PostOp>&) { return -1; }
int OnednnProgram::add(int, int, const std::vector<PostOp>&) { return -1; }
int OnednnProgram::mul(int, int, const std::vector<PostOp>&) { return -1; }
int OnednnProgram::concat(const std::vector<int>&, int) { return -1; }
int OnednnProgram::slice(int, int, std::int64_t, std::int64_t) { return -1; }
int OnednnProgram::shuffle(int, int, std::int64_t) { return -1; }
int OnednnProgram::batch_norm(int, const float*, const float*, const float*, const float*, float) { return -1; }
int OnednnProgram::to_external(int) { no_onednn(); }
void OnednnProgram::finalize() {}
const OnednnProgram::Dims& OnednnProgram::dims(int) const { no_onednn(); }
void OnednnProgram::bind(int, void*) { no_onednn(); }
void OnednnProgram::run(std::size_t, std::size_t) {}
std::size_t OnednnProgram::step_count() const { return 0; }
std::string OnednnProgram::describe() const { return ""; }
std::size_t OnednnProgram::arena_bytes() const { return 0; }
std::size_t OnednnProgram::weight_bytes() const { return 0; }
std::size_t OnednnProgram::reorder_count() const { return 0; }

}  // namespace dezero::detail::cpu
