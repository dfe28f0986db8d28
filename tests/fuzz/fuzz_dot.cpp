// tests/fuzz/fuzz_dot.cpp - libFuzzer target: arbitrary bytes as the names in a small graph,
// written by utils::get_dot_graph.
//
// The bytes give the names of one to three inputs, of a Function (a user's subclass may name
// itself anything), of its output and, optionally, of a second Function and output after it.
// Whatever the names hold, the DOT text has exactly the graph's nodes and edges, every label
// string is closed where it should be, and each label reads back as its name (tests/support/
// dot_text.hpp, a reader that accepts only the shape get_dot_graph writes).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../support/dot_text.hpp"
#include "dezero/core.hpp"
#include "dezero/utils.hpp"
#include "fuzz_check.hpp"

namespace {

class Named : public dezero::Function {
 public:
  explicit Named(std::string n) : n_(std::move(n)) {}
  dezero::TensorList forward(const dezero::TensorList& xs) override { return {xs[0] * 2.0}; }
  dezero::VariableList backward(const dezero::VariableList&) override { return dezero::VariableList(inputs().size()); }
  std::string name() const override { return n_; }

 private:
  std::string n_;
};

// The next name: a length byte (mod 48), then that many bytes (fewer at the end of the input).
struct Reader {
  const std::uint8_t* p;
  std::size_t n;
  std::string name() {
    if (n == 0) return "";
    std::size_t len = *p++ % 48;
    --n;
    if (len > n) len = n;
    std::string s(reinterpret_cast<const char*>(p), len);
    p += len;
    n -= len;
    return s;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t flags = data[0];
  Reader in{data + 1, size - 1};
  const bool verbose = flags & 1;
  const bool chain = flags & 2;
  const std::size_t k = 1 + (flags >> 2) % 3;

  dezero::VariableList xs;
  std::vector<std::string> x_names;
  for (std::size_t i = 0; i < k; ++i) {
    x_names.push_back(in.name());
    dezero::Variable x(dezero::array(1.0 + static_cast<double>(i)));
    x.set_name(x_names.back());
    xs.push_back(x);
  }
  const std::string f_name = in.name(), y_name = in.name();
  auto f = std::make_shared<Named>(f_name);
  dezero::Variable y = f->apply(xs)[0];
  y.set_name(y_name);
  std::string g_name, z_name;
  std::shared_ptr<Named> g;
  dezero::Variable out = y;
  if (chain) {
    g_name = in.name();
    z_name = in.name();
    g = std::make_shared<Named>(g_name);
    out = (*g)(y);
    out.set_name(z_name);
  }

  const dzt::dot::Parsed p = dzt::dot::parse(dezero::utils::get_dot_graph(out, verbose));
  if (!p.ok) std::fprintf(stderr, "fuzz_dot: %s\n", p.error.c_str());
  DZ_FUZZ_CHECK(p.ok);
  // get_dot_graph: the output, then for each Function its node and its inputs' nodes.
  std::vector<std::string> want;
  if (chain) {
    want.push_back(z_name);
    want.push_back(g_name);
  }
  want.push_back(y_name);
  want.push_back(f_name);
  for (const std::string& x : x_names) want.push_back(x);
  DZ_FUZZ_CHECK(p.nodes == want.size());
  DZ_FUZZ_CHECK(p.edges == k + 1 + (chain ? 2 : 0));
  DZ_FUZZ_CHECK(p.labels.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool is_function = (chain && i == 1) || i == (chain ? 3u : 1u);
    const std::string shown = dzt::dot::shown_name(want[i]);
    if (!verbose || is_function) {
      DZ_FUZZ_CHECK(p.labels[i] == shown);
    } else {  // "<name>: () float64", or "() float64" for an unnamed variable
      const std::string tail = "() float64";
      DZ_FUZZ_CHECK(p.labels[i] == (shown.empty() ? tail : shown + ": " + tail));
    }
  }
  return 0;
}
