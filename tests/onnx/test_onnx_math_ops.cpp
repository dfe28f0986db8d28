// tests/onnx/test_onnx_math_ops.cpp - the math and shape ops (import_ops_math.cpp, import_ops_shape.cpp)
// through OnnxModel in the forms ONNX's node tests miss, and the sizes a file asks for refused before
// anything is allocated. The functions the ops translate to (F::concat, F::pad, F::maximum, F::where,
// ...) are tested in tests/test_functions_more.cpp.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <vector>

#include <onnx/onnx_pb.h>

#include "dezero/onnx.hpp"
#include "dezero/onnx/import_util.hpp"
#include "support/test_util.hpp"

using namespace dezero;
namespace ox = dezero::onnx::detail;

// --- the math ops through the importer, in the forms ONNX's node tests (opset 13+) do not reach -------
// One-node models written with libonnx's own classes: older opsets (attributes that later became
// inputs, Softmax's 2-d coercion), the shape arithmetic of dynamic batch sizes, the refusals at
// load time, and gradients through an imported graph.
namespace {

struct ModelBuilder {
  ::onnx::ModelProto m;
  explicit ModelBuilder(int opset) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("test");
  }
  ::onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out) {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  // dims: -1 is the symbolic "N".
  void input(const std::string& name, int elem, const std::vector<std::int64_t>& dims) {
    auto* v = m.mutable_graph()->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (std::int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0) dim->set_dim_param("N");
      else dim->set_dim_value(d);
    }
  }
  void output(const std::string& name, int elem) {
    auto* v = m.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  void ints(const std::string& name, const std::vector<std::int64_t>& values) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values) t->add_int64_data(v);
  }
  void scalar(const std::string& name, float value) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }
  // Written to a temporary file, loaded, and the file removed.
  dezero::onnx::OnnxModel load() const {
    const auto path = std::filesystem::temp_directory_path() /
                      ("dezero_onnx_functions_" + std::to_string(::getpid()) + ".onnx");
    {
      std::ofstream f(path, std::ios::binary);
      m.SerializeToOstream(&f);
    }
    struct Remove {
      std::filesystem::path p;
      ~Remove() { std::filesystem::remove(p); }
    } remove{path};
    return dezero::onnx::OnnxModel(path.string());
  }
};

