// dezero/functions/conv3d.cpp - F::conv3d (functions/conv.hpp): the 3-d convolution ONNX's Conv
// has, built from conv2d so that it is differentiable to any order and runs wherever conv2d runs.
//
// x (N, C, D, H, W) padded by `pad` (F::pad, zeros), W (OC, C/G, KD, KH, KW), stride (sd, sh, sw):
// for each kernel depth kd the depth slices kd, kd + sd, ..., kd + (OD - 1) sd of x, moved into the
// batch axis ((N OD, C, H, W)), are convolved in 2-d with W[:, :, kd] (stride (sh, sw), groups G),
// and the KD results are summed: (N OD, OC, OH, OW) -> (N, OC, OD, OH, OW). Then the bias.

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::F {

Variable conv3d(const Variable& x, const Variable& W, const Variable& b, Triple stride, Triple pad,
                std::int64_t groups) {
  const char* op = "conv3d";
  using detail::require;
  const Tensor& xd = x.defined_data(op);
  const Tensor& wd = W.defined_data(op);
  require<ShapeError>(xd.ndim() == 5, op, "x must be 5-d (N, C, D, H, W), got ", xd);
  require<ShapeError>(wd.ndim() == 5, op, "W must be 5-d (OC, C/groups, KD, KH, KW), got ", wd);
  require<DtypeError>(is_floating(xd.dtype()) && xd.dtype() == wd.dtype(), op, "x ", xd, " and W ", wd,
                      " must be of one float dtype");
  require<ValueError>(stride.d >= 1 && stride.h >= 1 && stride.w >= 1, op, "stride ", stride,
                      " must be at least 1 on every axis");
  require<ValueError>(pad.d >= 0 && pad.h >= 0 && pad.w >= 0, op, "pad ", pad, " must not be negative");
  require<ValueError>(groups >= 1, op, "groups ", groups, " must be at least 1");
  const Shape &xs = xd.shape(), &ws = wd.shape();
  const std::int64_t N = xs[0], C = xs[1], OC = ws[0];
  require<ShapeError>(C % groups == 0 && OC % groups == 0 && ws[1] * groups == C, op, "x ", xd, " and W ", wd,
                      " do not fit groups ", groups, detail::Hint{"W is (OC, C/groups, KD, KH, KW)"});
  if (b.defined() && !(b.ndim() == 1 && b.shape()[0] == OC))
    detail::fail<ShapeError>(op, "the bias ", b.data(), " must be (", OC, ",), one per output channel");
  const std::int64_t D = xs[2] + 2 * pad.d, H = xs[3] + 2 * pad.h, Wd = xs[4] + 2 * pad.w;
  require<ShapeError>(ws[2] <= D && ws[3] <= H && ws[4] <= Wd, op, "the kernel ", wd, " is larger than x ", xd,
                      " padded by ", pad);
  const Variable xp =
      pad == Triple(0) ? x : F::pad(x, {{0, 0}, {0, 0}, {pad.d, pad.d}, {pad.h, pad.h}, {pad.w, pad.w}});
  const std::int64_t OD = (D - ws[2]) / stride.d + 1;
  Variable y;
  for (std::int64_t kd = 0; kd < ws[2]; ++kd) {
    Variable xk = F::get_item(xp, Indices{Slice(), Slice(), Slice(kd, kd + (OD - 1) * stride.d + 1, stride.d)});
    xk = F::reshape(F::transpose(xk, {0, 2, 1, 3, 4}), Shape{N * OD, C, H, Wd});
    const Variable yk = F::conv2d(xk, F::get_item(W, Indices{Slice(), Slice(), kd}), Variable(),
                                  Pair(stride.h, stride.w), 0, groups);
    y = kd == 0 ? yk : y + yk;
  }
  const Shape ys = y.shape();  // (N OD, OC, OH, OW)
  y = F::transpose(F::reshape(y, Shape{N, OD, ys[1], ys[2], ys[3]}), {0, 2, 1, 3, 4});
  if (b.defined()) y = y + F::reshape(b, Shape{1, OC, 1, 1, 1});
  return y;
}

}  // namespace dezero::F
