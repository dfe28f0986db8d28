// dezero/tensor/batch_norm.cpp - validation + dispatch of tensor/fused.hpp's batch
// normalisation: x (N, C) or NCHW (N, C, H, W) viewed as (n, c, hw), one backend call
// for the forward, one for the backward: the backend's library first
// (LibraryKernels::batch_norm_forward / _backward: cuDNN on a GPU) while
// set_conv_library_path is on, else its own kernels (Backend::batch_norm_forward /
// _backward: cpu/batch_norm.cpp, gpu/batch_norm.cu). F::batch_norm
// (functions/normalization.cpp) checks the user's operands and calls these when
// batch_norm_fusable says they take the case.
#include <string>

#include "dezero/tensor/batch_norm.hpp"
#include "dezero/tensor/conv.hpp"  // library_of()
#include "dezero/tensor/strided.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::detail {

namespace {
struct Nchw {
  std::int64_t n, c, hw;
};
Nchw nchw(const Tensor& x) {
  const Shape& s = x.shape();
  return {s[0], s[1], x.ndim() == 4 ? s[2] * s[3] : 1};
}
void check_operand(const char* what, const Tensor& x, const Tensor& p, const Shape& want) {
  check_defined("batch_norm", p);
  if (p.shape() != want || p.dtype() != x.dtype() || !(p.device() == x.device()))
    fail<ShapeError>("batch_norm", what, " ", p, " does not match x ", x,
                     Hint{"pass arrays of x's shape (or (C,) for the per-channel ones), dtype and device"});
}
}  // namespace

bool batch_norm_fusable(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                        const Tensor& running_var) {
  // 16-bit x: the composite route, each op computed in float32 and stored in the dtype.
  if (!x.defined() || !is_floating(x.dtype()) || is_half(x.dtype()) || (x.ndim() != 2 && x.ndim() != 4)) return false;
  const Shape c{x.shape()[1]};
  for (const Tensor* p : {&gamma, &beta, &running_mean, &running_var})
    if (!p->defined() || p->shape() != c || p->dtype() != x.dtype() || !(p->device() == x.device())) return false;
  return true;
}

BatchNormForward batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                                    Tensor& running_var, double decay, double eps, bool train) {
  if (!batch_norm_fusable(x, gamma, beta, running_mean, running_var))
    detail::fail<ValueError>("batch_norm", "the fused kernel does not take x ", describe(x), " with gamma ",
                             describe(gamma), "; hint: check batch_norm_fusable first");
  const Nchw g = nchw(x);
  BatchNormForward r;
  r.y = Tensor::empty(x.shape(), x.dtype(), x.device());
  r.mean = Tensor::empty(Shape{g.c}, x.dtype(), x.device());
  r.inv_std = Tensor::empty(Shape{g.c}, x.dtype(), x.device());
  if (g.c == 0) return r;
  Backend& be = backend_of(x);
  LibraryKernels* lib = library_of(be);
  if (lib && lib->batch_norm_forward(x.dtype(), x.raw_data(), gamma.raw_data(), beta.raw_data(), r.y.raw_data(),
                                     r.mean.raw_data(), r.inv_std.raw_data(), running_mean.raw_data(),
                                     running_var.raw_data(), g.n, g.c, g.hw, decay, eps, train))
    return r;
  be.batch_norm_forward(x.dtype(), x.raw_data(), gamma.raw_data(), beta.raw_data(), r.y.raw_data(),
                        r.mean.raw_data(), r.inv_std.raw_data(), running_mean.raw_data(), running_var.raw_data(), g.n,
                        g.c, g.hw, decay, eps, train);
  return r;
}

BatchNormBackward batch_norm_backward(const Tensor& x, const Tensor& gy, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& inv_std, bool train, bool want_gx, double eps) {
  check_defined("batch_norm", x);
  const Shape c{x.ndim() >= 2 ? x.shape()[1] : 0};
  check_operand("gy", x, gy, x.shape());
  check_operand("gamma", x, gamma, c);
  check_operand("mean", x, mean, c);
  check_operand("inv_std", x, inv_std, c);
  const Nchw g = nchw(x);
  BatchNormBackward r;
  if (want_gx) r.gx = Tensor::empty(x.shape(), x.dtype(), x.device());
  r.ggamma = Tensor::empty(c, x.dtype(), x.device());
  r.gbeta = Tensor::empty(c, x.dtype(), x.device());
  if (g.c == 0) return r;
  Backend& be = backend_of(x);
  void* gx = want_gx ? r.gx.raw_data() : nullptr;
  LibraryKernels* lib = library_of(be);
  if (lib && lib->batch_norm_backward(x.dtype(), x.raw_data(), gy.raw_data(), gamma.raw_data(), mean.raw_data(),
                                      inv_std.raw_data(), gx, r.ggamma.raw_data(), r.gbeta.raw_data(), g.n, g.c,
                                      g.hw, eps, train))
    return r;
  be.batch_norm_backward(x.dtype(), x.raw_data(), gy.raw_data(), gamma.raw_data(), mean.raw_data(),
                         inv_std.raw_data(), gx, r.ggamma.raw_data(), r.gbeta.raw_data(), g.n, g.c, g.hw, train);
  return r;
}

}  // namespace dezero::detail
