// examples/step55.cpp - Step 55: the output size of a convolution. A 4x4 input, a 3x3
// kernel, stride 1 and padding 1 give a 4x4 output: (H + 2 PH - KH) / SH + 1.
//
// The DeZero Python it mirrors (steps/step55.py):
//   def get_conv_outsize(input_size, kernel_size, stride, pad):
//       return (input_size + pad * 2 - kernel_size) // stride + 1
//
//   H, W = 4, 4  # Input size
//   KH, KW = 3, 3  # Kernel size
//   SH, SW = 1, 1  # Kernel stride
//   PH, PW = 1, 1  # Padding size
//
//   OH = get_conv_outsize(H, KH, SH, PH)
//   OW = get_conv_outsize(W, KW, SW, PW)
//   print(OH, OW)
#include <dezero/dezero.hpp>

#include <iostream>

#include "common/report.hpp"

int main() try {
  long H = 4, W = 4;    // input size
  long KH = 3, KW = 3;  // kernel size
  long SH = 1, SW = 1;  // kernel stride
  long PH = 1, PW = 1;  // padding size

  long OH = dezero::utils::get_conv_outsize(H, KH, SH, PH);
  long OW = dezero::utils::get_conv_outsize(W, KW, SW, PW);
  std::cout << OH << " " << OW << "\n";
} catch (const std::exception& e) {
  return example::report_error("step55", e);
}
