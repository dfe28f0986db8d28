// tests/onnx/test_onnx_import.cpp - the importer's core (OnnxModel): loading and running a graph,
// parameters keyed by their ONNX names, training and the weight files, and every kind of bad file
// refused with the right dezero::Error naming what is wrong (and reading nothing outside the
// model's folder). The models are built in memory with libonnx's classes and written to a
// folder made with mkdtemp under /tmp.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/onnx.hpp>

#include <onnx/onnx_pb.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/memory_ceiling.hpp"
#include "support/test_util.hpp"
#include "onnx_test_util.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace dezero;
// With ONNX's own namespace ::onnx in sight, dezero::onnx is spelt out.
using OnnxModel = dezero::onnx::OnnxModel;

namespace {

using dezero_onnx_test::TempDir;
using dezero_onnx_test::error_of;
using dezero_onnx_test::contains;

// --- building models ------------------------------------------------------------------------------

::onnx::TensorProto float_tensor(const std::string& name, const std::vector<std::int64_t>& dims,
                                 const std::vector<float>& values) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

// A value declared with an element type and dims; -1 is the symbol "batch".
::onnx::ValueInfoProto value(const std::string& name, int elem_type, const std::vector<std::int64_t>& dims) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (auto d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0) dim->set_dim_param("batch");
    else dim->set_dim_value(d);
  }
  return v;
}

::onnx::NodeProto* add_node(::onnx::GraphProto& g, const std::string& op, std::initializer_list<std::string> inputs,
                            std::initializer_list<std::string> outputs, const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

::onnx::ModelProto new_model(int opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("dezero-tests");
  m.set_producer_version("1");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

std::string save(const ::onnx::ModelProto& m, const TempDir& dir, const std::string& name = "model.onnx") {
  std::string bytes;
  REQUIRE(m.SerializeToString(&bytes));
  write_bytes(dir.file(name), bytes);
  return dir.file(name);
}

// A 3-4-2 MLP: x (batch, 3) -> MatMul l0/W (3, 4) -> Add l0/b (4) -> Relu -> MatMul fc2.weight
// (4, 2) -> Add fc2.bias (2) -> y (batch, 2). The weights are fixed numbers; l0/b is also listed as a
// graph input (an initializer all the same).
struct Mlp {
  std::vector<float> w1, b1, w2, b2;
  Mlp() {
    for (int i = 0; i < 12; ++i) w1.push_back(0.1f * static_cast<float>((i * 7) % 11) - 0.5f);
    b1 = {0.1f, -0.2f, 0.3f, 0.05f};
    for (int i = 0; i < 8; ++i) w2.push_back(0.15f * static_cast<float>((i * 5) % 9) - 0.6f);
    b2 = {0.01f, -0.02f};
  }
  ::onnx::ModelProto proto() const {
    auto m = new_model();
    auto& g = *m.mutable_graph();
    *g.add_input() = value("x", ::onnx::TensorProto::FLOAT, {-1, 3});
    *g.add_input() = value("l0/b", ::onnx::TensorProto::FLOAT, {4});
    *g.add_output() = value("y", ::onnx::TensorProto::FLOAT, {-1, 2});
    *g.add_initializer() = float_tensor("l0/W", {3, 4}, w1);
    *g.add_initializer() = float_tensor("l0/b", {4}, b1);
    *g.add_initializer() = float_tensor("fc2.weight", {4, 2}, w2);
    *g.add_initializer() = float_tensor("fc2.bias", {2}, b2);
    add_node(g, "MatMul", {"x", "l0/W"}, {"h0"}, "fc1");
    add_node(g, "Add", {"h0", "l0/b"}, {"h1"});
    add_node(g, "Relu", {"h1"}, {"h2"});
    add_node(g, "MatMul", {"h2", "fc2.weight"}, {"h3"});
    add_node(g, "Add", {"h3", "fc2.bias"}, {"y"});
    return m;
  }
  // The same network built with dezero::F.
  Variable reference(const Variable& x) const {
    Variable W1(array(w1, Shape{3, 4}, float32)), B1(array(b1, float32));
    Variable W2(array(w2, Shape{4, 2}, float32)), B2(array(b2, float32));
    return F::matmul(F::relu(F::matmul(x, W1) + B1), W2) + B2;
  }
};

Tensor input_batch(std::int64_t n) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n * 3; ++i) v.push_back(std::sin(0.7f * static_cast<float>(i)) * 2.0f);
  return array(v, Shape{n, 3}, float32);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  auto av = a.to_cpu().to_vector<double>(), bv = b.to_cpu().to_vector<double>();
  double d = 0;
  for (std::size_t i = 0; i < av.size(); ++i) d = std::max(d, std::abs(av[i] - bv[i]));
  return d;
}



