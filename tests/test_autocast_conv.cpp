// tests/test_autocast_conv.cpp - mixed precision for the convolutions (issue 31): F::conv2d
// and F::deconv2d under dezero::autocast(bfloat16 / float16), forward and both gradient
// products, against a float64 reference computed from operands rounded to the type;
// the backend's kernel (oneDNN's bf16 convolutions where the CPU has them) and the
// rounding fallback (set_conv_library_path(false)) alike; a small CNN's gradients
// against float32's; and 16-bit tensors (not autocast) through the convolution, pooling
// and batch normalisation, computed in float32 and stored in their dtype.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <dezero/dezero.hpp>
#include <dezero/onednn.hpp>
#include <string>
#include <vector>

#include "dezero/tensor/fused.hpp"
#include "support/test_util.hpp"

using namespace dezero;

namespace {

// t rounded to `to` and widened to float64: the values a `to` product multiplies, exactly.
Tensor r64(const Tensor& t, DType to) { return t.astype(to).astype(float64); }

// Max |y - ref| over the largest |ref|.
double rel_err(const Tensor& y, const Tensor& ref) {
  const auto a = y.to_vector<double>(), b = ref.to_vector<double>();
  REQUIRE(a.size() == b.size());
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return worst / scale;
}

// Turns the backends' library path off for a scope (the rounding fallback then runs).
struct NoLibrary {
  NoLibrary() { detail::set_conv_library_path(false); }
  ~NoLibrary() { detail::set_conv_library_path(true); }
};

struct Grads {
  Tensor y, gx, gW, gb;
};

// y = conv2d (or deconv2d) of x, W, b under autocast(t), then backward from gy after the
// guard is gone (the Functions keep the type they were called under).
Grads run(bool deconv, DType t, const Tensor& x0, const Tensor& W0, const Tensor& b0, const Tensor& gy, Pair s,
          Pair p) {
  Variable x(x0.copy()), W(W0.copy()), b(b0.copy());
  Variable y;
  {
    auto g = autocast(t);
    y = deconv ? F::deconv2d(x, W, b, s, p) : F::conv2d(x, W, b, s, p);
  }
  y.set_grad(Variable(gy));
  y.backward();
  return {y.data(), x.grad().data(), W.grad().data(), b.grad().data()};
}

// The same in float64 from operands rounded to t (the bias and gb unrounded: float32's).
Grads reference(bool deconv, DType t, const Tensor& x0, const Tensor& W0, const Tensor& b0, const Tensor& gy, Pair s,
                Pair p) {
  const Tensor x = r64(x0, t), W = r64(W0, t), b = b0.astype(float64), g = r64(gy, t);
  const Pair out(static_cast<int>(deconv ? gy.shape()[2] : x0.shape()[2]),
                 static_cast<int>(deconv ? gy.shape()[3] : x0.shape()[3]));
  const Pair k(static_cast<int>(W0.shape()[2]), static_cast<int>(W0.shape()[3]));
  Grads r;
  if (!deconv) {
    r.y = detail::conv2d_forward("t", x, W, b, s, p);
    r.gx = detail::conv2d_backward_data("t", g, W, Tensor(), s, p, out);
    r.gW = detail::conv2d_backward_filter("t", x, g, k, s, p);
  } else {  // y = deconv(x, W): gx = conv(gy, W), gW = the filter gradient of conv(gy) -> x
    r.y = detail::conv2d_backward_data("t", x, W, b, s, p, Pair(static_cast<int>(gy.shape()[2]),
                                                                 static_cast<int>(gy.shape()[3])));
    r.gx = detail::conv2d_forward("t", g, W, Tensor(), s, p);
    r.gW = detail::conv2d_backward_filter("t", g, x, k, s, p);
  }
  r.gb = gy.astype(float64).sum({0, 2, 3});
  return r;
}

void check_close(const Grads& got, const Grads& ref, double tol) {
  CHECK(got.y.dtype() == float32);
  CHECK(got.gx.dtype() == float32);
  CHECK(got.gW.dtype() == float32);
  CHECK(rel_err(got.y, ref.y) < tol);
  CHECK(rel_err(got.gx, ref.gx) < tol);
  CHECK(rel_err(got.gW, ref.gW) < tol);
  CHECK(rel_err(got.gb, ref.gb) < tol);
}

}  // namespace

