// dezero/tensor/conv.cpp - validation + dispatch of the convolution section of
// tensor/fused.hpp: im2col / col2im, the three convolution products and max pooling
// (DeZero's functions_conv.py, steps 55-57, without the autograd).
//
// Every entry checks its operands once, here, for both devices, and names the user's
// function in the error. The products try the backend's library path first
// (LibraryKernels::conv2d_forward / _backward_data / _backward_filter: cuDNN on a GPU; on
// the host cpu/im2col.cpp's image-by-image im2col + GEMM, each col kept in cache) and
// otherwise run im2col + one GEMM per image as a single batched Backend::gemm:
//   forward:  y[i] (oc, oh ow)     = W (oc, c kh kw) @ col[i] (c kh kw, oh ow)
//   data:     gcol[i] (c kh kw, oh ow) = W^T @ gy[i] (oc, oh ow), then col2im
//   filter:   gW (oc, c kh kw)     = sum_i gy[i] @ col[i]^T
// so the results are NCHW as they come out of the GEMM (no (n, oh, ow, oc) transpose
// as in DeZero's tensordot + rollaxis). A grouped convolution (groups G, W (oc, c/G, kh,
// kw)) runs one such batched GEMM per group on its slices: rows [j c/G kh kw, (j+1) c/G
// kh kw) of col, rows [j oc/G, (j+1) oc/G) of W, y and gy. Max and average pooling likewise try the
// backend's library first (LibraryKernels::max_pool_* / avg_pool_*: cuDNN),
// then its own kernels. set_conv_library_path(false) turns every library path off
// (batch normalisation's too, tensor/batch_norm.cpp), for the tests that compare them.
//
// 16-bit floats (issue 31): bfloat16 / float16 operands are widened to float32, computed
// there and the result rounded back once (as tensor/elementwise.cpp does); the products
// then ask for `compute` = their own dtype, which rounds nothing (their values are exact
// in it) and lets a low-precision kernel take them. Mixed precision (autocast) passes
// `compute` = bfloat16 / float16 with float32 operands: LibraryKernels::conv2d_* with
// ConvGeom::compute set (oneDNN's bf16 convolutions on the host, cuDNN's on a GPU), else
// the operands rounded to it and back and the float32 path (the same values, with the
// sums in another order).
#include <algorithm>
#include <atomic>
#include <string>

#include "dezero/tensor/conv.hpp"
#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::detail {

namespace {

using i64 = std::int64_t;

std::string hw(i64 h, i64 w) { return "(" + std::to_string(h) + ", " + std::to_string(w) + ")"; }

void check_float4d(const char* op, const char* what, const Tensor& t, const char* layout) {
  check_defined(op, t);
  if (t.ndim() != 4)
    detail::fail<ShapeError>(op, what, " must be 4-d ", layout, ", got ", describe(t),
                             "; hint: a single image is x.reshape({1, C, H, W})");
  if (!is_floating(t.dtype()))
    detail::fail<DtypeError>(op, what, " must be a floating dtype, got ", describe(t), "; hint: ", what,
                             ".astype(dezero::float32)");
}

// A 16-bit operand widened to float32 (undefined stays undefined).
Tensor wide(const Tensor& t) { return t.defined() ? t.astype(DType::Float32) : t; }
// Whether a product of dtype dt runs in the low-precision `compute` (autocast).
bool lowp(DType dt, DType compute) { return dt == DType::Float32 && is_half(compute); }
// A float32 operand rounded to `t` and back: the values a `t` kernel would multiply.
Tensor rounded(const Tensor& x, DType t) { return x.astype(t).astype(DType::Float32); }

void check_same(const char* op, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  check_same_device(op, a, b);
  if (a.dtype() != b.dtype())
    detail::fail<DtypeError>(op, an, " ", describe(a), " and ", bn, " ", describe(b),
                             " have different dtypes; hint: convert one with astype()");
}

// The geometry of a window (k, s, p) over images of shape xs (n, c, h, w); `x_desc`
// describes the input for messages.
ConvGeom geometry(const char* op, const Shape& xs, const std::string& x_desc, Pair k, Pair s, Pair p) {
  if (k.h < 1 || k.w < 1) fail<ValueError>(op, "kernel size must be positive, got ", k.str(), Hint{"e.g. 3 or {3, 3}"});
  if (s.h < 1 || s.w < 1) fail<ValueError>(op, "stride must be positive, got ", s.str(), Hint{"stride 1"});
  if (p.h < 0 || p.w < 0) fail<ValueError>(op, "pad must be >= 0, got ", p.str(), Hint{"pad 0"});
  ConvGeom g;
  g.n = xs[0], g.c = xs[1], g.h = xs[2], g.w = xs[3];
  g.kh = k.h, g.kw = k.w, g.sh = s.h, g.sw = s.w, g.ph = p.h, g.pw = p.w;
  if (g.h + 2 * g.ph < g.kh || g.w + 2 * g.pw < g.kw)
    fail<ShapeError>(op, "kernel ", k.str(), " is larger than the padded input ", hw(g.h + 2 * g.ph, g.w + 2 * g.pw),
                     " (input ", x_desc, ", pad ", p.str(), ")", Hint{"use a smaller kernel or a larger pad"});
  g.oh = (g.h + 2 * g.ph - g.kh) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.kw) / g.sw + 1;
  return g;
}

