// dezero/mn/wire.cpp - gradients on a 16-bit wire (CommunicatorOptions::allreduce_grad_dtype): the
// float32 <-> bfloat16 / float16 conversions and the MPI reductions that add two 16-bit vectors in
// float32 and round the sum back. The conversions are the core's (dezero/half.hpp: round to nearest,
// ties to even; a value past the type's range becomes infinity; NaN stays a quiet NaN with its sign
// and the top bits of its payload, as the CPU's F16C and AVX-512 instructions make it), and so are
// the loops over a gradient: the bulk converters, which use those instructions when the CPU has
// them (asked at run time), on pieces small enough to stay in the first-level cache while they are
// scaled, widened or summed.
//
// Before the core had its 16-bit types this file had conversions of its own; for finite values and
// infinities they gave the same bits. A float16 NaN now keeps the top 10 bits of a float32 NaN's
// payload (the portable code dropped them where F16C kept them, so the two paths differed); bfloat16
// NaNs are unchanged.
#include <algorithm>

#include "dezero/half.hpp"
#include "dezero/mn/detail.hpp"

namespace dezero::mn::detail {

std::uint16_t float_to_bf16(float f) { return dezero::detail::bf16_bits_from_float(f); }
float bf16_to_float(std::uint16_t h) { return dezero::detail::float_from_bf16_bits(h); }
std::uint16_t float_to_f16(float f) { return dezero::detail::f16_bits_from_float(f); }
float f16_to_float(std::uint16_t h) { return dezero::detail::float_from_f16_bits(h); }

// --- whole vectors ----------------------------------------------------------------------------------
namespace {

constexpr std::int64_t kPiece = 1024;  // floats per piece: 4 KB, twice that for a sum's two operands

// The 16-bit words as the core's element types (both are their 16 bits, nothing else).
bfloat16_t* as_bf16(std::uint16_t* p) { return reinterpret_cast<bfloat16_t*>(p); }
float16_t* as_f16(std::uint16_t* p) { return reinterpret_cast<float16_t*>(p); }
const bfloat16_t* as_bf16(const std::uint16_t* p) { return reinterpret_cast<const bfloat16_t*>(p); }
const float16_t* as_f16(const std::uint16_t* p) { return reinterpret_cast<const float16_t*>(p); }

void narrow(GradWireDtype dtype, const float* src, std::int64_t n, std::uint16_t* dst) {
  if (dtype == GradWireDtype::bfloat16) to_bfloat16(src, as_bf16(dst), static_cast<std::size_t>(n));
  else to_float16(src, as_f16(dst), static_cast<std::size_t>(n));
}

void widen(GradWireDtype dtype, const std::uint16_t* src, std::int64_t n, float* dst) {
  if (dtype == GradWireDtype::bfloat16) to_float(as_bf16(src), dst, static_cast<std::size_t>(n));
  else to_float(as_f16(src), dst, static_cast<std::size_t>(n));
}

// inout[i] = round16(widen(in[i]) + widen(inout[i])), a piece at a time.
void sum16(GradWireDtype dtype, const std::uint16_t* in, std::uint16_t* inout, std::int64_t n) {
  float a[kPiece], b[kPiece];
  for (std::int64_t at = 0; at < n; at += kPiece) {
    const std::int64_t m = std::min(kPiece, n - at);
    widen(dtype, in + at, m, a);
    widen(dtype, inout + at, m, b);
    for (std::int64_t i = 0; i < m; ++i) b[i] += a[i];
    narrow(dtype, b, m, inout + at);
  }
}

// MPI_User_function on MPI_UINT16_T.
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  sum16(GradWireDtype::bfloat16, static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(inout), *len);
}

void sum_f16(void* in, void* inout, int* len, MPI_Datatype*) {
  sum16(GradWireDtype::float16, static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(inout), *len);
}

}  // namespace