std::string load_error_of_ni(const std::string& path) {
  return error_of<NotImplementedError>([&] { OnnxModel m(path); });
}
std::string load_error_of_value(const std::string& path) {
  return error_of<ValueError>([&] { OnnxModel m(path); });
}
std::string load_error_of_io(const std::string& path) {
  return error_of<IOError>([&] { OnnxModel m(path); });
}

// A graph x (batch, 3) -> Relu -> y whose single node the caller can change.
::onnx::ModelProto relu_model(int opset = 13) {
  auto m = new_model(opset);
  auto& g = *m.mutable_graph();
  *g.add_input() = value("x", ::onnx::TensorProto::FLOAT, {-1, 3});
  *g.add_output() = value("y", ::onnx::TensorProto::FLOAT, {-1, 3});
  add_node(g, "Relu", {"x"}, {"y"}, "act");
  return m;
}

}  // namespace

// --- loading and running --------------------------------------------------------------------------
// Needs MatMul, Add and Relu from import_ops_math.cpp / import_ops_nn.cpp.
TEST_CASE("an MLP of MatMul, Add and Relu loads and runs as the same network built with F") {
  TempDir dir;
  Mlp mlp;
  OnnxModel m(save(mlp.proto(), dir));
  CHECK(m.opset_version() == 13);
  CHECK(m.producer() == "dezero-tests 1");
  CHECK(m.input_names() == std::vector<std::string>{"x"});  // l0/b is an initializer
  CHECK(m.output_names() == std::vector<std::string>{"y"});
  REQUIRE(m.input_info().size() == 1);
  CHECK(m.input_info()[0].dtype == float32);
  CHECK(m.input_info()[0].shape == std::vector<std::int64_t>{-1, 3});
  CHECK(m.input_info()[0].dim_params == std::vector<std::string>{"batch", ""});
  CHECK(m.op_types() == std::vector<std::string>{"MatMul", "Add", "Relu", "MatMul", "Add"});

  for (std::int64_t n : {1, 5}) {
    Variable x(input_batch(n));
    Variable y = m(x);
    CHECK(y.shape() == Shape{n, 2});
    CHECK(max_abs_diff(y.data(), mlp.reference(x).data()) < 1e-6);
  }

  // backward reaches the input and every parameter, with the reference's gradients.
  Variable x(input_batch(4));
  m.cleargrads();
  Variable loss = F::sum(m(x) * m(x));
  loss.backward();
  REQUIRE(x.has_grad());
  Variable xr(input_batch(4));
  Variable yr = mlp.reference(xr);
  F::sum(yr * yr).backward();
  CHECK(max_abs_diff(x.grad().data(), xr.grad().data()) < 1e-5);
  for (auto& p : m.params()) CHECK(p.has_grad());

  // create_graph: the gradient is itself differentiable.
  Variable x2(input_batch(2));
  Variable y2 = F::sum(m(x2));
  y2.backward(false, true);
  Variable gx = x2.grad();
  REQUIRE(gx.creator() != nullptr);
}

