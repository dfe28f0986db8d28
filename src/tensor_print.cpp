// tensor_print.cpp - NumPy's str() and repr() of arrays.
//
// Floats follow NumPy's defaults (precision 8, floatmode 'maxprec'): each value
// uses the shortest digits that round-trip, at most 8 after the point; columns are
// aligned; integral float arrays print as "1." ; scientific notation when the
// largest magnitude is >= 1e16, the smallest nonzero is < 1e-4, or their ratio
// exceeds 1e3. A 0-d array prints like Python's repr of the scalar. Arrays over
// 1000 elements are summarised with "..." (3 edge items); lines wrap at 75.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tensor_impl.hpp"

namespace dezero {

namespace {

// Shortest round-trip digits of v in fixed notation (double or float precision).
std::string shortest_fixed(double v, bool single) {
  char buf[512];
  auto r = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::fixed)
                  : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}
std::string shortest_sci(double v, bool single) {
  char buf[64];
  auto r = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::scientific)
                  : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  return std::string(buf, r.ptr);
}

// Python's repr(float): shortest round-trip, scientific when exp < -4 or >= 16.
std::string python_repr(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  int e = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  std::string sci = shortest_sci(v, single);  // like 1.5e+16 / 1e-05
  auto epos = sci.find('e');
  if (epos != std::string::npos) e = std::stoi(sci.substr(epos + 1));
  if (e < -4 || e >= 16) {
    std::string mant = sci.substr(0, epos);
    int ev = std::stoi(sci.substr(epos + 1));
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", ev < 0 ? '-' : '+', std::abs(ev));
    return mant + eb;
  }
  std::string f = shortest_fixed(v, single);
  if (f.find('.') == std::string::npos) f += ".0";
  return f;
}

struct FloatFormat {
  bool sci = false;
  bool integral = true;  // every finite value is an integer -> "1."
  int int_width = 0, frac_width = 0, exp_digits = 2;
  bool single = false;
};

// Fixed notation with at most 8 fractional digits, trailing zeros trimmed.
std::string fixed8(double v, bool single) {
  std::string s = shortest_fixed(v, single);
  auto dot = s.find('.');
  if (dot != std::string::npos && s.size() - dot - 1 > 8) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.8f", v);
    s = buf;
    while (s.back() == '0') s.pop_back();
  }
  if (s.find('.') == std::string::npos) s += ".";
  return s;
}

// Scientific mantissa with at most 8 fractional digits, trimmed: "1.5e+16".
void sci8(double v, bool single, std::string& mant, int& exp) {
  std::string s = shortest_sci(v, single);
  auto epos = s.find('e');
  mant = s.substr(0, epos);
  exp = std::stoi(s.substr(epos + 1));
  auto dot = mant.find('.');
  if (dot != std::string::npos && mant.size() - dot - 1 > 8) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.8e", v);
    std::string t = buf;
    epos = t.find('e');
    mant = t.substr(0, epos);
    exp = std::stoi(t.substr(epos + 1));
    while (mant.back() == '0') mant.pop_back();
  }
  if (mant.find('.') == std::string::npos) mant += ".";
}

std::string special(double v) {
  if (std::isnan(v)) return "nan";
  return v < 0 ? "-inf" : "inf";
}

FloatFormat make_format(const std::vector<double>& vals, bool single) {
  FloatFormat f;
  f.single = single;
  double maxv = 0, minv = INFINITY;
  bool any = false;
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    double a = std::fabs(v);
    any = true;
    if (a > maxv) maxv = a;
    if (a != 0 && a < minv) minv = a;
    if (std::floor(v) != v) f.integral = false;
  }
  if (!any) minv = 0;
  if (minv == INFINITY) minv = 0;
  if (maxv >= 1e16 || (minv != 0 && (minv < 1e-4 || maxv / minv > 1e3))) f.sci = true;
  if (f.sci) f.integral = false;
  for (double v : vals) {
    if (!std::isfinite(v)) {
      f.int_width = std::max<int>(f.int_width, static_cast<int>(special(v).size()));
      continue;
    }
    if (f.sci) {
      std::string m;
      int e;
      sci8(v, single, m, e);
      auto dot = m.find('.');
      f.int_width = std::max<int>(f.int_width, static_cast<int>(dot));
      f.frac_width = std::max<int>(f.frac_width, static_cast<int>(m.size() - dot - 1));
      if (std::abs(e) >= 100) f.exp_digits = 3;
    } else {
      std::string s = f.integral ? shortest_fixed(v, single) + "." : fixed8(v, single);
      if (f.integral) {
        // shortest_fixed of an integral value has no '.', e.g. "3" -> "3."
        s = shortest_fixed(v, single);
        auto d = s.find('.');
        if (d != std::string::npos) s = s.substr(0, d);
        s += ".";
      }
      auto dot = s.find('.');
      f.int_width = std::max<int>(f.int_width, static_cast<int>(dot));
      f.frac_width = std::max<int>(f.frac_width, static_cast<int>(s.size() - dot - 1));
    }
  }
  return f;
}

