// dezero/utils.hpp - dezero::utils: gradient checks, array comparison, graphs.
#pragma once

#include <functional>
#include <string>

#include "dezero/core.hpp"

namespace dezero::utils {

// Central differences (eps 1e-4, float64) of sum(f(x)) with respect to every element of x.
// f runs with backprop on, as in DeZero, so it may call backward() itself.
Tensor numerical_grad(const std::function<Variable(const Variable&)>& f, const Tensor& x, double eps = 1e-4);

// DeZero's gradient_check: x is cast to float64, the backprop gradient of sum(f(x))
// is compared with numerical_grad by array_allclose. Prints the worst element on
// failure (to stderr) and returns false; returns true when they agree.
bool gradient_check(const std::function<Variable(const Variable&)>& f, const Tensor& x, double rtol = 1e-4,
                    double atol = 1e-5);

// NumPy's allclose (|a - b| <= atol + rtol |b|, broadcasting) and array_equal
// (same shape, equal values; int and float compare by value). Both read
// Variables and device tensors too.
bool array_allclose(const Tensor& a, const Tensor& b, double rtol = 1e-4, double atol = 1e-5);
bool array_equal(const Tensor& a, const Tensor& b);

// Step 26: the DOT text of the graph that produced `output` (DeZero's format).
std::string get_dot_graph(const Variable& output, bool verbose = true);
// Writes the DOT file next to `to_file` and renders it with Graphviz `dot` when it is
// installed. Returns the path written (the image, or the .dot file when `dot` is
// missing, after printing a message that says so). Throws IOError if the file
// cannot be written.
std::string plot_dot_graph(const Variable& output, bool verbose = true, const std::string& to_file = "graph.png");

// DeZero's conv size helpers (used by the convolution functions).
inline long get_conv_outsize(long input_size, long kernel_size, long stride, long pad) {
  return (input_size + pad * 2 - kernel_size) / stride + 1;
}
inline long get_deconv_outsize(long size, long k, long s, long p) { return s * (size - 1) + k - 2 * p; }

}  // namespace dezero::utils