void check_bias(const char* op, const Tensor& b, const Tensor& x, i64 channels) {
  if (!b.defined()) return;
  check_same(op, x, "x", b, "b");
  if (b.ndim() != 1 || b.shape()[0] != channels)
    detail::fail<ShapeError>(op, "b must be (", std::to_string(channels), ",), one per output channel, got ",
                             describe(b), "; hint: pass Variable() for no bias");
}

// groups (the three products): at least 1, else a ValueError naming op.
void check_groups_positive(const char* op, i64 groups) {
  if (groups < 1)
    detail::fail<ValueError>(op, "groups must be >= 1, got ", std::to_string(groups),
                             "; hint: groups = 1 is an ordinary convolution, groups = C a depthwise one");
}

// `p` advanced by n elements of dt (a group's slice of a buffer).
void* at(void* p, DType dt, i64 n) { return static_cast<char*>(p) + n * i64(dtype_size(dt)); }

// y[n, c, :, :] += b[c]: the bias of a (n, c, h, w) result, in place.
void add_channel_bias_(Tensor& y, const Tensor& b) {
  Tensor bb = b.reshape(Shape{1, b.shape()[0], 1, 1});
  Strided sy = make_contiguous(y.shape()), sb = make_broadcast(bb.shape(), y.shape());
  backend_of(y).binary(BinaryOp::Add, y.dtype(), y.raw_data(), sy, bb.raw_data(), sb, y.raw_data(), sy);
}

// set_conv_library_path's switch (read by tensor/batch_norm.cpp too, through library_of()).
std::atomic<bool> g_library_path{true};

}  // namespace

void set_conv_library_path(bool enabled) { g_library_path.store(enabled); }
bool conv_library_path() { return g_library_path.load(); }
LibraryKernels* library_of(Backend& be) {
  return g_library_path.load(std::memory_order_relaxed) ? be.library() : nullptr;
}

// --- im2col / col2im ---------------------------------------------------------------------
void check_window(const char* op, const Tensor& x, Pair k, Pair s, Pair p) {
  check_float4d(op, "x", x, "(N, C, H, W)");
  geometry(op, x.shape(), describe(x), k, s, p);
}

Tensor im2col(const char* op, const Tensor& x, Pair k, Pair s, Pair p) {
  check_float4d(op, "x", x, "(N, C, H, W)");
  ConvGeom g = geometry(op, x.shape(), describe(x), k, s, p);
  if (is_half(x.dtype())) return half_result(im2col(op, wide(x), k, s, p), x.dtype());
  Tensor col = Tensor::empty(Shape{g.n, g.c, g.kh, g.kw, g.oh, g.ow}, x.dtype(), x.device());
  if (col.size()) backend_of(x).im2col(x.dtype(), x.raw_data(), col.raw_data(), g);
  return col;
}

