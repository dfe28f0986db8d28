// dezero/utils/dot_graph.cpp - get_dot_graph / plot_dot_graph (step 26): the graph of
// Functions and Variables in Graphviz's DOT language, in DeZero's node format.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unordered_set>

#include "dezero/utils.hpp"

namespace dezero::utils {

namespace {

std::uintptr_t id_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

std::string dtype_str(const Variable& v) { return dtype_name(v.dtype()); }

std::string dot_var(const Variable& v, bool verbose) {
  std::string name = v.name();
  if (verbose && v.data().defined()) {
    if (!name.empty()) name += ": ";
    name += v.shape().str() + " " + dtype_str(v);
  }
  std::ostringstream os;
  os << id_of(v.node().get()) << " [label=\"" << name << "\", color=orange, style=filled]\n";
  return os.str();
}

std::string dot_func(const Function& f) {
  std::ostringstream os;
  os << id_of(&f) << " [label=\"" << f.name() << "\", color=lightblue, style=filled, shape=box]\n";
  for (const Variable& x : f.inputs()) os << id_of(x.node().get()) << " -> " << id_of(&f) << "\n";
  for (const Variable& y : f.outputs())
    if (y.defined()) os << id_of(&f) << " -> " << id_of(y.node().get()) << "\n";
  return os.str();
}

}  // namespace

std::string get_dot_graph(const Variable& output, bool verbose) {
  if (!output.defined()) throw ValueError("get_dot_graph: the output variable is empty");
  std::string txt;
  std::vector<std::shared_ptr<Function>> funcs;
  std::unordered_set<const Function*> seen;
  auto add_func = [&](const std::shared_ptr<Function>& f) {
    if (f && seen.insert(f.get()).second) funcs.push_back(f);
  };
  add_func(output.creator());
  txt += dot_var(output, verbose);
  while (!funcs.empty()) {
    auto f = funcs.back();
    funcs.pop_back();
    txt += dot_func(*f);
    for (const Variable& x : f->inputs()) {
      txt += dot_var(x, verbose);
      add_func(x.creator());
    }
  }
  return "digraph g {\n" + txt + "}";
}

std::string plot_dot_graph(const Variable& output, bool verbose, const std::string& to_file) {
  std::string dot = get_dot_graph(output, verbose);
  auto slash = to_file.find_last_of('/');
  auto dotpos = to_file.find_last_of('.');
  bool has_ext = dotpos != std::string::npos && (slash == std::string::npos || dotpos > slash);
  std::string stem = has_ext ? to_file.substr(0, dotpos) : to_file;
  std::string ext = has_ext ? to_file.substr(dotpos + 1) : "png";
  std::string dot_path = stem + ".dot";
  {
    std::ofstream f(dot_path);
    if (!f) throw IOError("plot_dot_graph: cannot write '" + dot_path + "'; hint: does the directory exist?");
    f << dot;
    if (!f) throw IOError("plot_dot_graph: writing '" + dot_path + "' failed");
  }
  if (ext == "dot") return dot_path;
  if (std::system("command -v dot >/dev/null 2>&1") != 0) {
    std::cerr << "plot_dot_graph: Graphviz 'dot' is not installed; wrote " << dot_path
              << " (render it with: dot " << dot_path << " -T " << ext << " -o " << to_file << ")\n";
    return dot_path;
  }
  std::string cmd = "dot '" + dot_path + "' -T " + ext + " -o '" + to_file + "'";
  if (std::system(cmd.c_str()) != 0)
    throw IOError("plot_dot_graph: '" + cmd + "' failed; the DOT text is in " + dot_path);
  return to_file;
}

}  // namespace dezero::utils
