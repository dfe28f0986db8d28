// tests/onnx/test_onnx_nn_ops.cpp - the importer's neural-network ops (dezero/onnx/import_ops_nn.cpp,
// import_ops_conv.cpp) beyond what ONNX's node tests check: the gradients of the ops composed out
// of several DeZero Functions (float64 finite differences; double backward through Gemm's
// transposed product and LSTM), and the ONNX semantics the node tests leave out (grouped, dilated
// and 3-d convolutions, ConvTranspose with groups, pools over negative values with ceil_mode and
// asymmetric pads, integer MaxPool, reverse / bidirectional / batch-first LSTMs, Dropout in
// training mode, BatchNormalization fine-tuned under Config::train, loss weights with
// ignore_index), checked against plain loops written here; and the sizes conv and pool attributes
// ask for, capped before anything is allocated; and what opsets 18 to 20 changed or added (Gelu,
// Reduce* with an axes input, Pad's axes and wrap, ScatterND's max / min, AveragePool's dilations,
// Cast's saturate, Split's num_outputs), which ONNX 1.12's node tests do not know. The models are built in memory with
// libonnx's classes, with double inputs, and written to a folder made with mkdtemp under /tmp.
#include <doctest/doctest.h>

#include <dezero/dezero.hpp>
#include <dezero/onnx.hpp>
#include <dezero/optimizers.hpp>
#include <dezero/onnx/import_util.hpp>

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>
#include "onnx_test_util.hpp"
#include "support/memory_ceiling.hpp"

using namespace dezero;
using OnnxModel = dezero::onnx::OnnxModel;

namespace {

using ModelDir = dezero_onnx_test::TempDir;
using dezero_onnx_test::error_of;
using dezero_onnx_test::contains;

using I64s = std::vector<std::int64_t>;
using Doubles = std::vector<double>;

// --- building models ------------------------------------------------------------------------------

// One graph of one node (or a few): inputs declared as double (or int64), outputs by name.
struct Net {
  ::onnx::ModelProto m;
  ModelDir dir;
  explicit Net(int opset = 13) {
    m.set_ir_version(8);
    m.set_producer_name("dezero-tests");
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("nn");
  }
  void value(::onnx::ValueInfoProto* v, const std::string& name, int elem_type, const I64s& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (auto d : dims) shape->add_dim()->set_dim_value(d);
  }
  Net& input(const std::string& name, const I64s& dims, int elem_type = ::onnx::TensorProto::DOUBLE) {
    value(m.mutable_graph()->add_input(), name, elem_type, dims);
    return *this;
  }
  Net& output(const std::string& name, int elem_type = ::onnx::TensorProto::DOUBLE) {
    auto* v = m.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    return *this;
  }
  ::onnx::NodeProto& node(const std::string& op, std::initializer_list<std::string> in,
                          std::initializer_list<std::string> out) {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name("n" + std::to_string(m.graph().node_size()));
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  std::string save() {
    std::string bytes;
    REQUIRE(m.SerializeToString(&bytes));
    const std::string file = dir.file("model.onnx");
    std::ofstream f(file, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(f.good());
    return file;
  }
  OnnxModel load() { return OnnxModel(save()); }
};

::onnx::AttributeProto* attr(::onnx::NodeProto& n, const std::string& name, ::onnx::AttributeProto::AttributeType t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}
void set_int(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  attr(n, name, ::onnx::AttributeProto::INT)->set_i(v);
}
void set_float(::onnx::NodeProto& n, const std::string& name, float v) {
  attr(n, name, ::onnx::AttributeProto::FLOAT)->set_f(v);
}
void set_ints(::onnx::NodeProto& n, const std::string& name, const I64s& v) {
  auto* a = attr(n, name, ::onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void set_string(::onnx::NodeProto& n, const std::string& name, const std::string& v) {
  attr(n, name, ::onnx::AttributeProto::STRING)->set_s(v);
}

// --- values and checks ----------------------------------------------------------------------------
Tensor randn_f64(const Shape& shape, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist;
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  Doubles v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return array(v, shape, float64);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  const Doubles av = a.to_cpu().to_vector<double>(), bv = b.to_cpu().to_vector<double>();
  double d = 0;
  for (std::size_t i = 0; i < av.size(); ++i) d = std::max(d, std::abs(av[i] - bv[i]));
  return d;
}

VariableList wrap(const std::vector<Tensor>& xs) {
  VariableList vs;
  for (const Tensor& x : xs) vs.push_back(Variable(x));
  return vs;
}

// Output `out` of the model on xs (test mode).
Variable run(OnnxModel& m, const std::vector<Tensor>& xs, std::size_t out = 0) {
  auto mode = test_mode();
  return m.forward_multi(wrap(xs))[out];
}

// The backprop gradient of sum(output 0 * coef) with respect to input i agrees with central
// differences, for every input in `which` (coef: fixed weights, so that a wrong sign or a
// swapped element shows).
void check_grads(OnnxModel& m, const std::vector<Tensor>& xs, std::initializer_list<std::size_t> which) {
  auto mode = test_mode();
  const Shape out_shape = m.forward_multi(wrap(xs))[0].shape();
  const Tensor coef = randn_f64(out_shape, 99);
  for (std::size_t i : which) {
    CAPTURE(i);
    auto f = [&](const Variable& xi) {
      VariableList vs = wrap(xs);
      vs[i] = xi;
      return m.forward_multi(vs)[0] * Variable(coef);
    };
    CHECK(utils::gradient_check(f, xs[i], 1e-5, 1e-6));
  }
}

// create_graph: the gradient of sum(g_i^2) with respect to input j, where g_i is the gradient of
// sum(output 0) with respect to input i taken with create_graph, against central differences.
void check_double_grad(OnnxModel& m, const std::vector<Tensor>& xs, std::size_t i, std::size_t j) {
  CAPTURE(i);
  CAPTURE(j);
  auto mode = test_mode();
  auto g_norm = [&](VariableList vs) {
    Variable y = F::sum(m.forward_multi(vs)[0]);
    y.backward(false, true);
    Variable g = vs[i].grad();
    return F::sum(g * g);
  };
  VariableList vs = wrap(xs);
  Variable z = g_norm(vs);
  for (Variable& v : vs) v.cleargrad();
  z.backward();
  REQUIRE(vs[j].has_grad());
  const Tensor numeric = utils::numerical_grad(
      [&](const Variable& xj) {
        VariableList ws = wrap(xs);
        ws[j] = Variable(xj.data());
        return g_norm(ws);
      },
      xs[j]);
  CHECK(utils::array_allclose(vs[j].grad().data(), numeric, 1e-4, 1e-6));
}


// --- plain-loop references ------------------------------------------------------------------------
// x (N, C, H, W) at (n, c, h, w), or `fill` outside it.
struct Img {
  Doubles v;
  std::int64_t N, C, H, W;
  explicit Img(const Tensor& t)
      : v(t.to_cpu().to_vector<double>()), N(t.shape()[0]), C(t.shape()[1]), H(t.shape()[2]), W(t.shape()[3]) {}
  bool inside(std::int64_t h, std::int64_t w) const { return h >= 0 && h < H && w >= 0 && w < W; }
  double at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return v[static_cast<std::size_t>(((n * C + c) * H + h) * W + w)];
  }
};

// ONNX's Conv: y[n, o] = sum over the group's channels and taps of x (zero outside) * W, + b.
Tensor conv_ref(const Tensor& x, const Tensor& Wt, const Tensor& b, I64s s, I64s d, I64s pads, std::int64_t group) {
  const Img X(x), K(Wt);
  const Doubles bv = b.to_vector<double>();
  const std::int64_t OC = K.N, cg = K.C, ocg = OC / group;
  const std::int64_t OH = (X.H + pads[0] + pads[2] - ((K.H - 1) * d[0] + 1)) / s[0] + 1;
  const std::int64_t OW = (X.W + pads[1] + pads[3] - ((K.W - 1) * d[1] + 1)) / s[1] + 1;
  Doubles y;
  for (std::int64_t n = 0; n < X.N; ++n)
    for (std::int64_t o = 0; o < OC; ++o)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = bv[static_cast<std::size_t>(o)];
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t ki = 0; ki < K.H; ++ki)
              for (std::int64_t kj = 0; kj < K.W; ++kj) {
                const std::int64_t h = i * s[0] - pads[0] + ki * d[0], w = j * s[1] - pads[1] + kj * d[1];
                if (X.inside(h, w)) acc += X.at(n, (o / ocg) * cg + c, h, w) * K.at(o, c, ki, kj);
              }
          y.push_back(acc);
        }
  return array(y, Shape{X.N, OC, OH, OW}, float64);
}

// ONNX's Conv in 3-d, x (N, C, D, H, W), W (OC, C / group, KD, KH, KW); pads (d, h, w before,
// d, h, w after).
Tensor conv3d_ref(const Tensor& x, const Tensor& Wt, const Tensor& b, I64s s, I64s d, I64s p, std::int64_t group) {
  const Shape xs = x.shape(), ks = Wt.shape();
  const Doubles xv = x.to_vector<double>(), kv = Wt.to_vector<double>(), bv = b.to_vector<double>();
  const std::int64_t N = xs[0], C = xs[1], OC = ks[0], cg = ks[1], ocg = OC / group;
  std::int64_t o[3];
  for (int a = 0; a < 3; ++a) o[a] = (xs[2 + a] + p[a] + p[a + 3] - ((ks[2 + a] - 1) * d[a] + 1)) / s[a] + 1;
  Doubles y;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < OC; ++oc)
      for (std::int64_t i = 0; i < o[0]; ++i)
        for (std::int64_t j = 0; j < o[1]; ++j)
          for (std::int64_t l = 0; l < o[2]; ++l) {
            double acc = bv[static_cast<std::size_t>(oc)];
            for (std::int64_t c = 0; c < cg; ++c)
              for (std::int64_t a = 0; a < ks[2]; ++a)
                for (std::int64_t e = 0; e < ks[3]; ++e)
                  for (std::int64_t f = 0; f < ks[4]; ++f) {
                    const std::int64_t z = i * s[0] - p[0] + a * d[0], h = j * s[1] - p[1] + e * d[1],
                                       w = l * s[2] - p[2] + f * d[2];
                    if (z < 0 || z >= xs[2] || h < 0 || h >= xs[3] || w < 0 || w >= xs[4]) continue;
                    const std::int64_t ci = (oc / ocg) * cg + c;
                    acc += xv[static_cast<std::size_t>((((n * C + ci) * xs[2] + z) * xs[3] + h) * xs[4] + w)] *
                           kv[static_cast<std::size_t>((((oc * cg + c) * ks[2] + a) * ks[3] + e) * ks[4] + f)];
                  }
            y.push_back(acc);
          }
  return array(y, Shape{N, OC, o[0], o[1], o[2]}, float64);
}

// ONNX's ConvTranspose: every x[n, c, i, j] scatters x * W[c, o] to y at (i s - pad + k d), cut
// to the output (OH, OW); + b.
Tensor deconv_ref(const Tensor& x, const Tensor& Wt, const Tensor& b, I64s s, I64s d, I64s pb, std::int64_t OH,
                  std::int64_t OW, std::int64_t group) {
  const Img X(x), K(Wt);
  const Doubles bv = b.to_vector<double>();
  const std::int64_t cg = X.C / group, ocg = K.C, OC = ocg * group;
  Doubles y(static_cast<std::size_t>(X.N * OC * OH * OW), 0.0);
  for (std::int64_t n = 0; n < X.N; ++n)
    for (std::int64_t c = 0; c < X.C; ++c)
      for (std::int64_t i = 0; i < X.H; ++i)
        for (std::int64_t j = 0; j < X.W; ++j)
          for (std::int64_t oc = 0; oc < ocg; ++oc)
            for (std::int64_t ki = 0; ki < K.H; ++ki)
              for (std::int64_t kj = 0; kj < K.W; ++kj) {
                const std::int64_t h = i * s[0] - pb[0] + ki * d[0], w = j * s[1] - pb[1] + kj * d[1];
                if (h < 0 || h >= OH || w < 0 || w >= OW) continue;
                const std::int64_t o = (c / cg) * ocg + oc;
                y[static_cast<std::size_t>(((n * OC + o) * OH + h) * OW + w)] += X.at(n, c, i, j) * K.at(c, oc, ki, kj);
              }
  for (std::size_t e = 0; e < y.size(); ++e) y[e] += bv[(e / static_cast<std::size_t>(OH * OW)) % OC];
  return array(y, Shape{X.N, OC, OH, OW}, float64);
}

// ONNX's pools with ceil_mode: the max, or the mean over the elements that count (the real ones;
// the explicit pads too with count_include_pad), of each window, whose taps are d apart.
Tensor pool_ref(const Tensor& x, bool max, I64s k, I64s s, I64s pads, bool ceil_mode, bool count_pad,
                I64s d = {1, 1}) {
  const Img X(x);
  auto out = [&](std::int64_t in, std::int64_t a) {
    const std::int64_t span = in + pads[a] + pads[a + 2] - ((k[a] - 1) * d[a] + 1);
    return (ceil_mode ? (span + s[a] - 1) / s[a] : span / s[a]) + 1;
  };
  const std::int64_t OH = out(X.H, 0), OW = out(X.W, 1);
  Doubles y;
  for (std::int64_t n = 0; n < X.N; ++n)
    for (std::int64_t c = 0; c < X.C; ++c)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = max ? -INFINITY : 0.0, count = 0;
          for (std::int64_t ki = 0; ki < k[0]; ++ki)
            for (std::int64_t kj = 0; kj < k[1]; ++kj) {
              const std::int64_t h = i * s[0] - pads[0] + ki * d[0], w = j * s[1] - pads[1] + kj * d[1];
              const bool in_pads = h >= -pads[0] && h < X.H + pads[2] && w >= -pads[1] && w < X.W + pads[3];
              if (X.inside(h, w)) {
                acc = max ? std::max(acc, X.at(n, c, h, w)) : acc + X.at(n, c, h, w);
                ++count;
              } else if (count_pad && in_pads) {
                ++count;
              }
            }
          y.push_back(max ? acc : acc / count);
        }
  return array(y, Shape{X.N, X.C, OH, OW}, float64);
}

}  // namespace

