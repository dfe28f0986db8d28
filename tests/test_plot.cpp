// tests/test_plot.cpp - the pictures: examples/common/plot.hpp, the examples' figures
// (line_chart's CSV, the PNG gnuplot draws when it is on the PATH, the command printed when it
// is not, the quoting of gnuplot strings), and utils::get_dot_graph / plot_dot_graph (step 26):
// hostile names stay inside their DOT labels, and Graphviz `dot` runs from an argument vector
// with a known format, never through a shell. A fake `dot` on the PATH records its arguments,
// so those cases need no Graphviz; the ones that draw with the real one say "skipped" without it.
// (The step programs' own figures are checked by the example_* CTest tests in
// examples/CMakeLists.txt.)
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "../examples/common/plot.hpp"
#include "support/dot_text.hpp"
#include "support/test_util.hpp"

namespace fs = std::filesystem;

namespace {

// Captures std::cout for one scope (doctest reports through std::cout: check after it ends).
struct CoutCapture {
  std::ostringstream out;
  std::streambuf* old;
  CoutCapture() : old(std::cout.rdbuf(out.rdbuf())) {}
  ~CoutCapture() { std::cout.rdbuf(old); }
};

bool is_png(const fs::path& p) {
  std::string bytes = fs::exists(p) ? dzt::read_bytes(p) : std::string();
  return bytes.size() > 1000 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 &&
         bytes.compare(bytes.size() - 8, 4, "IEND") == 0;
}

plot::Figure one_curve(const std::string& csv) {
  plot::Panel panel{"a title", "x", "y", {{csv, "1:2", "y''"}}, ""};
  return plot::Figure{"the figure", {panel}, 640, 400};
}

}  // namespace

TEST_CASE("plot::line_chart writes <stem>.csv, and the PNG when gnuplot is on the PATH") {
  dzt::TempDir dir;
  const std::string png = dir.str() + "/curves.png";
  std::string drawn, printed;
  {
    CoutCapture capture;
    // The second series is shorter: its missing epoch is NaN, which gnuplot skips.
    drawn = plot::line_chart(png,
                             {{{"train loss", {1.0, 0.5, 0.25}, {31, 119, 180}}, {"test loss", {1.1, 0.6}, {}}},
                              {{"train accuracy", {0.5, 0.7, 0.9}, {}}}},
                             {{"loss", "epoch", "cross entropy"}}, "learning curves");
    printed = capture.out.str();
  }
  CHECK(dzt::read_bytes(dir.path / "curves.csv") ==
        "epoch,train loss,test loss,train accuracy\n1,1,1.1,0.5\n2,0.5,0.6,0.7\n3,0.25,NaN,0.9\n");
  CHECK(dzt::has(printed, "wrote 3 epochs of 3 curves to " + dir.str() + "/curves.csv\n"));
  std::string script = dzt::read_bytes(dir.path / "curves.gp");
  CHECK(dzt::has(script, "set multiplot layout 2,1 title \"learning curves\""));
  CHECK(dzt::has(script, "set ylabel \"cross entropy\""));
  CHECK(dzt::has(script, "set ylabel \"accuracy\""));  // the default: the first label's last word
  CHECK(dzt::has(script, "using 1:3 with linespoints lw 2 pt 7 ps 0.8 title \"test loss\""));
  CHECK(dzt::has(script, "lc rgb \"#1f77b4\""));
  if (plot::gnuplot_available()) {
    CHECK(drawn == png);
    CHECK(is_png(png));
    CHECK(dzt::has(printed, "plotted " + png));
  } else {
    MESSAGE("skipped: gnuplot is not installed (the PNG check)");
    CHECK(drawn.empty());
  }
}

TEST_CASE("without gnuplot on the PATH, plot::draw keeps the data and prints the command that draws it") {
  dzt::TempDir dir;
  const std::string csv = dir.str() + "/data.csv", png = dir.str() + "/figure.png";
  dzt::write_bytes(csv, "x,y\n0,0\n1,1\n2,4\n");
  std::string drawn, printed;
  bool found = true;
  {
    dzt::ScopedEnv path("PATH", dir.str() + "/no-such-dir");
    found = plot::gnuplot_available();
    CoutCapture capture;
    drawn = plot::draw(png, one_curve(csv));
    printed = capture.out.str();
  }
  CHECK_FALSE(found);
  CHECK(printed == "gnuplot is not on the PATH: the data is in " + csv + "; to draw " + png + ", run: gnuplot " +
                       dir.str() + "/figure.gp\n");
  CHECK(drawn.empty());
  CHECK_FALSE(fs::exists(png));
  std::string script = dzt::read_bytes(dir.path / "figure.gp");
  CHECK(dzt::has(script, "set output \"" + png + "\""));
  CHECK(dzt::has(script, "plot \"" + csv + "\" using 1:2 with lines lw 2 title \"y''\""));

  // The same script, run later with gnuplot, draws the figure.
  if (plot::gnuplot_available()) {
    CHECK(std::system(("gnuplot '" + dir.str() + "/figure.gp'").c_str()) == 0);
    CHECK(is_png(png));
  } else {
    MESSAGE("skipped: gnuplot is not installed (drawing the script later)");
  }
}