Tensor col2im(const char* op, const Tensor& col, const Shape& x_shape, Pair s, Pair p) {
  check_defined(op, col);
  if (col.ndim() != 6 || x_shape.size() != 4)
    detail::fail<ShapeError>(op, "expected col (N, C, KH, KW, OH, OW) and a 4-d input shape, got col ", describe(col),
                             " and input shape ", x_shape.str(),
                             "; hint: col2im(col, input_shape, kernel_size, stride, pad)");
  if (!is_floating(col.dtype()))
    detail::fail<DtypeError>(op, "col must be a floating dtype, got ", describe(col));
  if (is_half(col.dtype())) return half_result(col2im(op, wide(col), x_shape, s, p), col.dtype());
  const Shape& cs = col.shape();
  ConvGeom g = geometry(op, x_shape, "shape " + x_shape.str(), Pair(static_cast<int>(cs[2]), static_cast<int>(cs[3])),
                        s, p);
  if (cs[0] != g.n || cs[1] != g.c || cs[4] != g.oh || cs[5] != g.ow)
    detail::fail<ShapeError>(op, "col ", describe(col), " does not fit input shape ", x_shape.str(), " with stride ",
                             s.str(), " and pad ", p.str(), ": expected (", std::to_string(g.n), ", ",
                             std::to_string(g.c), ", ", std::to_string(g.kh), ", ", std::to_string(g.kw), ", ",
                             std::to_string(g.oh), ", ", std::to_string(g.ow), "); hint: use the im2col arguments");
  Tensor x = Tensor::empty(x_shape, col.dtype(), col.device());
  if (x.size() == 0) return x;
  if (col.size() == 0) {
    x.fill_(0);
    return x;
  }
  backend_of(col).col2im(col.dtype(), col.raw_data(), x.raw_data(), g);
  return x;
}

// --- the three convolution products ----------------------------------------------------------
Tensor conv2d_forward(const char* op, const Tensor& x, const Tensor& W, const Tensor& b, Pair s, Pair p,
                      DType compute, std::int64_t groups) {
  check_float4d(op, "x", x, "(N, C, H, W)");
  check_float4d(op, "W", W, groups == 1 ? "(out_channels, in_channels, KH, KW)"
                                        : "(out_channels, in_channels / groups, KH, KW)");
  check_same(op, x, "x", W, "W");
  check_groups_positive(op, groups);
  const Shape& ws = W.shape();
  const i64 C = x.shape()[1];
  if (groups == 1 && ws[1] != C)
    detail::fail<ShapeError>(op, "x ", describe(x), " has ", std::to_string(C), " channels but W ", describe(W),
                             " expects ", std::to_string(ws[1]), "; hint: W is (out_channels, in_channels, KH, KW)");
  // (groups beyond the channels divides none of them, 0 channels aside: refused too)
  if (groups > std::max<i64>(C, 1) || C % groups != 0 || ws[0] % groups != 0)
    detail::fail<ShapeError>(op, "groups ", std::to_string(groups), " must divide the ", std::to_string(C),
                             " input channels of x ", describe(x), " and the ", std::to_string(ws[0]),
                             " output channels of W ", describe(W),
                             "; hint: choose groups among their common divisors");
  if (ws[1] != C / groups)
    detail::fail<ShapeError>(op, "x ", describe(x), " has ", std::to_string(C), " channels, ",
                             std::to_string(C / groups), " per group with groups ", std::to_string(groups),
                             ", but W ", describe(W), " expects ", std::to_string(ws[1]),
                             " per group; hint: W is (out_channels, in_channels / groups, KH, KW)");
  check_bias(op, b, x, ws[0]);
  ConvGeom g = geometry(op, x.shape(), describe(x), Pair(static_cast<int>(ws[2]), static_cast<int>(ws[3])), s, p);
  g.groups = groups;
  if (is_half(x.dtype()))
    return half_result(conv2d_forward(op, wide(x), wide(W), wide(b), s, p, x.dtype(), groups), x.dtype());
  const bool low = lowp(x.dtype(), compute);
  if (low) g.compute = compute;
  g.oc = ws[0];
  Tensor y = Tensor::empty(Shape{g.n, g.oc, g.oh, g.ow}, x.dtype(), x.device());
  if (y.size() == 0) return y;
  Backend& be = backend_of(x);
  DType dt = x.dtype();
  i64 ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
  // One group's slice: ckg = c/G kh kw rows of col, ocg = oc/G filters.
  const i64 ckg = ckk / groups, ocg = g.oc / groups;
  if (ckk == 0) {
    y.fill_(0);
    if (b.defined()) add_channel_bias_(y, b);
    return y;
  }
  const void* bp = b.defined() ? b.raw_data() : nullptr;
  LibraryKernels* lib = library_of(be);
  if (lib && lib->conv2d_forward(dt, x.raw_data(), W.raw_data(), bp, y.raw_data(), g)) return y;
  if (low) return conv2d_forward(op, rounded(x, compute), rounded(W, compute), b, s, p, DType::Float32, groups);
  Tensor col = Tensor::empty(Shape{g.n, ckk, ohw}, dt, x.device());
  be.im2col(dt, x.raw_data(), col.raw_data(), g);
  double beta = 0.0;
  if (b.defined()) {  // y starts as the bias, the GEMM adds onto it
    y.fill_(0);
    add_channel_bias_(y, b);
    beta = 1.0;
  }
  // Group j: y[i] rows j ocg.. (ocg, oh ow) = W rows j ocg.. (ocg, ckg) @ col[i] rows j ckg.. (ckg, oh ow)
  for (i64 j = 0; j < groups; ++j)
    be.gemm(dt, false, false, ocg, ohw, ckg, 1.0, at(W.raw_data(), dt, j * ocg * ckg), ckg, 0,
            at(col.raw_data(), dt, j * ckg * ohw), ohw, ckk * ohw, beta, at(y.raw_data(), dt, j * ocg * ohw), ohw,
            g.oc * ohw, g.n);
  return y;
}