// --- Gemm -----------------------------------------------------------------------------------------
TEST_CASE("onnx nn ops: Gemm with alpha, beta, transA, transB and a broadcast C, and its gradients") {
  Net net;
  net.input("A", {4, 3}).input("B", {5, 4}).input("C", {1, 5}).output("Y");
  auto& n = net.node("Gemm", {"A", "B", "C"}, {"Y"});
  set_float(n, "alpha", 0.5f);
  set_float(n, "beta", -2.0f);
  set_int(n, "transA", 1);
  set_int(n, "transB", 1);
  OnnxModel m = net.load();
  const std::vector<Tensor> xs{randn_f64({4, 3}, 1), randn_f64({5, 4}, 2), randn_f64({1, 5}, 3)};
  const Tensor want = matmul(xs[0].transpose(), xs[1].transpose()) * 0.5 + xs[2] * -2.0;
  CHECK(max_abs_diff(run(m, xs).data(), want) < 1e-12);
  check_grads(m, xs, {0, 1, 2});
  check_double_grad(m, xs, 0, 1);
  check_double_grad(m, xs, 1, 0);
}

// --- Einsum, Mod, ScatterND (MaxViT's attention, Swin's shifted windows) ---------------------------
TEST_CASE("onnx nn ops: Einsum as batched products, transposes and sums, and its gradients") {
  struct Case {
    std::string eq;
    std::vector<Shape> shapes;
    std::function<Tensor(const std::vector<Tensor>&)> ref;
  };
  const std::vector<Case> cases = {
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); }},
      {"bghij,bghjd->bghid", {{1, 2, 2, 3, 4}, {1, 2, 2, 4, 3}},  // MaxViT's
       [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); }},
      {"bghid,bghjd->bghij", {{1, 2, 2, 3, 4}, {1, 2, 2, 5, 4}},
       [](const std::vector<Tensor>& x) { return matmul(x[0], x[1].transpose({0, 1, 2, 4, 3})); }},
      {"ij->ji", {{3, 4}}, [](const std::vector<Tensor>& x) { return x[0].transpose(); }},
      {"ij->i", {{3, 4}}, [](const std::vector<Tensor>& x) { return sum(x[0], 1); }},
      {"i,i", {{5}, {5}}, [](const std::vector<Tensor>& x) { return sum(x[0] * x[1]); }},
      {"ij,jk", {{3, 4}, {4, 2}}, [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); }},  // implicit "->ik"
      {"ij,jk,kl->li", {{2, 3}, {3, 4}, {4, 5}},
       [](const std::vector<Tensor>& x) { return matmul(matmul(x[0], x[1]), x[2]).transpose(); }},
      {"bi,ci->bc", {{2, 3}, {4, 3}}, [](const std::vector<Tensor>& x) { return matmul(x[0], x[1].transpose()); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.eq);
    Net net(13);
    std::vector<std::string> names;
    auto& n = net.node("Einsum", {}, {"Y"});
    std::vector<Tensor> xs;
    for (std::size_t i = 0; i < c.shapes.size(); ++i) {
      names.push_back("X" + std::to_string(i));
      net.input(names.back(), I64s(c.shapes[i].begin(), c.shapes[i].end()));
      n.add_input(names.back());
      xs.push_back(randn_f64(c.shapes[i], static_cast<unsigned>(10 + i)));
    }
    net.output("Y");
    set_string(n, "equation", c.eq);
    OnnxModel m = net.load();
    CHECK(max_abs_diff(run(m, xs).data(), c.ref(xs)) < 1e-12);
    if (xs.size() == 2) check_grads(m, xs, {0, 1});
    if (c.eq == "bij,bjk->bik") check_double_grad(m, xs, 0, 1);
  }
  auto refusal = [](const std::string& eq, I64s a, I64s b) {
    return [eq, a, b] {
      Net net(13);
      net.input("A", a).input("B", b).output("Y");
      set_string(net.node("Einsum", {"A", "B"}, {"Y"}), "equation", eq);
      OnnxModel m = net.load();
      run(m, {randn_f64(Shape(a), 1), randn_f64(Shape(b), 2)});
    };
  };
  CHECK(contains(error_of<NotImplementedError>(refusal("...ij,...jk->...ik", {2, 3}, {3, 2})), "'...' (broadcast axes)"));
  CHECK(contains(error_of<NotImplementedError>(refusal("ii,ij->j", {2, 2}, {2, 3})), "twice in one term"));
  CHECK(contains(error_of<ShapeError>(refusal("ij,jk->ik", {2, 3}, {4, 2})),
                 "letter 'j' has extent 3 in (2, 3) and 4 in (4, 2)"));
  CHECK(contains(error_of<ValueError>(refusal("ij,jk->iz", {2, 3}, {3, 2})), "output letter 'z' is in no input"));
}

TEST_CASE("onnx nn ops: Mod takes the divisor's sign (fmod 0) or the dividend's (fmod 1); float Mod differentiates") {
  {
    Net net(13);
    net.input("A", {6}, ::onnx::TensorProto::INT64).input("B", {6}, ::onnx::TensorProto::INT64).output("Y", ::onnx::TensorProto::INT64);
    net.node("Mod", {"A", "B"}, {"Y"});
    OnnxModel m = net.load();
    const Tensor a = array(std::vector<std::int64_t>{7, -7, 7, -7, 0, 5}, Shape{6}, int64);
    const Tensor b = array(std::vector<std::int64_t>{3, 3, -3, -3, 4, -1}, Shape{6}, int64);
    CHECK(run(m, {a, b}).data().to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, -2, -1, 0, 0});
    const Tensor zero = array(std::vector<std::int64_t>{3, 3, 3, 0, 3, 3}, Shape{6}, int64);
    CHECK(contains(error_of<ValueError>([&] { run(m, {a, zero}); }), "integer division by zero"));
  }
  Net net(13);
  net.input("A", {2, 3}).input("B", {3}).output("Y");
  set_int(net.node("Mod", {"A", "B"}, {"Y"}), "fmod", 1);
  OnnxModel m = net.load();
  const Tensor a = array(std::vector<double>{5.5, -5.5, 2.25, 7.0, -1.0, 0.3}, Shape{2, 3}, float64);
  const Tensor b = array(std::vector<double>{2.0, 2.0, -1.0}, Shape{3}, float64);
  const Doubles y = run(m, {a, b}).data().to_vector<double>();
  const Doubles want = {std::fmod(5.5, 2.0), std::fmod(-5.5, 2.0), std::fmod(2.25, -1.0),
                        std::fmod(7.0, 2.0), std::fmod(-1.0, 2.0), std::fmod(0.3, -1.0)};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-12));
  check_grads(m, {a, b}, {0, 1});
  Net bad(13);
  bad.input("A", {2}).input("B", {2}).output("Y");
  bad.node("Mod", {"A", "B"}, {"Y"});
  CHECK(contains(error_of<ValueError>([&] { OnnxModel mm = bad.load(); run(mm, {a.reshape({6})[Slice(0, 2)], b[Slice(0, 2)]}); }),
                 "fmod must be 1 for floating-point inputs"));
}

TEST_CASE("onnx nn ops: ScatterND replaces, adds or multiplies rows; with differentiable inputs both get gradients") {
  // data (4, 3); indices (3, 1) name rows 2, 0, 2; updates (3, 3)
  const Tensor data = randn_f64({4, 3}, 5), upd = randn_f64({3, 3}, 6);
  const Tensor idx = array(std::vector<std::int64_t>{2, 0, 2}, Shape{3, 1}, int64);
  const Doubles d = data.to_vector<double>(), u = upd.to_vector<double>();
  for (const char* red : {"none", "add", "mul"}) {
    CAPTURE(red);
    Net net(16);
    net.input("D", {4, 3}).input("I", {3, 1}, ::onnx::TensorProto::INT64).input("U", {3, 3}).output("Y");
    set_string(net.node("ScatterND", {"D", "I", "U"}, {"Y"}), "reduction", red);
    OnnxModel m = net.load();
    Doubles want = d;
    const int rows[3] = {2, 0, 2};
    bool written[4] = {false, false, false, false};
    for (int t = 0; t < 3; ++t) {
      for (int e = 0; e < 3; ++e) {
        double& w = want[static_cast<std::size_t>(rows[t] * 3 + e)];
        const double x = u[static_cast<std::size_t>(t * 3 + e)];
        w = std::string(red) == "add" ? w + x : std::string(red) == "mul" ? w * x : (written[rows[t]] ? w + x : x);
      }
      written[rows[t]] = true;
    }
    // "none" with a repeated row: the updates add (ONNX leaves it undefined)
    CHECK(max_abs_diff(run(m, {data, idx, upd}).data(), array(want, Shape{4, 3}, float64)) < 1e-12);
    check_grads(m, {data, idx, upd}, {0, 2});
  }
  Net net(13);
  net.input("D", {4, 3}).input("I", {1, 2}, ::onnx::TensorProto::INT64).input("U", {1}).output("Y");
  net.node("ScatterND", {"D", "I", "U"}, {"Y"});
  OnnxModel m = net.load();
  CHECK(contains(error_of<IndexError>([&] {
                   run(m, {data, array(std::vector<std::int64_t>{1, 3}, Shape{1, 2}, int64), randn_f64({1}, 1)});
                 }),
                 "index 3 is out of range for axis 1 of data (4, 3)"));
}

// --- Conv, ConvTranspose --------------------------------------------------------------------------
TEST_CASE("onnx nn ops: Conv with groups, dilations, strides and asymmetric pads, and its gradients") {
  Net net;
  net.input("X", {2, 4, 7, 6}).input("W", {6, 2, 3, 2}).input("B", {6}).output("Y");
  auto& n = net.node("Conv", {"X", "W", "B"}, {"Y"});
  set_int(n, "group", 2);
  set_ints(n, "dilations", {2, 1});
  set_ints(n, "strides", {1, 2});
  set_ints(n, "pads", {1, 0, 2, 1});
  OnnxModel m = net.load();
  const std::vector<Tensor> xs{randn_f64({2, 4, 7, 6}, 4), randn_f64({6, 2, 3, 2}, 5), randn_f64({6}, 6)};
  const Variable y = run(m, xs);
  const Tensor want = conv_ref(xs[0], xs[1], xs[2], {1, 2}, {2, 1}, {1, 0, 2, 1}, 2);
  CHECK(y.shape() == want.shape());
  CHECK(max_abs_diff(y.data(), want) < 1e-12);
  check_grads(m, xs, {0, 1, 2});
}

