/// \file
/// Element types of a Tensor.
///
/// Four dtypes: float32, float64, int32, int64. Type promotion follows NumPy for
/// these four (int + float -> float64 unless the int operand is a 0-d scalar, see
/// dezero::result_type).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace dezero {

/// The element type of a Tensor: one of four, as NumPy's float32, float64, int32, int64.
enum class DType : std::uint8_t { Float32 = 0, Float64 = 1, Int32 = 2, Int64 = 3 };

/// The dtypes under NumPy's names: `dezero::float32` is `DType::Float32`.
///@{
inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
///@}

/// The size of one element in bytes: 4 for float32 and int32, 8 for float64 and int64.
constexpr std::size_t dtype_size(DType t) {
  return (t == DType::Float32 || t == DType::Int32) ? 4 : 8;
}
/// Whether `t` is a floating dtype (float32 or float64).
constexpr bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64; }
/// Whether `t` is an integer dtype (int32 or int64).
constexpr bool is_integer(DType t) { return !is_floating(t); }

/// The NumPy name of a dtype: "float32", "float64", "int32" or "int64".
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
  }
  return "?";
}
/// Writes the dtype's name (dtype_name()) to `os`.
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

/// The DType of a C++ element type: `dtype_of<float>() == float32`.
///
/// Defined for float, double, std::int32_t and std::int64_t; any other type has no definition
/// (a compile or link error).
///@{
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::Int64; }
///@}

/// NumPy's promotion of two array dtypes (no scalar rule): same kind -> wider,
/// int with float -> float64 (NumPy: int32 + float32 -> float64).
constexpr DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_floating(a) && is_floating(b)) return DType::Float64;
  if (is_integer(a) && is_integer(b)) return DType::Int64;
  return DType::Float64;
}

}  // namespace dezero