TEST_CASE("several inputs and outputs, in the file's order; an output may be an input or an initializer") {
  TempDir dir;
  auto m0 = new_model(17);
  auto& g = *m0.mutable_graph();
  *g.add_input() = value("a", ::onnx::TensorProto::DOUBLE, {2});
  *g.add_input() = value("b", ::onnx::TensorProto::DOUBLE, {2});
  *g.add_output() = value("sum", ::onnx::TensorProto::DOUBLE, {2});
  *g.add_output() = value("a", ::onnx::TensorProto::DOUBLE, {2});
  *g.add_output() = value("k", ::onnx::TensorProto::DOUBLE, {1});
  *g.add_output() = value("r", ::onnx::TensorProto::DOUBLE, {2});
  ::onnx::TensorProto k;
  k.set_name("k");
  k.set_data_type(::onnx::TensorProto::DOUBLE);
  k.add_dims(1);
  k.add_double_data(4.0);
  *g.add_initializer() = k;
  add_node(g, "Add", {"a", "b"}, {"sum"});
  add_node(g, "Relu", {"b"}, {"r"});
  OnnxModel m(save(m0, dir));
  CHECK(m.opset_version() == 17);
  CHECK(m.input_names() == std::vector<std::string>{"a", "b"});
  CHECK(m.output_names() == std::vector<std::string>{"sum", "a", "k", "r"});
  CHECK(m.output_info()[2].shape == std::vector<std::int64_t>{1});
  Variable a(array({1.0, -2.0}, float64)), b(array({-3.0, 5.0}, float64));
  VariableList ys = m(VariableList{a, b});
  REQUIRE(ys.size() == 4);
  CHECK(ys[0].data().to_vector<double>() == std::vector<double>{-2.0, 3.0});
  CHECK(ys[1].data().to_vector<double>() == std::vector<double>{1.0, -2.0});
  CHECK(ys[2].data().to_vector<double>() == std::vector<double>{4.0});
  CHECK(ys[3].data().to_vector<double>() == std::vector<double>{0.0, 5.0});
  CHECK(m.param("k").dtype() == float64);  // a float64 initializer stays float64
  // One input where two are declared; an empty Variable.
  CHECK(contains(error_of<ValueError>([&] { m(a); }), "2 input(s) (a, b), got 1"));
  CHECK_THROWS_AS(m.forward_multi(VariableList{a, Variable()}), ValueError);
}

TEST_CASE("the file's node order need not be topological") {
  TempDir dir;
  Mlp mlp;
  auto proto = mlp.proto();
  auto* nodes = proto.mutable_graph()->mutable_node();
  std::reverse(nodes->begin(), nodes->end());
  OnnxModel m(save(proto, dir));
  CHECK(m.op_types() == std::vector<std::string>{"MatMul", "Add", "Relu", "MatMul", "Add"});
  Variable x(input_batch(3));
  CHECK(max_abs_diff(m(x).data(), mlp.reference(x).data()) < 1e-6);
}

TEST_CASE("float initializers are Parameters keyed by their ONNX names; integer ones and Constants are fixed") {
  TempDir dir;
  Mlp mlp;
  OnnxModel m(save(mlp.proto(), dir));
  std::vector<std::string> keys;
  for (auto& [key, p] : m.named_params()) keys.push_back(key);
  // "l0/W" and "l0/b" live in a sub-layer "l0"; named_params gives the names back.
  CHECK(keys == std::vector<std::string>{"l0/W", "l0/b", "fc2.weight", "fc2.bias"});
  CHECK(m.params().size() == 4);
  CHECK(m.layer("l0") != nullptr);
  CHECK(m.param("l0/W").shape() == Shape{3, 4});
  CHECK(m.param("fc2.bias").data().to_vector<float>() == mlp.b2);

  // An int64 initializer is no parameter; a Constant node's value is none either.
  auto proto = relu_model();
  auto& g = *proto.mutable_graph();
  ::onnx::TensorProto idx;
  idx.set_name("idx");
  idx.set_data_type(::onnx::TensorProto::INT64);
  idx.add_dims(2);
  idx.add_int64_data(0);
  idx.add_int64_data(1);
  *g.add_initializer() = idx;
  *g.add_initializer() = float_tensor("scale", {3}, {1.f, 2.f, 3.f});
  g.mutable_node(0)->set_output(0, "r");
  auto* c = add_node(g, "Constant", {}, {"c"}, "const");
  auto* a = c->add_attribute();
  a->set_name("value_float");
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(0.5f);
  add_node(g, "Add", {"r", "c"}, {"y"});
  OnnxModel m2(save(proto, dir, "fixed.onnx"));
  REQUIRE(m2.params().size() == 1);
  CHECK(m2.named_params()[0].first == "scale");
  CHECK(m2.op_types() == std::vector<std::string>{"Relu", "Constant", "Add"});
  Variable y = m2(Variable(array({{-1.0, 0.0, 2.0}}, float32)));
  CHECK(y.data().to_vector<float>() == std::vector<float>{0.5f, 0.5f, 2.5f});
}

