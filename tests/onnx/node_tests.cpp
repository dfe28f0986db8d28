// tests/onnx/node_tests.cpp - ONNX's own node tests (Debian's libonnx-testdata) for the ops dezero
// covers, judged against the lists node_tests_*.txt.
//
//   dezero_onnx_node_tests <node dir> <list file>... [-v]
//
// A list has one line per test, '#' starts a comment:
//   test_add pass
//   test_add_uint8 unsupported: uint8 arithmetic wraps around (dezero reads uint8 as int64)
// Every listed test is loaded with OnnxModel, fed test_data_set_0/input_<i>.pb in graph-input
// order and run under test_mode(); its outputs must match output_<i>.pb (same dtype and shape,
// values within rtol 1e-3 / atol 1e-7 as ONNX's backend tests, NaN equal to NaN). A failure is:
// a listed pass that errs or differs; a listed unsupported that raises no dezero::Error (at load
// or run) or that passes; anything but a dezero::Error thrown; a test listed twice or missing
// from the folder; and a test of a covered op (the ops of kCovered, `_expanded` variants
// included) that is in no list. Tests of other ops may be listed too. One line per failure, the
// tally of the covered ops' tests, then `N passed, M unsupported, K failed` over every listed test;
// the exit code is 1 when K > 0. With -v every test's outcome is printed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "dezero/core.hpp"
#include "dezero/onnx.hpp"
#include "dezero/onnx/ops.hpp"

namespace fs = std::filesystem;
using dezero::Tensor;
using dezero::Variable;
using dezero::VariableList;

namespace {

// --- the covered ops, by family (the list a missing test belongs in) -------------------------------
struct Family {
  const char* list;
  std::set<std::string> ops;
};
const std::vector<Family>& covered() {
  static const std::vector<Family> f = {
      {"node_tests_math.txt",
       {"Add", "Sub", "Mul", "Div", "Neg", "Pow", "Exp", "Log", "Sin", "Cos", "Tanh", "Sigmoid", "Relu", "LeakyRelu",
        "Softmax", "LogSoftmax", "Reshape", "Transpose", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "Expand",
        "Max", "Min", "Clip", "Flatten", "Concat", "Gather", "Slice", "Squeeze", "Unsqueeze", "Erf", "HardSigmoid",
        "HardSwish", "Mod", "ScatterND", "Split"}},
      {"node_tests_nn.txt",
       {"MatMul", "Gemm", "Dropout", "BatchNormalization", "Conv", "ConvTranspose", "MaxPool", "AveragePool",
        "SoftmaxCrossEntropyLoss", "LSTM", "LayerNormalization", "Einsum"}},
  };
  return f;
}

bool read_proto(const fs::path& p, google::protobuf::Message& m) {
  std::ifstream in(p, std::ios::binary);
  return in && m.ParseFromIstream(&in);
}

// The op a test exercises: the one node of its (non-expanded) model, or "" when the model has
// several nodes or cannot be read.
std::string test_op(const fs::path& dir, const std::string& name) {
  const std::string suffix = "_expanded";
  std::string base = name;
  if (base.size() > suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0)
    base.resize(base.size() - suffix.size());
  fs::path model = dir / base / "model.onnx";
  if (!fs::exists(model)) model = dir / name / "model.onnx";
  ::onnx::ModelProto m;
  if (!read_proto(model, m) || m.graph().node_size() != 1) return "";
  return m.graph().node(0).op_type();
}

// --- the lists ------------------------------------------------------------------------------------
struct Entry {
  bool pass = true;
  std::string reason;
  std::string where;  // "list.txt:12"
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// --- comparing ------------------------------------------------------------------------------------
Tensor read_tensor(const fs::path& p, const std::string& what) {
  ::onnx::TensorProto t;
  if (!read_proto(p, t)) throw dezero::IOError("node test: cannot read " + what + " from " + p.string());
  return dezero::onnx::detail::tensor_from_proto(t, what);
}

// "" when `got` matches `want`, else what differs.
std::string compare(const Tensor& got_any, const Tensor& want) {
  const Tensor got = got_any.to_cpu();
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dezero::dtype_name(got.dtype()) + ", expected " + dezero::dtype_name(want.dtype());
  if (got.shape() != want.shape()) return "shape " + got.shape().str() + ", expected " + want.shape().str();
  if (dezero::is_integer(want.dtype())) {
    const auto g = got.to_vector<std::int64_t>();
    const auto w = want.to_vector<std::int64_t>();
    for (std::size_t i = 0; i < w.size(); ++i)
      if (g[i] != w[i])
        return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
    return "";
  }
  const auto g = got.to_vector<double>();
  const auto w = want.to_vector<double>();
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double a = g[i], b = w[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(b) && a == b) continue;
    if (!(std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b))) {
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << " is " << a << ", expected " << b;
      return os.str();
    }
  }
  return "";
}

// Runs one test: "" when it passed; sets `threw` (and the message) on a dezero::Error.
struct Outcome {
  bool threw = false;  // a dezero::Error
  std::string error;   // its message, or why the result is wrong
  bool foreign = false;  // an exception that is not a dezero::Error
};

