// dezero/utils/dot_graph.cpp - get_dot_graph / plot_dot_graph (step 26): the graph of
// Functions and Variables in Graphviz's DOT language, in DeZero's node format.
//
// Names reach the DOT text only inside escaped label strings, and Graphviz `dot` runs
// from an argument vector (posix_spawn, no shell), found on the PATH's absolute folders,
// with an output format from a short list: nothing in a variable's name or the file name
// is ever read as DOT syntax, a shell command or an option of `dot`.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "dezero/env.hpp"
#include "dezero/tensor/checks.hpp"
#include "dezero/utils.hpp"
#include "dezero/utils/atomic_file.hpp"

extern char** environ;

namespace dezero::utils {

namespace {
using dezero::detail::fail;

std::uintptr_t id_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// --- DOT text ----------------------------------------------------------------------------------
// A DOT double-quoted string holding `s`. Inside one, only \" is an escape of the DOT parser,
// but Graphviz reads labels as escString, where a backslash starts \n, \l, \N, \G, ...: a
// backslash is doubled, '"' escaped, a newline written \n and a carriage return \r (line
// breaks in the drawing); the other control characters (NUL included) become '?'.
std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if ((c < 0x20 && ch != '\t') || c == 0x7f) {
      out += '?';
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string dot_var(const Variable& v, bool verbose) {
  std::string name = v.name();
  if (verbose && v.data().defined()) {
    if (!name.empty()) name += ": ";
    name += v.shape().str() + " " + dtype_name(v.dtype());
  }
  std::ostringstream os;
  os << id_of(v.node().get()) << " [label=" << dot_quote(name) << ", color=orange, style=filled]\n";
  return os.str();
}

std::string dot_func(const Function& f) {
  std::ostringstream os;
  os << id_of(&f) << " [label=" << dot_quote(f.name()) << ", color=lightblue, style=filled, shape=box]\n";
  for (const Variable& x : f.inputs()) os << id_of(x.node().get()) << " -> " << id_of(&f) << "\n";
  for (const Variable& y : f.outputs())
    if (y.defined()) os << id_of(&f) << " -> " << id_of(y.node().get()) << "\n";
  return os.str();
}

// --- running dot -------------------------------------------------------------------------------
constexpr const char* kFormats[] = {"png", "svg", "pdf", "jpg", "jpeg", "gif", "ps", "dot"};

std::string format_list() {
  std::string s;
  for (const char* f : kFormats) s += (s.empty() ? "" : ", ") + std::string(f);
  return s;
}

// `s` as a shell would need it, for messages a user may copy: bare when it is plain, else in
// single quotes.
std::string shell_quote(const std::string& s) {
  bool plain = !s.empty();
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && !std::strchr("_-+./:=,@%", ch)) plain = false;
  if (plain) return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + shell_quote(a);
  return s;
}

// A file name as an argument of dot: one that begins with '-' would be read as an option.
std::string file_arg(const std::string& path) { return !path.empty() && path[0] == '-' ? "./" + path : path; }

// The executable `dot` in the first absolute folder of $PATH that has one ("" when none).
// Relative folders are skipped: the working directory is not a place to run programs from.
std::string find_dot() {
  const char* path = detail::env_value("PATH");  // secure_getenv: none in a setuid program
  const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir[0] != '/') continue;
    const std::string exe = dir + (dir.back() == '/' ? "dot" : "/dot");
    struct stat st {};
    if (::stat(exe.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(exe.c_str(), X_OK) == 0) return exe;
  }
  return "";
}

// Runs `exe` with `argv` (argv[0] is the name shown) and waits; an IOError when it cannot be
// started, exits non-zero or is killed. Messages show `shown_argv` (the command a user would type).
void run(const std::string& exe, const std::vector<std::string>& argv, const std::vector<std::string>& shown_argv,
         const std::string& dot_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string shown = command_line(shown_argv);
  const std::string kept = "; the DOT text is in '" + dot_path + "'";
  pid_t pid = 0;
  const int err = ::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, args.data(), environ);
  if (err != 0) fail<IOError>("plot_dot_graph", "cannot run ", exe, ": ", std::strerror(err), kept);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      fail<IOError>("plot_dot_graph", "waiting for `", shown, "` failed: ", std::strerror(errno), kept);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                          : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                : "failed";
  fail<IOError>("plot_dot_graph", "`", shown, "` ", how, " (dot's own message, if any, is on stderr)", kept);
}

}  // namespace

std::string get_dot_graph(const Variable& output, bool verbose) {
  if (!output.defined()) fail<ValueError>("get_dot_graph", "the output variable is empty");
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
  if (to_file.empty()) fail<ValueError>("plot_dot_graph", "the file name is empty; hint: to_file = \"graph.png\"");
  const auto slash = to_file.find_last_of('/');
  const auto dotpos = to_file.find_last_of('.');
  const bool has_ext = dotpos != std::string::npos && (slash == std::string::npos || dotpos > slash);
  const std::string stem = has_ext ? to_file.substr(0, dotpos) : to_file;
  std::string ext = has_ext ? to_file.substr(dotpos + 1) : "png";
  std::string format = ext;
  for (char& ch : format) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  bool known = false;
  for (const char* f : kFormats) known = known || format == f;
  if (!known)
    fail<ValueError>("plot_dot_graph", "unknown output format '", ext, "' in '", to_file, "'; known: ", format_list(),
                     " (upper or lower case)");

  const std::string dot = get_dot_graph(output, verbose);
  const std::string dot_path = stem + ".dot";
  try {
    detail::write_file_atomically(dot_path, dot, "plot_dot_graph");
  } catch (const IOError& e) {
    std::string why = e.what();
    const std::string op = "plot_dot_graph: ";
    if (why.compare(0, op.size(), op) == 0) why.erase(0, op.size());
    fail<IOError>("plot_dot_graph", "cannot write '", dot_path, "' (", why, ")");
  }
  if (format == "dot") return dot_path;

  const std::vector<std::string> argv = {"dot", file_arg(dot_path), "-T" + format, "-o", file_arg(to_file)};
  const std::string exe = find_dot();
  if (exe.empty()) {
    std::cerr << "plot_dot_graph: Graphviz 'dot' is not installed; wrote " << dot_path
              << " (render it with: " << command_line(argv) << ")\n";
    return dot_path;
  }
  // dot writes the picture to a temporary file of ours (an unpredictable name, made with
  // O_EXCL | O_NOFOLLOW), renamed onto to_file once dot succeeded: a symlink planted at
  // to_file is replaced, never followed, and a failed run leaves no half-written picture.
  detail::AtomicFile picture(to_file, "plot_dot_graph");
  const std::vector<std::string> render = {"dot", file_arg(dot_path), "-T" + format, "-o",
                                           file_arg(picture.temp_path())};
  run(exe, render, argv, dot_path);
  picture.commit();
  return to_file;
}

}  // namespace dezero::utils
