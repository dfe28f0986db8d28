// dezero/pair.hpp - dezero::Pair, a kernel size, stride or padding of a 2-d
// convolution or pooling: one int for both axes or {h, w} (DeZero's pair() in
// functions_conv.py / utils.py).
//
//   F::conv2d(x, W, b, 1, {2, 1});   // stride (1, 1), pad (2, 1)
//
// As in DeZero, anything but one int or two ints is a ValueError ({1, 2, 3}, {}).
// The values themselves are checked by the function that uses them (a stride of 0
// is an error there, a pad of 0 is not).
#pragma once

#include <initializer_list>
#include <string>

#include "dezero/error.hpp"

namespace dezero {

struct Pair {
  int h = 0, w = 0;

  Pair(int v) : h(v), w(v) {}  // NOLINT implicit: `stride = 1`
  Pair(int h_, int w_) : h(h_), w(w_) {}
  Pair(std::initializer_list<int> hw) {  // {h, w}
    if (hw.size() != 2)
      throw ValueError("pair: expected one int or two ints {h, w}, got " + std::to_string(hw.size()) +
                       " values; hint: write 3 or {3, 3}");
    h = *hw.begin();
    w = *(hw.begin() + 1);
  }
  std::string str() const { return "(" + std::to_string(h) + ", " + std::to_string(w) + ")"; }
  bool operator==(const Pair& o) const { return h == o.h && w == o.w; }
  bool operator!=(const Pair& o) const { return !(*this == o); }
};

}  // namespace dezero