TEST_CASE("the model runs on every device: parameters move, float constants follow, integer ones stay") {
  // MLP, then + Constant 0.5, then Reshape to (batch * 2,) by an int64 initializer [-1].
  TempDir dir;
  Mlp mlp;
  auto proto = mlp.proto();
  auto& g = *proto.mutable_graph();
  g.mutable_node(4)->set_output(0, "y0");
  auto* c = add_node(g, "Constant", {}, {"half"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("", {}, {0.5f});
  add_node(g, "Add", {"y0", "half"}, {"y1"});
  ::onnx::TensorProto shape;
  shape.set_name("flat");
  shape.set_data_type(::onnx::TensorProto::INT64);
  shape.add_dims(1);
  shape.add_int64_data(-1);
  *g.add_initializer() = shape;
  add_node(g, "Reshape", {"y1", "flat"}, {"y"});
  *g.mutable_output(0) = value("y", ::onnx::TensorProto::FLOAT, {-1});
  OnnxModel m(save(proto, dir));
  const Tensor x = input_batch(3);
  const Tensor want = (mlp.reference(Variable(x)).data() + 0.5).reshape({6});
  dzt::on_each_device([&](Device device) {
    m.to(device);
    for (auto& p : m.params()) CHECK(p.device() == device);
    Variable xd(x.to(device));
    Variable y = m(xd);
    CHECK(y.device() == device);
    CHECK(max_abs_diff(y.data(), want) < 1e-6);
    m.cleargrads();
    F::sum(y).backward();
    CHECK(m.param("l0/W").grad().device() == device);
    m.to_cpu();
    CHECK(max_abs_diff(m(Variable(x)).data(), want) < 1e-6);
  });
}

TEST_CASE("one imported model serves several inference threads") {
  TempDir dir;
  Mlp mlp;
  OnnxModel m(save(mlp.proto(), dir));
  const Tensor x = input_batch(4);
  const Tensor want = mlp.reference(Variable(x)).data();
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      if (t % 2) {  // predict(): no_grad() and test_mode() for each call
        for (int k = 0; k < 25; ++k) ok[static_cast<std::size_t>(t)] += max_abs_diff(m.predict(Variable(x)).data(), want) < 1e-6;
        return;
      }
      auto guard = no_grad();
      for (int k = 0; k < 25; ++k) ok[static_cast<std::size_t>(t)] += max_abs_diff(m(Variable(x)).data(), want) < 1e-6;
    });
  }
  for (auto& th : threads) th.join();
  CHECK(ok == std::vector<int>(4, 25));
}