Tensor conv2d_backward_data(const char* op, const Tensor& gy, const Tensor& W, const Tensor& b, Pair s, Pair p,
                            Pair out, DType compute, std::int64_t groups) {
  check_float4d(op, "x", gy, "(N, C, H, W)");
  check_float4d(op, "W", W, groups == 1 ? "(in_channels, out_channels, KH, KW)"
                                        : "(in_channels, out_channels / groups, KH, KW)");
  check_same(op, gy, "x", W, "W");
  check_groups_positive(op, groups);
  const Shape& ws = W.shape();
  const Shape& ys = gy.shape();
  if (ws[0] != ys[1])
    detail::fail<ShapeError>(op, "x ", gy, " has ", ys[1], " channels but W ", W, " expects ", ws[0],
                             detail::Hint{groups == 1 ? "deconv2d's W is (in_channels, out_channels, KH, KW)"
                                                      : "deconv2d's W is (in_channels, out_channels / groups, KH, KW)"});
  if (groups > std::max<i64>(ys[1], 1) || ys[1] % groups != 0)
    detail::fail<ShapeError>(op, "groups ", std::to_string(groups), " must divide the ", std::to_string(ys[1]),
                             " input channels of x ", describe(gy), " (W ", describe(W),
                             "); hint: choose groups among the divisors of ", std::to_string(ys[1]));
  const i64 C = ws[1] * groups;  // the result's channels
  check_bias(op, b, gy, C);
  if (out.h < 1 || out.w < 1)
    detail::fail<ValueError>(op, "outsize must be positive, got ", out.str());
  Shape xs{ys[0], C, out.h, out.w};
  ConvGeom g = geometry(op, xs, "of output size " + out.str(), Pair(static_cast<int>(ws[2]), static_cast<int>(ws[3])),
                        s, p);
  if (g.oh != ys[2] || g.ow != ys[3])
    detail::fail<ShapeError>(op, "outsize ", out.str(), " is inconsistent with x ", describe(gy), ", kernel ",
                             hw(ws[2], ws[3]), ", stride ", s.str(), " and pad ", p.str(),
                             ": a convolution of it gives ", hw(g.oh, g.ow), ", not ", hw(ys[2], ys[3]),
                             "; hint: outsize must satisfy (outsize + 2 pad - k) / stride + 1 == input size, e.g. ",
                             hw(s.h * (ys[2] - 1) + ws[2] - 2 * p.h, s.w * (ys[3] - 1) + ws[3] - 2 * p.w),
                             " (the default)");
  g.groups = groups;
  if (is_half(gy.dtype()))
    return half_result(conv2d_backward_data(op, wide(gy), wide(W), wide(b), s, p, out, gy.dtype(), groups),
                       gy.dtype());
  const bool low = lowp(gy.dtype(), compute);
  if (low) g.compute = compute;
  g.oc = ws[0];
  Tensor gx = Tensor::empty(xs, gy.dtype(), gy.device());
  if (gx.size() == 0) return gx;
  Backend& be = backend_of(gy);
  DType dt = gy.dtype();
  i64 ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
  const i64 ckg = ckk / groups, ocg = g.oc / groups;
  if (g.oc == 0 || ohw == 0) {
    gx.fill_(0);
  } else if (LibraryKernels* lib = library_of(be);
             !lib || !lib->conv2d_backward_data(dt, W.raw_data(), gy.raw_data(), gx.raw_data(), g)) {
    if (low) return conv2d_backward_data(op, rounded(gy, compute), rounded(W, compute), b, s, p, out, DType::Float32,
                                         groups);
    Tensor gcol = Tensor::empty(Shape{g.n, ckk, ohw}, dt, gy.device());
    // Group j: gcol[i] rows j ckg.. (ckg, oh ow) = (W rows j ocg..)^T (ckg, ocg) @ gy[i] rows j ocg..
    for (i64 j = 0; j < groups; ++j)
      be.gemm(dt, true, false, ckg, ohw, ocg, 1.0, at(W.raw_data(), dt, j * ocg * ckg), ckg, 0,
              at(gy.raw_data(), dt, j * ocg * ohw), ohw, g.oc * ohw, 0.0, at(gcol.raw_data(), dt, j * ckg * ohw), ohw,
              ckk * ohw, g.n);
    be.col2im(dt, gcol.raw_data(), gx.raw_data(), g);
  }
  if (b.defined()) add_channel_bias_(gx, b);
  return gx;
}

