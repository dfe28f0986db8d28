/// \file
/// Element types of a Tensor.
///
/// Six dtypes: float32, float64, int32, int64 and the 16-bit floats bfloat16 and float16.
/// Type promotion follows NumPy for the first four (int + float -> float64 unless the int
/// operand is a 0-d scalar, see dezero::result_type) and PyTorch for the 16-bit floats
/// (see dezero::promote_types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "dezero/half.hpp"

namespace dezero {

/// The element type of a Tensor: NumPy's float32, float64, int32, int64, and the 16-bit floats
/// bfloat16 (ml_dtypes' / PyTorch's) and float16 (IEEE binary16, NumPy's float16).
///
/// The codes are stable (weight files, snapshots and the multi-node wire carry them): new
/// dtypes are appended, existing codes never change.
///
/// The 16-bit floats are storage dtypes: every element-wise, reduction and shape op accepts
/// them, computes in float32 and stores the result in the 16-bit dtype (as NumPy and PyTorch do
/// for half on the CPU); copies, reshapes, transposes, slices and concatenations move their two
/// bytes unchanged. An op without a 16-bit path throws DtypeError naming the op and the dtype.
enum class DType : std::uint8_t { Float32 = 0, Float64 = 1, Int32 = 2, Int64 = 3, BFloat16 = 4, Float16 = 5 };

/// The dtypes under NumPy's names: `dezero::float32` is `DType::Float32`.
///@{
inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
inline constexpr DType bfloat16 = DType::BFloat16;
inline constexpr DType float16 = DType::Float16;
///@}

/// The size of one element in bytes: 2 for bfloat16 and float16, 4 for float32 and int32,
/// 8 for float64 and int64.
constexpr std::size_t dtype_size(DType t) {
  return (t == DType::BFloat16 || t == DType::Float16) ? 2 : (t == DType::Float32 || t == DType::Int32) ? 4 : 8;
}
/// Whether `t` is one of the 16-bit floating dtypes (bfloat16 or float16).
constexpr bool is_half(DType t) { return t == DType::BFloat16 || t == DType::Float16; }
/// Whether `t` is a floating dtype (float32, float64, bfloat16 or float16).
constexpr bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64 || is_half(t); }
/// Whether `t` is an integer dtype (int32 or int64).
constexpr bool is_integer(DType t) { return !is_floating(t); }

/// The name of a dtype: "float32", "float64", "int32", "int64", "bfloat16" or "float16".
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
  }
  return "?";
}
/// Writes the dtype's name (dtype_name()) to `os`.
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

/// The DType of a C++ element type: `dtype_of<float>() == float32`.
///
/// Defined for float, double, std::int32_t, std::int64_t, bfloat16_t and float16_t; any other
/// type has no definition (a compile or link error).
///@{
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<bfloat16_t>() { return DType::BFloat16; }
template <> constexpr DType dtype_of<float16_t>() { return DType::Float16; }
///@}

/// The promotion of two array dtypes (no scalar rule).
///
/// Among float32, float64, int32, int64 it is NumPy's: same kind -> wider, int with float ->
/// float64 (NumPy: int32 + float32 -> float64). With a 16-bit float it is PyTorch's:
/// - bfloat16 with float16 -> float32 (neither holds the other);
/// - a 16-bit float with float32 -> float32, with float64 -> float64;
/// - an integer with a 16-bit float -> that 16-bit float (NumPy would give float64 for int32
///   with float16; PyTorch keeps the float's dtype, which is what mixed precision wants).
constexpr DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_half(a) || is_half(b)) {
    if (is_half(a) && is_half(b)) return DType::Float32;
    const DType h = is_half(a) ? a : b, o = is_half(a) ? b : a;
    return is_integer(o) ? h : o;
  }
  if (is_floating(a) && is_floating(b)) return DType::Float64;
  if (is_integer(a) && is_integer(b)) return DType::Int64;
  return DType::Float64;
}

}  // namespace dezero
