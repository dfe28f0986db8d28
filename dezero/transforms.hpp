/// \file
/// The namespace dezero::transforms: what a Dataset applies to each sample
/// (DeZero's transforms.py: Compose, Normalize, Flatten, AsType, ToFloat, ToInt).
///
/// A Transform is a small value (a shared handle) that maps one sample to one sample.
/// The built-in ones are also "batchable": they are element-wise or a reshape, so
/// apply_batch(xs) on a stacked batch xs: (N, ...) gives exactly the stack of the
/// per-sample results in one tensor operation. Datasets use that to transform all
/// their data once at load time and DataLoader to build a batch with one gather.
/// Any callable Tensor(const Tensor&) converts to a (per-sample, not batchable)
/// Transform. The PIL transforms (Convert, Resize, CenterCrop, ToArray, ToPIL) are
/// not part of dezero-cpp.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "dezero/tensor.hpp"

/// dezero::transforms: what a Dataset applies to each sample (DeZero's dezero.transforms).
///
/// A Transform maps one sample to one sample; the built-in ones (Compose of batchable
/// transforms, Normalize, Flatten, AsType, ToFloat, ToInt) are batchable: apply_batch()
/// transforms a whole stacked batch in one tensor operation.
namespace dezero::transforms {

/// A function of one sample, as a small value (a shared handle; DeZero's transform callables).
///
/// The default-constructed Transform is the identity (DeZero's transform=None). Any
/// callable Tensor(const Tensor&) converts to a per-sample (not batchable) Transform:
///
/// ```cpp
///   datasets::Spiral train_set(true, [](const Tensor& x) { return x * 2.0; });
///   transforms::Transform t = transforms::Compose({transforms::Flatten(), transforms::ToFloat()});
///   Tensor y = t(x);
/// ```
class Transform {
 public:
  /// The work behind a Transform. Subclass it (and Transform) for a custom batchable transform.
  struct Impl {
    virtual ~Impl() = default;
    virtual Tensor apply(const Tensor& x) const = 0;  ///< Transforms one sample.
    /// True when apply_batch() is one whole-batch operation (the default: false).
    virtual bool batchable() const { return false; }
    /// xs: (N, ...sample): the stacked per-sample results. The default loops over samples.
    /// ShapeError when xs is 0-d.
    virtual Tensor apply_batch(const Tensor& xs) const;
  };

  Transform() = default;  ///< The identity (DeZero's transform=None).
  /// Any function of one sample: Transform([](const Tensor& x) { return x * 2.0; }).
  template <class Fn,
            class = std::enable_if_t<!std::is_base_of_v<Transform, std::decay_t<Fn>> &&
                                     std::is_invocable_r_v<Tensor, const Fn&, const Tensor&>>>
  Transform(Fn fn)  // NOLINT implicit
      : impl_(std::make_shared<FunctionImpl<std::decay_t<Fn>>>(std::move(fn))) {}

  /// Transforms one sample (the identity returns x itself).
  Tensor operator()(const Tensor& x) const { return impl_ ? impl_->apply(x) : x; }
  /// xs: (N, ...): the per-sample results stacked along a new axis 0.
  Tensor apply_batch(const Tensor& xs) const;
  /// True when apply_batch is one whole-batch operation (the identity is batchable).
  bool batchable() const { return !impl_ || impl_->batchable(); }
  bool is_identity() const { return !impl_; }  ///< True for the identity (a default-constructed Transform).

 protected:
  /// For subclasses: a Transform running `impl` (nullptr: the identity).
  explicit Transform(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;  ///< The work; null for the identity.

 private:
  template <class Fn>
  struct FunctionImpl : Impl {
    explicit FunctionImpl(Fn f) : fn(std::move(f)) {}
    Tensor apply(const Tensor& x) const override { return fn(x); }
    Fn fn;
  };
};

/// Applies the transforms in order; empty: the identity. Batchable when all of them are.
class Compose : public Transform {
 public:
  /// The composition of `transforms`, applied first to last (identities are dropped).
  Compose(std::vector<Transform> transforms = {});  // NOLINT implicit
};

/// (x - mean) / std, a batchable transform (DeZero's Normalize).
///
/// (x - mean) / std. Scalar mean/std keep a floating x's dtype (float32 stays float32);
/// an integer x becomes float64 (NumPy's promotion). Sequences of length C are reshaped
/// to (C, 1, ..., 1) along the sample's first axis (per-channel normalisation of a
/// (C, H, W) image); they are applied in x's floating dtype.
class Normalize : public Transform {
 public:
  /// (x - mean) / std with scalars (the defaults: the identity's values, as a Normalize).
  Normalize(double mean = 0.0, double std = 1.0);  // NOLINT implicit
  /// Per-channel (x - mean[c]) / std[c]; sequences of length 1 act as scalars. ValueError
  /// when one of them is empty.
  Normalize(std::vector<double> mean, std::vector<double> std);
};

/// x.flatten(): a sample becomes 1-D; a batch (N, ...) becomes (N, -1).
class Flatten : public Transform {
 public:
  Flatten();  ///< The flattening transform (batchable).
};

/// x.astype(dtype).
class AsType : public Transform {
 public:
  explicit AsType(DType dtype = float32);  ///< Casts every sample to `dtype`.
};
/// x.astype(float32) by default (DeZero's ToFloat).
class ToFloat : public AsType {
 public:
  explicit ToFloat(DType dtype = float32) : AsType(dtype) {}  ///< Casts every sample to `dtype` (float32).
};
/// x.astype(int64) by default (DeZero's ToInt).
class ToInt : public AsType {
 public:
  /// Casts every sample to `dtype` (int64: Python's int is int64).
  explicit ToInt(DType dtype = int64) : AsType(dtype) {}
};

}  // namespace dezero::transforms
