// dezero/tensor/print.cpp - NumPy's str() and repr() of arrays.
//
// Floats follow NumPy's defaults (precision 8, floatmode 'maxprec'): each value
// uses the shortest digits that round-trip, at most 8 after the point; columns are
// aligned; integral float arrays print as "1." ; scientific notation when the
// largest magnitude is >= 1e16, the smallest nonzero is < 1e-4, or their ratio
// exceeds 1e3. A 0-d array prints like Python's repr of the scalar. Arrays over
// 1000 elements are summarised with "..." (3 edge items); lines wrap at 75.
// bfloat16 and float16 print their shortest decimals that read back as the same
// 16-bit value, as NumPy prints float16 (and ml_dtypes bfloat16).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "dezero/tensor/strided.hpp"

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

// The shortest decimal that reads back as the same 16-bit value v (bfloat16 or float16), as a
// double: its own shortest digits are then that decimal's (NumPy prints float16 so: 0.1, not the
// 0.09998 of the value widened to float32). Each length from 1 digit, correctly rounded.
double shortest_16(double v, DType dt) {
  if (!std::isfinite(v) || v == 0) return v;
  auto bits = [dt](double d) { return dt == bfloat16 ? bfloat16_t(d).bits : float16_t(d).bits; };
  const std::uint16_t want = bits(v);
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf - 1, v, std::chars_format::scientific, digits - 1);
    *r.ptr = '\0';
    const double d = std::strtod(buf, nullptr);
    if (bits(d) == want) return d;
  }
  return v;
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

  // NumPy's _formatArray (arrayprint.py, legacy=False): `sep` is ' ' for str and
  // ', ' for repr; `hanging` is the indent of continuation lines; `width` the room
  // left on a line.
  static void extend_line(std::string& s, std::string& line, const std::string& word, int width,
                          const std::string& prefix) {
    bool wrap = static_cast<int>(line.size() + word.size()) > width;
    if (line.size() <= prefix.size()) wrap = false;  // wrapping would not help
    if (wrap) {
      std::string l = line;
      while (!l.empty() && l.back() == ' ') l.pop_back();
      s += l + "\n";
      line = prefix;
    }
    line += word;
  }

  std::string rec(int d, std::int64_t base, const std::string& hanging, int width, const std::string& sep) const {
    int nd = shape.ndim();
    std::int64_t stride = 1;
    for (int k = d + 1; k < nd; ++k) stride *= shape[k];
    std::string next_hanging = hanging + " ";
    int next_width = width - 1;
    std::string sep_r = sep;
    while (!sep_r.empty() && sep_r.back() == ' ') sep_r.pop_back();
    auto idx = shown(d);
    std::string s;
    if (d == nd - 1) {
      int elem_width = width - std::max<int>(static_cast<int>(sep_r.size()), 1);
      std::string line = hanging;
      for (std::size_t j = 0; j < idx.size(); ++j) {
        std::string word = idx[j] < 0 ? "..." : elem(base + idx[j] * stride);
        extend_line(s, line, word, elem_width, hanging);
        if (j + 1 < idx.size()) line += sep;
      }
      s += line;
    } else {
      std::string line_sep = sep_r + std::string(nd - 1 - d, '\n');
      for (std::size_t j = 0; j < idx.size(); ++j) {
        std::string nested = idx[j] < 0 ? "..." : rec(d + 1, base + idx[j] * stride, next_hanging, next_width, sep);
        s += hanging + nested;
        if (j + 1 < idx.size()) s += line_sep;
      }
    }
    return "[" + s.substr(hanging.size()) + "]";
  }
};

}  // namespace

namespace {
// NumPy's array2string body of a host tensor of ndim >= 1 (or, with ndim 0, the
// value through the array's format function, as repr shows it).
std::string format_array(const Tensor& h, const std::string& sep, const std::string& hanging, int width) {
  const Shape& shape = h.shape();
  int nd = h.ndim();
  bool isf = is_floating(h.dtype());
  if (h.size() == 0) return "[]";
  Printer p{shape, {}, h.size() > 1000, {}, {}, isf, {}, 0};
  if (isf) p.dvals = h.to_vector<double>();
  if (is_half(h.dtype()))
    for (double& v : p.dvals) v = shortest_16(v, h.dtype());
  else p.ivals = h.to_vector<std::int64_t>();
  // Only the shown elements take part in the column format.
  std::vector<double> shown_vals;
  auto strides = detail::contiguous_strides(shape);
  std::vector<std::vector<std::int64_t>> sel(nd);
  for (int d = 0; d < nd; ++d)
    for (auto i : p.shown(d))
      if (i >= 0) sel[d].push_back(i);
  std::vector<std::size_t> pos(nd, 0);
  while (true) {
    std::int64_t flat = 0;
    for (int d = 0; d < nd; ++d) flat += sel[d][pos[d]] * strides[d];
    if (isf) shown_vals.push_back(p.dvals[flat]);
    else p.iwidth = std::max<int>(p.iwidth, static_cast<int>(std::to_string(p.ivals[flat]).size()));
    int d = nd - 1;
    while (d >= 0 && ++pos[d] == sel[d].size()) pos[d--] = 0;
    if (d < 0) break;
  }
  if (isf) p.ff = make_format(shown_vals, h.dtype() == float32);
  if (nd == 0) return p.elem(0);
  return p.rec(0, 0, hanging, width, sep);
}
constexpr int kLineWidth = 75;
}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "None";
  Tensor h = to_cpu();
  if (ndim() == 0) {  // str(a[()]): Python's repr of the scalar
    if (is_half(dtype())) return python_repr(shortest_16(h.astype(float64).item<double>(), dtype()), false);
    if (is_floating(dtype())) return python_repr(h.astype(float64).item<double>(), dtype() == float32);
    return std::to_string(h.astype(int64).item<std::int64_t>());
  }
  return format_array(h, " ", " ", kLineWidth);
}

// NumPy's array_repr: "array(" + array2string(sep ', ') + ")" with ", dtype=..." unless
// the dtype is implied (float64 / int64 with at least one element).
std::string Tensor::repr() const {
  if (!defined()) return "None";
  const std::string prefix = "array(";
  bool skip_dtype = (dtype() == float64 || dtype() == int64) && size() > 0;
  std::string suffix = skip_dtype ? ")" : ",";
  std::string body;
  if (size() > 0 || ndim() == 1)
    body = format_array(to_cpu(), ", ", std::string(1 + prefix.size(), ' '), kLineWidth - static_cast<int>(suffix.size()));
  else
    body = "[], shape=" + shape_.str();
  std::string out = prefix + body + suffix;
  if (skip_dtype) return out;
  std::string dtype_str = std::string("dtype=") + dtype_name(dtype()) + ")";
  std::size_t nl = out.rfind('\n');
  std::size_t last_len = out.size() - (nl == std::string::npos ? 0 : nl + 1);
  bool newline = static_cast<int>(last_len + dtype_str.size() + 1) > kLineWidth;
  return out + (newline ? "\n" + std::string(prefix.size(), ' ') : std::string(" ")) + dtype_str;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace dezero