TEST_CASE("onnx nn ops: a depthwise 1-d Conv with auto_pad SAME_LOWER") {
  Net net;
  net.input("X", {1, 3, 9}).input("W", {3, 1, 4}).output("Y");
  auto& n = net.node("Conv", {"X", "W"}, {"Y"});
  set_int(n, "group", 3);
  set_ints(n, "strides", {2});
  set_string(n, "auto_pad", "SAME_LOWER");
  OnnxModel m = net.load();
  const Tensor x = randn_f64({1, 3, 9}, 7), W = randn_f64({3, 1, 4}, 8);
  const Variable y = run(m, {x, W});
  // ceil(9 / 2) = 5 outputs; total padding (5 - 1) 2 + 4 - 9 = 3, SAME_LOWER puts 2 first.
  const Tensor want = conv_ref(x.reshape({1, 3, 9, 1}), W.reshape({3, 1, 4, 1}), zeros({3}, float64), {2, 1},
                               {1, 1}, {2, 0, 1, 0}, 3);
  CHECK(y.shape() == Shape{1, 3, 5});
  CHECK(max_abs_diff(y.data(), want.reshape({1, 3, 5})) < 1e-12);
  check_grads(m, {x, W}, {0, 1});
}

TEST_CASE("onnx nn ops: a grouped and a depthwise 2-d Conv are one grouped F::conv2d, differentiable twice") {
  Net net;
  net.input("X", {2, 6, 6, 5}).input("W", {6, 1, 3, 3}).input("B", {6}).input("V", {4, 3, 1, 2}).output("Y");
  auto& dw = net.node("Conv", {"X", "W", "B"}, {"H"});  // depthwise: group = C = 6
  set_int(dw, "group", 6);
  set_ints(dw, "pads", {1, 1, 1, 1});
  auto& g2 = net.node("Conv", {"H", "V"}, {"Y"});  // 6 -> 4 channels in 2 groups, stride 2
  set_int(g2, "group", 2);
  set_ints(g2, "strides", {2, 1});
  OnnxModel m = net.load();
  const std::vector<Tensor> xs{randn_f64({2, 6, 6, 5}, 40), randn_f64({6, 1, 3, 3}, 41), randn_f64({6}, 42),
                               randn_f64({4, 3, 1, 2}, 43)};
  const Variable y = run(m, xs);
  const Tensor h = conv_ref(xs[0], xs[1], xs[2], {1, 1}, {1, 1}, {1, 1, 1, 1}, 6);
  const Tensor want = conv_ref(h, xs[3], zeros({4}, float64), {2, 1}, {1, 1}, {0, 0, 0, 0}, 2);
  CHECK(y.shape() == Shape{2, 4, 3, 4});
  CHECK(max_abs_diff(y.data(), want) < 1e-12);
  // One Function per node, not a per-group loop with a concat: the result's creator is the
  // grouped convolution itself, with groups among its attributes.
  REQUIRE(y.creator() != nullptr);
  CHECK(y.creator()->name() == "Conv2d");
  std::int64_t groups = 0;
  for (const auto& [k, a] : y.creator()->attributes())
    if (k == "groups") groups = std::get<std::int64_t>(a);
  CHECK(groups == 2);
  check_grads(m, xs, {0, 1, 2, 3});
  check_double_grad(m, xs, 0, 1);
  check_double_grad(m, xs, 1, 0);
}

TEST_CASE("onnx nn ops: a depthwise ConvTranspose with symmetric pads is one grouped F::deconv2d") {
  Net net;
  net.input("X", {1, 4, 3, 4}).input("W", {4, 2, 3, 3}).input("B", {8}).output("Y");
  auto& n = net.node("ConvTranspose", {"X", "W", "B"}, {"Y"});
  set_int(n, "group", 4);
  set_ints(n, "strides", {2, 2});
  set_ints(n, "pads", {1, 1, 1, 1});
  OnnxModel m = net.load();
  const std::vector<Tensor> xs{randn_f64({1, 4, 3, 4}, 44), randn_f64({4, 2, 3, 3}, 45), randn_f64({8}, 46)};
  const Variable y = run(m, xs);
  // OH = 2 (3 - 1) + 3 - 2 = 5, OW = 2 (4 - 1) + 3 - 2 = 7
  const Tensor want = deconv_ref(xs[0], xs[1], xs[2], {2, 2}, {1, 1}, {1, 1}, 5, 7, 4);
  CHECK(y.shape() == Shape{1, 8, 5, 7});
  CHECK(max_abs_diff(y.data(), want) < 1e-12);
  REQUIRE(y.creator() != nullptr);
  CHECK(y.creator()->name() == "Deconv2d");
  check_grads(m, xs, {0, 1, 2});
}

TEST_CASE("onnx nn ops: ConvTranspose with groups, dilations, asymmetric pads and output_padding") {
  Net net;
  net.input("X", {1, 4, 3, 4}).input("W", {4, 3, 2, 3}).input("B", {6}).output("Y");
  auto& n = net.node("ConvTranspose", {"X", "W", "B"}, {"Y"});
  set_int(n, "group", 2);
  set_ints(n, "strides", {2, 3});
  set_ints(n, "dilations", {2, 1});
  set_ints(n, "pads", {1, 0, 0, 2});
  set_ints(n, "output_padding", {1, 1});
  OnnxModel m = net.load();
  const std::vector<Tensor> xs{randn_f64({1, 4, 3, 4}, 9), randn_f64({4, 3, 2, 3}, 10), randn_f64({6}, 11)};
  const Variable y = run(m, xs);
  // OH = 2 (3 - 1) + (2 - 1) 2 + 1 + 1 - 1 - 0 = 7, OW = 3 (4 - 1) + 3 + 1 - 0 - 2 = 11.
  const Tensor want = deconv_ref(xs[0], xs[1], xs[2], {2, 3}, {2, 1}, {1, 0}, 7, 11, 2);
  CHECK(y.shape() == Shape{1, 6, 7, 11});
  CHECK(max_abs_diff(y.data(), want) < 1e-12);
  check_grads(m, xs, {0, 1, 2});
}

TEST_CASE("onnx nn ops: ConvTranspose with output_shape and SAME_LOWER crops where ONNX says") {
  Net net;
  net.input("X", {1, 2, 3, 3}).input("W", {2, 1, 3, 3}).output("Y").output("Z");
  auto& a = net.node("ConvTranspose", {"X", "W"}, {"Y"});
  set_ints(a, "strides", {2, 2});
  set_ints(a, "output_shape", {6, 5});
  auto& b = net.node("ConvTranspose", {"X", "W"}, {"Z"});
  set_ints(b, "strides", {2, 2});
  set_string(b, "auto_pad", "SAME_LOWER");
  OnnxModel m = net.load();
  const Tensor x = randn_f64({1, 2, 3, 3}, 12), W = randn_f64({2, 1, 3, 3}, 13);
  // full size 7: output_shape 6 -> total padding 1 at the beginning, 5 -> 2 split 1 / 1;
  // SAME_LOWER: output 6, the odd padding first.
  const Tensor b0 = zeros({1}, float64);
  CHECK(max_abs_diff(run(m, {x, W}, 0).data(), deconv_ref(x, W, b0, {2, 2}, {1, 1}, {1, 1}, 6, 5, 1)) < 1e-12);
  CHECK(max_abs_diff(run(m, {x, W}, 1).data(), deconv_ref(x, W, b0, {2, 2}, {1, 1}, {1, 1}, 6, 6, 1)) < 1e-12);
}

TEST_CASE("onnx nn ops: a 3-d Conv with groups, strides, dilations and asymmetric pads, and its gradients") {
  Net net;
  net.input("X", {1, 4, 5, 4, 6}).input("W", {2, 2, 2, 3, 2}).input("B", {2}).output("Y");
  auto& n = net.node("Conv", {"X", "W", "B"}, {"Y"});
  set_int(n, "group", 2);
  set_ints(n, "strides", {2, 1, 2});
  set_ints(n, "dilations", {2, 1, 1});
  set_ints(n, "pads", {1, 0, 1, 0, 2, 0});
  OnnxModel m = net.load();
  const std::vector<Tensor> xs{randn_f64({1, 4, 5, 4, 6}, 33), randn_f64({2, 2, 2, 3, 2}, 34), randn_f64({2}, 35)};
  const Tensor want = conv3d_ref(xs[0], xs[1], xs[2], {2, 1, 2}, {2, 1, 1}, {1, 0, 1, 0, 2, 0}, 2);
  const Variable y = run(m, xs);
  CHECK(y.shape() == want.shape());
  CHECK(max_abs_diff(y.data(), want) < 1e-12);
  check_grads(m, xs, {0, 1, 2});
}

TEST_CASE("onnx nn ops: a 3-d ConvTranspose crops and pads as the 2-d one does, and differentiates") {
  // Depth 1 with a kernel depth of 1: the 3-d result is the 2-d one with a depth axis.
  Net net3, net2;
  net3.input("X", {1, 2, 1, 3, 4}).input("W", {2, 3, 1, 2, 3}).input("B", {3}).output("Y");
  net2.input("X", {1, 2, 3, 4}).input("W", {2, 3, 2, 3}).input("B", {3}).output("Y");
  auto& a = net3.node("ConvTranspose", {"X", "W", "B"}, {"Y"});
  set_ints(a, "strides", {1, 2, 3});
  set_ints(a, "pads", {0, 1, 0, 0, 0, 2});
  set_ints(a, "output_padding", {0, 1, 1});
  auto& b = net2.node("ConvTranspose", {"X", "W", "B"}, {"Y"});
  set_ints(b, "strides", {2, 3});
  set_ints(b, "pads", {1, 0, 0, 2});
  set_ints(b, "output_padding", {1, 1});
  OnnxModel m3 = net3.load(), m2 = net2.load();
  const std::vector<Tensor> xs{randn_f64({1, 2, 1, 3, 4}, 36), randn_f64({2, 3, 1, 2, 3}, 37), randn_f64({3}, 38)};
  const Variable y3 = run(m3, xs);
  const Variable y2 = run(m2, {xs[0].reshape({1, 2, 3, 4}), xs[1].reshape({2, 3, 2, 3}), xs[2]});
  CHECK(y3.shape() == Shape{1, 3, 1, 6, 11});
  CHECK(max_abs_diff(y3.data().reshape(y2.shape()), y2.data()) < 1e-12);
  check_grads(m3, xs, {0, 1, 2});
}

// --- pools ----------------------------------------------------------------------------------------
TEST_CASE("onnx nn ops: MaxPool pads with -inf (negative inputs), ceil_mode, Indices, and its gradient") {
  Net net(12);
  net.input("X", {1, 2, 6, 5}).output("Y").output("I", ::onnx::TensorProto::INT64);
  auto& n = net.node("MaxPool", {"X"}, {"Y", "I"});
  set_ints(n, "kernel_shape", {3, 2});
  set_ints(n, "strides", {2, 2});
  set_ints(n, "pads", {1, 1, 0, 0});
  set_int(n, "ceil_mode", 1);
  OnnxModel m = net.load();
  const Tensor x = randn_f64({1, 2, 6, 5}, 14) - 3.0;  // mostly negative: zero padding would win
  const Variable y = run(m, {x});
  const Tensor want = pool_ref(x, true, {3, 2}, {2, 2}, {1, 1, 0, 0}, true, false);
  CHECK(y.shape() == Shape{1, 2, 3, 3});
  CHECK(max_abs_diff(y.data(), want) < 1e-12);
  // Indices: the flat position of each maximum in x.
  const Variable idx = run(m, {x}, 1);
  REQUIRE(idx.dtype() == int64);
  const auto iv = idx.data().to_vector<std::int64_t>();
  const Doubles xv = x.to_vector<double>(), yv = y.data().to_vector<double>();
  for (std::size_t k = 0; k < iv.size(); ++k) CHECK(xv[static_cast<std::size_t>(iv[k])] == yv[k]);
  check_grads(m, {x}, {0});
}