TEST_CASE("an initializer name that cannot nest is kept flat with '/' written %2F") {
  TempDir dir;
  auto proto = relu_model();
  auto& g = *proto.mutable_graph();
  *g.add_initializer() = float_tensor("a", {1}, {1.f});
  *g.add_initializer() = float_tensor("a/b", {1}, {2.f});   // "a" is a parameter: no layer "a"
  *g.add_initializer() = float_tensor("c//d", {1}, {3.f});  // an empty part
  *g.add_initializer() = float_tensor("e/f", {1}, {4.f});
  ::onnx::TensorProto e;  // an integer "e" is no parameter: "e/f" still nests
  e.set_name("e");
  e.set_data_type(::onnx::TensorProto::INT64);
  e.add_int64_data(1);
  *g.add_initializer() = e;
  OnnxModel m(save(proto, dir));
  std::vector<std::string> keys;
  for (auto& [key, p] : m.named_params()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"a", "a%2Fb", "c%2F%2Fd", "e/f"});
  CHECK(m.param("a%2Fb").name() == "a/b");  // the Variable keeps the ONNX name
  CHECK(m.layer("e") != nullptr);

  // A clash left after the escape is a ValueError naming the initializer.
  *g.add_initializer() = float_tensor("a%2Fb", {1}, {5.f});
  std::string msg = load_error_of_value(save(proto, dir, "clash.onnx"));
  CHECK(contains(msg, "'a%2Fb'"));
}

TEST_CASE("an imported MLP fine-tunes with SGD and its weights save and load") {
  TempDir dir;
  Mlp mlp;
  const std::string path = save(mlp.proto(), dir);
  OnnxModel m(path);
  optimizers::SGD sgd(0.05);
  sgd.setup(m);
  Variable x(input_batch(8));
  Variable t(array(std::vector<float>(16, 0.25f), Shape{8, 2}, float32));
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    Variable loss = F::mean_squared_error(m(x), t);
    m.cleargrads();
    loss.backward();
    sgd.update();
    losses.push_back(loss.data().item<float>());
  }
  CHECK(losses.back() < 0.5 * losses.front());

  // save_weights writes the ONNX names; a fresh import loads them and gives the trained outputs.
  const std::string weights = dir.file("w.npz");
  m.save_weights(weights);
  OnnxModel fresh(path);
  auto g = no_grad();
  CHECK(max_abs_diff(fresh(x).data(), m(x).data()) > 1e-3);
  fresh.load_weights(weights);
  CHECK(max_abs_diff(fresh(x).data(), m(x).data()) < 1e-7);
  CHECK(max_abs_diff(fresh.param("l0/W").data(), m.param("l0/W").data()) == 0.0);
}

TEST_CASE("external data in the model's folder is read (offset and length)") {
  TempDir dir;
  auto proto = relu_model();
  auto& g = *proto.mutable_graph();
  std::vector<float> w = {1.5f, -2.f, 3.25f};
  std::string bytes(8, 'x');  // 8 bytes of padding before the data
  bytes.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  write_bytes(dir.file("weights.bin"), bytes);
  auto* t = g.add_initializer();
  t->set_name("w");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(3);
  t->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "8");
  kv("length", "12");
  OnnxModel m(save(proto, dir));
  CHECK(m.param("w").data().to_vector<float>() == w);

  t->mutable_external_data(1)->set_value("16");  // 16 + 12 > 20 bytes
  t->mutable_external_data(2)->set_value("12");
  CHECK(contains(load_error_of_value(save(proto, dir, "past_end.onnx")), "past the end"));
  t->mutable_external_data(1)->set_value("8");
  t->mutable_external_data(2)->set_value("8");  // not the 12 bytes of 3 floats
  CHECK(contains(load_error_of_value(save(proto, dir, "length.onnx")), "length"));
}

// --- bad files --------------------------------------------------------------------------------------
TEST_CASE("a missing, truncated or random file is an IOError naming the path") {
  TempDir dir;
  std::string msg = load_error_of_io(dir.file("nothere.onnx"));
  CHECK(contains(msg, dir.file("nothere.onnx")));

  std::string bytes;
  REQUIRE(Mlp().proto().SerializeToString(&bytes));
  write_bytes(dir.file("truncated.onnx"), bytes.substr(0, bytes.size() / 2));
  msg = load_error_of_io(dir.file("truncated.onnx"));
  CHECK(contains(msg, "truncated.onnx"));

  std::mt19937 rng(7);
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise.push_back(static_cast<char>(rng() & 0xff));
  write_bytes(dir.file("noise.onnx"), noise);
  CHECK(contains(load_error_of_io(dir.file("noise.onnx")), "noise.onnx"));

  write_bytes(dir.file("empty.onnx"), "");  // parses as an empty message: no graph
  CHECK(contains(load_error_of_io(dir.file("empty.onnx")), "not an ONNX model"));
  CHECK(contains(load_error_of_io(dir.path), "not a regular file"));
}

