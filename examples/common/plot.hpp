// examples/common/plot.hpp - the examples' figures, drawn by gnuplot run as a program
// (the way dezero/utils/dot_graph.cpp runs Graphviz's `dot`). Not part of the library.
//
// An example writes its data to CSV files (a header line, then numbers), then describes
// a Figure: panels stacked top to bottom, each with a title, axis labels and layers (one
// gnuplot `plot` clause each: a CSV file, its columns, a legend label, a style).
// plot::draw writes the gnuplot script <stem>.gp next to the PNG and, when gnuplot is
// on the PATH, runs it (terminal pngcairo, or png where cairo is missing). Without
// gnuplot nothing fails: the CSV files stay and the program prints the command that
// draws the figure later (`gnuplot <stem>.gp`, run from the same directory).
//
// plot::line_chart(path, panels) is the short form for curves over epochs 1..n (the
// MNIST learning curves): it writes <stem>.csv itself.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace plot {

// --- figure description ---

struct Layer {
  std::string csv;                  // data file with a header line (written by the caller)
  std::string columns;              // gnuplot `using`: "1:2", "1:($3==0 ? $2 : NaN)", "1:2:3"
  std::string label;                // legend entry; "" keeps the layer out of the legend
  std::string style = "lines lw 2"; // gnuplot `with`: "lines lw 2", "points pt 7 ps 0.6", "image", ...
  bool contours = false;            // columns x:y:z of a grid (a blank line after each x): contour lines of z
};

struct Panel {
  std::string title, xlabel, ylabel;
  std::vector<Layer> layers;
  std::string setup{};  // more gnuplot commands for this panel: ranges, key position, palette, ...
};

struct Figure {
  std::string title;          // above the panels ("" for none)
  std::vector<Panel> panels;  // stacked top to bottom
  int width = 800, panel_height = 480;
};

// --- helpers ---

// A gnuplot string literal: double quotes, a backslash before '"' and '\' (y'' stays y'').
inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A shell word for std::system.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// "#1f77b4" for gnuplot's `lc rgb`.
inline std::string hex_color(const std::array<std::uint8_t, 3>& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

// The path with its extension replaced (or added): stem_of("out/a.png") + ".gp".
inline std::string stem_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  auto dot = path.find_last_of('.');
  bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return has_ext ? path.substr(0, dot) : path;
}

inline bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// The gnuplot script that draws `fig` into `png`.
inline std::string script(const std::string& png, const Figure& fig) {
  std::ostringstream gp;
  const int height = fig.panel_height * static_cast<int>(fig.panels.empty() ? 1 : fig.panels.size());
  gp << "# drawn by plot::draw (examples/common/plot.hpp); run: gnuplot " << stem_of(png) << ".gp\n"
     << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
     << "  set terminal pngcairo size " << fig.width << "," << height << " noenhanced font 'Sans,11'\n"
     << "} else {\n"
     << "  set terminal png size " << fig.width << "," << height << " noenhanced\n"
     << "}\n"
     << "set output " << quote(png) << "\n"
     << "set multiplot layout " << fig.panels.size() << ",1";
  if (!fig.title.empty()) gp << " title " << quote(fig.title) << " font ',13'";
  gp << "\n";
  for (const Panel& p : fig.panels) {
    bool map = false;
    for (const Layer& l : p.layers) map = map || l.contours;
    // The grid is solid (lt 1): gnuplot's default, dotted, vanishes in so light a grey.
    gp << "\nreset\n"
       << "set datafile separator comma\nset datafile columnheaders\nset datafile missing 'NaN'\n"
       << "set grid lt 1 lw 1 lc rgb '#e5e5e5'\nset key box opaque samplen 2\nset tics out nomirror\nset border 3\n"
       << "set title " << quote(p.title) << "\nset xlabel " << quote(p.xlabel) << "\nset ylabel "
       << quote(p.ylabel) << "\n";
    // A contour panel is a 3-d plot seen from above (splot ... with `set view map`); the
    // other layers are drawn at z = 0 without contours of their own.
    if (map) gp << "set view map\nset contour base\nunset clabel\nset border 15\nset tics nomirror\n";
    if (!p.setup.empty()) gp << p.setup << "\n";
    gp << (map ? "splot " : "plot ");
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
      const Layer& l = p.layers[i];
      std::string cols = l.columns;
      if (map && !l.contours) cols += ":(0)";
      gp << (i ? ", \\\n     " : "") << quote(l.csv) << " using " << cols << " with " << l.style;
      if (map) gp << (l.contours ? " nosurface" : " nocontours");
      gp << (l.label.empty() ? std::string(" notitle") : " title " + quote(l.label));
    }
    gp << "\n";
  }
  gp << "unset multiplot\n";
  return gp.str();
}