TEST_CASE("onnx nn ops: AveragePool counts only the real elements unless count_include_pad, and its gradient") {
  for (int count_pad : {0, 1}) {
    CAPTURE(count_pad);
    Net net(11);
    net.input("X", {2, 1, 5, 6}).output("Y");
    auto& n = net.node("AveragePool", {"X"}, {"Y"});
    set_ints(n, "kernel_shape", {3, 3});
    set_ints(n, "strides", {2, 2});
    set_ints(n, "pads", {0, 2, 1, 1});
    set_int(n, "ceil_mode", 1);
    set_int(n, "count_include_pad", count_pad);
    OnnxModel m = net.load();
    const Tensor x = randn_f64({2, 1, 5, 6}, 15);
    const Variable y = run(m, {x});
    const Tensor want = pool_ref(x, false, {3, 3}, {2, 2}, {0, 2, 1, 1}, true, count_pad != 0);
    CHECK(y.shape() == want.shape());
    CHECK(max_abs_diff(y.data(), want) < 1e-12);
    check_grads(m, {x}, {0});
  }
}

TEST_CASE("onnx nn ops: 3-d pools with asymmetric pads pool over the real elements, and differentiate") {
  Net net(11);
  net.input("X", {1, 2, 4, 5, 3}).output("A").output("M");
  for (const char* op : {"AveragePool", "MaxPool"}) {
    auto& n = net.node(op, {"X"}, {std::string(op) == "MaxPool" ? "M" : "A"});
    set_ints(n, "kernel_shape", {2, 3, 2});
    set_ints(n, "strides", {2, 2, 1});
    set_ints(n, "pads", {1, 0, 1, 0, 2, 0});
  }
  OnnxModel m = net.load();
  const Tensor x = randn_f64({1, 2, 4, 5, 3}, 39) - 1.0;
  const Doubles xv = x.to_vector<double>();
  // (4 + 1 - 2) / 2 + 1 = 2, (5 + 2 - 3) / 2 + 1 = 3, (3 + 1 - 2) / 1 + 1 = 3.
  Doubles avg, mx;
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t l = 0; l < 3; ++l) {
          double sum = 0, count = 0, best = -INFINITY;
          for (std::int64_t a = 0; a < 2; ++a)
            for (std::int64_t e = 0; e < 3; ++e)
              for (std::int64_t f = 0; f < 2; ++f) {
                const std::int64_t z = i * 2 - 1 + a, h = j * 2 + e, w = l - 1 + f;
                if (z < 0 || z >= 4 || h < 0 || h >= 5 || w < 0 || w >= 3) continue;
                const double v = xv[static_cast<std::size_t>(((c * 4 + z) * 5 + h) * 3 + w)];
                sum += v;
                count += 1;
                best = std::max(best, v);
              }
          avg.push_back(sum / count);
          mx.push_back(best);
        }
  CHECK(max_abs_diff(run(m, {x}, 0).data(), array(avg, Shape{1, 2, 2, 3, 3}, float64)) < 1e-12);
  CHECK(max_abs_diff(run(m, {x}, 1).data(), array(mx, Shape{1, 2, 2, 3, 3}, float64)) < 1e-12);
  check_grads(m, {x}, {0});
}

TEST_CASE("onnx nn ops: GlobalAveragePool and GlobalMaxPool keep (N, C, 1, 1)") {
  Net net;
  net.input("X", {2, 3, 4, 5}).output("A").output("M");
  net.node("GlobalAveragePool", {"X"}, {"A"});
  net.node("GlobalMaxPool", {"X"}, {"M"});
  OnnxModel m = net.load();
  const Tensor x = randn_f64({2, 3, 4, 5}, 16);
  CHECK(max_abs_diff(run(m, {x}, 0).data(), x.mean(Axes{2, 3}, true)) < 1e-12);
  CHECK(max_abs_diff(run(m, {x}, 1).data(), x.max(Axes{2, 3}, true)) < 1e-12);
}

// --- BatchNormalization, Dropout ------------------------------------------------------------------
TEST_CASE("onnx nn ops: BatchNormalization differentiates in test mode; Config::train updates its statistics") {
  Net net(15);
  net.input("X", {4, 3, 2}).input("S", {3}).input("B", {3}).output("Y");
  auto& init_mean = *net.m.mutable_graph()->add_initializer();
  init_mean.set_name("mean");
  init_mean.set_data_type(::onnx::TensorProto::DOUBLE);
  init_mean.add_dims(3);
  for (double v : {0.5, -1.0, 2.0}) init_mean.add_double_data(v);
  auto& init_var = *net.m.mutable_graph()->add_initializer();
  init_var = init_mean;
  init_var.set_name("var");
  init_var.clear_double_data();
  for (double v : {1.5, 0.25, 4.0}) init_var.add_double_data(v);
  auto& n = net.node("BatchNormalization", {"X", "S", "B", "mean", "var"}, {"Y"});
  set_float(n, "epsilon", 1e-3f);
  set_float(n, "momentum", 0.8f);
  OnnxModel m = net.load();
  const std::vector<Tensor> xs{randn_f64({4, 3, 2}, 17), randn_f64({3}, 18), randn_f64({3}, 19)};
  const Tensor mean = array({0.5, -1.0, 2.0}, float64).reshape({1, 3, 1});
  const Tensor var = array({1.5, 0.25, 4.0}, float64).reshape({1, 3, 1});
  const double eps = static_cast<double>(1e-3f);
  auto expect = [&](const Tensor& mu, const Tensor& v) {
    return (xs[0] - mu) / sqrt(v + eps) * xs[1].reshape({1, 3, 1}) + xs[2].reshape({1, 3, 1});
  };
  CHECK(max_abs_diff(run(m, xs).data(), expect(mean, var)) < 1e-6);
  check_grads(m, xs, {0, 1, 2});

  // Train mode normalises with the batch statistics and moves the running ones toward them.
  const Tensor bm = xs[0].mean(Axes{0, 2}, true);
  const Tensor bv = square(xs[0] - bm).mean(Axes{0, 2}, true);
  {
    auto train = using_config("train", true);
    CHECK(max_abs_diff(m.forward_multi(wrap(xs))[0].data(), expect(bm, bv)) < 1e-6);
  }
  const double momentum = static_cast<double>(0.8f);
  const Tensor new_mean = mean * momentum + bm * (1.0 - momentum);
  const Tensor new_var = var * momentum + bv * (8.0 / 7.0) * (1.0 - momentum);  // unbiased, as L::BatchNorm
  CHECK(max_abs_diff(run(m, xs).data(), expect(new_mean, new_var)) < 1e-6);
}

TEST_CASE("onnx nn ops: a running statistic that aliases a weight (PyTorch's merged initializers) gets its own storage") {
  // As a fresh PyTorch export: BN weights all ones and biases all zeros are merged, and each
  // running_var is an Identity of a weight, each running_mean an Identity of a bias; here two
  // BatchNormalization nodes share one weight and one bias (issue 47).
  Net net(13);
  net.input("X", {4, 3, 2}).output("Y");
  auto add_init = [&](const char* name, std::initializer_list<double> v) {
    auto& t = *net.m.mutable_graph()->add_initializer();
    t.set_name(name);
    t.set_data_type(::onnx::TensorProto::DOUBLE);
    t.add_dims(3);
    for (double x : v) t.add_double_data(x);
  };
  add_init("bn.weight", {1.0, 1.0, 1.0});
  add_init("bn.bias", {0.0, 0.0, 0.0});
  net.node("Identity", {"bn.weight"}, {"bn1.running_var"});
  net.node("Identity", {"bn.bias"}, {"bn1.running_mean"});
  net.node("BatchNormalization", {"X", "bn.weight", "bn.bias", "bn1.running_mean", "bn1.running_var"}, {"H"});
  net.node("BatchNormalization", {"H", "bn.weight", "bn.bias", "bn.bias", "bn.weight"}, {"Y"});
  OnnxModel m = net.load();
  std::vector<std::string> keys;
  for (const auto& [k, p] : m.named_params()) keys.push_back(k);
  // the shared ones stay; each BN's statistics are Parameters of their own (the Identity outputs
  // first, in the file's order, then those read directly)
  CHECK(keys == std::vector<std::string>{"bn.weight", "bn.bias", "bn1.running_var", "bn1.running_mean",
                                         "Y/running_mean", "Y/running_var"});
  {
    auto train = using_config("train", true);
    auto ng = no_grad();
    m(Variable(randn_f64({4, 3, 2}, 40) * 3.0 + 1.0));
  }
  CHECK(m.param("bn.weight").data().to_vector<double>() == std::vector<double>{1.0, 1.0, 1.0});
  CHECK(m.param("bn.bias").data().to_vector<double>() == std::vector<double>{0.0, 0.0, 0.0});
  CHECK(m.param("bn1.running_var").data().to_vector<double>() != std::vector<double>{1.0, 1.0, 1.0});
  CHECK(m.param("bn1.running_mean").data().to_vector<double>() != std::vector<double>{0.0, 0.0, 0.0});
  CHECK_FALSE(m.param("bn1.running_var").data().is_same(m.param("Y/running_var").data()));
}

TEST_CASE("onnx nn ops: an Identity of a shared weight (PyTorch's merged initializers) is a Parameter of its own") {
  // A fresh PyTorch export of ResNet18: five BatchNorms read bn1.weight (all ones), four of them
  // through Identity nodes. Fine-tuned, PyTorch's five weights part after the first step; so must
  // ours. Here: two Mul nodes scale by "w" directly (a weight the model shares: it stays shared),
  // a third by Identity(w).
  Net net(13);
  net.input("X", {2, 3}).output("Y");
  auto& t = *net.m.mutable_graph()->add_initializer();
  t.set_name("w");
  t.set_data_type(::onnx::TensorProto::DOUBLE);
  t.add_dims(3);
  for (double x : {1.0, 1.0, 1.0}) t.add_double_data(x);
  net.node("Mul", {"X", "w"}, {"A"});
  net.node("Mul", {"A", "w"}, {"B"});
  net.node("Identity", {"w"}, {"w_copy"});
  net.node("Mul", {"B", "w_copy"}, {"Y"});
  OnnxModel m = net.load();
  std::vector<std::string> keys;
  for (const auto& [k, p] : m.named_params()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"w", "w_copy"});
  CHECK_FALSE(m.param("w").data().is_same(m.param("w_copy").data()));
  const Tensor x = randn_f64({2, 3}, 41);
  F::sum(m(Variable(x))).backward();
  // y = x w w w': dy/dw = 2 x w w' summed over the rows, dy/dw' = x w w
  const Tensor colsum = sum(x, 0);
  CHECK(max_abs_diff(m.param("w").grad().data(), colsum * 2.0) < 1e-12);
  CHECK(max_abs_diff(m.param("w_copy").grad().data(), colsum) < 1e-12);
  optimizers::SGD sgd(0.1);
  sgd.setup(m);
  sgd.update();
  CHECK(max_abs_diff(m.param("w").data(), 1.0 - colsum * 0.2) < 1e-12);
  CHECK(max_abs_diff(m.param("w_copy").data(), 1.0 - colsum * 0.1) < 1e-12);
}