TEST_CASE("every prefix of a model file loads or throws a dezero::Error") {
  TempDir dir;
  std::string bytes;
  REQUIRE(Mlp().proto().SerializeToString(&bytes));
  int refused = 0, loaded = 0;
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    write_bytes(dir.file("prefix.onnx"), bytes.substr(0, n));
    try {
      OnnxModel m(dir.file("prefix.onnx"));
      ++loaded;
    } catch (const Error&) {
      ++refused;
    }
  }
  CHECK(loaded >= 1);  // the whole file
  CHECK(refused + loaded == static_cast<int>(bytes.size()) + 1);
}

TEST_CASE("an unknown op, attribute, domain or opset is a NotImplementedError naming the node") {
  TempDir dir;
  auto proto = relu_model();
  auto* node = proto.mutable_graph()->mutable_node(0);
  node->set_op_type("FooBar");
  node->set_name("x");
  CHECK(contains(load_error_of_ni(save(proto, dir, "op.onnx")), "node 'x' (FooBar, opset 13)"));

  proto = relu_model();
  node = proto.mutable_graph()->mutable_node(0);
  auto* a = node->add_attribute();
  a->set_name("foo");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(1);
  std::string msg = load_error_of_ni(save(proto, dir, "attr.onnx"));
  CHECK(contains(msg, "node 'act' (Relu, opset 13)"));
  CHECK(contains(msg, "attribute 'foo'"));

  proto = relu_model();
  node = proto.mutable_graph()->mutable_node(0);
  node->set_domain("com.microsoft");
  node->set_op_type("FusedGemm");
  auto* o = proto.add_opset_import();
  o->set_domain("com.microsoft");
  o->set_version(1);
  CHECK(contains(load_error_of_ni(save(proto, dir, "domain.onnx")), "com.microsoft"));

  for (int opset : {6, 21}) {
    msg = load_error_of_ni(save(relu_model(opset), dir, "opset.onnx"));
    CHECK(contains(msg, "opset " + std::to_string(opset)));
    CHECK(contains(msg, "dezero imports 7 to 20"));
  }
  // opsets 18 to 20 are read (Relu's definition is the same since 14)
  for (int opset : {18, 19, 20}) {
    CAPTURE(opset);
    dezero::onnx::OnnxModel m(save(relu_model(opset), dir, "relu" + std::to_string(opset) + ".onnx"));
    CHECK(m.opset_version() == opset);
    const Variable y = m(Variable(array(std::vector<double>{-1, 2, -3, 4, 0.5, -0.5}, Shape{2, 3}, float32)));
    CHECK(y.data().astype(float64).to_vector<double>() == std::vector<double>{0, 2, 0, 4, 0.5, 0});
  }
  // A node without a name is named by its first output.
  proto = relu_model();
  proto.mutable_graph()->mutable_node(0)->clear_name();
  proto.mutable_graph()->mutable_node(0)->set_op_type("FooBar");
  CHECK(contains(load_error_of_ni(save(proto, dir, "unnamed.onnx")), "node with output 'y' (FooBar, opset 13)"));
}