TEST_CASE("plot::quote writes gnuplot string literals") {
  CHECK(plot::quote("y''") == "\"y''\"");
  CHECK(plot::quote("a \"b\" \\c") == "\"a \\\"b\\\" \\\\c\"");
  CHECK(plot::stem_of("out/a.b/c.png") == "out/a.b/c");
  CHECK(plot::stem_of("out/a.b/c") == "out/a.b/c");
  CHECK(plot::hex_color({255, 127, 14}) == "#ff7f0e");
}

// --- get_dot_graph / plot_dot_graph ----------------------------------------------------------------
namespace {

using dezero::Variable;

// A Function whose name is anything (DeZero shows a Function by its class's name; a user's
// subclass may return any text).
class Named : public dezero::Function {
 public:
  explicit Named(std::string n) : n_(std::move(n)) {}
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * 2.0}; }
  dezero::VariableList backward(const dezero::VariableList& gys) override { return {gys[0] * 2.0}; }
  std::string name() const override { return n_; }

 private:
  std::string n_;
};

// y = f(x) with these names: three nodes, two edges.
struct SmallGraph {
  Variable x{dezero::array(2.0)}, y;
  std::shared_ptr<Named> f;
  SmallGraph(const std::string& x_name, const std::string& f_name, const std::string& y_name)
      : f(std::make_shared<Named>(f_name)) {
    x.set_name(x_name);
    y = (*f)(x);
    y.set_name(y_name);
  }
};

