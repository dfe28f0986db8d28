// dezero/utils/npy.cpp - the .npy format (NumPy's format.py): the header, a Python dict literal
// parsed by hand; the dtypes read (and the narrow integers widened); one array from bytes and to
// bytes. An .npz (npz.cpp) is a zip of these.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "dezero/utils/npy.hpp"

#include "dezero/tensor/checks.hpp"

namespace dezero::utils {

namespace {

using dezero::detail::fail;
using detail::Bytes;
using detail::kMaxNpyHeader;

// --- the .npy header: a Python dict literal ------------------------------------------
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class DictParser {
 public:
  DictParser(const std::string& s, const std::string& what) : s_(s), what_(what) {}

  NpyHeader parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      std::string key = string_literal();
      expect(':');
      skip();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          dezero::detail::fail<DtypeError>(what_.c_str(), "structured arrays (a list descr) are not supported; "
                                           "hint: save plain arrays");
        h.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        has_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      if (peek() != '}') fail("expected ',' or '}'");
    }
    if (!has_descr || !has_order || !has_shape) fail("'descr', 'fortran_order' and 'shape' are all required");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    dezero::detail::fail<IOError>(what_.c_str(), "bad .npy header (", why, " at character ", i_, " of \"", s_, "\")");
  }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void expect(char c) {
    skip();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a string");
    std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string v = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) { i_ += 4; return true; }
    if (s_.compare(i_, 5, "False") == 0) { i_ += 5; return false; }
    fail("expected True or False");
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (true) {
      skip();
      if (peek() == ')') { ++i_; break; }
      std::size_t start = i_;
      std::int64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("extent too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (i_ == start) fail("expected a non-negative integer");
      if (peek() == 'L') ++i_;  // Python 2's long literals
      shape.push_back(v);
      skip();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("expected ',' or ')'");
    }
    return shape;
  }

  const std::string& s_;
  const std::string& what_;
  std::size_t i_ = 0;
};

bool host_little_endian() {
  const std::uint16_t one = 1;
  unsigned char c;
  std::memcpy(&c, &one, 1);
  return c == 1;
}

const char* npy_descr(DType dt) {
  switch (dt) {
    case float32: return "<f4";
    case float64: return "<f8";
    case int32: return "<i4";
    case int64: return "<i8";
    case float16: return "<f2";
    // bfloat16 as np.save writes an ml_dtypes.bfloat16 array: two opaque bytes (NumPy has no
    // bfloat16); np.load(...).view(ml_dtypes.bfloat16) restores it, jnp.load reads it directly
    case bfloat16: return "<V2";
  }
  return "?";
}

template <class Src, class Dst>
void widen_into(const char* p, std::int64_t n, bool swap, Dst* out) {
  char buf[sizeof(Src)];
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(buf, p + i * sizeof(Src), sizeof(Src));
    if (swap) std::reverse(buf, buf + sizeof(Src));
    Src v;
    std::memcpy(&v, buf, sizeof(Src));
    out[i] = static_cast<Dst>(v);
  }
}


}  // namespace