TEST_CASE("onnx nn ops: Dropout is the identity in test mode and drops with training_mode") {
  Net net(13);
  net.input("X", {50, 40}).input("R", {}).input("T", {}, ::onnx::TensorProto::BOOL);
  net.output("Y").output("M", ::onnx::TensorProto::BOOL);
  net.node("Dropout", {"X", "R", "T"}, {"Y", "M"});
  OnnxModel m = net.load();
  const Tensor x = randn_f64({50, 40}, 20);
  const Tensor ratio = array(0.25, float64);
  {
    auto mode = test_mode();
    VariableList ys = m.forward_multi(wrap({x, ratio, array(std::int64_t(0), int64)}));
    CHECK(max_abs_diff(ys[0].data(), x) == 0.0);
    CHECK(ys[1].dtype() == int64);
    CHECK(ys[1].data().min().item<double>() == 1.0);

    Variable xv(x);
    ys = m.forward_multi({xv, Variable(ratio), Variable(array(std::int64_t(1), int64))});
    const Tensor mask = ys[1].data();
    CHECK(mask.dtype() == int64);
    CHECK(max_abs_diff(ys[0].data(), x * mask.astype(float64) / 0.75) < 1e-12);
    const double kept = mask.astype(float64).mean().item<double>();
    CHECK(kept > 0.65);
    CHECK(kept < 0.85);
    F::sum(ys[0]).backward();
    CHECK(max_abs_diff(xv.grad().data(), mask.astype(float64) / 0.75) < 1e-12);
  }
}

TEST_CASE("onnx nn ops: without a training_mode input Dropout follows Config::train; with one, its value") {
  Net net(13);
  net.input("X", {20, 30}).input("T", {}, ::onnx::TensorProto::BOOL).output("Y").output("Z");
  set_int(net.node("Dropout", {"X"}, {"Y"}), "seed", 1);  // ratio 0.5; the seed is ignored
  net.node("Dropout", {"X", "", "T"}, {"Z"});
  OnnxModel m = net.load();
  const Tensor x = randn_f64({20, 30}, 40) + 10.0;  // no zeros of its own
  auto zeros_in = [](const Variable& v) { return equal(v.data(), zeros_like(v.data())).sum().item<double>(); };
  {
    auto train = using_config("train", true);
    const VariableList ys = m.forward_multi(wrap({x, array(std::int64_t(0), int64)}));
    CHECK(zeros_in(ys[0]) > 200);
    CHECK(zeros_in(ys[0]) < 400);
    CHECK(max_abs_diff(ys[1].data(), x) == 0.0);  // training_mode false wins over Config::train
  }
  CHECK(max_abs_diff(run(m, {x, array(std::int64_t(0), int64)}, 0).data(), x) == 0.0);
}

TEST_CASE("onnx nn ops: a seeded training-mode Dropout draws ONNX's reference mask, the same on every run") {
  Net net(13);
  net.input("X", {2, 3}).input("R", {}).input("T", {}, ::onnx::TensorProto::BOOL);
  net.output("Y").output("M", ::onnx::TensorProto::BOOL);
  set_int(net.node("Dropout", {"X", "R", "T"}, {"Y", "M"}), "seed", 3);
  OnnxModel m = net.load();
  const Tensor x = randn_f64({2, 3}, 1);
  // NumPy: np.random.seed(3); np.random.uniform(0, 1, (2, 3)) >= 0.6
  const Tensor want_mask = array(std::vector<std::int64_t>{0, 1, 0, 0, 1, 1}, Shape{2, 3}, int64);
  for (int run_ = 0; run_ < 2; ++run_) {
    auto mode = test_mode();
    const VariableList ys = m.forward_multi(wrap({x, array(0.6, float64), array(std::int64_t(1), int64)}));
    CHECK(utils::array_equal(ys[1].data(), want_mask));
    CHECK(max_abs_diff(ys[0].data(), x * want_mask.astype(float64) / 0.4) < 1e-12);
  }
}

// --- LSTM -----------------------------------------------------------------------------------------
namespace {
// An LSTM node over X (seq 3, batch 2, input 2), hidden 2, with B and P, in `direction`
// (`dirs` of them); `layout` 1 takes X batch first.
OnnxModel lstm_model(Net& net, const std::string& direction, std::int64_t dirs, std::int64_t layout = 0) {
  net.input("X", layout ? I64s{2, 3, 2} : I64s{3, 2, 2})
      .input("W", {dirs, 8, 2})
      .input("R", {dirs, 8, 2})
      .input("B", {dirs, 16})
      .input("P", {dirs, 6})
      .output("Y")
      .output("Y_h")
      .output("Y_c");
  auto& n = net.node("LSTM", {"X", "W", "R", "B", "", "", "", "P"}, {"Y", "Y_h", "Y_c"});
  set_int(n, "hidden_size", 2);
  set_string(n, "direction", direction);
  if (layout) set_int(n, "layout", 1);
  return net.load();
}
}  // namespace

TEST_CASE("onnx nn ops: LSTM reverse is forward over the reversed sequence; bidirectional stacks both") {
  Net nf(14), nr(14), nb(14), nl(14);
  OnnxModel fwd = lstm_model(nf, "forward", 1), rev = lstm_model(nr, "reverse", 1);
  OnnxModel bi = lstm_model(nb, "bidirectional", 2), batch_first = lstm_model(nl, "forward", 1, 1);
  const Tensor x = randn_f64({3, 2, 2}, 21), W = randn_f64({2, 8, 2}, 22) * 0.5, R = randn_f64({2, 8, 2}, 23) * 0.5;
  const Tensor B = randn_f64({2, 16}, 24) * 0.5, P = randn_f64({2, 6}, 25) * 0.5;
  const Tensor x_rev = get_item(x, Indices{Slice(std::nullopt, std::nullopt, -1)});
  auto dir = [](const Tensor& t, std::int64_t d) { return get_item(t, Indices{Slice(d, d + 1)}); };

  const Tensor y0 = run(fwd, {x, dir(W, 0), dir(R, 0), dir(B, 0), dir(P, 0)}).data();  // (3, 1, 2, 2)
  const Tensor y1 = run(rev, {x, dir(W, 1), dir(R, 1), dir(B, 1), dir(P, 1)}).data();
  const Tensor y1_on_reversed = run(fwd, {x_rev, dir(W, 1), dir(R, 1), dir(B, 1), dir(P, 1)}).data();
  CHECK(y0.shape() == Shape{3, 1, 2, 2});
  CHECK(max_abs_diff(y1, get_item(y1_on_reversed, Indices{Slice(std::nullopt, std::nullopt, -1)})) < 1e-12);
  // Y_h of the reverse direction is its state after time 0.
  const Tensor h1 = run(rev, {x, dir(W, 1), dir(R, 1), dir(B, 1), dir(P, 1)}, 1).data();
  CHECK(max_abs_diff(h1, get_item(y1, Indices{0})) < 1e-12);

  const Tensor yb = run(bi, {x, W, R, B, P}).data();  // (3, 2, 2, 2)
  CHECK(max_abs_diff(yb, concatenate({y0, y1}, 1)) < 1e-12);
  const Tensor hb = run(bi, {x, W, R, B, P}, 1).data();  // (2, 2, 2)
  const Tensor last0 = get_item(y0, Indices{Slice(2, 3), 0}), first1 = get_item(y1, Indices{Slice(0, 1), 0});
  CHECK(max_abs_diff(hb, concatenate({last0, first1}, 0)) < 1e-12);

  // layout 1: X (batch, seq, input) -> Y (batch, seq, dirs, H), Y_h (batch, dirs, H).
  const VariableList args = wrap({x.transpose({1, 0, 2}), dir(W, 0), dir(R, 0), dir(B, 0), dir(P, 0)});
  auto mode = test_mode();
  const VariableList ys = batch_first.forward_multi(args);
  CHECK(max_abs_diff(ys[0].data(), y0.transpose({2, 0, 1, 3})) < 1e-12);
  CHECK(max_abs_diff(ys[1].data(), get_item(y0, Indices{Slice(2, 3)}).reshape({1, 2, 2}).transpose({1, 0, 2})) < 1e-12);
}

TEST_CASE("onnx nn ops: LSTM's gradients reach X, W, R, B and P, and differentiate twice") {
  Net net(14);
  OnnxModel m = lstm_model(net, "bidirectional", 2);
  const std::vector<Tensor> xs{randn_f64({3, 2, 2}, 26), randn_f64({2, 8, 2}, 27) * 0.5,
                               randn_f64({2, 8, 2}, 28) * 0.5, randn_f64({2, 16}, 29) * 0.5,
                               randn_f64({2, 6}, 30) * 0.5};
  check_grads(m, xs, {0, 1, 2, 3, 4});

  check_double_grad(m, xs, 0, 0);
  check_double_grad(m, xs, 0, 2);
}

TEST_CASE("onnx nn ops: LSTM refuses clip, other activations and uneven sequence lengths") {
  {
    Net net(14);
    net.input("X", {1, 1, 2}).input("W", {1, 8, 2}).input("R", {1, 8, 2}).output("Y");
    auto& n = net.node("LSTM", {"X", "W", "R"}, {"Y"});
    set_int(n, "hidden_size", 2);
    set_float(n, "clip", 3.0f);
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "LSTM"));
    CHECK(contains(msg, "opset 14"));
    CHECK(contains(msg, "clip"));
  }
  {
    Net net(14);
    net.input("X", {1, 1, 2}).input("W", {1, 8, 2}).input("R", {1, 8, 2}).output("Y");
    auto& n = net.node("LSTM", {"X", "W", "R"}, {"Y"});
    set_int(n, "hidden_size", 2);
    auto* a = attr(n, "activations", ::onnx::AttributeProto::STRINGS);
    for (const char* s : {"Sigmoid", "Relu", "Tanh"}) a->add_strings(s);
    CHECK(contains(error_of<NotImplementedError>([&] { net.load(); }), "activations"));
  }
  {
    Net net(14);
    net.input("X", {2, 2, 2}).input("W", {1, 8, 2}).input("R", {1, 8, 2}).input("L", {2}, ::onnx::TensorProto::INT32);
    net.output("Y");
    set_int(net.node("LSTM", {"X", "W", "R", "", "L"}, {"Y"}), "hidden_size", 2);
    OnnxModel m = net.load();
    const Tensor lens = array(std::vector<std::int32_t>{2, 1}, Shape{2}, int32);
    const std::string msg = error_of<NotImplementedError>(
        [&] { run(m, {randn_f64({2, 2, 2}, 1), randn_f64({1, 8, 2}, 2), randn_f64({1, 8, 2}, 3), lens}); });
    CHECK(contains(msg, "sequence_lens"));
    CHECK(run(m, {randn_f64({2, 2, 2}, 1), randn_f64({1, 8, 2}, 2), randn_f64({1, 8, 2}, 3),
                  array(std::vector<std::int32_t>{2, 2}, Shape{2}, int32)})
              .shape() == Shape{2, 1, 2, 2});
  }
}

// --- losses ---------------------------------------------------------------------------------------
TEST_CASE("onnx nn ops: SoftmaxCrossEntropyLoss with weights and ignore_index, its log_prob and gradient") {
  for (const char* reduction : {"mean", "sum", "none"}) {
    CAPTURE(reduction);
    Net net(13);
    net.input("X", {3, 4, 2}).input("L", {3, 2}, ::onnx::TensorProto::INT64).input("Wt", {4});
    net.output("Z").output("LP");
    auto& n = net.node("SoftmaxCrossEntropyLoss", {"X", "L", "Wt"}, {"Z", "LP"});
    set_string(n, "reduction", reduction);
    set_int(n, "ignore_index", -1);
    OnnxModel m = net.load();
    const Tensor x = randn_f64({3, 4, 2}, 31), w = array({0.5, 1.0, 2.0, 0.25}, float64);
    const std::vector<std::int64_t> lv{0, 3, -1, 2, 1, 3};
    const Tensor labels = array(lv, Shape{3, 2}, int64);
    // By hand: -log_softmax(x)[n, label, d] * w[label] over the labels that are not -1.
    const Tensor lp = x - log(exp(x).sum(Axes{1}, true));
    const Doubles lpv = lp.to_vector<double>(), wv = w.to_vector<double>();
    Doubles losses;
    double total = 0, wsum = 0;
    for (std::int64_t k = 0; k < 6; ++k) {
      const std::int64_t nn = k / 2, d = k % 2, c = lv[static_cast<std::size_t>(k)];
      const double l =
          c < 0 ? 0.0 : -lpv[static_cast<std::size_t>((nn * 4 + c) * 2 + d)] * wv[static_cast<std::size_t>(c)];
      losses.push_back(l);
      total += l;
      wsum += c < 0 ? 0.0 : wv[static_cast<std::size_t>(c)];
    }
    const std::string r = reduction;
    const Tensor want = r == "none" ? array(losses, Shape{3, 2}, float64)
                                    : array(r == "sum" ? total : total / wsum, float64);
    CHECK(max_abs_diff(run(m, {x, labels, w}).data(), want) < 1e-12);
    CHECK(max_abs_diff(run(m, {x, labels, w}, 1).data(), lp) < 1e-12);
    check_grads(m, {x, labels, w}, {0, 2});
  }
}