TEST_CASE("an unsupported dtype is a NotImplementedError naming it") {
  TempDir dir;
  auto proto = relu_model();
  auto* t = proto.mutable_graph()->add_initializer();
  t->set_name("half");
  t->set_data_type(::onnx::TensorProto::FLOAT16);
  t->add_dims(2);
  t->add_int32_data(0x3c00);
  t->add_int32_data(0x3c00);
  std::string msg = load_error_of_ni(save(proto, dir, "fp16.onnx"));
  CHECK(contains(msg, "'half'"));
  CHECK(contains(msg, "float16"));

  proto = relu_model();
  *proto.mutable_graph()->mutable_input(0) = value("x", ::onnx::TensorProto::BFLOAT16, {-1, 3});
  msg = load_error_of_ni(save(proto, dir, "bf16.onnx"));
  CHECK(contains(msg, "'x'"));
  CHECK(contains(msg, "BFLOAT16"));
}

TEST_CASE("an undefined input, a cycle or a value defined twice is a ValueError naming the node and value") {
  TempDir dir;
  auto proto = relu_model();
  proto.mutable_graph()->mutable_node(0)->set_input(0, "nothere");
  std::string msg = load_error_of_value(save(proto, dir, "undefined.onnx"));
  CHECK(contains(msg, "node 'act' (Relu, opset 13)"));
  CHECK(contains(msg, "'nothere'"));

  proto = relu_model();
  auto& g = *proto.mutable_graph();
  g.mutable_node(0)->set_input(0, "t2");
  g.mutable_node(0)->set_output(0, "t1");
  add_node(g, "Relu", {"t1"}, {"t2"}, "back");
  add_node(g, "Relu", {"t2"}, {"y"}, "out");
  msg = load_error_of_value(save(proto, dir, "cycle.onnx"));
  CHECK(contains(msg, "cycle"));
  CHECK(contains(msg, "node 'act' (Relu, opset 13)"));
  CHECK(contains(msg, "'t2'"));

  proto = relu_model();
  add_node(*proto.mutable_graph(), "Relu", {"x"}, {"y"}, "twice");
  msg = load_error_of_value(save(proto, dir, "twice.onnx"));
  CHECK(contains(msg, "'y'"));
  CHECK(contains(msg, "twice"));
}

TEST_CASE("dims whose product overflows, or data of the wrong size, are ValueErrors") {
  TempDir dir;
  auto proto = relu_model();
  auto* t = proto.mutable_graph()->add_initializer();
  t->set_name("huge");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(std::int64_t(1) << 40);
  t->add_dims(std::int64_t(1) << 40);
  std::string msg = load_error_of_value(save(proto, dir, "huge.onnx"));
  CHECK(contains(msg, "'huge'"));
  CHECK(contains(msg, "overflows"));

  t->set_dims(0, -3);
  CHECK(contains(load_error_of_value(save(proto, dir, "negative.onnx")), "negative"));

  t->clear_dims();
  t->add_dims(4);
  t->set_raw_data(std::string(12, '\0'));  // 3 floats for 4
  msg = load_error_of_value(save(proto, dir, "short.onnx"));
  CHECK(contains(msg, "'huge'"));
  CHECK(contains(msg, "16 bytes expected"));
}