std::string format_float(double v, const FloatFormat& f) {
  if (!std::isfinite(v)) {
    std::string s = special(v);
    int w = f.int_width + 1 + f.frac_width;
    if (f.sci) w += 2 + f.exp_digits;
    return std::string(std::max(0, w - static_cast<int>(s.size())), ' ') + s;
  }
  std::string s;
  if (f.sci) {
    std::string m;
    int e;
    sci8(v, f.single, m, e);
    auto dot = m.find('.');
    std::string ip = m.substr(0, dot), fp = m.substr(dot + 1);
    fp.append(f.frac_width - fp.size(), '0');  // NumPy pads mantissas with zeros
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%0*d", e < 0 ? '-' : '+', f.exp_digits, std::abs(e));
    s = std::string(f.int_width - ip.size(), ' ') + ip + "." + fp + eb;
  } else {
    std::string t;
    if (f.integral) {
      t = shortest_fixed(v, f.single);
      auto d = t.find('.');
      if (d != std::string::npos) t = t.substr(0, d);
      t += ".";
    } else {
      t = fixed8(v, f.single);
    }
    auto dot = t.find('.');
    std::string ip = t.substr(0, dot), fp = t.substr(dot + 1);
    s = std::string(f.int_width - ip.size(), ' ') + ip + "." + fp + std::string(f.frac_width - fp.size(), ' ');
  }
  return s;
}

struct Printer {
  const Shape& shape;
  std::vector<std::string> cells;  // formatted elements (summarised positions included)
  bool summarise;
  std::vector<double> dvals;
  std::vector<std::int64_t> ivals;
  bool is_float;
  FloatFormat ff;
  int iwidth = 0;
  static constexpr int kEdge = 3;
  static constexpr int kWidth = 75;

  std::string elem(std::int64_t flat) const {
    if (is_float) return format_float(dvals[flat], ff);
    std::string s = std::to_string(ivals[flat]);
    return std::string(std::max(0, iwidth - static_cast<int>(s.size())), ' ') + s;
  }

  // Indices of axis `d` that are shown (all, or the 3 edges around "...").
  std::vector<std::int64_t> shown(int d) const {
    std::vector<std::int64_t> r;
    std::int64_t n = shape[d];
    if (summarise && n > 2 * kEdge) {
      for (int i = 0; i < kEdge; ++i) r.push_back(i);
      r.push_back(-1);  // ellipsis marker
      for (std::int64_t i = n - kEdge; i < n; ++i) r.push_back(i);
    } else {
      for (std::int64_t i = 0; i < n; ++i) r.push_back(i);
    }
    return r;
  }

  void rec(std::ostringstream& os, int d, std::int64_t base, int indent) const {
    int nd = shape.ndim();
    std::int64_t stride = 1;
    for (int k = d + 1; k < nd; ++k) stride *= shape[k];
    os << "[";
    auto idx = shown(d);
    if (d == nd - 1) {
      int col = indent + 1;
      bool first = true;
      for (auto i : idx) {
        std::string s = i < 0 ? "..." : elem(base + i * stride);
        if (!first) {
          if (col + 1 + static_cast<int>(s.size()) + 1 > kWidth) {
            os << "\n" << std::string(indent + 1, ' ');
            col = indent + 1;
          } else {
            os << " ";
            ++col;
          }
        }
        os << s;
        col += static_cast<int>(s.size());
        first = false;
      }
    } else {
      bool first = true;
      for (auto i : idx) {
        if (!first) os << std::string(nd - 1 - d, '\n') << std::string(indent + 1, ' ');
        if (i < 0) os << "...";
        else rec(os, d + 1, base + i * stride, indent + 1);
        first = false;
      }
    }
    os << "]";
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "None";
  Tensor h = to_cpu();
  bool isf = is_floating(dtype_);
  if (ndim() == 0) {
    if (isf) return python_repr(h.astype(float64).item<double>(), dtype_ == float32);
    return std::to_string(h.astype(int64).item<std::int64_t>());
  }
  if (size_ == 0) return "[]";
  Printer p{shape_, {}, size_ > 1000, {}, {}, isf, {}, 0};
  // Only the shown elements take part in the column format.
  if (isf) p.dvals = h.to_vector<double>();
  else p.ivals = h.to_vector<std::int64_t>();
  std::vector<double> shown_vals;
  std::vector<std::int64_t> idx(ndim(), 0);
  auto strides = detail::contiguous_strides(shape_);
  std::vector<std::vector<std::int64_t>> sel(ndim());
  for (int d = 0; d < ndim(); ++d) {
    for (auto i : p.shown(d))
      if (i >= 0) sel[d].push_back(i);
  }
  std::vector<std::size_t> pos(ndim(), 0);
  while (true) {
    std::int64_t flat = 0;
    for (int d = 0; d < ndim(); ++d) flat += sel[d][pos[d]] * strides[d];
    if (isf) shown_vals.push_back(p.dvals[flat]);
    else p.iwidth = std::max<int>(p.iwidth, static_cast<int>(std::to_string(p.ivals[flat]).size()));
    int d = ndim() - 1;
    while (d >= 0 && ++pos[d] == sel[d].size()) pos[d--] = 0;
    if (d < 0) break;
  }
  if (isf) p.ff = make_format(shown_vals, dtype_ == float32);
  std::ostringstream os;
  p.rec(os, 0, 0, 0);
  return os.str();
}

std::string Tensor::repr() const {
  if (!defined()) return "None";
  std::string body = str();
  std::string out = "array(";
  for (char c : body) {
    out += c;
    if (c == '\n') out += "      ";
  }
  if (ndim() == 0 || !(dtype_ == float64 || dtype_ == int64)) out += std::string(", dtype=") + dtype_name(dtype_);
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace dezero
