// tests/support/dot_text.hpp - a small reader of the DOT text get_dot_graph writes, for
// test_plot.cpp and the fuzz target fuzz_dot: it accepts only that shape, line by line,
//
//   digraph g {
//   <id> [label="<escaped>", key=word, ...]
//   <id> -> <id>
//   }
//
// and gives back every label's text (\" \\ \n \r undone). A label that ends early, a quote
// left unescaped, an attribute or a node that the library did not write, is an error.
// No doctest here: the fuzz target has none.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace dzt::dot {

struct Parsed {
  bool ok = false;
  std::string error;                // why not ok: the line and what was wrong
  std::vector<std::string> labels;  // in the order of the text
  std::size_t nodes = 0, edges = 0;
};

// The label text get_dot_graph gives a name: the control characters other than tab, newline
// and carriage return (which have no DOT escape) shown as '?'.
inline std::string shown_name(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    out += ((c < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || c == 0x7f) ? '?' : ch;
  }
  return out;
}

namespace detail {

inline bool read_id(const std::string& s, std::size_t& i) {
  const std::size_t start = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i > start;
}
inline bool read_word(const std::string& s, std::size_t& i) {
  const std::size_t start = i;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
  return i > start;
}
inline bool skip(const std::string& s, std::size_t& i, const char* lit) {
  const std::string l(lit);
  if (s.compare(i, l.size(), l) != 0) return false;
  i += l.size();
  return true;
}
// A double-quoted string from s[i] (the opening quote), unescaped into out.
inline bool read_quoted(const std::string& s, std::size_t& i, std::string& out, std::string& why) {
  if (i >= s.size() || s[i] != '"') return why = "no opening quote", false;
  for (++i; i < s.size(); ++i) {
    const char ch = s[i];
    if (ch == '"') return ++i, true;
    if (ch == '\n') return why = "a raw newline in a string", false;
    if (ch != '\\') {
      out += ch;
      continue;
    }
    if (++i == s.size()) break;
    switch (s[i]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      default: return why = std::string("an escape the writer never makes: \\") + s[i], false;
    }
  }
  return why = "a string that is never closed", false;
}

}  // namespace detail

inline Parsed parse(const std::string& text) {
  Parsed p;
  const std::string head = "digraph g {\n";
  if (text.compare(0, head.size(), head) != 0) return p.error = "does not start with 'digraph g {'", p;
  if (text.empty() || text.back() != '}') return p.error = "does not end with '}'", p;
  std::size_t i = head.size();
  int line = 2;
  auto fail = [&](const std::string& why) {
    p.error = "line " + std::to_string(line) + ": " + why;
    return p;
  };
  while (i < text.size() - 1) {
    if (!detail::read_id(text, i)) return fail("no node id");
    if (detail::skip(text, i, " -> ")) {
      if (!detail::read_id(text, i)) return fail("no node id after ->");
      ++p.edges;
    } else {
      if (!detail::skip(text, i, " [label=")) return fail("neither an edge nor a node with a label");
      std::string label, why;
      if (!detail::read_quoted(text, i, label, why)) return fail(why);
      p.labels.push_back(label);
      while (detail::skip(text, i, ", ")) {
        if (!detail::read_word(text, i) || !detail::skip(text, i, "=") || !detail::read_word(text, i))
          return fail("an attribute that is not key=word after the label");
      }
      if (!detail::skip(text, i, "]")) return fail("text after the label that is not an attribute");
      ++p.nodes;
    }
    if (!detail::skip(text, i, "\n")) return fail("more on the line than one node or edge");
    ++line;
  }
  if (i != text.size() - 1) return fail("text after the last line");
  p.ok = true;
  return p;
}

}  // namespace dzt::dot
