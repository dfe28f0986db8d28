/// \file
/// Reductions and broadcasting: sum, sum_to, broadcast_to, average, mean, max, min, clip (steps 39-40).
///
/// `axes` is an int, a list of ints or Axes() for all axes (the default); negative axes
/// count from the end, and one out of range is a dezero::IndexError. With `keepdims`
/// the reduced axes stay as size 1. Results keep x's dtype unless a function says otherwise.
#pragma once

#include "dezero/core.hpp"

namespace dezero::F {

/// The sum of x over `axes` (all by default); gradient: gy broadcast back to x's shape.
/// The result keeps x's dtype (an integer sum stays in x's integer type).
Variable sum(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
/// x summed down to `shape` (DeZero's sum_to); gradient: gy broadcast back to x's shape.
/// It sums over the leading axes x has in excess and the axes where `shape` has 1.
/// Returns x itself, with no node, when the shape is unchanged. Unlike DeZero's, a `shape`
/// that does not broadcast to x's shape is a dezero::ShapeError.
Variable sum_to(const Variable& x, const Shape& shape);
/// x broadcast to `shape` as NumPy does (a copy); gradient: F::sum_to of gy back to x's shape.
/// Returns x itself, with no node, when the shape is unchanged. A shape x does not
/// broadcast to is a dezero::ShapeError.
Variable broadcast_to(const Variable& x, const Shape& shape);
/// The mean of x over `axes` (all by default): `sum(x, axes, keepdims) * (y.size / x.size)`, one
/// node (Mean) whose count comes from the shapes it is run on, so that an exported graph (ONNX's
/// ReduceMean) divides by the batch it gets. An integer x is cast to float64 first (NumPy's mean).
Variable average(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
/// The same as average() (DeZero's alias mean).
Variable mean(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
/// The maximum of x over `axes` (all by default); every element equal to its maximum gets
/// the full gradient (DeZero's Max). An empty reduction is a dezero::ValueError.
Variable max(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);  // ties share the full gradient
/// The minimum of x over `axes` (all by default); ties get the full gradient, as in max().
/// An empty reduction is a dezero::ValueError.
Variable min(const Variable& x, const Axes& axes = Axes(), bool keepdims = false);
/// x with every element clipped to [x_min, x_max]; the gradient passes where
/// `x_min <= x <= x_max` (inclusive) and is 0 elsewhere. `x_min > x_max` is a dezero::ValueError.
Variable clip(const Variable& x, double x_min, double x_max);

}  // namespace dezero::F
