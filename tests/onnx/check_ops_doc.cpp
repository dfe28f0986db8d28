// tests/onnx/check_ops_doc.cpp - docs/onnx-ops.md's import table against the importer's op table
// (the CTest test onnx_ops_doc): every op that dezero/onnx registers has a row "| `Op` | opsets | notes |"
// whose opsets are the registered ranges ("7-12, 13-17"; "7" for a range of one), and every row names a
// registered op. A new op without its row, or a row left behind, fails the test.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dezero/onnx/ops.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: check_ops_doc docs/onnx-ops.md\n";
    return 2;
  }
  std::map<std::string, std::vector<std::pair<int, int>>> ranges;
  for (const auto& d : dezero::onnx::detail::op_table()) ranges[d.op_type].emplace_back(d.min_opset, d.max_opset);
  std::map<std::string, std::string> want;
  for (auto& [op, rs] : ranges) {
    std::sort(rs.begin(), rs.end());
    std::string s;
    for (const auto& [lo, hi] : rs) {
      if (!s.empty()) s += ", ";
      s += lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
    }
    want[op] = s;
  }

  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "check_ops_doc: cannot read " << argv[1] << "\n";
    return 2;
  }
  // Rows of the import table: between "## Import" and the next "## ".
  const std::regex row(R"(^\| `([A-Za-z]+)` \| ([0-9, -]+) \|)");
  std::map<std::string, std::string> documented;
  bool in_import = false;
  int problems = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_import = line == "## Import";
    std::smatch m;
    if (!in_import || !std::regex_search(line, m, row)) continue;
    if (!documented.emplace(m[1], m[2]).second) {
      std::cout << "check_ops_doc: " << m[1] << " has two rows\n";
      ++problems;
    }
  }
  for (const auto& [op, s] : want) {
    auto it = documented.find(op);
    if (it == documented.end()) {
      std::cout << "check_ops_doc: " << op << " (opsets " << s << ") has no row in the import table\n";
      ++problems;
    } else if (it->second != s) {
      std::cout << "check_ops_doc: " << op << "'s row says opsets " << it->second << ", the importer has " << s << "\n";
      ++problems;
    }
  }
  for (const auto& [op, s] : documented)
    if (!want.count(op)) {
      std::cout << "check_ops_doc: the row " << op << " names no op the importer registers\n";
      ++problems;
    }
  if (problems) {
    std::cout << "check_ops_doc: " << problems << " problem(s) in " << argv[1] << "\n";
    return 1;
  }
  std::cout << "check_ops_doc: " << want.size() << " ops, each with its row and opsets\n";
  return 0;
}
