/// \file
/// The struct dezero::Pair, a kernel size, stride or padding of a 2-d
/// convolution or pooling: one int for both axes or {h, w} (DeZero's pair() in
/// functions_conv.py / utils.py); and dezero::Triple, its 3-d twin (F::conv3d).
///
///     F::conv2d(x, W, b, 1, {2, 1});   // stride (1, 1), pad (2, 1)
///
/// Anything but one int or two ints ({1, 2, 3}, {}) does not compile (DeZero raises
/// a ValueError at run time). The values themselves are checked by the function that
/// uses them (a stride of 0 is an error there, a pad of 0 is not).
#pragma once

#include <string>

namespace dezero {

/// A kernel size, stride or padding of a 2-d convolution or pooling: one int for both
/// axes, or {h, w}.
///
/// `Pair p = 3;` is (3, 3); `Pair p = {2, 1};` is (2, 1). See the file's description
/// for where it is used.
struct Pair {
  /// The values for the height (h) and the width (w) axis.
  ///@{
  int h = 0, w = 0;
  ///@}

  /// One value for both axes, implicit: `stride = 1`.
  Pair(int v) : h(v), w(v) {}  // NOLINT implicit: `stride = 1`
  /// Two values, `{h, w}`.
  Pair(int h_, int w_) : h(h_), w(w_) {}
  // No std::initializer_list constructor: it would let GCC 12 read a C++20
  // designated list such as Conv2d(16, 3, {.pad = 1}) as a Pair too (ambiguous).
  /// Python's tuple spelling: "(2, 1)".
  std::string str() const { return "(" + std::to_string(h) + ", " + std::to_string(w) + ")"; }
  /// Equal when both values are.
  ///@{
  bool operator==(const Pair& o) const { return h == o.h && w == o.w; }
  bool operator!=(const Pair& o) const { return !(*this == o); }
  ///@}
};

/// A stride or padding of a 3-d convolution (F::conv3d): one int for the three axes, or
/// {d, h, w} (depth, height, width), as Pair is for 2-d ones.
struct Triple {
  /// The values for the depth (d), height (h) and width (w) axis.
  ///@{
  int d = 0, h = 0, w = 0;
  ///@}

  /// One value for the three axes, implicit: `stride = 1`.
  Triple(int v) : d(v), h(v), w(v) {}  // NOLINT implicit: `stride = 1`
  /// Three values, `{d, h, w}`.
  Triple(int d_, int h_, int w_) : d(d_), h(h_), w(w_) {}
  /// Python's tuple spelling: "(2, 1, 1)".
  std::string str() const {
    return "(" + std::to_string(d) + ", " + std::to_string(h) + ", " + std::to_string(w) + ")";
  }
  /// Equal when the three values are.
  ///@{
  bool operator==(const Triple& o) const { return d == o.d && h == o.h && w == o.w; }
  bool operator!=(const Triple& o) const { return !(*this == o); }
  ///@}
};

}  // namespace dezero