void attr_i(::onnx::NodeProto* n, const std::string& name, std::int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr_f(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr_s(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
void attr_ints(::onnx::NodeProto* n, const std::string& name, const std::vector<std::int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (std::int64_t x : v) a->add_ints(x);
}

constexpr int kFloat = ::onnx::TensorProto::FLOAT;
constexpr int kDouble = ::onnx::TensorProto::DOUBLE;
constexpr int kInt64 = ::onnx::TensorProto::INT64;

Variable run1(dezero::onnx::OnnxModel& m, const Variable& x) {
  auto mode = test_mode();
  return m(x);
}

}  // namespace

TEST_CASE("onnx math ops: Softmax and LogSoftmax coerce to 2-d before opset 13, one axis from 13") {
  Tensor x = random::Generator(3).randn({2, 3, 4}, float64);
  for (int opset : {11, 13}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      ModelBuilder b(opset);
      b.input("x", kDouble, {2, 3, 4});
      attr_i(b.node(op, {"x"}, {"y"}), "axis", 1);
      b.output("y", kDouble);
      auto m = b.load();
      Variable y = run1(m, Variable(x));
      const bool log = std::string(op) == "LogSoftmax";
      Tensor want = opset == 13 ? (log ? F::log_softmax(x, 1) : F::softmax(x, 1)).data()
                                : (log ? F::log_softmax(x.reshape({2, 12}), 1) : F::softmax(x.reshape({2, 12}), 1))
                                      .data()
                                      .reshape({2, 3, 4});
      CAPTURE(opset);
      CAPTURE(op);
      CHECK(dzt::allclose(y.data(), want, 1e-12, 1e-12));
    }
  }
}

TEST_CASE("onnx math ops: Clip's bounds are attributes before opset 11 and optional inputs from 11") {
  Tensor x = array(std::vector<float>{-3.f, -0.5f, 0.5f, 3.f}, Shape{4});
  {
    ModelBuilder b(7);
    b.input("x", kFloat, {4});
    auto* n = b.node("Clip", {"x"}, {"y"});
    attr_f(n, "min", -1.f);
    attr_f(n, "max", 1.f);
    b.output("y", kFloat);
    auto m = b.load();
    CHECK(dzt::vals(run1(m, Variable(x))) == std::vector<double>{-1, -0.5, 0.5, 1});
  }
  {
    ModelBuilder b(13);
    b.input("x", kFloat, {4});
    b.scalar("hi", 1.f);
    b.node("Clip", {"x", "", "hi"}, {"y"});
    b.output("y", kFloat);
    auto m = b.load();
    CHECK(dzt::vals(run1(m, Variable(x))) == std::vector<double>{-3, -0.5, 0.5, 1});
  }
}

TEST_CASE("onnx math ops: Slice (attributes before 10; inputs, negative steps and huge ends from 10)") {
  Tensor x = arange(0.0, 24.0, 1.0, float32).reshape({4, 6});
  {
    ModelBuilder b(9);
    b.input("x", kFloat, {4, 6});
    auto* n = b.node("Slice", {"x"}, {"y"});
    attr_ints(n, "starts", {1, -2});
    attr_ints(n, "ends", {3, 1000});
    b.output("y", kFloat);
    auto m = b.load();
    Variable y = run1(m, Variable(x));
    CHECK(y.shape() == Shape{2, 2});
    CHECK(dzt::vals(y) == std::vector<double>{10, 11, 16, 17});
  }
  {
    ModelBuilder b(13);
    b.input("x", kFloat, {4, 6});
    b.ints("starts", {-1});
    b.ints("ends", {std::numeric_limits<std::int64_t>::min()});
    b.ints("axes", {1});
    b.ints("steps", {-2});
    b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    b.output("y", kFloat);
    auto m = b.load();
    Variable y = run1(m, Variable(x));
    CHECK(y.shape() == Shape{4, 3});
    CHECK(dzt::vals(y)[0] == 5.0);
    CHECK(dzt::vals(y)[2] == 1.0);
  }
}

TEST_CASE("onnx math ops: Squeeze, Unsqueeze and ReduceSum take axes as attributes before opset 13") {
  Tensor x = arange(0.0, 6.0, 1.0, float32).reshape({1, 2, 3});
  ModelBuilder b(11);
  b.input("x", kFloat, {1, 2, 3});
  attr_ints(b.node("Squeeze", {"x"}, {"s"}), "axes", {0});
  attr_ints(b.node("Unsqueeze", {"s"}, {"u"}), "axes", {-1, 0});
  auto* r = b.node("ReduceSum", {"u"}, {"y"});
  attr_ints(r, "axes", {2});
  attr_i(r, "keepdims", 0);
  b.output("y", kFloat);
  auto m = b.load();
  Variable y = run1(m, Variable(x));
  CHECK(y.shape() == Shape{1, 2, 1});
  CHECK(dzt::vals(y) == std::vector<double>{3, 12});
}

TEST_CASE("onnx math ops: PyTorch's dynamic-batch flatten (Shape, Gather, Unsqueeze, Concat, Reshape) runs at any batch") {
  ModelBuilder b(13);
  b.input("x", kFloat, {-1, 2, 3});
  b.ints("zero", {0});
  b.ints("minus_one", {-1});
  b.node("Shape", {"x"}, {"shape"});
  attr_i(b.node("Gather", {"shape", "zero"}, {"n"}), "axis", 0);
  attr_i(b.node("Concat", {"n", "minus_one"}, {"target"}), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"});
  b.output("y", kFloat);
  auto m = b.load();
  for (std::int64_t n : {1, 5}) {
    Variable x(random::Generator(1).randn({n, 2, 3}, float32));
    Variable y = m(x);
    CHECK(y.shape() == Shape{n, 6});
    y.sum().backward();
    CHECK(x.grad().shape() == x.shape());
  }
}

TEST_CASE("onnx math ops: Pad pads and crops (constant, edge, reflect); other modes and casts are refused at load") {
  {
    ModelBuilder b(11);
    b.input("x", kFloat, {2, 2});
    b.ints("pads", {1, 0, 0, -1});
    b.scalar("value", 7.f);
    b.node("Pad", {"x", "pads", "value"}, {"y"});
    b.output("y", kFloat);
    auto m = b.load();
    Variable y = run1(m, Variable(array(std::vector<float>{1, 2, 3, 4}, Shape{2, 2})));
    CHECK(y.shape() == Shape{3, 1});
    CHECK(dzt::vals(y) == std::vector<double>{7, 1, 3});
  }
  {
    ModelBuilder b(11);
    b.input("x", kFloat, {2, 2});
    b.ints("pads", {1, 1, 1, 1});
    attr_s(b.node("Pad", {"x", "pads"}, {"y"}), "mode", "wrap");
    b.output("y", kFloat);
    const std::string e = dzt::thrown<NotImplementedError>([&] { b.load(); });
    CHECK(dzt::has(e, "Pad, opset 11"));
    CHECK(dzt::has(e, "wrap"));
  }
  {
    ModelBuilder b(13);
    b.input("x", kFloat, {2});
    attr_i(b.node("Cast", {"x"}, {"y"}), "to", ::onnx::TensorProto::UINT8);
    b.output("y", ::onnx::TensorProto::UINT8);
    const std::string e = dzt::thrown<NotImplementedError>([&] { b.load(); });
    CHECK(dzt::has(e, "Cast, opset 13"));
    CHECK(dzt::has(e, "UINT8"));
  }
}

TEST_CASE("onnx math ops: edge and reflect padding gather, so their gradient sums the copies") {
  // x = [[0, 1, 2], [3, 4, 5]]; its last column cropped, 1 row before, 2 columns before.
  for (const char* mode : {"edge", "reflect"}) {
    ModelBuilder b(13);
    b.input("x", kDouble, {2, 3});
    b.ints("pads", {1, 2, 0, -1});
    attr_s(b.node("Pad", {"x", "pads"}, {"y"}), "mode", mode);
    b.output("y", kDouble);
    auto m = b.load();
    Variable y = run1(m, Variable(arange(0.0, 6.0, 1.0, float64).reshape({2, 3})));
    CAPTURE(std::string(mode));
    CHECK(y.shape() == Shape{3, 4});
    if (std::string(mode) == "edge") CHECK(dzt::vals(y) == std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 3, 3, 3, 4});
    else CHECK(dzt::vals(y) == std::vector<double>{3, 4, 3, 4, 0, 1, 0, 1, 3, 4, 3, 4});
    CHECK(utils::gradient_check([&](const Variable& x) { return m(x); }, random::Generator(2).randn({2, 3}, float64)));
  }
}

TEST_CASE("onnx math ops: an imported graph of Pow, Max, Where and Concat differentiates like its functions") {
  ModelBuilder b(13);
  b.input("x", kDouble, {3});
  b.node("Pow", {"x", "x"}, {"p"});
  b.node("Max", {"p", "x"}, {"mx"});
  b.node("Greater", {"x", "p"}, {"gt"});
  b.node("Where", {"gt", "x", "mx"}, {"w"});
  attr_i(b.node("Concat", {"w", "p"}, {"y"}), "axis", 0);
  b.output("y", kDouble);
  auto m = b.load();
  CHECK(utils::gradient_check([&](const Variable& x) { return m(x); },
                              array(std::vector<double>{0.5, 1.3, 2.0}, Shape{3})));
}

TEST_CASE("onnx math ops: Pow with a Constant exponent is F::pow's constant power") {
  ModelBuilder b(13);
  b.input("x", kFloat, {3});
  auto* c = b.node("Constant", {}, {"two"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
  a->mutable_t()->add_float_data(2.f);
  b.node("Pow", {"x", "two"}, {"y"});
  b.output("y", kFloat);
  auto m = b.load();
  Variable x(array(std::vector<float>{1.f, -2.f, 3.f}, Shape{3}));
  Variable y = m(x);
  CHECK(y.dtype() == float32);
  CHECK(dzt::vals(y) == std::vector<double>{1, 4, 9});
  REQUIRE(y.creator());
  CHECK(y.creator()->name() == "Pow");
  y.sum().backward();
  CHECK(dzt::vals(x.grad()) == std::vector<double>{2, -4, 6});
}

// --- every float op of the math table differentiates (float64 finite differences) ------------------
namespace {

// One node `op` on the checked input "x" (float64, x_shape, values in [lo, hi)), an optional
// fixed float64 input "c" (c_shape) and int64 initializers; `attrs` sets the node's attributes.
struct GradCase {
  std::string op;
  int opset;
  std::vector<std::string> inputs;
  Shape x_shape;
  double lo = -1.0, hi = 1.0;
  Shape c_shape = {};
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> ints = {};
  std::function<void(::onnx::NodeProto*)> attrs = nullptr;
};

bool grad_ok(const GradCase& gc) {
  ModelBuilder b(gc.opset);
  b.input("x", kDouble, std::vector<std::int64_t>(gc.x_shape.begin(), gc.x_shape.end()));
  const bool has_c = std::find(gc.inputs.begin(), gc.inputs.end(), "c") != gc.inputs.end();
  if (has_c) b.input("c", kDouble, std::vector<std::int64_t>(gc.c_shape.begin(), gc.c_shape.end()));
  for (const auto& [name, v] : gc.ints) {
    b.ints(name, v);
    auto* t = b.m.mutable_graph()->mutable_initializer(b.m.graph().initializer_size() - 1);
    if (name == "gidx") {  // GatherElements' indices: x's shape
      t->clear_dims();
      for (std::int64_t d : gc.x_shape) t->add_dims(d);
    }
  }
  auto* n = b.node(gc.op, gc.inputs, {"y"});
  if (gc.attrs) gc.attrs(n);
  b.output("y", kDouble);
  auto m = b.load();
  const Variable c(random::Generator(11).uniform(0.5, 1.5, gc.c_shape, float64));
  return utils::gradient_check(
      [&](const Variable& x) { return has_c ? m.forward_multi({x, c})[0] : m(x); },
      random::Generator(12).uniform(gc.lo, gc.hi, gc.x_shape, float64));
}

}  // namespace

TEST_CASE("onnx math ops: every float op's gradient matches finite differences through OnnxModel") {
  const Shape s34{3, 4};
  auto axis = [](std::int64_t a) { return [a](::onnx::NodeProto* n) { attr_i(n, "axis", a); }; };
  std::vector<GradCase> cases = {
      {"Neg", 13, {"x"}, s34},
      {"Exp", 13, {"x"}, s34},
      {"Log", 13, {"x"}, s34, 0.5, 2.0},
      {"Sin", 7, {"x"}, s34},
      {"Cos", 7, {"x"}, s34},
      {"Tanh", 13, {"x"}, s34},
      {"Sigmoid", 13, {"x"}, s34},
      {"Relu", 14, {"x"}, s34},
      {"LeakyRelu", 16, {"x"}, s34, -1, 1, {}, {}, [](::onnx::NodeProto* n) { attr_f(n, "alpha", 0.3f); }},
      {"Sqrt", 13, {"x"}, s34, 0.5, 2.0},
      {"Abs", 13, {"x"}, s34},
      {"Reciprocal", 13, {"x"}, s34, 0.5, 2.0},
      {"Softmax", 13, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}, axis(1)},
      {"Softmax", 11, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}, axis(1)},
      {"LogSoftmax", 13, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}, axis(-1)},
      {"LogSoftmax", 11, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}, axis(0)},
      {"Add", 14, {"x", "c"}, s34, -1, 1, Shape{4}},
      {"Sub", 14, {"c", "x"}, s34, -1, 1, Shape{4}},
      {"Mul", 14, {"x", "c"}, s34, -1, 1, Shape{3, 1}},
      {"Div", 14, {"c", "x"}, s34, 0.5, 2.0, Shape{4}},
      {"Pow", 15, {"x", "c"}, s34, 0.5, 2.0, Shape{4}},
      {"Pow", 15, {"c", "x"}, s34, -1, 1, Shape{4}},
      {"Max", 13, {"x", "c", "x"}, s34, 0, 2, Shape{4}},
      {"Min", 13, {"c", "x"}, s34, 0, 2, Shape{4}},
      {"Sum", 13, {"x", "c", "x"}, s34, -1, 1, Shape{4}},
      {"Mean", 13, {"x", "c"}, s34, -1, 1, Shape{4}},
      {"Where", 16, {"cond", "x", "c"}, s34, -1, 1, Shape{4}, {{"cond", {1, 0, 0, 1}}}},
      {"Clip", 7, {"x"}, s34, -1, 1, {}, {}, [](::onnx::NodeProto* n) {
         attr_f(n, "min", -0.5f);
         attr_f(n, "max", 0.4f);
       }},
      {"Transpose", 13, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}, [](::onnx::NodeProto* n) { attr_ints(n, "perm", {2, 0, 1}); }},
      {"Reshape", 14, {"x", "shape"}, Shape{2, 3, 4}, -1, 1, {}, {{"shape", {0, -1, 2}}}},
      {"Flatten", 13, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}, axis(2)},
      {"Squeeze", 13, {"x", "axes"}, Shape{3, 1, 4}, -1, 1, {}, {{"axes", {1}}}},
      {"Unsqueeze", 13, {"x", "axes"}, s34, -1, 1, {}, {{"axes", {0, 3}}}},
      {"Expand", 13, {"x", "shape"}, Shape{3, 1}, -1, 1, {}, {{"shape", {2, 1, 4}}}},
      {"Concat", 13, {"x", "c", "x"}, s34, -1, 1, Shape{3, 2}, {}, axis(-1)},
      {"Gather", 13, {"x", "idx"}, s34, -1, 1, {}, {{"idx", {3, 0, -1}}}, axis(1)},
      {"GatherElements", 13, {"x", "gidx"}, s34, -1, 1, {}, {{"gidx", {0, 2, 1, 0, 2, 2, 0, 1, 1, 1, 0, 2}}}, axis(0)},
      {"Slice", 13, {"x", "starts", "ends", "axes", "steps"}, s34, -1, 1, {},
       {{"starts", {-1, 1}}, {"ends", {-100, 4}}, {"axes", {0, 1}}, {"steps", {-2, 2}}}},
      {"Pad", 13, {"x", "pads"}, s34, -1, 1, {}, {{"pads", {1, -1, 0, 2}}}},
      {"Pad", 13, {"x", "pads"}, s34, -1, 1, {}, {{"pads", {2, 1, 1, 2}}},
       [](::onnx::NodeProto* n) { attr_s(n, "mode", "reflect"); }},
      {"ReduceSum", 13, {"x", "axes"}, Shape{2, 3, 4}, -1, 1, {}, {{"axes", {0, -1}}}},
      {"ReduceMean", 13, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}, [](::onnx::NodeProto* n) { attr_ints(n, "axes", {1}); }},
      {"ReduceMax", 13, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {},
       [](::onnx::NodeProto* n) {
         attr_ints(n, "axes", {2});
         attr_i(n, "keepdims", 0);
       }},
      {"ReduceMin", 13, {"x"}, Shape{2, 3, 4}, -1, 1, {}, {}},
  };
  for (const GradCase& gc : cases) {
    CAPTURE(gc.op);
    CAPTURE(gc.opset);
    CHECK(grad_ok(gc));
  }
}

