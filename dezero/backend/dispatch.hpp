// dezero/backend/dispatch.hpp - element-type dispatch: runs a body with T bound to the
// C++ type of a DType (host code in cpu/ and tensor/, device code in gpu/*.cu).
//
// DEZERO_DISPATCH binds the four arithmetic dtypes. The 16-bit floats have no arithmetic
// kernels (tensor/ computes them in float32): reaching one here throws DtypeError naming the
// primitive, instead of falling through the switch with nothing done. DEZERO_DISPATCH_BITS is
// for primitives that only move elements (copies, gathers): it binds bfloat16 and float16 to
// std::uint16_t, their bits.
#pragma once

#include <cstdint>
#include <string>

#include "dezero/dtype.hpp"
#include "dezero/error.hpp"

namespace dezero::detail {

[[noreturn]] inline void no_half_kernel(const char* primitive, DType dt) {
  throw DtypeError(std::string(primitive) + ": the backend has no " + dtype_name(dt) +
                   " kernel for this operation; hint: convert with astype(dezero::float32) first");
}

}  // namespace dezero::detail

#define DEZERO_DISPATCH(DT, T, ...)                       \
  switch (DT) {                                           \
    case ::dezero::DType::Float32: { using T = float; __VA_ARGS__; break; }          \
    case ::dezero::DType::Float64: { using T = double; __VA_ARGS__; break; }         \
    case ::dezero::DType::Int32: { using T = std::int32_t; __VA_ARGS__; break; }     \
    case ::dezero::DType::Int64: { using T = std::int64_t; __VA_ARGS__; break; }     \
    case ::dezero::DType::BFloat16:                                                  \
    case ::dezero::DType::Float16: ::dezero::detail::no_half_kernel(__func__, DT);   \
  }

#define DEZERO_DISPATCH_BITS(DT, T, ...)                  \
  switch (DT) {                                           \
    case ::dezero::DType::Float32: { using T = float; __VA_ARGS__; break; }          \
    case ::dezero::DType::Float64: { using T = double; __VA_ARGS__; break; }         \
    case ::dezero::DType::Int32: { using T = std::int32_t; __VA_ARGS__; break; }     \
    case ::dezero::DType::Int64: { using T = std::int64_t; __VA_ARGS__; break; }     \
    case ::dezero::DType::BFloat16:                                                  \
    case ::dezero::DType::Float16: { using T = std::uint16_t; __VA_ARGS__; break; }  \
  }