TEST_CASE("onnx nn ops: a label outside [0, C) that is not ignore_index is an IndexError naming the node") {
  Net net(13);
  net.input("X", {2, 3}).input("L", {2}, ::onnx::TensorProto::INT64).output("Z");
  net.node("NegativeLogLikelihoodLoss", {"X", "L"}, {"Z"});
  OnnxModel m = net.load();
  const Tensor x = randn_f64({2, 3}, 32);
  CHECK(max_abs_diff(run(m, {x, array(std::vector<std::int64_t>{2, 0}, Shape{2}, int64)}).data(),
                     array(-(x.to_vector<double>()[2] + x.to_vector<double>()[3]) / 2, float64)) < 1e-12);
  const std::string msg =
      error_of<IndexError>([&] { run(m, {x, array(std::vector<std::int64_t>{3, 0}, Shape{2}, int64)}); });
  CHECK(contains(msg, "NegativeLogLikelihoodLoss"));
  CHECK(contains(msg, "label 3"));
}

// --- load-time refusals ---------------------------------------------------------------------------
TEST_CASE("onnx nn ops: 4-d kernels and attributes an opset lacks are refused at load, naming the node") {
  {
    Net net(13);
    net.input("X", {1, 1, 4, 4, 4, 4}).output("Y");
    set_ints(net.node("MaxPool", {"X"}, {"Y"}), "kernel_shape", {2, 2, 2, 2});
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "MaxPool"));
    CHECK(contains(msg, "kernel_shape [2, 2, 2, 2]"));
  }
  {
    Net net(8);  // ceil_mode came with opset 10
    net.input("X", {1, 1, 4, 4}).output("Y");
    auto& n = net.node("MaxPool", {"X"}, {"Y"});
    set_ints(n, "kernel_shape", {2, 2});
    set_int(n, "ceil_mode", 1);
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "ceil_mode"));
    CHECK(contains(msg, "opset 8"));
  }
  {
    Net net(13);
    net.input("X", {1, 1, 4, 4}).input("W", {1, 1, 2, 2}).output("Y");
    set_string(net.node("Conv", {"X", "W"}, {"Y"}), "auto_pad", "SAME");
    CHECK(contains(error_of<ValueError>([&] { net.load(); }), "auto_pad"));
  }
}

// --- sizes from the file, and integer pools ------------------------------------------------------
// Regressions of fuzz_onnx_run (tests/fuzz/regressions/onnx_run/).
TEST_CASE("onnx nn ops: an integer MaxPool pads with the dtype's lowest value, so all-padding windows convert back") {
  // pads larger than the kernel: the windows of the last columns hold padding only. Pooled via
  // float64, -inf padding came back as an undefined -inf -> int conversion (UBSan).
  Net net(12);
  net.input("X", {1, 1, 5, 4}, ::onnx::TensorProto::INT32).output("Y", ::onnx::TensorProto::INT32);
  auto& n = net.node("MaxPool", {"X"}, {"Y"});
  set_ints(n, "kernel_shape", {5, 5});
  set_ints(n, "pads", {2, 2, 2, 34});
  OnnxModel m = net.load();
  std::vector<std::int32_t> xv(20);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<std::int32_t>(i) - 30;  // all negative
  const Variable y = run(m, {array(xv, Shape{1, 1, 5, 4}, int32)});
  REQUIRE(y.dtype() == int32);
  REQUIRE(y.shape() == Shape{1, 1, 5, 36});
  const auto yv = y.data().to_vector<std::int32_t>();
  for (std::int64_t h = 0; h < 5; ++h)
    for (std::int64_t w = 0; w < 36; ++w) {
      // the window covers rows h-2 .. h+2 and columns w-2 .. w+2 of x
      std::int32_t want = std::numeric_limits<std::int32_t>::lowest();
      for (std::int64_t i = std::max<std::int64_t>(0, h - 2); i <= std::min<std::int64_t>(4, h + 2); ++i)
        for (std::int64_t j = std::max<std::int64_t>(0, w - 2); j <= std::min<std::int64_t>(3, w + 2); ++j)
          want = std::max(want, xv[static_cast<std::size_t>(i * 4 + j)]);
      CHECK(yv[static_cast<std::size_t>(h * 36 + w)] == want);
    }
}

TEST_CASE("onnx nn ops: conv, ConvTranspose and pool sizes the file asks for are capped before allocating") {
  {  // a tiny ConvTranspose asks for a huge full result through its strides (the fuzzer's had 3 x 33554429)
    Net net(11);
    net.input("X", {1, 1, 3, 3}).input("W", {1, 2, 3, 3}).output("Y");
    auto& n = net.node("ConvTranspose", {"X", "W"}, {"Y"});
    set_ints(n, "output_shape", {10, 8});
    set_ints(n, "strides", {3, 2147483647});
    OnnxModel m = net.load();
    const std::string msg =
        error_of<ValueError>([&] { run(m, {randn_f64({1, 1, 3, 3}, 1), randn_f64({1, 2, 3, 3}, 2)}); });
    CHECK(contains(msg, "ConvTranspose, opset 11"));
    CHECK(contains(msg, "the full output (1, 2, 9, 4294967297)"));
    CHECK(contains(msg, "cap of 2147483648"));
  }
  {  // pads of 10^5 around a 2 x 2 input
    Net net(13);
    net.input("X", {1, 1, 2, 2}).input("W", {1, 1, 1, 1}).output("Y");
    set_ints(net.node("Conv", {"X", "W"}, {"Y"}), "pads", {0, 0, 100000, 100000});
    OnnxModel m = net.load();
    const std::string msg = error_of<ValueError>([&] { run(m, {randn_f64({1, 1, 2, 2}, 3), randn_f64({1, 1, 1, 1}, 4)}); });
    CHECK(contains(msg, "Conv, opset 13"));
    CHECK(contains(msg, "padded input (1, 1, 100002, 100002)"));
  }
  {  // dilations that spread a 2 x 2 kernel over 2^31 columns
    Net net(13);
    net.input("X", {1, 1, 2, 2}).input("W", {1, 1, 2, 2}).output("Y");
    auto& n = net.node("Conv", {"X", "W"}, {"Y"});
    set_ints(n, "dilations", {1, 2147483647});
    set_ints(n, "pads", {0, 0, 0, 2147483647});
    OnnxModel m = net.load();
    CHECK(contains(error_of<ValueError>([&] { run(m, {randn_f64({1, 1, 2, 2}, 5), randn_f64({1, 1, 2, 2}, 6)}); }),
                   "Conv, opset 13"));
  }
  {  // the windows a pool unfolds: 16 x 25 elements for a 4 x 4 kernel over 8 x 8, past a cap of 300
    Net net(13);
    net.input("X", {1, 1, 8, 8}).output("Y");
    set_ints(net.node("MaxPool", {"X"}, {"Y"}), "kernel_shape", {4, 4});
    OnnxModel m = net.load();
    CHECK(run(m, {randn_f64({1, 1, 8, 8}, 7)}).shape() == Shape{1, 1, 5, 5});
    const std::int64_t old = dezero::onnx::detail::max_output_elements();
    dezero::onnx::detail::set_max_output_elements(300);
    const std::string msg = error_of<ValueError>([&] { run(m, {randn_f64({1, 1, 8, 8}, 7)}); });
    dezero::onnx::detail::set_max_output_elements(old);
    CHECK(contains(msg, "MaxPool, opset 13"));
    CHECK(contains(msg, "pooling windows (1, 1, 4, 5, 4, 5) would have 400 elements"));
  }
  {  // attribute values past 2^31 - 1 are refused at load
    Net net(13);
    net.input("X", {1, 1, 4, 4}).output("Y");
    set_ints(net.node("MaxPool", {"X"}, {"Y"}), "kernel_shape", {std::int64_t{1} << 40, 1});
    const std::string msg = error_of<ValueError>([&] { net.load(); });
    CHECK(contains(msg, "MaxPool, opset 13"));
    CHECK(contains(msg, "above 2^31 - 1"));
  }
}

// --- what a small hostile file may make the importer do (issue 43, items 1, 2 and 4) -----------------
TEST_CASE("onnx nn ops: a group count beyond the channels is refused, with no channels too (no loop per group)") {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    CAPTURE(op);
    Net net;
    net.input("X", {1, 0, 4, 4}).input("W", {0, 0, 1, 1}).output("Y");
    set_int(net.node(op, {"X", "W"}, {"Y"}), "group", 1000000000000);
    OnnxModel m = net.load();
    const std::string msg = error_of<ShapeError>([&] { run(m, {zeros({1, 0, 4, 4}, float64), zeros({0, 0, 1, 1}, float64)}); });
    CHECK_MESSAGE(contains(msg, "group 1000000000000 is more than X (1, 0, 4, 4)'s 0 channels"), msg);
  }
}

TEST_CASE("onnx nn ops: an empty kernel with an extent of 10^12 is refused, not looped over") {
  // A 3-d ConvTranspose with no channels: every tensor is empty, but the kernel's depth is 10^12.
  Net net;
  net.input("X", {1, 0, 1, 1, 1}).input("W", {0, 0, 1000000000000, 1, 1}).output("Y");
  net.node("ConvTranspose", {"X", "W"}, {"Y"});
  OnnxModel m = net.load();
  const std::string msg = error_of<ValueError>(
      [&] { run(m, {zeros({1, 0, 1, 1, 1}, float64), zeros({0, 0, 1000000000000, 1, 1}, float64)}); });
  CHECK_MESSAGE(contains(msg, "extents whose product without its zeros is 1000000000000"), msg);
}

TEST_CASE("onnx nn ops: an LSTM over more steps than the importer unrolls is refused before the first step") {
  Net net;
  const std::int64_t seq = (std::int64_t{1} << 20) + 1;
  net.input("X", {seq, 1, 1}).input("W", {1, 4, 1}).input("R", {1, 4, 1}).output("Y");
  set_int(net.node("LSTM", {"X", "W", "R"}, {"Y"}), "hidden_size", 1);
  OnnxModel m = net.load();
  const std::string msg = error_of<NotImplementedError>(
      [&] { run(m, {zeros({seq, 1, 1}, float64), zeros({1, 4, 1}, float64), zeros({1, 4, 1}, float64)}); });
  CHECK_MESSAGE(contains(msg, "a sequence of 1048577 steps"), msg);
  CHECK_MESSAGE(contains(msg, "1048576 steps the importer unrolls"), msg);
}

TEST_CASE("onnx nn ops: every op's tensors count against the run's memory cap (a broadcasting Add of 2^32 elements)") {
  for (const char* op : {"Add", "MatMul", "Mul"}) {
    CAPTURE(op);
    Net net;
    net.input("A", {65536, 1}).input("B", {1, 65536}).output("Y");
    net.node(op, {"A", "B"}, {"Y"});
    OnnxModel m = net.load();
    const Tensor a = zeros({65536, 1}, float64), b = zeros({1, 65536}, float64);
    const dzt::CeilingRun r = dzt::run_under_ceiling([&] { run(m, {a, b}); });
    INFO(r.outcome);
    CHECK(contains(r.outcome, "error: onnx import: "));
    CHECK(contains(r.outcome, "a tensor of 34359738368 bytes"));
    CHECK(contains(r.outcome, "passes its cap of 536870912 bytes"));
    CHECK(r.grew_kb < 64 * 1024);
  }
  // The same model on inputs whose product fits runs; a cap set lower refuses it, naming the setter.
  Net net;
  net.input("A", {64, 1}).input("B", {1, 64}).output("Y");
  net.node("Add", {"A", "B"}, {"Y"});
  OnnxModel m = net.load();
  const std::vector<Tensor> small{ones({64, 1}, float64), ones({1, 64}, float64)};
  CHECK(run(m, small).data().sum().item<double>() == 2.0 * 64 * 64);
  dezero::onnx::set_max_run_bytes(1024);
  const std::string msg = error_of<ValueError>([&] { run(m, small); });
  dezero::onnx::set_max_run_bytes(0);
  CHECK_MESSAGE(contains(msg, "passes its cap of 1024 bytes (onnx::set_max_run_bytes)"), msg);
  CHECK(dezero::onnx::get_max_run_bytes() == 0);
  CHECK_THROWS_AS(dezero::onnx::set_max_run_bytes(-1), ValueError);
  CHECK(run(m, small).shape() == Shape{64, 64});
}