// --- sizes from the file: refused before anything is allocated ----------------------------------------
// Regressions of fuzz_onnx_run (tests/fuzz/regressions/onnx_run/): a Range of NaN, a Reshape whose
// extents overflow int64, and outputs of billions of elements asked for by a tiny model.
namespace {

// The importer's cap on declared sizes, lowered for one scope.
struct CapGuard {
  std::int64_t old = ox::max_output_elements();
  explicit CapGuard(std::int64_t n) { ox::set_max_output_elements(n); }
  ~CapGuard() { ox::set_max_output_elements(old); }
};

// Range(start, limit, delta) with start as the model's input and the others fixed.
std::string range_error(float start, float limit, float delta) {
  ModelBuilder b(11);
  b.input("s", kFloat, {});
  b.scalar("l", limit);
  b.scalar("d", delta);
  b.node("Range", {"s", "l", "d"}, {"y"});
  b.output("y", kFloat);
  auto m = b.load();
  return dzt::thrown<ValueError>([&] { run1(m, Variable(array(static_cast<double>(start)).astype(float32))); });
}

}  // namespace

TEST_CASE("onnx math ops: Range refuses non-finite bounds, a zero delta and more elements than the cap") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const std::string& e : {range_error(nan, 4.f, 1.f), range_error(0.f, inf, 1.f), range_error(0.f, 4.f, -inf),
                               range_error(0.f, 4.f, 0.f)}) {
    CHECK(dzt::has(e, "Range, opset 11"));
    CHECK(dzt::has(e, "must be finite, and delta not 0"));
  }
  const std::string e = range_error(0.f, 1e12f, 1.f);
  CHECK(dzt::has(e, "Range, opset 11"));
  CHECK(dzt::has(e, "999999995904 elements"));  // 1e12 as a float
  CHECK(range_error(0.f, 1e3f, 1.f) == "NO THROW");
}

