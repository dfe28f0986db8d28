/// \file
/// Utilities of dezero::utils: gradient checks, array comparison, graphs.
#pragma once

#include <functional>
#include <string>

#include "dezero/core.hpp"

/// dezero::utils: DeZero's dezero.utils: gradient checks, array comparison, graphs, files and images.
///
/// utils.hpp has the gradient checks (numerical_grad, gradient_check), the array
/// comparisons (array_allclose, array_equal), the computational-graph pictures of step 26
/// (get_dot_graph, plot_dot_graph) and the convolution size helpers; npz.hpp reads and
/// writes NumPy's .npz / .npy files, download.hpp downloads into the cache directory
/// (get_file, cache_dir) and image.hpp loads, saves and resizes images.
namespace dezero::utils {

/// Central differences (eps 1e-4, float64) of sum(f(x)) with respect to every element of x.
/// f runs with backprop on, as in DeZero, so it may call backward() itself.
/// The result is a float64 tensor of x's shape on x's device; f runs twice per element.
Tensor numerical_grad(const std::function<Variable(const Variable&)>& f, const Tensor& x, double eps = 1e-4);

/// DeZero's gradient_check: x is cast to float64, the backprop gradient of sum(f(x))
/// is compared with numerical_grad by array_allclose. Prints the worst element on
/// failure (to stderr) and returns false; returns true when they agree.
bool gradient_check(const std::function<Variable(const Variable&)>& f, const Tensor& x, double rtol = 1e-4,
                    double atol = 1e-5);

/// NumPy's allclose: `|a - b| <= atol + rtol |b|` for every element, broadcasting.
/// A NaN anywhere gives false; infinities must be equal. Reads Variables and device
/// tensors too. Shapes that do not broadcast are a dezero::ShapeError.
bool array_allclose(const Tensor& a, const Tensor& b, double rtol = 1e-4, double atol = 1e-5);
/// NumPy's array_equal: the same shape and equal values (int and float compare by value).
/// Reads Variables and device tensors too; two undefined tensors are equal.
bool array_equal(const Tensor& a, const Tensor& b);

/// Step 26: the DOT text of the graph that produced `output` (DeZero's format).
/// With `verbose`, a Variable's label adds its shape and dtype to its name.
/// Names (Variable::name(), Function::name()) appear only inside the labels' quoted strings,
/// escaped by DOT's rules: '"' and '\\' get a backslash, a newline is written `\n` and a
/// carriage return `\r`, other control characters show as '?'. Whatever a name holds, it
/// cannot end its label or add nodes, edges or attributes.
std::string get_dot_graph(const Variable& output, bool verbose = true);
/// Writes the DOT text to `<stem>.dot` next to `to_file` and renders `to_file` with Graphviz
/// `dot` when it is installed. The format comes from the extension, one of png, svg, pdf, jpg,
/// jpeg, gif, ps or dot, in either case (none means png; .dot writes only the DOT text);
/// any other is a ValueError, before anything is written. `dot` is found in the absolute
/// folders of $PATH and run from an argument list, never a shell (`dot <stem>.dot -T<format>
/// -o <to_file>`, a name beginning with '-' passed as "./-..."), so a file name is only ever
/// a file name. The .dot file is written whole under a fresh temporary name, then renamed
/// (a symlink planted at its name is replaced, not followed).
///
/// Returns the path written: `to_file`, or the .dot file when `dot` is not installed (after
/// printing to stderr the command that renders it). Throws IOError when the .dot file cannot
/// be written, or when `dot` fails or is killed (the message has the command line, and the
/// .dot file is kept).
std::string plot_dot_graph(const Variable& output, bool verbose = true, const std::string& to_file = "graph.png");

/// DeZero's conv size helper (used by the convolution functions): the output size
/// `(input_size + 2 pad - kernel_size) / stride + 1` of a convolution or pooling.
inline long get_conv_outsize(long input_size, long kernel_size, long stride, long pad) {
  return (input_size + pad * 2 - kernel_size) / stride + 1;
}
/// DeZero's deconv size helper: the output size `s (size - 1) + k - 2 p` of a transposed
/// convolution of kernel k, stride s and pad p (deconv2d's default outsize).
inline long get_deconv_outsize(long size, long k, long s, long p) { return s * (size - 1) + k - 2 * p; }

}  // namespace dezero::utils