namespace detail {

// Reverses the bytes of each element in place (big-endian data on a little-endian host).
void swap_elements(char* p, std::int64_t n, std::size_t size) {
  for (std::int64_t i = 0; i < n; ++i) std::reverse(p + i * size, p + (i + 1) * size);
}

void put(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Reads the magic and the header of the .npy in `bytes` (which may hold only its start).
NpyPlan plan_npy(std::string_view bytes, const std::string& what) {
  Bytes in{bytes, what};
  in.need(0, 10, ".npy magic");
  if (bytes.compare(0, 6, "\x93NUMPY") != 0) fail<IOError>(what.c_str(), "not an .npy array (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::uint64_t hlen, hstart;
  if (major == 1) {
    hlen = in.u16(8, ".npy header length");
    hstart = 10;
  } else if (major == 2 || major == 3) {
    hlen = in.u32(8, ".npy header length");
    hstart = 12;
  } else {
    fail<IOError>(what.c_str(), "unsupported .npy format version ", major, ".", static_cast<unsigned char>(bytes[7]),
                  " (1.0, 2.0 and 3.0 are read)");
  }
  if (hlen > kMaxNpyHeader)
    fail<IOError>(what.c_str(), "an .npy header of ", hlen, " bytes (the arrays dezero reads have headers of at most ",
                  kMaxNpyHeader, "); the file is corrupt or not a plain array");
  in.need(hstart, hlen, ".npy header");
  NpyHeader h = DictParser(std::string(bytes.substr(hstart, hlen)), what).parse();
  if (h.fortran_order)
    fail<IOError>(what.c_str(),
                  "fortran_order=True arrays are not supported; hint: save np.ascontiguousarray(a) instead");

  const std::string d = h.descr == "bfloat16" ? std::string("<V2") : h.descr;  // ml_dtypes' str(dtype) form too
  if (d.size() < 3) fail<DtypeError>(what.c_str(), "unsupported dtype '", d, "'");
  const char order = d[0];
  NpyPlan plan;
  plan.code = d.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail<DtypeError>(what.c_str(), "unsupported dtype '", d, "'");
  const bool little = order == '<' || (order == '=' && host_little_endian()) || order == '|';
  plan.swap = little != host_little_endian();

  plan.n = 1;
  for (auto extent : h.shape) {
    if (extent != 0 && plan.n > std::numeric_limits<std::int64_t>::max() / 8 / extent)
      fail<IOError>(what.c_str(), "shape ", h.shape, " is too large; the file is corrupt");
    plan.n *= extent;
  }
  plan.shape = h.shape;
  plan.data_off = hstart + hlen;
  static const struct { const char* code; std::size_t in_size; DType out; bool widen; } kTypes[] = {
      {"f4", 4, float32, false}, {"f8", 8, float64, false}, {"i4", 4, int32, false}, {"i8", 8, int64, false},
      {"f2", 2, float16, false},
      {"V2", 2, bfloat16, false},  // two opaque bytes: bfloat16, as np.save writes ml_dtypes'
      // narrow integer and bool arrays widen losslessly
      {"u1", 1, int32, true}, {"b1", 1, int32, true}, {"i1", 1, int32, true}, {"u2", 2, int32, true},
      {"i2", 2, int32, true}, {"u4", 4, int64, true}};
  for (const auto& t : kTypes) {
    if (plan.code != t.code) continue;
    plan.in_size = t.in_size;
    plan.out = t.out;
    plan.widen = t.widen;
    return plan;
  }
  fail<DtypeError>(what.c_str(), "unsupported dtype '", d,
                   "'; dezero reads float32 ('<f4'), float64 ('<f8'), int32 ('<i4'), int64 ('<i8'), float16 ('<f2'), "
                   "bfloat16 ('<V2', ml_dtypes' bfloat16 as np.save writes it) and, widened, "
                   "'|u1' '|i1' '|b1' '<u2' '<i2' (int32) and '<u4' (int64)");
}

// The tensor of `plan` from its data bytes (plan.data_bytes() of them at `data`): one copy.
Tensor build_npy(const NpyPlan& plan, const char* data) {
  Tensor out = Tensor::empty(plan.shape, plan.out);
  char* o = static_cast<char*>(out.raw_data());
  if (!plan.widen) {
    if (plan.n > 0) std::memcpy(o, data, plan.data_bytes());
    if (plan.swap) swap_elements(o, plan.n, plan.in_size);
    return out;
  }
  const std::string& c = plan.code;
  if (c == "u1" || c == "b1") widen_into<std::uint8_t>(data, plan.n, false, out.data<std::int32_t>());
  else if (c == "i1") widen_into<std::int8_t>(data, plan.n, false, out.data<std::int32_t>());
  else if (c == "u2") widen_into<std::uint16_t>(data, plan.n, plan.swap, out.data<std::int32_t>());
  else if (c == "i2") widen_into<std::int16_t>(data, plan.n, plan.swap, out.data<std::int32_t>());
  else widen_into<std::uint32_t>(data, plan.n, plan.swap, out.data<std::int64_t>());  // u4
  return out;
}

// The tensor of `plan` (and `scratch` bytes to make it) from the reader's budget; an IOError past the cap.
void spend(std::uint64_t& budget, const NpyPlan& plan, std::uint64_t scratch, const std::string& what) {
  const std::uint64_t bytes = plan.out_bytes() + scratch;
  if (bytes > budget)
    fail<IOError>(what.c_str(), "its ", plan.shape, " array of '", plan.code, "' would take ", plan.out_bytes(),
                  " bytes in memory as ", plan.out,
                  scratch ? " (and " + std::to_string(scratch) + " inflated bytes to make it)" : std::string(),
                  ", which passes what is left (", budget, " bytes) of the cap of ", get_max_npz_bytes(),
                  " bytes (utils::set_max_npz_bytes raises it); a corrupt or hostile file?");
  budget -= bytes;
}

// The .npy header of `array` (magic, version, the dict padded so the data starts on a 64-byte
// boundary); the data follows it.
std::string npy_header(const Tensor& array) {
  if (!array.defined()) fail<ValueError>("save_npz", "cannot write an undefined tensor");
  std::string dict = std::string("{'descr': '") + npy_descr(array.dtype()) + "', 'fortran_order': False, 'shape': " +
                     array.shape().str() + ", }";
  std::size_t prefix = 10;
  std::size_t total = prefix + dict.size() + 1;
  if (total - prefix > 65535) prefix = 12;
  total = prefix + dict.size() + 1;
  const std::size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(prefix == 10 ? 1 : 2);
  out.push_back(0);
  put(out, dict.size(), prefix == 10 ? 2 : 4);
  out += dict;
  return out;
}

}  // namespace detail

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  return detail::reading(what, [&] {
    const detail::NpyPlan plan = detail::plan_npy(bytes, what);
    Bytes{bytes, what}.need(plan.data_off, plan.data_bytes(), ".npy data");
    std::uint64_t budget = static_cast<std::uint64_t>(get_max_npz_bytes());
    detail::spend(budget, plan, 0, what);
    return detail::build_npy(plan, bytes.data() + plan.data_off);
  });
}

std::string serialize_npy(const Tensor& array) {
  std::string out = detail::npy_header(array);
  Tensor h = array.to_cpu();
  const std::size_t off = out.size();
  out.resize(off + h.nbytes());
  if (h.nbytes()) std::memcpy(out.data() + off, h.raw_data(), h.nbytes());
  return out;
}

}  // namespace dezero::utils
