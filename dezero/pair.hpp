// dezero/pair.hpp - dezero::Pair, a kernel size, stride or padding of a 2-d
// convolution or pooling: one int for both axes or {h, w} (DeZero's pair() in
// functions_conv.py / utils.py).
//
//   F::conv2d(x, W, b, 1, {2, 1});   // stride (1, 1), pad (2, 1)
//
// Anything but one int or two ints ({1, 2, 3}, {}) does not compile (DeZero raises
// a ValueError at run time). The values themselves are checked by the function that
// uses them (a stride of 0 is an error there, a pad of 0 is not).
#pragma once

#include <string>

namespace dezero {

struct Pair {
  int h = 0, w = 0;

  Pair(int v) : h(v), w(v) {}  // NOLINT implicit: `stride = 1`
  Pair(int h_, int w_) : h(h_), w(w_) {}  // {h, w}
  // No std::initializer_list constructor: it would let GCC 12 read a C++20
  // designated list such as Conv2d(16, 3, {.pad = 1}) as a Pair too (ambiguous).
  std::string str() const { return "(" + std::to_string(h) + ", " + std::to_string(w) + ")"; }
  bool operator==(const Pair& o) const { return h == o.h && w == o.w; }
  bool operator!=(const Pair& o) const { return !(*this == o); }
};

}  // namespace dezero
