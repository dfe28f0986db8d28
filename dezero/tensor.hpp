// dezero/tensor.hpp - Tensor: an N-d array in host or device memory (DeZero's ndarray).
//
// A Tensor is a shape, a dtype and a handle to storage that several tensors may
// share (reshape is zero-copy). Element data is always contiguous and row-major,
// starting at offset() elements into the storage. This header is the "xp" level:
// NumPy-like operations without autograd. Every operation validates its operands
// here, then dispatches to the backend of the tensors' device (cpu/ or cuda/).
// Operations never mix devices: that is a DeviceError naming both.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dezero/device.hpp"
#include "dezero/dtype.hpp"
#include "dezero/error.hpp"
#include "dezero/shape.hpp"

namespace dezero {

// --- storage ---------------------------------------------------------------
// A block of memory on one device, freed (returned to that device's allocator)
// when the last tensor that uses it goes away.
// A block of device memory. Host blocks of at most kInlineBytes (scalars, the
// (1,)-(2,) float64 and (1,)-(4,) float32 vectors a graph of scalars is made of) live
// inside the Storage object itself: one allocation less per tensor (bench/
// graph_memory.cpp: 48 bytes less per graph node), 16-byte aligned instead of 64.
// The sanitizer build keeps them on the heap, so that overflows are still caught.
class Storage {
 public:
  static constexpr std::size_t kInlineBytes = 16;
  Storage(std::size_t nbytes, Device device);  // allocates
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }
  // How many Storage blocks this process has allocated so far, on any device
  // (tests use it to check that an optimizer step allocates nothing).
  static std::uint64_t allocation_count();
  // How many Storage blocks are alive now, on any device, and their bytes (step 17
  // prints them to show that a graph's memory is freed as soon as it is unreachable).
  static std::uint64_t live_count();
  static std::uint64_t live_bytes();

 private:
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
  alignas(16) unsigned char inline_[kInlineBytes];
};

class Tensor;

// --- indexing (NumPy's basic and integer-array indexing) ---------------------
// x[{0, Slice(0, 2)}] is NumPy's x[0, 0:2]; Slice() is ':'; Slice(std::nullopt, -1) is ':-1'.
struct Slice {
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;
  Slice() = default;
  Slice(std::optional<std::int64_t> start_, std::optional<std::int64_t> stop_, std::int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};
struct EllipsisType {};
inline constexpr EllipsisType Ellipsis{};  // NumPy's '...'
struct NewAxisType {};
inline constexpr NewAxisType newaxis{};    // NumPy's None / np.newaxis

class Index {
 public:
  enum class Kind { Integer, Slice, EllipsisMark, NewAxis, Array };  // EllipsisMark: dezero::Ellipsis
  Index(std::int64_t i) : kind_(Kind::Integer), integer_(i) {}  // NOLINT implicit
  Index(int i) : kind_(Kind::Integer), integer_(i) {}            // NOLINT implicit
  Index(Slice s) : kind_(Kind::Slice), slice_(s) {}              // NOLINT implicit
  Index(EllipsisType) : kind_(Kind::EllipsisMark) {}                 // NOLINT implicit
  Index(NewAxisType) : kind_(Kind::NewAxis) {}                   // NOLINT implicit
  Index(const Tensor& array);                                    // NOLINT implicit: integer array index
  Index(const Index&);
  Index& operator=(const Index&);
  ~Index();

  Kind kind() const { return kind_; }
  std::int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Tensor& array() const { return *array_; }
  std::string str() const;