void pack16(GradWireDtype dtype, const float* src, float scale, std::int64_t n, std::uint16_t* dst) {
  float scaled[kPiece];
  for (std::int64_t at = 0; at < n; at += kPiece) {
    const std::int64_t m = std::min(kPiece, n - at);
    for (std::int64_t i = 0; i < m; ++i) scaled[i] = src[at + i] * scale;
    narrow(dtype, scaled, m, dst + at);
  }
}

void unpack16(GradWireDtype dtype, const std::uint16_t* src, std::int64_t n, float* dst) { widen(dtype, src, n, dst); }

MPI_User_function* wire_sum_function(GradWireDtype dtype) {
  return dtype == GradWireDtype::bfloat16 ? &sum_bf16 : &sum_f16;
}

}  // namespace dezero::mn::detail

namespace dezero::mn {

// --- the 16-bit wire (allreduce_grad_dtype) -----------------------------------------------------------
// One group (a dtype and a device) of gradients g_i, n elements in all: each rank packs
// round16(g_i / size()) into one buffer of n 16-bit words, one MPI_Allreduce with the reduction of
// wire.cpp (add in float32, round back) sums them, and each gradient is overwritten with the widened
// sums, in place as mean_inplace scales in place. GPU gradients go through host copies (the NCCL
// communicator refuses the option at creation).
// n 16-bit words of `wire` at `buffer` summed over the ranks in place (add in float32, round back):
// the ring for 64 KiB and up when it is the algorithm, else MPI_Allreduce with the wire's MPI_Op.
void Communicator::sum16(std::uint16_t* buffer, std::int64_t n, GradWireDtype wire, const char* op) {
  const int which = wire == GradWireDtype::bfloat16 ? 0 : 1;
  if (algorithm_ == AllreduceAlgorithm::ring && size_ > 1 && n * 2 >= detail::kRingMinBytes) {
    detail::ring_allreduce(state_->world, buffer, n, which == 0 ? detail::RingSum::bfloat16 : detail::RingSum::float16,
                           ring_segment_bytes_, op);
    return;
  }
  if (state_->wire_sum[which] == MPI_OP_NULL) {
    DEZERO_MPI_CHECK(MPI_Op_create(detail::wire_sum_function(wire), 1, &state_->wire_sum[which]));
    State* st = state_.get();
    st->release.push_back([st, which] { MPI_Op_free(&st->wire_sum[which]); });
  }
  detail::in_chunks(n, [&](std::int64_t off, int count) {
    DEZERO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer + off, count, MPI_UINT16_T, state_->wire_sum[which],
                                   state_->world));
  });
}

void Communicator::mean_half_wire(std::vector<Tensor*>& grads, GradWireDtype wire) {
  std::int64_t total = 0;
  for (const Tensor* g : grads) total += g->size();
  wire_buffer_.resize(static_cast<std::size_t>(total));
  std::uint16_t* words = wire_buffer_.data();
  const double scale = 1.0 / static_cast<double>(size_);
  std::vector<Tensor> host(grads.size());  // float32 host copies of the gradients that are not one
  std::int64_t at = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = *grads[i];
    const bool direct = g.device().is_cpu() && g.dtype() == float32;
    if (!direct) host[i] = g.to(Device::cpu()).astype(float32);
    const float* src = direct ? g.data<float>() : host[i].data<float>();
    detail::pack16(wire, src, static_cast<float>(scale), g.size(), words + at);
    at += g.size();
  }
  sum16(words, total, wire, "multi_node_mean_grad");
  at = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    Tensor& g = *grads[i];
    const bool direct = g.device().is_cpu() && g.dtype() == float32;
    float* dst = direct ? g.data<float>() : host[i].data<float>();
    detail::unpack16(wire, words + at, g.size(), dst);
    at += g.size();
    if (!direct) copyto(g, host[i].astype(g.dtype()));
  }
}

}  // namespace dezero::mn
