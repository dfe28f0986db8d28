// dezero/backend/dispatch.hpp - element-type dispatch: runs a body with T bound to the
// C++ type of a DType (host code in cpu/ and tensor/, device code in cuda/*.cu).
#pragma once

#include <cstdint>

#include "dezero/dtype.hpp"

#define DEZERO_DISPATCH(DT, T, ...)                       \
  switch (DT) {                                           \
    case ::dezero::DType::Float32: { using T = float; __VA_ARGS__; break; }          \
    case ::dezero::DType::Float64: { using T = double; __VA_ARGS__; break; }         \
    case ::dezero::DType::Int32: { using T = std::int32_t; __VA_ARGS__; break; }     \
    case ::dezero::DType::Int64: { using T = std::int64_t; __VA_ARGS__; break; }     \
  }