Tensor conv2d_backward_filter(const char* op, const Tensor& x, const Tensor& gy, Pair k, Pair s, Pair p,
                              DType compute, std::int64_t groups) {
  check_float4d(op, "x", x, "(N, C, H, W)");
  check_float4d(op, "gy", gy, "(N, OC, OH, OW)");
  check_same(op, x, "x", gy, "gy");
  check_groups_positive(op, groups);
  ConvGeom g = geometry(op, x.shape(), describe(x), k, s, p);
  const Shape& ys = gy.shape();
  if (ys[0] != g.n || ys[2] != g.oh || ys[3] != g.ow)
    detail::fail<ShapeError>(op, "gy ", describe(gy), " does not fit x ", describe(x), " with kernel ", k.str(),
                             ", stride ", s.str(), " and pad ", p.str(), " (output ", hw(g.oh, g.ow),
                             "); hint: gy is the gradient of the convolution's output");
  if (groups > std::max<i64>(g.c, 1) || g.c % groups != 0 || ys[1] % groups != 0)
    detail::fail<ShapeError>(op, "groups ", std::to_string(groups), " must divide the channels of x ", describe(x),
                             " and of gy ", describe(gy), "; hint: gy is the gradient of the output");
  g.groups = groups;
  if (is_half(x.dtype()))
    return half_result(conv2d_backward_filter(op, wide(x), wide(gy), k, s, p, x.dtype(), groups), x.dtype());
  const bool low = lowp(x.dtype(), compute);
  if (low) g.compute = compute;
  g.oc = ys[1];
  Tensor gW = Tensor::empty(Shape{g.oc, g.c / groups, g.kh, g.kw}, x.dtype(), x.device());
  if (gW.size() == 0) return gW;
  Backend& be = backend_of(x);
  DType dt = x.dtype();
  i64 ckk = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
  const i64 ckg = ckk / groups, ocg = g.oc / groups;
  if (g.n == 0 || ohw == 0) {
    gW.fill_(0);
    return gW;
  }
  LibraryKernels* lib = library_of(be);
  if (lib && lib->conv2d_backward_filter(dt, x.raw_data(), gy.raw_data(), gW.raw_data(), g)) return gW;
  if (low)
    return conv2d_backward_filter(op, rounded(x, compute), rounded(gy, compute), k, s, p, DType::Float32, groups);
  Tensor col = Tensor::empty(Shape{g.n, ckk, ohw}, dt, x.device());
  be.im2col(dt, x.raw_data(), col.raw_data(), g);
  // Group j: gW rows j ocg.. (ocg, ckg) = sum_i gy[i] rows j ocg.. @ (col[i] rows j ckg..)^T
  const i64 nw = g.oc * ckg;  // gW's elements
  if (g.n == 1) {
    for (i64 j = 0; j < groups; ++j)
      be.gemm(dt, false, true, ocg, ckg, ohw, 1.0, at(gy.raw_data(), dt, j * ocg * ohw), ohw, 0,
              at(col.raw_data(), dt, j * ckg * ohw), ohw, 0, 0.0, at(gW.raw_data(), dt, j * ocg * ckg), ckg, 0, 1);
    return gW;
  }
  // One partial gW per image (the batch's GEMMs run in parallel), then their sum.
  Tensor part = Tensor::empty(Shape{g.n, nw}, dt, x.device());
  for (i64 j = 0; j < groups; ++j)
    be.gemm(dt, false, true, ocg, ckg, ohw, 1.0, at(gy.raw_data(), dt, j * ocg * ohw), ohw, g.oc * ohw,
            at(col.raw_data(), dt, j * ckg * ohw), ohw, ckk * ohw, 0.0, at(part.raw_data(), dt, j * ocg * ckg), ckg,
            nw, g.n);
  be.reduce(ReduceOp::Sum, dt, part.raw_data(), gW.raw_data(), 1, g.n, nw);
  return gW;
}

