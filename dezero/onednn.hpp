/// \file
/// Whether the host's oneDNN convolution path is there: is_onednn_available() (Chainer's
/// chainer.backends.intel64.is_ideep_available(), iDeep being oneDNN's Python binding).
///
/// \code{.cpp}
///   if (dezero::is_onednn_available()) ...  // float32 CPU convolutions run in oneDNN
/// \endcode
///
/// With oneDNN (a build that found Debian's libdnnl-dev, cmake -DDEZERO_ONEDNN=AUTO or ON),
/// the host backend computes float32 NCHW convolutions (forward + bias, the data and the
/// weight gradients) with oneDNN's primitives; without it (or with DEZERO_ONEDNN=0 in the
/// environment, read once) with im2col + the library's own SGEMM. Both give the same values
/// to float32 precision. Declared in every build; nothing here needs oneDNN's headers.
#pragma once

namespace dezero {

/// True when this build has the oneDNN path and oneDNN made its CPU engine on this
/// machine; false otherwise. (Like Chainer's, it says the library is usable, not that it
/// is used: DEZERO_ONEDNN=0 keeps the convolutions on im2col + SGEMM either way.)
bool is_onednn_available();

/// Whether autocast(dezero::bfloat16) products run on a bfloat16 kernel on this CPU
/// (oneDNN's AVX512-BF16 or AMX-BF16 matmul); false without oneDNN, with DEZERO_ONEDNN=0, below
/// the avx512_bf16 level (dezero/cpu.hpp's DEZERO_CPU_ISA), or on a CPU without those
/// instructions, where autocast's products run in float32 (or, with DEZERO_AUTOCAST_EMULATE=1,
/// on the float32 kernels with their operands rounded to bfloat16: core.hpp's autocast).
bool cpu_supports_bf16();
/// The same for autocast(dezero::float16) (oneDNN's AVX512-FP16 / AMX-FP16 matmul).
bool cpu_supports_fp16();

}  // namespace dezero