struct CerrCapture {
  std::ostringstream out;
  std::streambuf* old;
  CerrCapture() : old(std::cerr.rdbuf(out.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(old); }
};


// Whether the fake dot's arguments were `head` then "<picture>.<random>.tmp\n": the picture is
// written to a temporary file next to it, renamed onto `picture` when dot succeeds.
bool rendered_to(const fs::path& args, const std::string& head, const std::string& picture) {
  const std::string got = dzt::read_bytes(args);
  if (got.compare(0, head.size(), head) != 0) return false;
  const std::string out = got.substr(head.size());
  return out.compare(0, picture.size() + 1, picture + ".") == 0 && out.size() > picture.size() + 6 &&
         out.compare(out.size() - 5, 5, ".tmp\n") == 0;
}

// A fake Graphviz: <dir>/bin/dot writes its arguments, one a line, to <dir>/args and runs
// `then` (exit 0 by default); <dir>/bin comes first on the PATH for the object's life.
struct FakeDot {
  fs::path bin, args;
  std::optional<dzt::ScopedEnv> path;
  explicit FakeDot(const fs::path& dir, const std::string& then = "exit 0") : bin(dir / "bin"), args(dir / "args") {
    fs::create_directory(bin);
    dzt::write_bytes(bin / "dot", "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + args.string() + "'\n" + then + "\n");
    REQUIRE(::chmod((bin / "dot").c_str(), 0755) == 0);
    const char* old = std::getenv("PATH");
    path.emplace("PATH", bin.string() + ":" + (old ? old : "/usr/bin:/bin"));
  }
};

// The real Graphviz `dot` on the PATH, or "".
std::string real_dot() {
  const char* p = std::getenv("PATH");
  std::stringstream dirs(p ? p : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && d[0] == '/' && ::access((d + "/dot").c_str(), X_OK) == 0) return d + "/dot";
  return "";
}

std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("plot_dot_graph: a file name with shell syntax is only a file name; no shell runs") {
  dzt::TempDir dir;
  FakeDot dot(dir.path);
  dzt::ScopedCwd cwd(dir.path);
  SmallGraph g("x", "F", "y");

  // The "extension" is "png;touch X;#": not a format, refused before anything is written or run.
  std::string e = dzt::thrown<dezero::ValueError>([&] { dezero::utils::plot_dot_graph(g.y, false, "graph.png;touch X;#"); });
  CHECK(dzt::has(e, "unknown output format 'png;touch X;#'"));
  CHECK(dzt::has(e, "png, svg, pdf, jpg, jpeg, gif, ps, dot"));
  CHECK_FALSE(fs::exists(dir.path / "X"));
  CHECK_FALSE(fs::exists(dot.args));

  // A name that closes a shell quote: dot gets it, literally, as one argument.
  const std::string name = "g'; touch X; echo '.png";
  CHECK(dezero::utils::plot_dot_graph(g.y, false, name) == name);
  CHECK_FALSE(fs::exists(dir.path / "X"));
  CHECK(fs::exists(dir.path / "g'; touch X; echo '.dot"));
  CHECK(rendered_to(dot.args, "g'; touch X; echo '.dot\n-Tpng\n-o\n", "g'; touch X; echo '.png"));
}

TEST_CASE("plot_dot_graph: known formats only, any case; a name starting with '-' is not an option of dot") {
  dzt::TempDir dir;
  FakeDot dot(dir.path);
  dzt::ScopedCwd cwd(dir.path);
  SmallGraph g("x", "F", "y");

  std::string e = dzt::thrown<dezero::ValueError>([&] { dezero::utils::plot_dot_graph(g.y, false, "graph.exe"); });
  CHECK(dzt::has(e, "plot_dot_graph: unknown output format 'exe' in 'graph.exe'"));
  CHECK(dzt::has(e, "known: png, svg, pdf, jpg, jpeg, gif, ps, dot"));
  e = dzt::thrown<dezero::ValueError>([&] { dezero::utils::plot_dot_graph(g.y, false, "g.png -o x"); });
  CHECK(dzt::has(e, "'png -o x'"));
  CHECK_FALSE(fs::exists(dir.path / "graph.dot"));
  CHECK_FALSE(fs::exists(dot.args));

  CHECK(dezero::utils::plot_dot_graph(g.y, false, "Graph.SVG") == "Graph.SVG");
  CHECK(rendered_to(dot.args, "Graph.dot\n-Tsvg\n-o\n", "Graph.SVG"));

  CHECK(dezero::utils::plot_dot_graph(g.y, false, "-Tps.png") == "-Tps.png");
  CHECK(rendered_to(dot.args, "./-Tps.dot\n-Tpng\n-o\n", "./-Tps.png"));
  CHECK(fs::exists(dir.path / "-Tps.dot"));

  // .dot: the DOT text only; dot does not run.
  fs::remove(dot.args);
  CHECK(dezero::utils::plot_dot_graph(g.y, false, "only.dot") == "only.dot");
  CHECK(dzt::read_bytes(dir.path / "only.dot") == dezero::utils::get_dot_graph(g.y, false));
  CHECK_FALSE(fs::exists(dot.args));
}

TEST_CASE("plot_dot_graph: a symlink planted at the picture's name is replaced, never written through") {
  dzt::TempDir dir;
  FakeDot dot(dir.path, "out=; for a; do out=$a; done; printf 'PNG' > \"$out\"");  // writes its -o file
  dzt::ScopedCwd cwd(dir.path);
  SmallGraph g("x", "F", "y");
  dzt::write_bytes(dir.path / "precious", "keep");
  fs::create_symlink(dir.path / "precious", dir.path / "pic.png");
  CHECK(dezero::utils::plot_dot_graph(g.y, false, "pic.png") == "pic.png");
  CHECK(dzt::read_bytes(dir.path / "precious") == "keep");
  CHECK_FALSE(fs::is_symlink(dir.path / "pic.png"));
  CHECK(dzt::read_bytes(dir.path / "pic.png") == "PNG");
  // a failed run leaves neither a picture nor a temporary file
  FakeDot failing(dir.path, "exit 1");
  CHECK_THROWS_AS(dezero::utils::plot_dot_graph(g.y, false, "other.png"), dezero::IOError);
  CHECK_FALSE(fs::exists(dir.path / "other.png"));
  for (const std::string& n : dir.names()) CHECK_MESSAGE(n.find(".tmp") == std::string::npos, n);
}

TEST_CASE("plot_dot_graph: dot failing or killed is an IOError with the command and the .dot file kept") {
  dzt::TempDir dir;
  dzt::ScopedCwd cwd(dir.path);
  SmallGraph g("x", "F", "y");
  {
    FakeDot dot(dir.path, "exit 3");
    std::string e = dzt::thrown<dezero::IOError>([&] { dezero::utils::plot_dot_graph(g.y, false, "my graph.png"); });
    CHECK(dzt::has(e, "plot_dot_graph: `dot 'my graph.dot' -Tpng -o 'my graph.png'` exited with status 3"));
    CHECK(dzt::has(e, "the DOT text is in 'my graph.dot'"));
    CHECK(dzt::read_bytes(dir.path / "my graph.dot") == dezero::utils::get_dot_graph(g.y, false));
  }
  {
    FakeDot dot(dir.path, "kill -KILL $$");
    std::string e = dzt::thrown<dezero::IOError>([&] { dezero::utils::plot_dot_graph(g.y, false, "g.svg"); });
    CHECK(dzt::has(e, "`dot g.dot -Tsvg -o g.svg` was killed by signal 9"));
  }
}

TEST_CASE("plot_dot_graph without dot on the PATH writes the .dot file and says how to render it") {
  dzt::TempDir dir;
  dzt::ScopedCwd cwd(dir.path);
  SmallGraph g("x", "F", "y");
  dzt::ScopedEnv path("PATH", dir.str() + "/no-such-dir");
  std::string written, said;
  {
    CerrCapture capture;
    written = dezero::utils::plot_dot_graph(g.y, false, "a b.svg");
    said = capture.out.str();
  }
  CHECK(written == "a b.dot");
  CHECK(dzt::read_bytes(dir.path / "a b.dot") == dezero::utils::get_dot_graph(g.y, false));
  CHECK(said == "plot_dot_graph: Graphviz 'dot' is not installed; wrote a b.dot (render it with: dot 'a b.dot' -Tsvg "
                "-o 'a b.svg')\n");
}

TEST_CASE("get_dot_graph: names cannot end their label: quotes, backslashes and newlines are escaped") {
  const std::string x_name = "a\" -> evil [label=\"x";
  const std::string f_name = "F\"]\n99 -> 98 [label=\"\\N";
  const std::string y_name = std::string("back\\slash\r\"\x01") + '\0' + "end";
  SmallGraph g(x_name, f_name, y_name);

  const std::string text = dezero::utils::get_dot_graph(g.y, false);
  INFO(text);
  dzt::dot::Parsed p = dzt::dot::parse(text);
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK(p.nodes == 3);
  CHECK(p.edges == 2);
  CHECK(p.labels == std::vector<std::string>{dzt::dot::shown_name(y_name), f_name, x_name});
  CHECK(dzt::dot::shown_name(y_name) == std::string("back\\slash\r\"??end"));

  dzt::dot::Parsed verbose = dzt::dot::parse(dezero::utils::get_dot_graph(g.y, true));
  REQUIRE(verbose.ok);
  REQUIRE(verbose.labels.size() == 3);
  CHECK(verbose.labels[2] == x_name + ": () float64");

  // Graphviz reads the text the same way: three nodes, two edges, the name as text.
  if (real_dot().empty()) {
    MESSAGE("skipped: Graphviz 'dot' is not installed (drawing the hostile names)");
    return;
  }
  dzt::TempDir dir;
  const std::string svg = dir.str() + "/hostile.svg";
  REQUIRE(dezero::utils::plot_dot_graph(g.y, false, svg) == svg);
  const std::string drawn = dzt::read_bytes(svg);
  CHECK(count(drawn, "class=\"node\"") == 3);
  CHECK(count(drawn, "class=\"edge\"") == 2);
  CHECK(dzt::has(drawn, "evil [label=&quot;x"));
}

TEST_CASE("plot_dot_graph replaces a symlink planted at the .dot file's name instead of writing through it") {
  dzt::TempDir dir;
  SmallGraph g("x", "F", "y");
  dzt::write_bytes(dir.path / "precious", "keep me");
  fs::create_symlink(dir.path / "precious", dir.path / "graph.dot");
  CHECK(dezero::utils::plot_dot_graph(g.y, false, dir.str() + "/graph.dot") == dir.str() + "/graph.dot");
  CHECK(dzt::read_bytes(dir.path / "precious") == "keep me");
  CHECK_FALSE(fs::is_symlink(dir.path / "graph.dot"));
  CHECK(dzt::read_bytes(dir.path / "graph.dot") == dezero::utils::get_dot_graph(g.y, false));
  CHECK(dir.names() == std::vector<std::string>{"graph.dot", "precious"});
}

TEST_CASE("plot_dot_graph: a .dot file that cannot be written is an IOError naming it") {
  dzt::TempDir dir;
  SmallGraph g("x", "F", "y");
  const std::string to = dir.str() + "/no-such-dir/g.png";
  std::string e = dzt::thrown<dezero::IOError>([&] { dezero::utils::plot_dot_graph(g.y, false, to); });
  CHECK(dzt::has(e, "plot_dot_graph: cannot write '" + dir.str() + "/no-such-dir/g.dot' (cannot create"));
  CHECK(dzt::has(e, "hint: does the folder exist?"));
}