// --- max pooling ---------------------------------------------------------------------------
std::pair<Tensor, Tensor> max_pool(const char* op, const Tensor& x, Pair k, Pair s, Pair p) {
  check_float4d(op, "x", x, "(N, C, H, W)");
  ConvGeom g = geometry(op, x.shape(), describe(x), k, s, p);
  if (is_half(x.dtype())) {  // a max is one of the values: exact in the dtype
    auto [y, idx] = max_pool(op, wide(x), k, s, p);
    return {half_result(y, x.dtype()), idx};
  }
  Shape ys{g.n, g.c, g.oh, g.ow};
  Tensor y = Tensor::empty(ys, x.dtype(), x.device());
  Tensor idx = Tensor::empty(ys, int64, x.device());
  if (y.size())
    backend_of(x).max_pool_forward(x.dtype(), x.raw_data(), y.raw_data(), static_cast<std::int64_t*>(idx.raw_data()),
                                   g);
  return {y, idx};
}

Tensor max_pool_backward(const Tensor& gy, const Tensor& idx, const Shape& x_shape, Pair k, Pair s, Pair p) {
  check_same_device("pooling", gy, idx);
  ConvGeom g = geometry("pooling", x_shape, "shape " + x_shape.str(), k, s, p);
  if (gy.shape() != idx.shape() || gy.shape() != Shape{g.n, g.c, g.oh, g.ow} || idx.dtype() != int64)
    detail::fail<ShapeError>("pooling", "the gradient ", describe(gy), " and the indexes ", describe(idx),
                             " do not fit the input shape ", x_shape.str(), "; hint: an internal call went wrong");
  if (is_half(gy.dtype())) return half_result(max_pool_backward(wide(gy), idx, x_shape, k, s, p), gy.dtype());
  Tensor gx = Tensor::empty(x_shape, gy.dtype(), gy.device());
  if (gx.size() == 0) return gx;
  if (gy.size() == 0) {
    gx.fill_(0);
    return gx;
  }
  backend_of(gy).max_pool_backward(gy.dtype(), gy.raw_data(), static_cast<const std::int64_t*>(idx.raw_data()),
                                   gx.raw_data(), g);
  return gx;
}

Tensor max_pool_gather(const Tensor& x, const Tensor& idx, Pair k, Pair s, Pair p) {
  check_float4d("pooling", "x", x, "(N, C, H, W)");
  check_same_device("pooling", x, idx);
  ConvGeom g = geometry("pooling", x.shape(), describe(x), k, s, p);
  Shape ys{g.n, g.c, g.oh, g.ow};
  if (idx.shape() != ys || idx.dtype() != int64)
    detail::fail<ShapeError>("pooling", "the indexes ", describe(idx), " do not fit x ", describe(x),
                             "; hint: an internal call went wrong");
  if (is_half(x.dtype())) return half_result(max_pool_gather(wide(x), idx, k, s, p), x.dtype());
  Tensor y = Tensor::empty(ys, x.dtype(), x.device());
  if (y.size())
    backend_of(x).max_pool_gather(x.dtype(), x.raw_data(), static_cast<const std::int64_t*>(idx.raw_data()),
                                  y.raw_data(), g);
  return y;
}

// --- max pooling through the backend's library, average pooling ------------------------------
namespace {
// gy must be (n, c, oh, ow) of x's geometry, y too when given; one dtype, one device.
void check_pool_grad(const char* op, const Tensor& gy, const Tensor& x, const Tensor& y, const ConvGeom& g) {
  check_same_device(op, gy, x);
  check_same_device(op, gy, y);
  Shape ys{g.n, g.c, g.oh, g.ow};
  if (gy.shape() != ys || y.shape() != ys || gy.dtype() != x.dtype() || y.dtype() != x.dtype())
    detail::fail<ShapeError>(op, "the gradient ", describe(gy), " and the output ", describe(y),
                             " do not fit the input ", describe(x), "; hint: an internal call went wrong");
}
}  // namespace

