// dezero/layers/linear.cpp - L::Linear (step 44): y = x W + b, W drawn lazily from x.shape[1].
#include "dezero/layers/linear.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "dezero/functions.hpp"
#include "dezero/tensor/checks.hpp"

namespace dezero::L {

// --- Linear --------------------------------------------------------------------------------------
Linear::Linear(std::int64_t out_size_, bool nobias, DType dtype_, std::int64_t in_size_, random::Generator gen_)
    : in_size(in_size_), out_size(out_size_), dtype(dtype_), gen(std::move(gen_)) {
  if (out_size <= 0) detail::fail<ValueError>("Linear", "out_size must be positive, got ", out_size);
  if (in_size < 0) detail::fail<ValueError>("Linear", "in_size must be positive (or 0 for lazy), got ", in_size);
  if (!is_floating(dtype)) detail::fail<DtypeError>("Linear", "dtype must be float32 or float64, got ", dtype);
  W = register_parameter("W", Parameter(Tensor(), "W"));
  if (in_size > 0) init_W(Device::cpu());
  if (!nobias) b = register_parameter("b", Parameter(zeros({out_size}, dtype), "b"));
}

Linear::Linear(std::int64_t out_size_, const LinearOptions& o)
    : Linear(out_size_, o.nobias, o.dtype, o.in_size, o.gen) {}

void Linear::init_W(Device device) {
  // DeZero: randn(I, O).astype(dtype) * sqrt(1 / I); drawn on the host so that a
  // seed gives the same weights on every device.
  Tensor w = gen.randn({in_size, out_size}, float64).astype(dtype) * std::sqrt(1.0 / static_cast<double>(in_size));
  W.set_data(w.to(device));
}

// x: (N, in_size) -> (N, out_size)
Variable Linear::forward(const Variable& x) {
  lazy_init([&] { return W.data().defined(); },
            [&] {
              if (x.ndim() < 2)
                detail::fail<ShapeError>("Linear", "input of shape ", x.shape(),
                                         " has no axis 1 to infer in_size from; hint: pass (N, in_size) batches");
              in_size = x.shape()[1];
              init_W(x.device());
            });
  return F::linear(x, W, b);
}

}  // namespace dezero::L