// Draws `fig` into `png` (see the file header). Returns `png` when gnuplot drew it, else "".
inline std::string draw(const std::string& png, const Figure& fig) {
  const std::string gp_path = stem_of(png) + ".gp";
  {
    std::ofstream f(gp_path);
    if (!f) {
      std::cerr << "plot: cannot write " << gp_path << "; hint: does the directory exist?\n";
      return "";
    }
    f << script(png, fig);
  }
  std::vector<std::string> files;  // the data files, each once, in the order of the layers
  std::string data;
  for (const Panel& p : fig.panels)
    for (const Layer& l : p.layers)
      if (std::find(files.begin(), files.end(), l.csv) == files.end()) {
        files.push_back(l.csv);
        data += (data.empty() ? "" : ", ") + l.csv;
      }
  if (!gnuplot_available()) {
    std::cout << "gnuplot is not on the PATH: the data is in " << data << "; to draw " << png
              << ", run: gnuplot " << gp_path << "\n";
    return "";
  }
  std::string cmd = "gnuplot " + shell_quote(gp_path);
  std::cout.flush();  // what the program printed comes before anything gnuplot prints
  std::fflush(stdout);
  if (std::system(cmd.c_str()) != 0) {
    std::cerr << "plot: '" << cmd << "' failed; the data is in " << data << "\n";
    return "";
  }
  std::cout << "plotted " << png << " (gnuplot " << gp_path << ")\n";
  return png;
}

// --- the short form: curves over epochs 1..n, one panel per group (the MNIST curves) ---

struct Series {
  std::string label;
  std::vector<double> y;                  // y[i] at x = i + 1
  std::array<std::uint8_t, 3> color{};    // {0, 0, 0}: gnuplot's colour sequence
};

struct Axes {
  std::string title, xlabel = "epoch", ylabel;
};

// Writes <stem>.csv (epoch, then one column per series, panel by panel) and draws the
// panels into `png`; axes[i] labels panel i (default: x "epoch", y the first label).
// Returns `png` when gnuplot drew it, else "".
inline std::string line_chart(const std::string& png, const std::vector<std::vector<Series>>& panels,
                              const std::vector<Axes>& axes = {}, const std::string& title = "") {
  const std::string csv = stem_of(png) + ".csv";
  std::size_t n = 0;
  std::vector<const Series*> cols;
  for (const auto& panel : panels)
    for (const Series& s : panel) {
      cols.push_back(&s);
      n = s.y.size() > n ? s.y.size() : n;
    }
  {
    std::ofstream f(csv);
    if (!f) {
      std::cerr << "plot: cannot write " << csv << "; hint: does the directory exist?\n";
      return "";
    }
    f << "epoch";
    for (const Series* s : cols) f << "," << s->label;
    f << "\n";
    f.precision(10);
    for (std::size_t i = 0; i < n; ++i) {
      f << i + 1;
      for (const Series* s : cols) {
        f << ",";
        if (i < s->y.size() && std::isfinite(s->y[i])) f << s->y[i];
        else f << "NaN";
      }
      f << "\n";
    }
  }
  std::cout << "wrote " << n << (n == 1 ? " epoch of " : " epochs of ") << cols.size() << " curves to " << csv << "\n";

  Figure fig;
  fig.title = title;
  fig.panel_height = panels.size() > 1 ? 360 : 480;
  int col = 2;
  for (std::size_t p = 0; p < panels.size(); ++p) {
    Panel panel;
    Axes a = p < axes.size() ? axes[p] : Axes{};
    panel.title = a.title;
    panel.xlabel = a.xlabel;
    panel.ylabel = a.ylabel;
    if (panel.ylabel.empty() && !panels[p].empty()) {  // "train loss" -> "loss"
      const std::string& first = panels[p][0].label;
      panel.ylabel = first.substr(first.find_last_of(' ') == std::string::npos ? 0 : first.find_last_of(' ') + 1);
    }
    // Epochs 1..n on the x axis, half an epoch of room at each end (no epoch 0 when n is 1, no
    // point on the border), at most about 10 tic labels; fixed margins keep the panels aligned,
    // the legend right of them.
    const std::size_t every = std::max<std::size_t>(1, (n + 9) / 10);
    panel.setup = "set xtics " + std::to_string(every) + "\nset xrange [0.5:" + std::to_string(n > 0 ? n : 1) +
                  ".5]\nset offsets 0, 0, graph 0.05, graph 0.05\nset key outside right top vertical Left reverse\n"
                  "set lmargin 12\nset rmargin 24";
    for (const Series& s : panels[p]) {
      std::string style = "linespoints lw 2 pt 7 ps 0.8";
      if (s.color != std::array<std::uint8_t, 3>{}) style += " lc rgb " + quote(hex_color(s.color));
      panel.layers.push_back({csv, "1:" + std::to_string(col++), s.label, style});
    }
    fig.panels.push_back(panel);
  }
  return draw(png, fig);
}

}  // namespace plot
