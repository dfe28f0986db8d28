// dezero/transforms.hpp - dezero::transforms: what a Dataset applies to each sample
// (DeZero's transforms.py: Compose, Normalize, Flatten, AsType, ToFloat, ToInt).
//
// A Transform is a small value (a shared handle) that maps one sample to one sample.
// The built-in ones are also "batchable": they are element-wise or a reshape, so
// apply_batch(xs) on a stacked batch xs: (N, ...) gives exactly the stack of the
// per-sample results in one tensor operation. Datasets use that to transform all
// their data once at load time and DataLoader to build a batch with one gather.
// Any callable Tensor(const Tensor&) converts to a (per-sample, not batchable)
// Transform. The PIL transforms (Convert, Resize, CenterCrop, ToArray, ToPIL) are
// not part of dezero-cpp.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "dezero/tensor.hpp"

namespace dezero::transforms {

class Transform {
 public:
  // The work behind a Transform. Subclass it (and Transform) for a custom batchable transform.
  struct Impl {
    virtual ~Impl() = default;
    virtual Tensor apply(const Tensor& x) const = 0;  // one sample
    virtual bool batchable() const { return false; }
    // xs: (N, ...sample): the stacked per-sample results. The default loops over samples.
    virtual Tensor apply_batch(const Tensor& xs) const;
  };

  Transform() = default;  // the identity (DeZero's transform=None)
  // Any function of one sample: Transform([](const Tensor& x) { return x * 2.0; }).
  template <class Fn,
            class = std::enable_if_t<!std::is_base_of_v<Transform, std::decay_t<Fn>> &&
                                     std::is_invocable_r_v<Tensor, const Fn&, const Tensor&>>>
  Transform(Fn fn)  // NOLINT implicit
      : impl_(std::make_shared<FunctionImpl<std::decay_t<Fn>>>(std::move(fn))) {}

  Tensor operator()(const Tensor& x) const { return impl_ ? impl_->apply(x) : x; }
  // xs: (N, ...): the per-sample results stacked along a new axis 0.
  Tensor apply_batch(const Tensor& xs) const;
  // True when apply_batch is one whole-batch operation (the identity is batchable).
  bool batchable() const { return !impl_ || impl_->batchable(); }
  bool is_identity() const { return !impl_; }

 protected:
  explicit Transform(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;

 private:
  template <class Fn>
  struct FunctionImpl : Impl {
    explicit FunctionImpl(Fn f) : fn(std::move(f)) {}
    Tensor apply(const Tensor& x) const override { return fn(x); }
    Fn fn;
  };
};

// Applies the transforms in order; empty: the identity. Batchable when all of them are.
class Compose : public Transform {
 public:
  Compose(std::vector<Transform> transforms = {});  // NOLINT implicit
};

// (x - mean) / std. Scalar mean/std keep a floating x's dtype (float32 stays float32);
// an integer x becomes float64 (NumPy's promotion). Sequences of length C are reshaped
// to (C, 1, ..., 1) along the sample's first axis (per-channel normalisation of a
// (C, H, W) image); they are applied in x's floating dtype.
class Normalize : public Transform {
 public:
  Normalize(double mean = 0.0, double std = 1.0);  // NOLINT implicit
  Normalize(std::vector<double> mean, std::vector<double> std);
};

// x.flatten(): a sample becomes 1-D; a batch (N, ...) becomes (N, -1).
class Flatten : public Transform {
 public:
  Flatten();
};

// x.astype(dtype).
class AsType : public Transform {
 public:
  explicit AsType(DType dtype = float32);
};
class ToFloat : public AsType {
 public:
  explicit ToFloat(DType dtype = float32) : AsType(dtype) {}
};
class ToInt : public AsType {
 public:
  explicit ToInt(DType dtype = int64) : AsType(dtype) {}  // Python's int is int64
};

}  // namespace dezero::transforms