std::pair<Tensor, Tensor> max_pool_library_first(const char* op, const Tensor& x, Pair k, Pair s, Pair p) {
  check_float4d(op, "x", x, "(N, C, H, W)");
  ConvGeom g = geometry(op, x.shape(), describe(x), k, s, p);
  if (is_half(x.dtype())) {
    auto [y, idx] = max_pool_library_first(op, wide(x), k, s, p);
    return {half_result(y, x.dtype()), idx};
  }
  Shape ys{g.n, g.c, g.oh, g.ow};
  Tensor y = Tensor::empty(ys, x.dtype(), x.device());
  if (y.size() == 0) return {y, Tensor::empty(ys, int64, x.device())};
  Backend& be = backend_of(x);
  LibraryKernels* lib = library_of(be);
  if (lib && lib->max_pool_forward(x.dtype(), x.raw_data(), y.raw_data(), g)) return {y, Tensor()};
  Tensor idx = Tensor::empty(ys, int64, x.device());
  be.max_pool_forward(x.dtype(), x.raw_data(), y.raw_data(), static_cast<std::int64_t*>(idx.raw_data()), g);
  return {y, idx};
}

Tensor library_max_pool_backward(const Tensor& gy, const Tensor& x, const Tensor& y, Pair k, Pair s, Pair p) {
  ConvGeom g = geometry("pooling", x.shape(), describe(x), k, s, p);
  check_pool_grad("pooling", gy, x, y, g);
  LibraryKernels* lib = library_of(backend_of(gy));
  if (!lib || gy.size() == 0) return Tensor();
  if (is_half(gy.dtype())) {  // y, each window's max, is exact in float32 too: the library finds it in x
    Tensor gx = library_max_pool_backward(wide(gy), wide(x), wide(y), k, s, p);
    return gx.defined() ? half_result(gx, gy.dtype()) : gx;
  }
  Tensor gx = Tensor::empty(x.shape(), gy.dtype(), gy.device());
  if (!lib->max_pool_backward(gy.dtype(), x.raw_data(), y.raw_data(), gy.raw_data(), gx.raw_data(), g))
    return Tensor();
  return gx;
}

Tensor avg_pool(const char* op, const Tensor& x, Pair k, Pair s, Pair p) {
  check_float4d(op, "x", x, "(N, C, H, W)");
  ConvGeom g = geometry(op, x.shape(), describe(x), k, s, p);
  if (is_half(x.dtype())) return half_result(avg_pool(op, wide(x), k, s, p), x.dtype());
  Tensor y = Tensor::empty(Shape{g.n, g.c, g.oh, g.ow}, x.dtype(), x.device());
  if (y.size() == 0) return y;
  Backend& be = backend_of(x);
  LibraryKernels* lib = library_of(be);
  if (!(lib && lib->avg_pool_forward(x.dtype(), x.raw_data(), y.raw_data(), g)))
    be.avg_pool_forward(x.dtype(), x.raw_data(), y.raw_data(), g);
  return y;
}

Tensor avg_pool_backward(const Tensor& gy, const Tensor& x, const Tensor& y, Pair k, Pair s, Pair p) {
  ConvGeom g = geometry("average_pooling", x.shape(), describe(x), k, s, p);
  check_pool_grad("average_pooling", gy, x, y, g);
  if (is_half(gy.dtype())) return half_result(avg_pool_backward(wide(gy), wide(x), wide(y), k, s, p), gy.dtype());
  Tensor gx = Tensor::empty(x.shape(), gy.dtype(), gy.device());
  if (gx.size() == 0) return gx;
  if (gy.size() == 0) {
    gx.fill_(0);
    return gx;
  }
  Backend& be = backend_of(gy);
  LibraryKernels* lib = library_of(be);
  if (!(lib && lib->avg_pool_backward(gy.dtype(), x.raw_data(), y.raw_data(), gy.raw_data(), gx.raw_data(), g)))
    be.avg_pool_backward(gy.dtype(), x.raw_data(), y.raw_data(), gy.raw_data(), gx.raw_data(), g);
  return gx;
}

}  // namespace dezero::detail