// --- opsets 18 to 20 --------------------------------------------------------------------------------
// Debian's ONNX 1.12 knows opsets up to 17 only (no checker, no node tests for these): the models
// are built here and the references written out.
namespace {

// x (2, 3, 4) at (i, j, k) as a flat index.
std::size_t at3(std::int64_t i, std::int64_t j, std::int64_t k) {
  return static_cast<std::size_t>((i * 3 + j) * 4 + k);
}

// The sum, mean or max of x (2, 3, 4) over the axes marked in `over` (keepdims: extent 1 there).
Tensor reduce_ref(const Tensor& x, const char* kind, const bool over[3], bool keepdims) {
  const Doubles v = x.to_vector<double>();
  const std::int64_t ext[3] = {2, 3, 4};
  std::int64_t o[3];
  Shape shape;
  for (int a = 0; a < 3; ++a) {
    o[a] = over[a] ? 1 : ext[a];
    if (!over[a] || keepdims) shape.push_back(o[a]);
  }
  Doubles y;
  for (std::int64_t i = 0; i < o[0]; ++i)
    for (std::int64_t j = 0; j < o[1]; ++j)
      for (std::int64_t k = 0; k < o[2]; ++k) {
        double acc = std::string(kind) == "max" ? -INFINITY : 0.0, n = 0;
        for (std::int64_t a = 0; a < ext[0]; ++a)
          for (std::int64_t b = 0; b < ext[1]; ++b)
            for (std::int64_t c = 0; c < ext[2]; ++c) {
              if ((!over[0] && a != i) || (!over[1] && b != j) || (!over[2] && c != k)) continue;
              const double e = v[at3(a, b, c)];
              acc = std::string(kind) == "max" ? std::max(acc, e) : acc + e;
              ++n;
            }
        y.push_back(std::string(kind) == "mean" ? acc / n : acc);
      }
  return array(y, shape, float64);
}

// ONNX's Pad index rule for one axis of extent n: the source of output position p (p < 0 before).
std::int64_t pad_source(const std::string& mode, std::int64_t p, std::int64_t n) {
  if (mode == "edge") return std::clamp<std::int64_t>(p, 0, n - 1);
  if (mode == "wrap") return ((p % n) + n) % n;
  return p < 0 ? -p : p >= n ? 2 * (n - 1) - p : p;  // reflect (pads shorter than the axis)
}

}  // namespace

TEST_CASE("onnx opset 20: Gelu, both forms, against the erf and tanh formulas, and its gradient") {
  const Tensor x = randn_f64({3, 5}, 21) * 2.0;
  const Doubles xv = x.to_vector<double>();
  for (const char* form : {"none", "tanh", ""}) {
    CAPTURE(form);
    Net net(20);
    net.input("X", {3, 5}).output("Y");
    auto& n = net.node("Gelu", {"X"}, {"Y"});
    if (*form) set_string(n, "approximate", form);
    OnnxModel m = net.load();
    Doubles want;
    for (double e : xv)
      want.push_back(std::string(form) == "tanh"
                         ? 0.5 * e * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (e + 0.044715 * e * e * e)))
                         : 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0))));
    CHECK(max_abs_diff(run(m, {x}).data(), array(want, Shape{3, 5}, float64)) < 1e-12);
    check_grads(m, {x}, {0});
  }
  // the two forms differ by more than rounding (the tanh one is not the erf one under another name)
  Doubles gap;
  for (double e : xv)
    gap.push_back(0.5 * e *
                  (std::erf(e / std::sqrt(2.0)) - std::tanh(std::sqrt(2.0 / M_PI) * (e + 0.044715 * e * e * e))));
  CHECK(max_abs_diff(array(gap, Shape{3, 5}, float64), zeros(Shape{3, 5}, float64)) > 1e-5);
  {
    Net net(20);
    net.input("X", {3, 5}).output("Y");
    set_string(net.node("Gelu", {"X"}, {"Y"}), "approximate", "sigmoid");
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "node 'n1' (Gelu, opset 20)"));
    CHECK(contains(msg, "approximate 'sigmoid'"));
  }
  {
    Net net(19);  // Gelu is opset 20's
    net.input("X", {3, 5}).output("Y");
    net.node("Gelu", {"X"}, {"Y"});
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "(Gelu, opset 19)"));
    CHECK(contains(msg, "imported for opsets 20-20"));
  }
}

TEST_CASE("onnx opset 18: ReduceMean, ReduceMax and ReduceSum take axes as an input, noop_with_empty_axes") {
  const Tensor x = randn_f64({2, 3, 4}, 22);
  struct Case {
    I64s axes;
    bool has_axes;
    int keepdims, noop;
    bool over[3];
  };
  const Case cases[] = {
      {{1}, true, 0, 0, {false, true, false}},
      {{-1, 0}, true, 1, 0, {true, false, true}},
      {{}, true, 1, 0, {true, true, true}},    // empty: every axis
      {{}, true, 0, 1, {false, false, false}},  // empty with noop: the input itself
      {{}, false, 0, 0, {true, true, true}},   // no axes input: every axis
  };
  for (const char* kind : {"mean", "max", "sum"}) {
    const std::string k = kind;
    const std::string op = k == "mean" ? "ReduceMean" : k == "max" ? "ReduceMax" : "ReduceSum";
    for (const Case& c : cases) {
      CAPTURE(op);
      CAPTURE(c.axes.size());
      CAPTURE(c.has_axes);
      CAPTURE(c.noop);
      Net net(18);
      net.input("X", {2, 3, 4}).output("Y");
      if (c.has_axes) net.input("A", {static_cast<std::int64_t>(c.axes.size())}, ::onnx::TensorProto::INT64);
      auto& n = c.has_axes ? net.node(op, {"X", "A"}, {"Y"}) : net.node(op, {"X"}, {"Y"});
      set_int(n, "keepdims", c.keepdims);
      set_int(n, "noop_with_empty_axes", c.noop);
      OnnxModel m = net.load();
      std::vector<Tensor> xs{x};
      if (c.has_axes) xs.push_back(array(c.axes, Shape{static_cast<std::int64_t>(c.axes.size())}, int64));
      const Tensor want = c.noop ? x : reduce_ref(x, kind, c.over, c.keepdims != 0);
      const Variable y = run(m, xs);
      CHECK(y.shape() == want.shape());
      CHECK(max_abs_diff(y.data(), want) < 1e-12);
      check_grads(m, xs, {0});
    }
  }
  // The attribute form is gone at 18 (and the input form is not read before it).
  {
    Net net(18);
    net.input("X", {2, 3, 4}).output("Y");
    set_ints(net.node("ReduceMean", {"X"}, {"Y"}), "axes", {1});
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "(ReduceMean, opset 18)"));
    CHECK(contains(msg, "attribute 'axes'"));
  }
  {
    Net net(17);
    net.input("X", {2, 3, 4}).output("Y");
    set_int(net.node("ReduceMax", {"X"}, {"Y"}), "noop_with_empty_axes", 1);
    CHECK(contains(error_of<NotImplementedError>([&] { net.load(); }), "attribute 'noop_with_empty_axes'"));
  }
  // an integer ReduceMax at 20 (ONNX's bool is read as int64 0/1)
  {
    Net net(20);
    net.input("X", {2, 3}, ::onnx::TensorProto::INT64).input("A", {1}, ::onnx::TensorProto::INT64);
    net.output("Y", ::onnx::TensorProto::INT64);
    set_int(net.node("ReduceMax", {"X", "A"}, {"Y"}), "keepdims", 0);
    OnnxModel m = net.load();
    const Tensor xi = array(std::vector<std::int64_t>{0, 0, 1, 0, 0, 0}, Shape{2, 3}, int64);
    const Variable y = run(m, {xi, array(std::vector<std::int64_t>{1}, Shape{1}, int64)});
    CHECK(y.dtype() == int64);
    CHECK(y.data().to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
  }
}

TEST_CASE("onnx opset 18/19: Pad with an axes input pads only those axes; wrap from 19; and its gradient") {
  const Tensor x = randn_f64({2, 3, 4}, 23);
  const Doubles xv = x.to_vector<double>();
  // axes [-1, 0]: axis 2 gets 1 before and 2 after, axis 0 nothing before and 1 after -> (3, 3, 7)
  const I64s axes{-1, 0}, pads{1, 0, 2, 1};
  for (int opset : {18, 19, 20})
    for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
      if (opset == 18 && std::string(mode) == "wrap") continue;
      CAPTURE(opset);
      CAPTURE(mode);
      Net net(opset);
      net.input("X", {2, 3, 4}).input("P", {4}, ::onnx::TensorProto::INT64).input("V", {}).input(
          "A", {2}, ::onnx::TensorProto::INT64);
      net.output("Y");
      set_string(net.node("Pad", {"X", "P", "V", "A"}, {"Y"}), "mode", mode);
      OnnxModel m = net.load();
      const std::vector<Tensor> xs{x, array(pads, Shape{4}, int64), array(0.5, float64), array(axes, Shape{2}, int64)};
      Doubles want;
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 3; ++j)
          for (std::int64_t k = -1; k < 6; ++k) {
            const bool inside = i < 2 && k >= 0 && k < 4;
            if (std::string(mode) == "constant") {
              want.push_back(inside ? xv[at3(i, j, k)] : 0.5);
            } else {
              want.push_back(xv[at3(pad_source(mode, i, 2), j, pad_source(mode, k, 4))]);
            }
          }
      const Variable y = run(m, xs);
      CHECK(y.shape() == Shape{3, 3, 7});
      CHECK(max_abs_diff(y.data(), array(want, Shape{3, 3, 7}, float64)) < 1e-12);
      check_grads(m, xs, {0});
    }
  {
    Net net(18);  // wrap came in 19
    net.input("X", {2, 3, 4}).input("P", {6}, ::onnx::TensorProto::INT64).output("Y");
    set_string(net.node("Pad", {"X", "P"}, {"Y"}), "mode", "wrap");
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "(Pad, opset 18)"));
    CHECK(contains(msg, "mode 'wrap'"));
  }
  {
    Net net(18);  // 3 pads for 2 axes
    net.input("X", {2, 3, 4}).input("P", {3}, ::onnx::TensorProto::INT64).input("A", {2}, ::onnx::TensorProto::INT64);
    net.output("Y");
    net.node("Pad", {"X", "P", "", "A"}, {"Y"});
    OnnxModel m = net.load();
    const std::string msg = error_of<ValueError>([&] {
      run(m, {x, array(I64s{1, 1, 1}, Shape{3}, int64), array(axes, Shape{2}, int64)});
    });
    CHECK(contains(msg, "pads has 3 values for 2 axes"));
  }
}

