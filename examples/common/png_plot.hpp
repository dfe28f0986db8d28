// examples/common/png_plot.hpp - a minimal line-chart writer for the examples:
// draws curves on an RGB canvas and saves it as a PNG (zlib only, no other
// dependency). Not part of the library: just enough for MNIST's learning curves.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace plot {

struct Series {
  std::string label;
  std::vector<double> y;
  std::array<std::uint8_t, 3> color;
};

class Canvas {
 public:
  Canvas(int w, int h) : w_(w), h_(h), px_(static_cast<std::size_t>(w) * h * 3, 255) {}
  void set(int x, int y, std::array<std::uint8_t, 3> c) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
    auto* p = &px_[(static_cast<std::size_t>(y) * w_ + x) * 3];
    p[0] = c[0];
    p[1] = c[1];
    p[2] = c[2];
  }
  void line(double x0, double y0, double x1, double y1, std::array<std::uint8_t, 3> c, int thick = 1) {
    int n = static_cast<int>(std::max(std::fabs(x1 - x0), std::fabs(y1 - y0))) + 1;
    for (int i = 0; i <= n; ++i) {
      double t = static_cast<double>(i) / n;
      int x = static_cast<int>(std::lround(x0 + (x1 - x0) * t)), y = static_cast<int>(std::lround(y0 + (y1 - y0) * t));
      for (int dx = -thick / 2; dx <= thick / 2; ++dx)
        for (int dy = -thick / 2; dy <= thick / 2; ++dy) set(x + dx, y + dy, c);
    }
  }
  void save_png(const std::string& path) const {
    std::vector<std::uint8_t> raw;
    raw.reserve(static_cast<std::size_t>(h_) * (w_ * 3 + 1));
    for (int y = 0; y < h_; ++y) {
      raw.push_back(0);  // filter: none
      raw.insert(raw.end(), px_.begin() + static_cast<std::ptrdiff_t>(y) * w_ * 3,
                 px_.begin() + static_cast<std::ptrdiff_t>(y + 1) * w_ * 3);
    }
    uLongf clen = compressBound(raw.size());
    std::vector<std::uint8_t> comp(clen);
    if (compress2(comp.data(), &clen, raw.data(), raw.size(), 6) != Z_OK) throw std::runtime_error("png: zlib failed");
    comp.resize(clen);
    std::ofstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("png: cannot write " + path);
    const std::uint8_t sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    f.write(reinterpret_cast<const char*>(sig), 8);
    std::vector<std::uint8_t> ihdr;
    put32(ihdr, w_);
    put32(ihdr, h_);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit RGB
    chunk(f, "IHDR", ihdr);
    chunk(f, "IDAT", comp);
    chunk(f, "IEND", {});
  }
  int width() const { return w_; }
  int height() const { return h_; }

 private:
  static void put32(std::vector<std::uint8_t>& v, std::uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<std::uint8_t>(x >> s));
  }
  static void chunk(std::ofstream& f, const char* type, const std::vector<std::uint8_t>& data) {
    std::vector<std::uint8_t> len;
    put32(len, static_cast<std::uint32_t>(data.size()));
    f.write(reinterpret_cast<const char*>(len.data()), 4);
    std::vector<std::uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    f.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
    std::uint32_t crc = static_cast<std::uint32_t>(crc32(0L, body.data(), static_cast<uInt>(body.size())));
    std::vector<std::uint8_t> c;
    put32(c, crc);
    f.write(reinterpret_cast<const char*>(c.data()), 4);
  }
  int w_, h_;
  std::vector<std::uint8_t> px_;
};

// Draws each series (x = 1..n) in its own panel stacked vertically: one panel per group.
inline void line_chart(const std::string& path, const std::vector<std::vector<Series>>& panels) {
  const int W = 640, PH = 240, M = 30;
  Canvas c(W, PH * static_cast<int>(panels.size()));
  for (std::size_t p = 0; p < panels.size(); ++p) {
    int top = static_cast<int>(p) * PH;
    double lo = INFINITY, hi = -INFINITY;
    std::size_t n = 0;
    for (auto& s : panels[p]) {
      for (double v : s.y) { lo = std::min(lo, v); hi = std::max(hi, v); }
      n = std::max(n, s.y.size());
    }
    if (!(hi > lo)) { hi = lo + 1; }
    double pad = (hi - lo) * 0.05;
    lo -= pad;
    hi += pad;
    std::array<std::uint8_t, 3> axis{0, 0, 0}, grid{220, 220, 220};
    for (int g = 0; g <= 4; ++g) {
      double y = top + M + (PH - 2 * M) * g / 4.0;
      c.line(M, y, W - M, y, grid);
    }
    c.line(M, top + M, M, top + PH - M, axis);
    c.line(M, top + PH - M, W - M, top + PH - M, axis);
    auto X = [&](std::size_t i) { return n <= 1 ? M : M + (W - 2.0 * M) * i / (n - 1.0); };
    auto Y = [&](double v) { return top + PH - M - (PH - 2.0 * M) * (v - lo) / (hi - lo); };
    for (auto& s : panels[p]) {
      for (std::size_t i = 0; i + 1 < s.y.size(); ++i) c.line(X(i), Y(s.y[i]), X(i + 1), Y(s.y[i + 1]), s.color, 3);
      for (std::size_t i = 0; i < s.y.size(); ++i)
        for (int d = -3; d <= 3; ++d) c.line(X(i) - 3, Y(s.y[i]) + d, X(i) + 3, Y(s.y[i]) + d, s.color);
    }
  }
  c.save_png(path);
}

}  // namespace plot
