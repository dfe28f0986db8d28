// tests/test_plot.cpp - examples/common/plot.hpp, the examples' figures: line_chart's CSV,
// the PNG gnuplot draws when it is on the PATH, the command printed when it is not, and
// the quoting of gnuplot strings. (The step programs' own figures are checked by the
// example_* CTest tests in examples/CMakeLists.txt.)
#include <filesystem>
#include <iostream>
#include <sstream>

#include "../examples/common/plot.hpp"
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
