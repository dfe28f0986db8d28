/// \file
/// The namespace dezero::cuda: Chainer's chainer.backends.cuda utilities in C++
/// (devices, streams and events, the memory pool, transfers, and the runtime-compiled
/// user kernels elementwise / reduce / raw: CuPy's Elementwise-, Reduction- and RawKernel).
///
/// The umbrella of the five `cuda/*.hpp` headers; include one of them for less. Always
/// available to include: nothing here needs CUDA headers. On a build without CUDA, or
/// a machine without a GPU, is_available() is false and everything that needs a device
/// throws a DeviceError saying "no CUDA device is available on this machine" with a
/// hint. Statistics (memory_pool()) and pure host helpers (get_array_module, memoize,
/// workspace limit, the TF32 switch) work everywhere.
#pragma once

// --- devices, transfers, get_array_module --------------------------------------------
#include "dezero/cuda/device.hpp"
// --- streams and events ----------------------------------------------------------------
#include "dezero/cuda/stream.hpp"
// --- the device memory pool, pinned memory, the cuDNN workspace limit, TF32 --------------
#include "dezero/cuda/memory_pool.hpp"
// --- memoize / clear_memo --------------------------------------------------------------
#include "dezero/cuda/memoize.hpp"
// --- runtime-compiled kernels (NVRTC) ----------------------------------------------------
#include "dezero/cuda/rtc.hpp"

/// \namespace dezero::cuda
/// dezero::cuda: Chainer's chainer.backends.cuda utilities in C++.
///
/// Devices, streams and events, the memory pool, transfers, and the runtime-compiled user
/// kernels elementwise / reduce / raw (CuPy's Elementwise-, Reduction- and RawKernel).
///
/// Nothing here needs CUDA headers. On a build without CUDA, or a machine without a GPU,
/// is_available() is false and everything that needs a device throws a DeviceError saying
/// "no CUDA device is available on this machine" with a hint. Statistics (memory_pool()) and
/// pure host helpers (get_array_module, memoize, the workspace limit, the TF32 switch) work
/// everywhere.