TEST_CASE("external data outside the model's folder is refused and nothing is read") {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directory(dir.file("model"));
  // A file outside the model's folder holding exactly the 3 floats the initializer needs: any
  // read of it would make the load succeed.
  std::vector<float> w = {1.f, 2.f, 3.f};
  write_bytes(dir.file("outside.bin"), std::string(reinterpret_cast<const char*>(w.data()), 12));
  fs::create_symlink(dir.file("outside.bin"), dir.file("model/link.bin"));

  auto with_location = [&](const std::string& location) {
    auto proto = relu_model();
    auto* t = proto.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(3);
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto* e = t->add_external_data();
    e->set_key("location");
    e->set_value(location);
    std::string bytes;
    REQUIRE(proto.SerializeToString(&bytes));
    write_bytes(dir.file("model/model.onnx"), bytes);
    return dir.file("model/model.onnx");
  };
  std::string msg = load_error_of_value(with_location("../outside.bin"));
  CHECK(contains(msg, "'..'"));
  CHECK(contains(msg, "'w'"));
  msg = load_error_of_value(with_location("sub/../../outside.bin"));
  CHECK(contains(msg, "'..'"));
  msg = load_error_of_value(with_location(dir.file("outside.bin")));
  CHECK(contains(msg, "absolute"));
  msg = load_error_of_value(with_location("link.bin"));
  CHECK(contains(msg, "'link.bin' is a symbolic link; refused"));
  // A folder that is a link (one swapped in while the model loads, say) is never followed.
  fs::create_directory(dir.file("elsewhere"));
  fs::copy_file(dir.file("outside.bin"), dir.file("elsewhere/w.bin"));
  fs::create_directory_symlink(dir.file("elsewhere"), dir.file("model/sub"));
  msg = load_error_of_value(with_location("sub/w.bin"));
  CHECK(contains(msg, "'sub' is a symbolic link; refused"));
  // Even a link that stays inside the folder: nothing is resolved, so nothing can be swapped.
  fs::create_directory(dir.file("model/data"));
  fs::copy_file(dir.file("outside.bin"), dir.file("model/data/w.bin"));
  fs::create_symlink("data/w.bin", dir.file("model/inner.bin"));
  msg = load_error_of_value(with_location("inner.bin"));
  CHECK(contains(msg, "symbolic link"));
  // A FIFO (a tar archive can carry one) is refused at once, not waited on.
  REQUIRE(::mkfifo(dir.file("model/fifo.bin").c_str(), 0600) == 0);
  msg = load_error_of_io(with_location("fifo.bin"));
  CHECK(contains(msg, "is not a regular file"));
  msg = load_error_of_io(with_location("missing.bin"));
  CHECK(contains(msg, "missing.bin"));

  // The same file inside the folder loads (so the refusals above are about the place only).
  fs::copy_file(dir.file("outside.bin"), dir.file("model/inside.bin"));
  OnnxModel m(with_location("inside.bin"));
  CHECK(m.param("w").data().to_vector<float>() == w);
  OnnxModel m2(with_location("./data/w.bin"));
  CHECK(m2.param("w").data().to_vector<float>() == w);

  // Without a `length`, only the bytes the dims need are read: 12 of a 1 GiB (sparse) file.
  {
    const int fd = ::open(dir.file("model/big.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, off_t{1} << 30) == 0);
    ::close(fd);
  }
  const std::string big = with_location("big.bin");
  const dzt::CeilingRun run = dzt::run_under_ceiling([&] { OnnxModel b(big); });
  INFO(run.outcome);
  CHECK(run.outcome == "returned");
  MESSAGE("peak RSS grew by " << run.grew_kb << " kB");
  CHECK(run.grew_kb < 256 * 1024);
  OnnxModel b(big);
  CHECK(b.param("w").data().to_vector<float>() == std::vector<float>{0.f, 0.f, 0.f});
}

TEST_CASE("forward checks the number, dtype and rank of its inputs") {
  TempDir dir;
  OnnxModel m(save(relu_model(), dir));
  std::string msg = error_of<ValueError>([&] { m.forward_multi(VariableList{}); });
  CHECK(contains(msg, "1 input(s) (x), got 0"));
  msg = error_of<ValueError>([&] {
    m.forward_multi(VariableList{Variable(zeros({1, 3})), Variable(zeros({1, 3}))});
  });
  CHECK(contains(msg, "got 2"));
  msg = error_of<DtypeError>([&] { m(Variable(zeros({2, 3}, float64))); });
  CHECK(contains(msg, "'x' is float64"));
  CHECK(contains(msg, "float32"));
  msg = error_of<ShapeError>([&] { m(Variable(zeros({3}))); });
  CHECK(contains(msg, "'x'"));
  CHECK(contains(msg, "rank 2"));
  msg = error_of<ShapeError>([&] { m(Variable(zeros({2, 4}))); });
  CHECK(contains(msg, "(batch, 3)"));
  // Any batch size is fine: axis 0 is the symbol "batch".
  CHECK(m(Variable(zeros({7, 3}))).shape() == Shape{7, 3});
}