TEST_CASE("autocast conv: conv2d and deconv2d and both gradients in bfloat16 / float16, kernel and fallback") {
  MESSAGE("cpu_supports_bf16: " << cpu_supports_bf16() << ", cpu_supports_fp16: " << cpu_supports_fp16());
  struct Case {
    bool deconv;
    Shape x, W;
    Pair s, p;
  };
  // conv: x (N, C, H, W), W (OC, C, KH, KW); deconv: x (N, C, H, W), W (C, OC, KH, KW).
  const Case cases[] = {{false, {2, 5, 9, 8}, {6, 5, 3, 3}, 1, 1},
                        {false, {3, 16, 10, 10}, {32, 16, 3, 3}, 2, 1},
                        {false, {2, 16, 6, 6}, {32, 16, 1, 1}, 1, 0},
                        {false, {2, 32, 7, 7}, {16, 32, 1, 1}, 2, 0},
                        {true, {2, 6, 5, 4}, {6, 5, 3, 3}, 2, 1},
                        {true, {2, 32, 5, 5}, {32, 16, 3, 3}, 2, 1}};
  // (Channels of 16 and 32 take oneDNN's bf16 kernels on a CPU with them, blocked for 3x3,
  // plain for 1x1; 5 and 6 the rounding fallback: oneDNN's blocked formats would pad them
  // more than twice over.)
  for (DType t : {bfloat16, float16}) {
    for (const Case& c : cases) {
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(c.deconv);
      CAPTURE(c.x.str());
      const Tensor x = dzt::filled(c.x, 1), W = dzt::filled(c.W, 2), b = dzt::filled(Shape{c.W[c.deconv ? 1 : 0]}, 3);
      // gy: the shape of the product's output, from a float32 run.
      const Shape ys = (c.deconv ? F::deconv2d(Variable(x), Variable(W), Variable(), c.s, c.p)
                                 : F::conv2d(Variable(x), Variable(W), Variable(), c.s, c.p))
                           .shape();
      const Tensor gy = dzt::filled(ys, 4);
      const Grads ref = reference(c.deconv, t, x, W, b, gy, c.s, c.p);
      // The library path (oneDNN's kernel where the CPU has it), then the rounding fallback.
      check_close(run(c.deconv, t, x, W, b, gy, c.s, c.p), ref, 1e-5);
      {
        NoLibrary off;
        check_close(run(c.deconv, t, x, W, b, gy, c.s, c.p), ref, 1e-5);
      }
      // float32 of the unrounded operands is further off than that: the rounding happened.
      const Grads f32 = run(c.deconv, float32, x, W, b, gy, c.s, c.p);
      CHECK(rel_err(f32.y, ref.y) > 1e-4);
      CHECK(rel_err(f32.gW, ref.gW) > 1e-4);
    }
  }
}

TEST_CASE("autocast conv: float64 is not rounded, and a second-order gradient keeps the type") {
  const Tensor x = dzt::filled(Shape{2, 3, 6, 6}, 11), W = dzt::filled(Shape{4, 3, 3, 3}, 12);
  Variable x64(x.astype(float64)), W64(W.astype(float64));
  Variable y = F::conv2d(x64, W64, Variable(), 1, 1), y_amp;
  {
    auto g = autocast(bfloat16);
    y_amp = F::conv2d(x64, W64, Variable(), 1, 1);
  }
  CHECK(y_amp.dtype() == float64);
  CHECK(dzt::vals(y) == dzt::vals(y_amp));
  // d/dx of sum(gW * W2) where gW = dL/dW of L = sum(conv(x, W) * gy): the Functions of
  // the gradients (Conv2DGradW's backward) run in bfloat16 too, after the guard is gone.
  Variable xv(x.copy()), Wv(W.copy());
  Variable loss;
  {
    auto g = autocast(bfloat16);
    loss = F::sum(F::conv2d(xv, Wv, Variable(), 1, 1) * Variable(dzt::filled(Shape{2, 4, 6, 6}, 13)));
  }
  loss.backward(true, true);  // create_graph
  Variable gW = Wv.grad();
  Wv.cleargrad();
  xv.cleargrad();
  Tensor W2 = dzt::filled(W.shape(), 14);
  F::sum(gW * Variable(W2)).backward();
  // gW = filter(x, gy), so d/dx sum(gW * W2) = deconv(gy, W2), in bfloat16.
  Tensor ref = detail::conv2d_backward_data("t", r64(dzt::filled(Shape{2, 4, 6, 6}, 13), bfloat16), r64(W2, bfloat16),
                                            Tensor(), 1, 1, Pair(6, 6));
  CHECK(rel_err(xv.grad().data(), ref) < 1e-5);
}

TEST_CASE("autocast conv: a small CNN's gradients under bfloat16 / float16 agree with float32's") {
  // conv 3x3 (1 -> 8, pad 1) -> relu -> average pooling 2 -> linear (8*6*6 -> 10) -> softmax
  // cross entropy. Positive images and filters keep the ReLU's inputs away from 0, and the
  // pooling is the average: a max pooling's or ReLU's choice flips where the rounding moves
  // a value past its neighbour (or 0), which sends a whole term of a gradient elsewhere
  // (measured: 2-8% of the largest conv gradient in bfloat16) and says nothing about the
  // products' precision.
  std::vector<std::int64_t> labels(16);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
  const Tensor x = (dzt::filled(Shape{16, 1, 12, 12}, 21) + 1.0) * 0.5, t = array(labels, Shape{16});  // [0, 1) images
  const Tensor W1 = (dzt::filled(Shape{8, 1, 3, 3}, 22) + 1.0) * 0.25, b1 = dzt::filled(Shape{8}, 23) * 0.1,
               W2 = dzt::filled(Shape{8 * 6 * 6, 10}, 24) * 0.1, b2 = dzt::filled(Shape{10}, 25) * 0.1;
  auto grads = [&](DType type) {
    std::vector<Variable> ps{Variable(W1.copy()), Variable(b1.copy()), Variable(W2.copy()), Variable(b2.copy())};
    auto g = autocast(type);
    Variable h = F::average_pooling(F::relu(F::conv2d(Variable(x), ps[0], ps[1], 1, 1)), 2, 2);
    Variable loss = F::softmax_cross_entropy(F::linear(F::reshape(h, {16, -1}), ps[2], ps[3]), Variable(t));
    loss.backward();
    std::vector<Tensor> out;
    for (auto& p : ps) out.push_back(p.grad().data());
    return out;
  };
  const auto ref = grads(float32);
  for (DType type : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(type)));
    const auto got = grads(type);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i].dtype() == float32);
      const double e = rel_err(got[i], ref[i]);
      CHECK(e < (type == bfloat16 ? 1e-2 : 2e-3));  // measured: 1.6e-3 and 2.6e-4 at most
      CHECK(e > 0);  // computed in the type, not in float32
    }
  }
}