TEST_CASE("onnx opset 18: ScatterND's max and min reductions, on the host and differentiable") {
  const Tensor data = randn_f64({4, 3}, 24), upd = randn_f64({3, 3}, 25);
  const Tensor idx = array(std::vector<std::int64_t>{2, 0, 2}, Shape{3, 1}, int64);
  const Doubles d = data.to_vector<double>(), u = upd.to_vector<double>();
  for (const char* red : {"max", "min"}) {
    CAPTURE(red);
    Net net(18);
    net.input("D", {4, 3}).input("I", {3, 1}, ::onnx::TensorProto::INT64).input("U", {3, 3}).output("Y");
    set_string(net.node("ScatterND", {"D", "I", "U"}, {"Y"}), "reduction", red);
    OnnxModel m = net.load();
    Doubles want = d;
    const int rows[3] = {2, 0, 2};
    for (int t = 0; t < 3; ++t)
      for (int e = 0; e < 3; ++e) {
        double& w = want[static_cast<std::size_t>(rows[t] * 3 + e)];
        const double v = u[static_cast<std::size_t>(t * 3 + e)];
        w = std::string(red) == "max" ? std::max(w, v) : std::min(w, v);
      }
    const Tensor wt = array(want, Shape{4, 3}, float64);
    CHECK(max_abs_diff(run(m, {data, idx, upd}).data(), wt) < 1e-12);
    CHECK(max_abs_diff(wt, data) > 0.1);  // some update won
    check_grads(m, {data, idx, upd}, {0, 2});
  }
  {
    Net net(17);  // max came in 18
    net.input("D", {4, 3}).input("I", {3, 1}, ::onnx::TensorProto::INT64).input("U", {3, 3}).output("Y");
    set_string(net.node("ScatterND", {"D", "I", "U"}, {"Y"}), "reduction", "max");
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "(ScatterND, opset 17)"));
    CHECK(contains(msg, "reduction 'max'"));
  }
}

TEST_CASE("onnx opset 19: AveragePool with dilations, 2-d and 1-d; refused in 3-d and before 19") {
  // asymmetric pads (the divisor path) and symmetric ones with count_include_pad (a plain pool without dilations)
  for (const I64s& pads : {I64s{1, 0, 0, 2}, I64s{1, 1, 1, 1}})
    for (int count_pad : {0, 1}) {
      CAPTURE(pads[2]);
      CAPTURE(count_pad);
      Net net(19);
      net.input("X", {2, 2, 7, 8}).output("Y");
      auto& n = net.node("AveragePool", {"X"}, {"Y"});
      set_ints(n, "kernel_shape", {2, 3});
      set_ints(n, "strides", {2, 1});
      set_ints(n, "dilations", {2, 2});
      set_ints(n, "pads", pads);
      set_int(n, "count_include_pad", count_pad);
      OnnxModel m = net.load();
      const Tensor x = randn_f64({2, 2, 7, 8}, 26);
      const Tensor want = pool_ref(x, false, {2, 3}, {2, 1}, pads, false, count_pad != 0, {2, 2});
      const Variable y = run(m, {x});
      CHECK(y.shape() == (pads[2] == 0 ? Shape{2, 2, 3, 6} : Shape{2, 2, 4, 6}));
      CHECK(y.shape() == want.shape());
      CHECK(max_abs_diff(y.data(), want) < 1e-12);
      check_grads(m, {x}, {0});
    }
  {
    Net net(20);  // 1-d: (N, C, L) as (N, C, L, 1)
    net.input("X", {1, 2, 9}).output("Y");
    auto& n = net.node("AveragePool", {"X"}, {"Y"});
    set_ints(n, "kernel_shape", {3});
    set_ints(n, "dilations", {3});
    OnnxModel m = net.load();
    const Tensor x = randn_f64({1, 2, 9}, 27);
    const Doubles xv = x.to_vector<double>();
    const Doubles want{(xv[0] + xv[3] + xv[6]) / 3, (xv[1] + xv[4] + xv[7]) / 3, (xv[2] + xv[5] + xv[8]) / 3,
                       (xv[9] + xv[12] + xv[15]) / 3, (xv[10] + xv[13] + xv[16]) / 3, (xv[11] + xv[14] + xv[17]) / 3};
    CHECK(max_abs_diff(run(m, {x}).data(), array(want, Shape{1, 2, 3}, float64)) < 1e-12);
  }
  {
    Net net(19);
    net.input("X", {1, 1, 5, 5, 5}).output("Y");
    auto& n = net.node("AveragePool", {"X"}, {"Y"});
    set_ints(n, "kernel_shape", {2, 2, 2});
    set_ints(n, "dilations", {2, 1, 1});
    OnnxModel m = net.load();
    const std::string msg = error_of<NotImplementedError>([&] { run(m, {randn_f64({1, 1, 5, 5, 5}, 28)}); });
    CHECK(contains(msg, "(AveragePool, opset 19)"));
    CHECK(contains(msg, "dilations in a 3-d AveragePool"));
  }
  {
    Net net(18);
    net.input("X", {1, 1, 5, 5}).output("Y");
    auto& n = net.node("AveragePool", {"X"}, {"Y"});
    set_ints(n, "kernel_shape", {2, 2});
    set_ints(n, "dilations", {2, 2});
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "(AveragePool, opset 18)"));
    CHECK(contains(msg, "attribute 'dilations'"));
  }
}

TEST_CASE("onnx opset 19: Cast accepts saturate (it only concerns float8, which is refused)") {
  const Tensor x = array(std::vector<double>{-1.5, 0.0, 2.25}, Shape{3}, float64);
  for (int opset : {18, 19}) {
    CAPTURE(opset);
    Net net(opset);
    net.input("X", {3}).output("Y", ::onnx::TensorProto::FLOAT);
    auto& n = net.node("Cast", {"X"}, {"Y"});
    set_int(n, "to", ::onnx::TensorProto::FLOAT);
    set_int(n, "saturate", 1);
    if (opset == 18) {
      CHECK(contains(error_of<NotImplementedError>([&] { net.load(); }), "attribute 'saturate'"));
      continue;
    }
    OnnxModel m = net.load();
    const Variable y = run(m, {x});
    CHECK(y.dtype() == float32);
    CHECK(y.data().astype(float64).to_vector<double>() == Doubles{-1.5, 0.0, 2.25});
  }
  Net net(19);
  net.input("X", {3}).output("Y");
  set_int(net.node("Cast", {"X"}, {"Y"}), "to", 17);  // FLOAT8E4M3FN
  const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
  CHECK(contains(msg, "(Cast, opset 19)"));
  CHECK(contains(msg, "element type 17"));
}

TEST_CASE("onnx opset 18: Split with num_outputs (the last part smaller), with a split input, and before 18") {
  const Tensor x = randn_f64({2, 7, 3}, 29);
  const Doubles xv = x.to_vector<double>();
  // parts [begin, end) of axis 1 (extent 7), or of axis 0 (extent 2) for the last case
  struct Case {
    int opset;
    std::int64_t num_outputs;  // 0: none
    I64s split;                // empty: no split input / attribute
    std::int64_t axis;
    std::vector<std::pair<std::int64_t, std::int64_t>> parts;
  };
  const Case cases[] = {
      {18, 3, {}, 1, {{0, 3}, {3, 6}, {6, 7}}},         // ceil(7 / 3) = 3: 3, 3, 1
      {18, 4, {}, -2, {{0, 2}, {2, 4}, {4, 6}, {6, 7}}},  // 2, 2, 2, 1
      {18, 7, {}, 1, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}}},
      {20, 0, {2, 0, 5}, 1, {{0, 2}, {2, 2}, {2, 7}}},  // a split input, an empty part
      {13, 0, {4, 3}, 1, {{0, 4}, {4, 7}}},
      {11, 0, {1, 6}, -2, {{0, 1}, {1, 7}}},  // the attribute
      {13, 0, {}, 0, {{0, 1}, {1, 2}}},       // equal parts of axis 0
  };
  for (const Case& c : cases) {
    CAPTURE(c.opset);
    CAPTURE(c.num_outputs);
    CAPTURE(c.split.size());
    const int ax = c.axis < 0 ? static_cast<int>(c.axis) + 3 : static_cast<int>(c.axis);
    Net net(c.opset);
    net.input("X", {2, 7, 3});
    const bool split_input = !c.split.empty() && c.opset >= 13;
    if (split_input) net.input("S", {static_cast<std::int64_t>(c.split.size())}, ::onnx::TensorProto::INT64);
    std::vector<std::string> outs;
    for (std::size_t i = 0; i < c.parts.size(); ++i) {
      outs.push_back("Y" + std::to_string(i));
      net.output(outs.back());
    }
    auto& n = split_input ? net.node("Split", {"X", "S"}, {}) : net.node("Split", {"X"}, {});
    for (const auto& o : outs) n.add_output(o);
    set_int(n, "axis", c.axis);
    if (c.num_outputs) set_int(n, "num_outputs", c.num_outputs);
    if (!c.split.empty() && c.opset < 13) set_ints(n, "split", c.split);
    OnnxModel m = net.load();
    std::vector<Tensor> xs{x};
    if (split_input) xs.push_back(array(c.split, Shape{static_cast<std::int64_t>(c.split.size())}, int64));
    auto mode = test_mode();
    const VariableList ys = m.forward_multi(wrap(xs));
    REQUIRE(ys.size() == c.parts.size());
    for (std::size_t p = 0; p < c.parts.size(); ++p) {
      CAPTURE(p);
      const auto [b, e] = c.parts[p];
      Shape want_shape{2, 7, 3};
      want_shape[static_cast<std::size_t>(ax)] = e - b;
      Doubles want;
      for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t j = 0; j < 7; ++j)
          for (std::int64_t k = 0; k < 3; ++k) {
            const std::int64_t along = ax == 0 ? i : j;
            if (along >= b && along < e) want.push_back(xv[static_cast<std::size_t>((i * 7 + j) * 3 + k)]);
          }
      CHECK(ys[p].shape() == want_shape);
      CHECK(max_abs_diff(ys[p].data(), array(want, want_shape, float64)) < 1e-15);
    }
    // every output's gradient reaches X: sum over the parts of part * fixed weights
    std::vector<Tensor> coef;
    for (std::size_t p = 0; p < ys.size(); ++p) coef.push_back(randn_f64(ys[p].shape(), 40 + static_cast<unsigned>(p)));
    auto f = [&](const Variable& xi) {
      VariableList vs = wrap(xs);
      vs[0] = xi;
      const VariableList zs = m.forward_multi(vs);
      Variable acc = F::sum(zs[0] * Variable(coef[0]));
      for (std::size_t p = 1; p < zs.size(); ++p) acc = acc + F::sum(zs[p] * Variable(coef[p]));
      return acc;
    };
    CHECK(utils::gradient_check(f, x, 1e-5, 1e-6));
  }

  auto split_net = [](Net& net, std::int64_t extent, int n_out) -> ::onnx::NodeProto& {
    net.input("X", {extent});
    auto& node = net.node("Split", {"X"}, {});
    for (int i = 0; i < n_out; ++i) {
      node.add_output("Y" + std::to_string(i));
      net.output("Y" + std::to_string(i));
    }
    return node;
  };
  {
    Net net(18);  // 5 into 4 parts of 2 leaves -1 for the last
    set_int(split_net(net, 5, 4), "num_outputs", 4);
    OnnxModel m = net.load();
    const std::string msg = error_of<ShapeError>([&] { run(m, {randn_f64({5}, 30)}); });
    CHECK(contains(msg, "(Split, opset 18)"));
    CHECK(contains(msg, "num_outputs 4 cannot split axis 0 of extent 5"));
  }
  {
    Net net(18);
    set_int(split_net(net, 6, 2), "num_outputs", 3);
    CHECK(contains(error_of<ValueError>([&] { net.load(); }), "num_outputs 3 but the node has 2 outputs"));
  }
  {
    Net net(18);  // neither num_outputs nor a split input
    split_net(net, 6, 2);
    CHECK(contains(error_of<ValueError>([&] { net.load(); }), "either the split input or the attribute num_outputs"));
  }
  {
    Net net(17);  // num_outputs came in 18
    set_int(split_net(net, 6, 2), "num_outputs", 2);
    const std::string msg = error_of<NotImplementedError>([&] { net.load(); });
    CHECK(contains(msg, "(Split, opset 17)"));
    CHECK(contains(msg, "attribute 'num_outputs'"));
  }
  {
    Net net(13);  // equal parts must divide the axis before 18
    split_net(net, 7, 2);
    OnnxModel m = net.load();
    CHECK(contains(error_of<ShapeError>([&] { run(m, {randn_f64({7}, 31)}); }),
                   "axis 0 of extent 7 does not split into 2 equal parts"));
  }
}