Outcome run_test(const fs::path& dir) {
  Outcome o;
  try {
    dezero::onnx::OnnxModel model((dir / "model.onnx").string());
    const fs::path data = dir / "test_data_set_0";
    VariableList xs;
    for (std::size_t i = 0; i < model.input_names().size(); ++i) {
      const fs::path p = data / ("input_" + std::to_string(i) + ".pb");
      xs.push_back(Variable(read_tensor(p, "input " + std::to_string(i))));
    }
    VariableList ys;
    {
      auto mode = dezero::test_mode();
      ys = model.forward_multi(xs);
    }
    std::size_t n_out = 0;
    while (fs::exists(data / ("output_" + std::to_string(n_out) + ".pb"))) ++n_out;
    if (ys.size() != n_out) {
      o.error = std::to_string(ys.size()) + " outputs, expected " + std::to_string(n_out);
      return o;
    }
    for (std::size_t i = 0; i < n_out; ++i) {
      const Tensor want = read_tensor(data / ("output_" + std::to_string(i) + ".pb"), "output " + std::to_string(i));
      const std::string diff = compare(ys[i].data(), want);
      if (!diff.empty()) {
        o.error = "output " + std::to_string(i) + ": " + diff;
        return o;
      }
    }
  } catch (const dezero::Error& e) {
    o.threw = true;
    o.error = e.what();
  } catch (const std::exception& e) {
    o.foreign = true;
    o.error = std::string("a non-dezero exception: ") + e.what();
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v") verbose = true;
    else args.push_back(a);
  }
  if (args.size() < 2) {
    std::cerr << "usage: dezero_onnx_node_tests <node dir> <list file>... [-v]\n";
    return 2;
  }
  const fs::path dir = args[0];
  int failed = 0, passed = 0, unsupported = 0;
  auto fail = [&](const std::string& test, const std::string& why) {
    ++failed;
    std::cout << "FAIL " << test << ": " << why << "\n";
  };

  // The lists.
  std::map<std::string, Entry> listed;
  for (std::size_t k = 1; k < args.size(); ++k) {
    std::ifstream in(args[k]);
    if (!in) {
      fail(args[k], "cannot read the list");
      continue;
    }
    const std::string file = fs::path(args[k]).filename().string();
    std::string line;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
      const auto hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      line = trim(line);
      if (line.empty()) continue;
      const std::string where = file + ":" + std::to_string(lineno);
      const auto sp = line.find_first_of(" \t");
      const std::string test = line.substr(0, sp);
      const std::string rest = sp == std::string::npos ? "" : trim(line.substr(sp));
      Entry e;
      e.where = where;
      if (rest == "pass") {
        e.pass = true;
      } else if (rest.rfind("unsupported:", 0) == 0 && !trim(rest.substr(12)).empty()) {
        e.pass = false;
        e.reason = trim(rest.substr(12));
      } else {
        fail(test, where + ": expected 'pass' or 'unsupported: <reason>', got '" + rest + "'");
        continue;
      }
      if (listed.count(test)) {
        fail(test, where + ": listed again (first at " + listed[test].where + ")");
        continue;
      }
      listed[test] = e;
    }
  }

  // Every test of a covered op must be listed.
  std::vector<std::string> tests;
  for (const auto& d : fs::directory_iterator(dir))
    if (d.is_directory()) tests.push_back(d.path().filename().string());
  std::sort(tests.begin(), tests.end());
  if (tests.empty()) fail(dir.string(), "no node tests in this folder");
  std::set<std::string> of_covered_ops;
  for (const std::string& t : tests) {
    const std::string op = test_op(dir, t);
    for (const Family& f : covered()) {
      if (!f.ops.count(op)) continue;
      of_covered_ops.insert(t);
      if (!listed.count(t)) fail(t, "a test of " + op + " that is in no list (it belongs in " + f.list + ")");
    }
  }

  // Run the listed ones.
  int covered_passed = 0, covered_unsupported = 0;
  for (const auto& [test, e] : listed) {
    if (!fs::exists(dir / test / "model.onnx")) {
      fail(test, e.where + ": no such test in " + dir.string());
      continue;
    }
    const Outcome o = run_test(dir / test);
    if (verbose)
      std::cout << test << ": " << (o.error.empty() ? "PASS" : (o.threw ? "ERROR " : "WRONG ") + o.error) << "\n";
    const bool cov = of_covered_ops.count(test) > 0;
    if (o.foreign) {
      fail(test, o.error);
    } else if (e.pass) {
      if (o.error.empty()) {
        ++passed;
        covered_passed += cov;
      } else {
        fail(test, (o.threw ? "listed pass, raised: " : "listed pass, wrong result: ") + o.error);
      }
    } else {
      if (o.threw) {
        ++unsupported;
        covered_unsupported += cov;
      } else if (o.error.empty()) {
        fail(test, "listed unsupported (" + e.reason + ") but passes: list it as pass");
      } else {
        fail(test, "listed unsupported (" + e.reason + ") but raised no dezero::Error; wrong result: " + o.error);
      }
    }
  }
  std::cout << "the " << of_covered_ops.size() << " tests of the covered ops: " << covered_passed << " passed, "
            << covered_unsupported << " unsupported\n";
  std::cout << passed << " passed, " << unsupported << " unsupported, " << failed << " failed\n";
  return failed > 0 ? 1 : 0;
}