TEST_CASE("onnx math ops: a Reshape whose extents overflow int64 is a ShapeError naming the node") {
  ModelBuilder b(13);
  b.input("x", kFloat, {1});
  b.ints("shape", {562949953421312, 435459550291});  // the product wraps to a small number
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.output("y", kFloat);
  auto m = b.load();
  const std::string e = dzt::thrown<ShapeError>([&] { run1(m, Variable(zeros({1}))); });
  CHECK(dzt::has(e, "Reshape, opset 13"));
  CHECK(dzt::has(e, "more elements than int64 can count"));
}

TEST_CASE("onnx math ops: ConstantOfShape, Expand and Pad refuse outputs past the cap before allocating") {
  {
    ModelBuilder b(13);
    b.input("shape", kInt64, {3});
    b.node("ConstantOfShape", {"shape"}, {"y"});
    b.output("y", kFloat);
    auto m = b.load();
    const Tensor big = array(std::vector<std::int64_t>{100000, 100000, 1000}, Shape{3}, int64);
    std::string e = dzt::thrown<ValueError>([&] { run1(m, Variable(big)); });
    CHECK(dzt::has(e, "ConstantOfShape, opset 13"));
    CHECK(dzt::has(e, "(100000, 100000, 1000)"));
    CHECK(dzt::has(e, "cap of 2147483648"));
    const Tensor small = array(std::vector<std::int64_t>{2, 3, 5}, Shape{3}, int64);
    CHECK(run1(m, Variable(small)).shape() == Shape{2, 3, 5});
    CapGuard cap(20);
    e = dzt::thrown<ValueError>([&] { run1(m, Variable(small)); });
    CHECK(dzt::has(e, "30 elements, more than the importer's cap of 20"));
  }
  {
    ModelBuilder b(13);
    b.input("x", kFloat, {1});
    b.ints("shape", {1 << 20, 1 << 20});
    b.node("Expand", {"x", "shape"}, {"y"});
    b.output("y", kFloat);
    auto m = b.load();
    const std::string e = dzt::thrown<ValueError>([&] { run1(m, Variable(zeros({1}))); });
    CHECK(dzt::has(e, "Expand, opset 13"));
    CHECK(dzt::has(e, "1099511627776 elements"));
  }
  {
    ModelBuilder b(13);
    b.input("x", kFloat, {2, 2});
    b.ints("pads", {0, 0, std::int64_t{1} << 40, 0});
    b.node("Pad", {"x", "pads"}, {"y"});
    b.output("y", kFloat);
    auto m = b.load();
    const std::string e = dzt::thrown<ValueError>([&] { run1(m, Variable(zeros({2, 2}))); });
    CHECK(dzt::has(e, "Pad, opset 13"));
    CHECK(dzt::has(e, "padded output"));
  }
}

TEST_CASE("onnx math ops: a Slice step longer than the axis takes one element (no stride overflow)") {
  ModelBuilder b(13);
  b.input("x", kFloat, {3, 4});
  b.ints("starts", {-1, 0});
  b.ints("ends", {-100, 100});
  b.ints("axes", {0, 1});
  b.ints("steps", {-std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()});
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  b.output("y", kFloat);
  auto m = b.load();
  std::vector<float> xv(12);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
  const Variable y = run1(m, Variable(array(xv, Shape{3, 4})));
  CHECK(y.shape() == Shape{1, 1});
  CHECK(dzt::vals(y) == std::vector<double>{8});
}