TEST_CASE("16-bit tensors: conv2d, pooling and batch norm computed in float32, stored in their dtype") {
  for (DType t : {bfloat16, float16}) {
    CAPTURE(std::string(dtype_name(t)));
    const Tensor x = dzt::filled(Shape{2, 3, 8, 8}, 31).astype(t), W = dzt::filled(Shape{4, 3, 3, 3}, 32).astype(t),
                 b = dzt::filled(Shape{4}, 33).astype(t);
    // conv2d, forward and backward: the float32 computation of the same values, rounded once
    // (to within one rounding of the type: the sums' order may differ).
    Variable xv(x), Wv(W), bv(b);
    Variable y = F::conv2d(xv, Wv, bv, 1, 1);
    CHECK(y.dtype() == t);
    Variable xf(x.astype(float32)), Wf(W.astype(float32)), bf(b.astype(float32));
    Variable yf = F::conv2d(xf, Wf, bf, 1, 1);
    const double ulp = t == bfloat16 ? 1.0 / 128 : 1.0 / 1024;
    CHECK(rel_err(y.data(), yf.data()) <= ulp);
    F::sum(y * y).backward();
    F::sum(yf * yf).backward();
    CHECK(xv.grad().dtype() == t);
    CHECK(Wv.grad().dtype() == t);
    CHECK(bv.grad().dtype() == t);
    CHECK(rel_err(xv.grad().data(), xf.grad().data()) <= 4 * ulp);  // y rounded, then y * y, then the product
    CHECK(rel_err(Wv.grad().data(), Wf.grad().data()) <= 4 * ulp);
    // deconv2d
    Variable d = F::deconv2d(Variable(x), Variable(dzt::filled(Shape{3, 2, 3, 3}, 34).astype(t)), Variable(), 2, 1);
    CHECK(d.dtype() == t);
    // max pooling: exact (a max is one of the values); its gradient too (gy routed, not summed).
    Variable px(x);
    Variable py = F::pooling(px, 2, 2);
    CHECK(py.dtype() == t);
    CHECK(dzt::vals(py) == dzt::vals(F::pooling(Variable(x.astype(float32)), 2, 2)));
    F::sum(py).backward();
    CHECK(px.grad().dtype() == t);
    CHECK(F::sum(px.grad()).data().item<double>() == 2 * 3 * 4 * 4);
    // average pooling
    Variable ax(x);
    Variable ay = F::average_pooling(ax, 2, 2);
    CHECK(ay.dtype() == t);
    CHECK(rel_err(ay.data(), F::average_pooling(Variable(x.astype(float32)), 2, 2).data()) <= ulp);
    F::sum(ay).backward();
    CHECK(ax.grad().dtype() == t);
    // batch norm (train mode): 16-bit x, float32 statistics
    Tensor mean = zeros({3}), var = ones({3});
    Variable bx(x);
    Variable bn = F::batch_norm(bx, Variable(ones({3}).astype(t)), Variable(zeros({3}).astype(t)), mean, var);
    CHECK(bn.dtype() == t);
    Tensor mean32 = zeros({3}), var32 = ones({3});
    Variable bn32 = F::batch_norm(Variable(x.astype(float32)), Variable(ones({3})), Variable(zeros({3})), mean32,
                                  var32);
    CHECK(rel_err(bn.data(), bn32.data()) <= 2 * ulp);
    F::sum(bn * bn).backward();
    CHECK(bx.grad().dtype() == t);
    // ... and 16-bit running statistics, updated in place
    Tensor mean16 = zeros({3}, t), var16 = ones({3}, t);
    Variable bn16 = F::batch_norm(Variable(x), Variable(ones({3}, t)), Variable(zeros({3}, t)), mean16, var16);
    CHECK(bn16.dtype() == t);
    CHECK(mean16.dtype() == t);
    CHECK(rel_err(mean16, mean32) <= ulp);
    CHECK(rel_err(var16, var32) <= ulp);
    // im2col / col2im
    Variable col = F::im2col(Variable(x), 3, 1, 1);
    CHECK(col.dtype() == t);
    CHECK(F::col2im(col, x.shape(), 3, 1, 1).dtype() == t);
  }
}