 private:
  Kind kind_;
  std::int64_t integer_ = 0;
  Slice slice_;
  std::unique_ptr<Tensor> array_;
};
using Indices = std::vector<Index>;

// --- Tensor ----------------------------------------------------------------
namespace detail {
// Why an undefined Tensor (or an empty Variable) is empty, for the error that
// reports its use: the data of a missing gradient says which gradient and why.
enum class EmptyCause : std::uint8_t {
  none = 0,          // plainly empty: Tensor(), Variable()
  grad_not_kept,     // grad() of a non-leaf variable after backward() without retain_grad
  grad_not_reached,  // grad() of a leaf that no backward() reached
  grad_no_backprop,  // grad() read while backprop is off (no_grad()), so no graph led to it
};
Tensor undefined_tensor(EmptyCause cause);
EmptyCause empty_cause(const Tensor& t);
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;  // undefined: holds no storage (defined() == false)
  Tensor(std::shared_ptr<Storage> storage, std::int64_t offset, Shape shape, DType dtype);
  // A new, uninitialised tensor.
  // op names the caller in the ShapeError of a negative extent or of a shape whose
  // element or byte count does not fit in int64.
  static Tensor empty(const Shape& shape, DType dtype = float32, Device device = Device::cpu(),
                      const char* op = "empty");

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return shape_.ndim(); }
  std::int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  Device device() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(size_) * dtype_size(dtype_); }
  std::int64_t len() const;  // length of the first axis (error for 0-d)

  // Raw element pointer on the tensor's device (storage + offset). For backends
  // and for host code that checked device().is_cpu().
  void* raw_data() const;
  template <class T> T* data() const;  // checks dtype and host residency

  // Values. item<T>() needs exactly one element; both copy from the device if needed.
  template <class T> T item() const;
  template <class T> std::vector<T> to_vector() const;

  // Conversions.
  Tensor astype(DType dtype) const;             // always a new tensor
  Tensor to(Device device) const;               // same tensor when already there
  Tensor to_cpu() const { return to(Device::cpu()); }
  Tensor to_gpu(int id = 0) const { return to(Device::cuda(id)); }
  Tensor reshape(const Shape& shape) const;     // zero-copy; one extent may be -1
  Tensor copy() const;
  Tensor flatten() const;                       // 1-D copy-free view
  Tensor transpose() const;                     // reverse axes
  Tensor transpose(const std::vector<int>& axes) const;
  Tensor T() const { return transpose(); }

  // Reductions (NumPy semantics, axes may be negative). On every device max / min
  // propagate NaN and start from -inf / +inf (the max of an all -inf array is -inf);
  // argmax / argmin give the index of the first NaN when there is one.
  Tensor sum(const Axes& axes = Axes(), bool keepdims = false) const;
  Tensor mean(const Axes& axes = Axes(), bool keepdims = false) const;
  Tensor max(const Axes& axes = Axes(), bool keepdims = false) const;
  Tensor min(const Axes& axes = Axes(), bool keepdims = false) const;
  Tensor argmax(std::optional<int> axis = std::nullopt) const;  // int64 result
  Tensor argmin(std::optional<int> axis = std::nullopt) const;

  // Indexing: NumPy's x[...]; integer arrays follow NumPy's advanced indexing. An
  // out-of-range index is an IndexError on every device (see get_item below).
  Tensor operator[](const Index& index) const;
  Tensor operator[](const Indices& indices) const;

  // In-place arithmetic on this tensor's storage (broadcasting the right side).
  Tensor& operator+=(const Tensor& o);
  Tensor& operator-=(const Tensor& o);
  Tensor& operator*=(const Tensor& o);
  Tensor& operator/=(const Tensor& o);
  Tensor& operator+=(double s);
  Tensor& operator-=(double s);
  Tensor& operator*=(double s);
  Tensor& operator/=(double s);
  void fill_(double value);

  // Storage handle (shared by reshaped views); is_same_storage tells aliasing.
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  std::int64_t offset() const { return offset_; }
  bool is_same(const Tensor& o) const { return storage_ == o.storage_ && offset_ == o.offset_; }

  std::string str() const;   // NumPy's str(array)
  std::string repr() const;  // NumPy's repr: array([...], dtype=float32)

 private:
  std::shared_ptr<Storage> storage_;
  std::int64_t offset_ = 0;  // in elements
  Shape shape_;
  std::int64_t size_ = 0;
  DType dtype_ = float32;
  detail::EmptyCause empty_cause_ = detail::EmptyCause::none;  // only meaningful while undefined
  friend Tensor detail::undefined_tensor(detail::EmptyCause cause);
  friend detail::EmptyCause detail::empty_cause(const Tensor& t);
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// --- creation ----------------------------------------------------------------
// Defaults follow NumPy: floating literals -> float64, integer literals -> int64.
Tensor array(double value, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
Tensor array(std::int64_t value, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
Tensor array(int value, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
Tensor array(std::initializer_list<std::initializer_list<double>> values, std::optional<DType> dtype = std::nullopt,
             Device device = Device::cpu());
Tensor array(std::initializer_list<std::initializer_list<int>> values, std::optional<DType> dtype = std::nullopt,
             Device device = Device::cpu());
Tensor array(std::initializer_list<std::initializer_list<std::initializer_list<double>>> values,
             std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
template <class T>
Tensor array(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype = std::nullopt,
             Device device = Device::cpu());
template <class T>
Tensor array(const std::vector<T>& values, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu()) {
  return array(values, Shape{static_cast<std::int64_t>(values.size())}, dtype, device);
}
// 1-D from a braced list: array({1.0, 2.0}) is float64, array({1, 2}) int64. A template,
// so that array({{1.0}, {2.0}}) (a column) picks the 2-D overload unambiguously.
template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
Tensor array(std::initializer_list<T> values, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu()) {
  using E = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;
  std::vector<E> v(values.begin(), values.end());
  return array(v, Shape{static_cast<std::int64_t>(v.size())}, dtype, device);
}
// From raw host memory of `src_dtype` (copied).
Tensor from_blob(const void* data, const Shape& shape, DType src_dtype, std::optional<DType> dtype = std::nullopt,
                 Device device = Device::cpu());

Tensor zeros(const Shape& shape, DType dtype = float32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = float32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = float32, Device device = Device::cpu());
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor empty_like(const Tensor& t);
// arange(stop), arange(start, stop, step): int64 unless any argument is fractional
// or a dtype is given (NumPy's rule).
Tensor arange(double stop, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
Tensor arange(double start, double stop, double step = 1.0, std::optional<DType> dtype = std::nullopt,
              Device device = Device::cpu());
Tensor linspace(double start, double stop, std::int64_t num = 50, DType dtype = float64, Device device = Device::cpu());
Tensor eye(std::int64_t n, std::optional<std::int64_t> m = std::nullopt, DType dtype = float64,
           Device device = Device::cpu());

// --- element-wise math (NumPy broadcasting; a double takes the tensor's dtype) ---
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);

Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor sigmoid(const Tensor& x);   // stable: 0.5 * tanh(0.5 x) + 0.5
Tensor relu(const Tensor& x);
Tensor pow(const Tensor& x, double c);
Tensor pow(const Tensor& x, const Tensor& c);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);
Tensor clip(const Tensor& x, double lo, double hi);
// Comparisons give 0/1 in the operands' common dtype (dezero has no bool dtype).
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, double b);
Tensor greater_equal(const Tensor& a, double b);
Tensor less(const Tensor& a, double b);
Tensor less_equal(const Tensor& a, double b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // cond != 0 ? a : b
// NumPy's result_type of two operands (a 0-d operand of the same kind does not widen).
DType result_type(const Tensor& a, const Tensor& b);

// --- shape and linear algebra ------------------------------------------------
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, const std::vector<int>& axes = {});
Tensor expand_dims(const Tensor& x, int axis);
Tensor squeeze(const Tensor& x, std::optional<int> axis = std::nullopt);
Tensor broadcast_to(const Tensor& x, const Shape& shape);
// The shape of broadcasting a with b (NumPy rules); ShapeError when they do not fit.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast");
// DeZero's utils.sum_to: sum x down to `shape` (leading axes and axes where shape has 1).
Tensor sum_to(const Tensor& x, const Shape& shape);
Tensor sum(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
Tensor max(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
// matmul: 1-D and 2-D like np.dot; N-d operands are batches of matrices with
// broadcast batch axes (np.matmul).
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);
// x[indices] (NumPy's basic and advanced indexing). Integer indices, scalar or array,
// follow NumPy on every device: a negative index counts from the end of its axis, and
// one outside [-n, n) is an IndexError naming get_item, the index, the axis and its
// size. Index arrays on a GPU are checked with one min / max reduction and one small
// read back to the host, so each index array costs one sync there.
Tensor get_item(const Tensor& x, const Indices& indices);
// The gradient of get_item: zeros of `shape` with gy added at the indexed places;
// repeated indices accumulate (np.add.at). Indices are checked as in get_item (errors
// name scatter_add), so nothing is ever written outside the result.
Tensor scatter_add(const Tensor& gy, const Shape& shape, const Indices& indices);
Tensor concatenate(const std::vector<Tensor>& xs, int axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
// Row gather/scatter along axis 0 with int32/int64 indices: take(x, idx)[i] = x[idx[i]].
// Every index must be in [0, x.shape()[0]) (unlike np.take, negative ones do not wrap):
// IndexError naming take, the first bad index and its position otherwise, on both
// devices. On a GPU the check is one min / max reduction and one sync per call.
Tensor take(const Tensor& x, const Tensor& indices);

// Copies src into dst's storage (broadcasting src, casting to dst's dtype, across devices).
void copyto(Tensor& dst, const Tensor& src);

namespace detail {
class Generator;  // backend/generator.hpp
}

// --- random numbers (NumPy's legacy MT19937 stream: same seed, same values) ----
// The free functions draw from one process-wide stream, as DeZero's np.random does:
// random::seed(42) seeds it for every thread (a lock makes concurrent draws safe, but
// two threads then share, and interleave, one stream).
// A Generator is a stream of its own (NumPy's RandomState(seed)): seeded, independent
// of the global one and of every other Generator. Generator(42).randn(...) gives the
// same values as seed(42); randn(...). Copies are handles to the same stream (pass it
// to layers, dropout and DataLoaders by value); draws lock it, so sharing one between
// threads is safe but makes its sequence depend on their timing: give each thread its
// own. Generator::global() is the process-wide stream itself.
namespace random {
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 5489);
  static Generator global();
  void seed(std::uint64_t s);
  Tensor randn(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
  Tensor rand(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
  Tensor uniform(double low, double high, const Shape& shape, DType dtype = float64, Device device = Device::cpu());
  Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype = int64,
                 Device device = Device::cpu());
  Tensor permutation(std::int64_t n, Device device = Device::cpu());
  double random_double();
  double gauss();
  bool is_global() const;
  bool operator==(const Generator& o) const { return impl_ == o.impl_; }
  bool operator!=(const Generator& o) const { return impl_ != o.impl_; }
  detail::Generator& impl() const { return *impl_; }

 private:
  explicit Generator(std::shared_ptr<detail::Generator> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::Generator> impl_;
};

void seed(std::uint64_t s);
Tensor randn(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
Tensor rand(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
Tensor uniform(double low, double high, const Shape& shape, DType dtype = float64, Device device = Device::cpu());
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype = int64,
               Device device = Device::cpu());
Tensor permutation(std::int64_t n, Device device = Device::cpu());
double random_double();   // one uniform draw in [0, 1)
double gauss();           // one standard normal draw
}  // namespace random

}  // namespace dezero
