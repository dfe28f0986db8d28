/// \file
/// Tensor: an N-d array in host or device memory (DeZero's ndarray).
///
/// A Tensor is a shape, a dtype and a handle to storage that several tensors may
/// share (reshape is zero-copy). Element data is always contiguous and row-major,
/// starting at offset() elements into the storage. This header is the "xp" level:
/// NumPy-like operations without autograd. Every operation validates its operands
/// here, then dispatches to the backend of the tensors' device (cpu/ or cuda/).
/// Operations never mix devices: that is a DeviceError naming both.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__GLIBC__) && defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define DEZERO_HAS_SINGLE_THREADED 1
#endif
#endif

#include "dezero/device.hpp"
#include "dezero/dtype.hpp"
#include "dezero/error.hpp"
#include "dezero/shape.hpp"
#include "dezero/small_pool.hpp"
#include "dezero/small_vector.hpp"

namespace dezero {

// --- storage ---------------------------------------------------------------
class Tensor;
/// \cond INTERNAL
namespace detail {
// Reference counts (Storage, a Variable's handles): one locked instruction each way while
// the process has threads, a plain add while it has none (glibc's __libc_single_threaded,
// which turns false for good when the first thread starts; libstdc++'s shared_ptr does the same).
inline bool single_threaded() noexcept {
#if defined(DEZERO_HAS_SINGLE_THREADED)
  return __libc_single_threaded != 0;
#else
  return false;
#endif
}
template <class I>
inline void count_up(std::atomic<I>& c) noexcept {
  if (single_threaded()) c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  else c.fetch_add(1, std::memory_order_relaxed);
}
// Returns whether the count reached 0.
template <class I>
inline bool count_down(std::atomic<I>& c) noexcept {
  if (single_threaded()) {
    const I v = c.load(std::memory_order_relaxed) - 1;
    c.store(v, std::memory_order_relaxed);
    return v == 0;
  }
  return c.fetch_sub(1, std::memory_order_acq_rel) == 1;
}

// A Tensor that shares t's storage without counting a reference, and that must be given up
// with release_borrowed (never destroyed as it is) while t still holds the storage: the
// tensors a Function's forward() reads (core/function.cpp). A copy of it counts as usual.
Tensor borrow(const Tensor& t) noexcept;
void release_borrowed(Tensor& t) noexcept;

}  // namespace detail
/// \endcond

/// A block of memory on one device, freed (returned to that device's allocator)
/// when the last tensor that uses it goes away.
///
/// Tensors share a Storage through a StoragePtr (Tensor::storage()): the reference count
/// is inside the Storage, which is 24 bytes from the small-object pool. Host blocks of at
/// most kInlineBytes (scalars, the (1,)-(2,) float64 and (1,)-(4,) float32 vectors a graph
/// of scalars is made of) live inside the Storage object itself, 8-byte aligned: one
/// allocation less per tensor. The sanitizer build keeps them on the heap, so that
/// overflows are still caught.
class Storage {
 public:
  static constexpr std::size_t kInlineBytes = 16;  ///< The largest host block kept inside the object, in bytes.
  /// Not copyable: tensors share one block through a StoragePtr.
  ///@{
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ///@}

  /// The block's first byte, in the memory of device().
  void* data() const {
    return inline_data() ? const_cast<unsigned char*>(u_.small) : u_.big.ptr;
  }
  /// The block's size in bytes.
  std::size_t nbytes() const { return small_n_ != kBig ? small_n_ : u_.big.nbytes; }
  /// The device whose memory holds the block.
  Device device() const { return cuda_ ? Device::cuda(index_) : Device::cpu(); }
  /// How many StoragePtrs refer to this block.
  long use_count() const { return static_cast<long>(refs_.load(std::memory_order_relaxed)); }
  /// How many Storage blocks this process has allocated so far, on any device
  /// (tests use it to check that an optimizer step allocates nothing).
  static std::uint64_t allocation_count();
  /// How many Storage blocks are alive now, on any device, and their bytes (step 17
  /// prints them to show that a graph's memory is freed as soon as it is unreachable).
  ///@{
  static std::uint64_t live_count();
  static std::uint64_t live_bytes();
  ///@}

 private:
  friend class StoragePtr;
  static constexpr std::uint8_t kBig = 0xff;
  // Allocates nbytes on device: a DeviceError for a CUDA device that this build or machine
  // does not have, an OutOfMemoryError when no memory is left. Made by StoragePtr::allocate.
  Storage(std::size_t nbytes, Device device);
  ~Storage();
  bool inline_data() const { return small_n_ != kBig; }

  std::atomic<std::uint32_t> refs_{1};
  std::uint8_t small_n_ = kBig;  // the size of inline data, or kBig: the block is u_.big
  bool cuda_ = false;
  std::int16_t index_ = -1;      // the CUDA device
  union {
    struct {
      void* ptr;
      std::size_t nbytes;
    } big;
    alignas(8) unsigned char small[kInlineBytes];
  } u_;
};

/// A counted reference to a Storage (Tensor::storage()): copies share the block, the last
/// one frees it. Compares, tests and dereferences like a std::shared_ptr.
class StoragePtr {
 public:
  /// No storage (an undefined tensor's).
  StoragePtr() = default;
  /// No storage, from nullptr.
  StoragePtr(std::nullptr_t) {}  // NOLINT implicit, as std::shared_ptr's
  /// A new block of `nbytes` on `device`, referred to once: a DeviceError for a CUDA device
  /// that this build or machine does not have, an OutOfMemoryError when none is left.
  static StoragePtr allocate(std::size_t nbytes, Device device);
  /// Copies and moves, as std::shared_ptr's (a moved-from StoragePtr is empty).
  ///@{
  StoragePtr(const StoragePtr& o) noexcept : p_(o.p_) {
    if (p_) detail::count_up(p_->refs_);
  }
  StoragePtr(StoragePtr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  StoragePtr& operator=(const StoragePtr& o) noexcept {
    StoragePtr(o).swap(*this);
    return *this;
  }
  StoragePtr& operator=(StoragePtr&& o) noexcept {
    StoragePtr(std::move(o)).swap(*this);
    return *this;
  }
  ///@}
  /// Drops the reference; the last one frees the block.
  ~StoragePtr() {
    if (p_ && detail::count_down(p_->refs_)) destroy(p_);
  }
  /// The Storage (nullptr when none).
  Storage* get() const { return p_; }
  /// The Storage itself.
  ///@{
  Storage* operator->() const { return p_; }
  Storage& operator*() const { return *p_; }
  ///@}
  /// Whether there is a Storage.
  explicit operator bool() const { return p_ != nullptr; }
  /// How many StoragePtrs refer to the block (0 when none), as std::shared_ptr::use_count.
  long use_count() const { return p_ ? p_->use_count() : 0; }
  /// Exchanges the referents.
  void swap(StoragePtr& o) noexcept { std::swap(p_, o.p_); }
  /// Equal when both refer to the same block (or to none).
  ///@{
  friend bool operator==(const StoragePtr& a, const StoragePtr& b) { return a.p_ == b.p_; }
  friend bool operator!=(const StoragePtr& a, const StoragePtr& b) { return a.p_ != b.p_; }
  friend bool operator==(const StoragePtr& a, std::nullptr_t) { return a.p_ == nullptr; }
  friend bool operator!=(const StoragePtr& a, std::nullptr_t) { return a.p_ != nullptr; }
  ///@}

 private:
  friend Tensor detail::borrow(const Tensor& t) noexcept;
  friend void detail::release_borrowed(Tensor& t) noexcept;
  explicit StoragePtr(Storage* p) : p_(p) {}
  static void destroy(Storage* p) noexcept;
  Storage* p_ = nullptr;
};

class Tensor;

// --- indexing (NumPy's basic and integer-array indexing) ---------------------
/// NumPy's slice start:stop:step, one entry of an index.
///
/// x[{0, Slice(0, 2)}] is NumPy's x[0, 0:2]; Slice() is ':'; Slice(std::nullopt, -1) is ':-1'.
/// Bounds are clamped to the axis as in NumPy, so a slice never is out of range; a step
/// of 0 is a ValueError when the slice is used.
struct Slice {
  /// The first position and the end (excluded); std::nullopt is NumPy's omitted bound, and a
  /// negative one counts from the end of the axis.
  ///@{
  std::optional<std::int64_t> start, stop;
  ///@}
  std::int64_t step = 1;  ///< The stride between positions; a negative one walks backwards.
  /// The whole axis, ':'.
  Slice() = default;
  /// start:stop:step, e.g. Slice(0, 2) is 0:2 and Slice(std::nullopt, std::nullopt, -1) is ::-1.
  Slice(std::optional<std::int64_t> start_, std::optional<std::int64_t> stop_, std::int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};
/// The type of dezero::Ellipsis.
struct EllipsisType {};
inline constexpr EllipsisType Ellipsis{};  ///< NumPy's '...': as many ':' as the axes not indexed otherwise.
/// The type of dezero::newaxis.
struct NewAxisType {};
inline constexpr NewAxisType newaxis{};    ///< NumPy's None / np.newaxis: a new axis of extent 1.

/// One entry of an index x[...]: an integer, a Slice, Ellipsis, newaxis or an integer array.
///
/// Every constructor is implicit, so an entry is written as the value itself:
/// `x[{0, Slice(1, 3), newaxis}]`, `x[idx]` with an int64 tensor `idx`. The entries are
/// checked by get_item(), which the Tensor and Variable operator[] call.
class Index {
 public:
  /// What an Index holds (EllipsisMark: dezero::Ellipsis).
  enum class Kind { Integer, Slice, EllipsisMark, NewAxis, Array };
  /// An integer: selects one position and drops the axis; a negative one counts from the end.
  ///@{
  Index(std::int64_t i) : kind_(Kind::Integer), integer_(i) {}  // NOLINT implicit
  Index(int i) : kind_(Kind::Integer), integer_(i) {}            // NOLINT implicit
  ///@}
  /// A slice: keeps the axis, with the positions the slice selects.
  Index(Slice s) : kind_(Kind::Slice), slice_(s) {}              // NOLINT implicit
  /// NumPy's '...' (dezero::Ellipsis).
  Index(EllipsisType) : kind_(Kind::EllipsisMark) {}                 // NOLINT implicit
  /// A new axis of extent 1 (dezero::newaxis).
  Index(NewAxisType) : kind_(Kind::NewAxis) {}                   // NOLINT implicit
  /// An integer array index (int32 or int64), NumPy's advanced indexing.
  Index(const Tensor& array);                                    // NOLINT implicit: integer array index
  /// Copies; an array index copies the Tensor handle, not the data.
  ///@{
  Index(const Index&);
  Index& operator=(const Index&);
  ///@}
  /// Destroys the index (and its handle to an index array).
  ~Index();

  /// What this index holds.
  Kind kind() const { return kind_; }
  /// The integer of an Integer index (0 for other kinds).
  std::int64_t integer() const { return integer_; }
  /// The slice of a Slice index (':' for other kinds).
  const Slice& slice() const { return slice_; }
  /// The index array of an Array index; only valid for that kind.
  const Tensor& array() const { return *array_; }
  /// Python's spelling of the entry: "0", "1:3", "::-1", "...", "None", "array(3,)".
  std::string str() const;

 private:
  Kind kind_;
  std::int64_t integer_ = 0;
  Slice slice_;
  std::unique_ptr<Tensor> array_;
};
/// A whole index, x[{i, j, ...}]: one Index per entry.
using Indices = std::vector<Index>;

// --- Tensor ----------------------------------------------------------------
/// \cond INTERNAL
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
/// \endcond

/// An N-d array in host or device memory (DeZero's ndarray): a shape, a dtype and a handle
/// to storage that several tensors may share.
///
/// Element data is always contiguous and row-major, starting at offset() elements into the
/// storage. Copying a Tensor copies the handle, not the data (copy() copies the data), and
/// views such as reshape() share the storage. The operations here and the free functions
/// of this header are NumPy's, without autograd (Variable adds that). Using an undefined
/// Tensor() in any of them is a ValueError; operands on two devices are a DeviceError.
class Tensor {
 public:
  /// An undefined tensor: holds no storage (defined() == false).
  Tensor() = default;
  /// A tensor of `shape` and `dtype` over existing storage, starting `offset` elements in.
  ///
  /// The storage must hold the elements (this is not checked). ShapeError for a negative
  /// extent, more than kMaxNdim (12) axes, or more elements than int64 can count.
  Tensor(StoragePtr storage, std::int64_t offset, Shape shape, DType dtype);
  /// A new, uninitialised tensor.
  /// op names the caller in the ShapeError of a negative extent or of a shape whose
  /// element or byte count does not fit in int64. Allocating on a CUDA device that this
  /// build or machine does not have is a DeviceError.
  static Tensor empty(const Shape& shape, DType dtype = float32, Device device = Device::cpu(),
                      const char* op = "empty");

  /// Whether the tensor holds storage (false for Tensor()).
  bool defined() const { return storage_ != nullptr; }
  /// The extents, e.g. (2, 3); () for a 0-d tensor.
  const Shape& shape() const { return shape_; }
  /// The number of axes: 0 for a 0-d tensor.
  int ndim() const { return shape_.ndim(); }
  /// The number of elements: the product of the extents (1 for a 0-d tensor).
  std::int64_t size() const { return shape_.numel(); }
  /// The element type.
  DType dtype() const { return static_cast<DType>((word_ >> kDtypeShift) & 0xf); }
  /// The device that holds the storage (the CPU for an undefined tensor).
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  /// The size of the elements in bytes: size() * dtype_size(dtype()).
  std::size_t nbytes() const { return static_cast<std::size_t>(size()) * dtype_size(dtype()); }
  /// The length of the first axis, as Python's len(): a ShapeError for a 0-d tensor.
  std::int64_t len() const;

  /// Raw element pointer on the tensor's device (storage + offset). For backends
  /// and for host code that checked device().is_cpu(); nullptr for an undefined tensor.
  void* raw_data() const {
    if (!storage_) return nullptr;
    return static_cast<char*>(storage_->data()) + offset() * static_cast<std::int64_t>(dtype_size(dtype()));
  }
  /// The elements as a host pointer of their C++ type: checks dtype and host residency.
  ///
  /// T is float, double, std::int32_t or std::int64_t. A DtypeError unless `dtype_of<T>()`
  /// is dtype() (astype() first), a DeviceError for a tensor on a GPU (to_cpu() first).
  template <class T> T* data() const;

  /// The one element, converted to T: `item<T>()` needs exactly one element (a ValueError
  /// otherwise) and copies from the device if needed.
  template <class T> T item() const;
  /// The elements in row-major order, converted to T; copies from the device if needed.
  template <class T> std::vector<T> to_vector() const;

  // Conversions.
  /// The elements converted to `dtype`: always a new tensor (also for the same dtype).
  ///
  /// To bfloat16 or float16 each value is rounded once to nearest even (from float64 and the
  /// integers too, not through float32); a float16 past 65504 rounds to infinity; NaN stays NaN.
  /// Floats to integers truncate toward zero, as C++'s conversion does.
  Tensor astype(DType dtype) const;
  /// The tensor on `device`: the same tensor when already there, else a copy.
  Tensor to(Device device) const;
  /// The tensor in host memory: to(Device::cpu()).
  Tensor to_cpu() const { return to(Device::cpu()); }
  /// The tensor on CUDA device `id`: to(Device::cuda(id)); a DeviceError without that device.
  Tensor to_gpu(int id = 0) const { return to(Device::cuda(id)); }
  /// The same elements in `shape`: zero-copy (the storage is shared); one extent may be -1.
  ///
  /// The -1 extent is inferred from size(). A ShapeError when the element count would
  /// change, for two -1 extents or for another negative one.
  Tensor reshape(const Shape& shape) const;
  /// A new tensor with a copy of the data: same shape, dtype and device.
  Tensor copy() const;
  /// A 1-D copy-free view, (size(),).
  Tensor flatten() const;
  /// The axes reversed, (a, b, c) -> (c, b, a): the matrix transpose of a 2-D tensor (a copy).
  Tensor transpose() const;
  /// The axes permuted: axis i of the result is axis `axes[i]` (negative axes count from the end).
  ///
  /// An empty list reverses the axes. Always a copy. A ValueError when `axes` is not a
  /// permutation of the axes (wrong length, an axis twice), an IndexError for an axis out of range.
  Tensor transpose(const std::vector<int>& axes) const;
  /// The axes reversed, as NumPy's x.T: transpose().
  Tensor T() const { return transpose(); }

  // Reductions (NumPy semantics, axes may be negative).
  /// The sum over `axes` (all by default), in the tensor's dtype (NumPy semantics, axes may be negative).
  ///
  /// (2, 3).sum(1) -> (2,); with keepdims the reduced axes stay as 1: (2, 1); sum() -> ().
  /// An IndexError for an axis out of range, a ValueError for an axis named twice.
  Tensor sum(const Axes& axes = Axes(), bool keepdims = false) const;
  /// The mean over `axes`, shaped as sum(); integer tensors give float64 (as NumPy).
  Tensor mean(const Axes& axes = Axes(), bool keepdims = false) const;
  /// The largest / smallest element over `axes`, shaped as sum(), in the tensor's dtype.
  ///
  /// On every device max / min
  /// propagate NaN and start from -inf / +inf (the max of an all -inf array is -inf).
  /// A ValueError when a reduced axis has length 0 (no identity), axis errors as sum().
  ///@{
  Tensor max(const Axes& axes = Axes(), bool keepdims = false) const;
  Tensor min(const Axes& axes = Axes(), bool keepdims = false) const;
  ///@}
  /// The index of the largest / smallest element along `axis`, an int64 result.
  ///
  /// Without an axis: the index into the flattened tensor, shape (); with one, that axis is
  /// removed: (2, 3).argmax(1) -> (2,). argmax / argmin give the index of the first NaN when
  /// there is one. A ValueError for an axis of length 0, an IndexError for one out of range.
  ///@{
  Tensor argmax(std::optional<int> axis = std::nullopt) const;
  Tensor argmin(std::optional<int> axis = std::nullopt) const;
  ///@}

  /// Indexing: NumPy's x[...]; integer arrays follow NumPy's advanced indexing. An
  /// out-of-range index is an IndexError on every device (see get_item below).
  ///@{
  Tensor operator[](const Index& index) const;
  Tensor operator[](const Indices& indices) const;
  ///@}

  /// In-place arithmetic on this tensor's storage (broadcasting the right side).
  ///
  /// The tensor keeps its shape and dtype: with a tensor on the right the result is computed
  /// as by `+`, `-`, `*`, `/` and converted back to dtype(); a double is converted to dtype()
  /// first (but `/=` of an integer tensor divides in float64). A ShapeError when broadcasting
  /// would change the shape.
  /// Every tensor that shares the storage (a reshape of this one) sees the change.
  ///@{
  Tensor& operator+=(const Tensor& o);
  Tensor& operator-=(const Tensor& o);
  Tensor& operator*=(const Tensor& o);
  Tensor& operator/=(const Tensor& o);
  Tensor& operator+=(double s);
  Tensor& operator-=(double s);
  Tensor& operator*=(double s);
  Tensor& operator/=(double s);
  ///@}
  /// Sets every element to `value` (converted to dtype()), in place.
  void fill_(double value);

  /// Storage handle (shared by reshaped views); is_same tells aliasing.
  const StoragePtr& storage() const { return storage_; }
  /// Where the elements start in the storage, in elements.
  std::int64_t offset() const { return static_cast<std::int64_t>(word_ & kOffsetMask); }
  /// Whether both tensors start at the same element of the same storage (aliasing).
  bool is_same(const Tensor& o) const { return storage_ == o.storage_ && offset() == o.offset(); }

  /// NumPy's str(array): the elements, as print(x) shows them ("None" when undefined).
  std::string str() const;
  /// NumPy's repr: `array([...], dtype=float32)` (no dtype for non-empty float64 and int64).
  std::string repr() const;

 private:
  // 56 bytes: a graph node holds one (core.hpp). The offset (in elements, below 2^56), the
  // dtype and, for an undefined tensor, why it is empty share one word; size() is the
  // product of the extents.
  static constexpr int kDtypeShift = 56, kCauseShift = 60;
  static constexpr std::uint64_t kOffsetMask = (std::uint64_t(1) << kDtypeShift) - 1;
  void set_dtype(DType dt) {
    word_ = (word_ & ~(std::uint64_t(0xf) << kDtypeShift)) | (std::uint64_t(static_cast<unsigned>(dt)) << kDtypeShift);
  }

  StoragePtr storage_;
  std::uint64_t word_ = 0;  // offset | dtype << 56 | empty cause << 60 (dtype 0: float32)
  Shape shape_;
  friend Tensor detail::undefined_tensor(detail::EmptyCause cause);
  friend detail::EmptyCause detail::empty_cause(const Tensor& t);
  friend Tensor detail::borrow(const Tensor& t) noexcept;
  friend void detail::release_borrowed(Tensor& t) noexcept;
};

/// TensorList{a, b} moves its temporaries in (a Tensor copy counts a reference).
template <>
struct small_vector_forwards_braced<Tensor, void> : std::true_type {};

/// \cond INTERNAL
inline Tensor detail::borrow(const Tensor& t) noexcept {
  Tensor b;
  b.storage_.p_ = t.storage_.p_;
  b.word_ = t.word_;
  b.shape_ = t.shape_;
  return b;
}
inline void detail::release_borrowed(Tensor& t) noexcept { t.storage_.p_ = nullptr; }
/// \endcond

/// Writes `t.str()` to `os`, as Python's print(x).
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// --- creation ----------------------------------------------------------------
// Defaults follow NumPy: floating literals -> float64, integer literals -> int64.
/// A 0-d tensor of one value, shape (): float64 for a double, int64 for an integer.
///
/// Defaults follow NumPy: floating literals -> float64, integer literals -> int64; a given
/// `dtype` converts the value. Every array() builds the tensor on the host and copies it to
/// `device` (a DeviceError for a CUDA device that this build or machine does not have).
///@{
Tensor array(double value, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
Tensor array(std::int64_t value, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
Tensor array(int value, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
///@}
/// A 2-D or 3-D tensor from nested braced lists: array({{1, 2}, {3, 4}}) is (2, 2) int64.
///
/// Floating values give float64, integers int64, unless `dtype` is given. A ShapeError for
/// rows of different lengths (a ragged list).
///@{
Tensor array(std::initializer_list<std::initializer_list<double>> values, std::optional<DType> dtype = std::nullopt,
             Device device = Device::cpu());
Tensor array(std::initializer_list<std::initializer_list<int>> values, std::optional<DType> dtype = std::nullopt,
             Device device = Device::cpu());
Tensor array(std::initializer_list<std::initializer_list<std::initializer_list<double>>> values,
             std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
///@}
/// A tensor of `shape` from its elements in row-major order (copied).
///
/// T is float, double, std::int32_t, std::int64_t, bfloat16_t or float16_t, and gives the dtype
/// unless `dtype` is given. A ShapeError when `values.size()` is not the number of elements of `shape`.
template <class T>
Tensor array(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype = std::nullopt,
             Device device = Device::cpu());
/// A 1-D tensor of the values, (values.size(),), in T's dtype unless `dtype` is given.
template <class T>
Tensor array(const std::vector<T>& values, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu()) {
  return array(values, Shape{static_cast<std::int64_t>(values.size())}, dtype, device);
}
/// 1-D from a braced list: array({1.0, 2.0}) is float64, array({1, 2}) int64. A template,
/// so that array({{1.0}, {2.0}}) (a column) picks the 2-D overload unambiguously.
template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
Tensor array(std::initializer_list<T> values, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu()) {
  using E = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;
  std::vector<E> v(values.begin(), values.end());
  return array(v, Shape{static_cast<std::int64_t>(v.size())}, dtype, device);
}
/// From raw host memory of `src_dtype` (copied).
///
/// Reads the elements of `shape` (row-major, `src_dtype`) from `data`, converts them to
/// `dtype` if one is given and copies them to `device`. A ShapeError for a negative extent
/// or one too large to count.
Tensor from_blob(const void* data, const Shape& shape, DType src_dtype, std::optional<DType> dtype = std::nullopt,
                 Device device = Device::cpu());

/// A tensor of `shape` filled with 0, float32 by default (NumPy's default is float64).
///
/// A ShapeError for a negative extent, a DeviceError for a CUDA device that this build or
/// machine does not have (as for every function that makes a tensor on `device`).
Tensor zeros(const Shape& shape, DType dtype = float32, Device device = Device::cpu());
/// A tensor of `shape` filled with 1, float32 by default (NumPy's default is float64).
Tensor ones(const Shape& shape, DType dtype = float32, Device device = Device::cpu());
/// A tensor of `shape` filled with `value` (converted to `dtype`), float32 by default.
Tensor full(const Shape& shape, double value, DType dtype = float32, Device device = Device::cpu());
/// Zeros of t's shape, dtype and device.
Tensor zeros_like(const Tensor& t);
/// Ones of t's shape, dtype and device.
Tensor ones_like(const Tensor& t);
/// A tensor of t's shape, dtype and device filled with `value`.
Tensor full_like(const Tensor& t, double value);
/// An uninitialised tensor of t's shape, dtype and device.
Tensor empty_like(const Tensor& t);
/// arange(stop), arange(start, stop, step): int64 unless any argument is fractional
/// or a dtype is given (NumPy's rule).
///
/// The values start, start + step, ... up to stop (excluded), shape
/// (ceil((stop - start) / step),), or (0,) when that is negative. A ValueError for a step of 0.
///@{
Tensor arange(double stop, std::optional<DType> dtype = std::nullopt, Device device = Device::cpu());
Tensor arange(double start, double stop, double step = 1.0, std::optional<DType> dtype = std::nullopt,
              Device device = Device::cpu());
///@}
/// `num` evenly spaced values from `start` to `stop`, both included: (num,), float64 by default.
///
/// A ValueError for a negative `num`.
Tensor linspace(double start, double stop, std::int64_t num = 50, DType dtype = float64, Device device = Device::cpu());
/// The (n, m) identity matrix (m = n by default): ones on the diagonal, float64 by default.
Tensor eye(std::int64_t n, std::optional<std::int64_t> m = std::nullopt, DType dtype = float64,
           Device device = Device::cpu());

// --- element-wise math (NumPy broadcasting; a double takes the tensor's dtype) ---
/// Element-wise arithmetic with NumPy broadcasting: (2, 3) + (3,) -> (2, 3).
///
/// The result's dtype is result_type(a, b); `/` is true division, so integer operands give
/// float64. A ShapeError when the shapes do not broadcast, a DeviceError for operands on
/// two devices.
///@{
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
///@}
/// Element-wise arithmetic with a scalar: a double takes the tensor's dtype.
///
/// The tensor's shape is kept. An integer tensor with a fractional double, and `/` with an
/// integer tensor, give float64 (as NumPy).
///@{
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
///@}
/// Element-wise negation: same shape and dtype.
Tensor operator-(const Tensor& a);

/// The element-wise exponential e^x; integer tensors give float64 (as NumPy), as for log,
/// sin, cos, tanh, sqrt and sigmoid.
Tensor exp(const Tensor& x);
/// The element-wise natural logarithm; integer tensors give float64.
Tensor log(const Tensor& x);
/// The element-wise sine; integer tensors give float64.
Tensor sin(const Tensor& x);
/// The element-wise cosine; integer tensors give float64.
Tensor cos(const Tensor& x);
/// The element-wise hyperbolic tangent; integer tensors give float64.
Tensor tanh(const Tensor& x);
/// The element-wise square root; integer tensors give float64.
Tensor sqrt(const Tensor& x);
/// The element-wise absolute value, in x's dtype.
Tensor abs(const Tensor& x);
/// The element-wise sign, -1, 0 or 1, in x's dtype.
Tensor sign(const Tensor& x);
/// The element-wise square x * x, in x's dtype.
Tensor square(const Tensor& x);
/// The element-wise logistic sigmoid 1 / (1 + e^-x); integer tensors give float64.
///
/// Stable: 0.5 * tanh(0.5 x) + 0.5.
Tensor sigmoid(const Tensor& x);
/// The element-wise max(x, 0), in x's dtype.
Tensor relu(const Tensor& x);
/// The element-wise error function erf(x) = 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt
/// (libm's erff / erf); integer tensors give float64.
Tensor erf(const Tensor& x);
/// x to the power `c`, element-wise: x's dtype, but float64 for an integer tensor and a
/// negative or fractional `c`.
Tensor pow(const Tensor& x, double c);
/// x to the power `c`, element-wise with broadcasting, in result_type(x, c).
Tensor pow(const Tensor& x, const Tensor& c);
/// The element-wise larger / smaller of `a` and `b`, with broadcasting as for `+` (a double
/// takes a's dtype).
///@{
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);
///@}
/// x limited to [lo, hi] element-wise, minimum(maximum(x, lo), hi): a ValueError when lo > hi.
Tensor clip(const Tensor& x, double lo, double hi);
/// Comparisons give 0/1 in the operands' common dtype (dezero has no bool dtype).
///
/// Element-wise, with broadcasting as for `+`: equal is a == b, not_equal a != b, greater
/// a > b, greater_equal a >= b, less a < b, less_equal a <= b.
///@{
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
///@}
/// cond != 0 ? a : b, element-wise: the three broadcast together, in result_type(a, b).
///
/// `cond` is converted to that dtype first, so a fractional cond with integer `a` and `b`
/// is truncated. ShapeError and DeviceError as for `+`.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// NumPy's result_type of two operands (a 0-d operand of the same kind does not widen).
DType result_type(const Tensor& a, const Tensor& b);

// --- shape and linear algebra ------------------------------------------------
/// x.reshape(shape): the same elements in `shape`, zero-copy; one extent may be -1.
Tensor reshape(const Tensor& x, const Shape& shape);
/// x with its axes permuted by `axes` (Tensor::transpose), or reversed when `axes` is empty.
Tensor transpose(const Tensor& x, const std::vector<int>& axes = {});
/// x with a new axis of extent 1 at `axis`, in [-ndim - 1, ndim]: (2, 3), axis 1 -> (2, 1, 3).
///
/// Zero-copy. An IndexError for an axis out of range.
Tensor expand_dims(const Tensor& x, int axis);
/// x without its axes of extent 1, or without `axis` only: (2, 1, 3) -> (2, 3).
///
/// Zero-copy. A ValueError when `axis` is not of extent 1, an IndexError when it is out of range.
Tensor squeeze(const Tensor& x, std::optional<int> axis = std::nullopt);
/// x repeated to `shape` by NumPy's broadcasting rule: (3,) or (1, 3) -> (2, 3).
///
/// A new tensor (x itself when it already has that shape). A ShapeError when x does not
/// broadcast to `shape` (axes are matched from the right and must be equal or 1).
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/// The shape of broadcasting a with b (NumPy rules); ShapeError when they do not fit.
///
/// (2, 1) with (3,) -> (2, 3). `op` names the caller in the error.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast");
/// DeZero's utils.sum_to: sum x down to `shape` (leading axes and axes where shape has 1).
///
/// (N, C) -> (C,) or (1, C); x itself when it already has that shape. The inverse of
/// broadcast_to for gradients. A ShapeError when `shape` does not broadcast to x's shape.
Tensor sum_to(const Tensor& x, const Shape& shape);
/// x.sum(axes, keepdims): the sum over `axes` (all by default), see Tensor::sum.
Tensor sum(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
/// x.mean(axes, keepdims): the mean over `axes`, float64 for integer tensors, see Tensor::mean.
Tensor mean(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
/// x.max(axes, keepdims): the largest element over `axes`, see Tensor::max.
Tensor max(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
/// x.min(axes, keepdims): the smallest element over `axes`, see Tensor::min.
Tensor min(const Tensor& x, const Axes& axes = Axes(), bool keepdims = false);
/// The matrix product: 1-D and 2-D like np.dot; N-d operands are batches of matrices with
/// broadcast batch axes (np.matmul).
///
/// a: (..., m, k) or (k,), b: (..., k, n) or (k,) -> (batch..., m, n), where batch is the
/// broadcast of the two batch shapes and a 1-D operand's axis is dropped from the result:
/// (m, k) @ (k,) -> (m,), (k,) @ (k,) -> (). The operands are promoted to
/// promote_types(a, b). A ShapeError for a 0-d operand, for k that differ or for batch
/// shapes that do not broadcast; a DeviceError for operands on two devices.
Tensor matmul(const Tensor& a, const Tensor& b);
/// matmul(a, b): np.dot for 1-D and 2-D operands (N-d ones are matmul's batches, not np.dot's).
Tensor dot(const Tensor& a, const Tensor& b);
/// x[indices] (NumPy's basic and advanced indexing). Integer indices, scalar or array,
/// follow NumPy on every device: a negative index counts from the end of its axis, and
/// one outside [-n, n) is an IndexError naming get_item, the index, the axis and its
/// size. Index arrays on a GPU are checked with one min / max reduction and one small
/// read back to the host, so each index array costs one sync there.
///
/// Without index arrays the result is a view of x's storage when the selected elements
/// are contiguous, a copy otherwise; with index arrays it is a gather (a copy). Also an
/// IndexError for more indices than axes, two Ellipsis or a floating index array; a
/// ValueError for a slice step of 0. One difference from NumPy: integer scalars are applied
/// before the arrays, so x[0, :, [1, 2]] has shape (n, 2) where NumPy gives (2, n).
Tensor get_item(const Tensor& x, const Indices& indices);
/// The gradient of get_item: zeros of `shape` with gy added at the indexed places;
/// repeated indices accumulate (np.add.at). Indices are checked as in get_item (errors
/// name scatter_add), so nothing is ever written outside the result.
///
/// gy has the shape of indexing `shape` with `indices` (a ShapeError otherwise); the result
/// has `shape` and gy's dtype and device.
Tensor scatter_add(const Tensor& gy, const Shape& shape, const Indices& indices);
/// The tensors joined along the existing axis `axis`: (2, 3) and (4, 3), axis 0 -> (6, 3).
///
/// The result's dtype is the promotion of all (promote_types). A ValueError for an empty
/// list, a ShapeError when the ranks or the extents outside `axis` differ, an IndexError
/// for an axis out of range, a DeviceError for tensors on two devices.
Tensor concatenate(const std::vector<Tensor>& xs, int axis = 0);
/// The tensors, all of one shape, joined along a new axis `axis`: two (2, 3), axis 0 -> (2, 2, 3).
///
/// A ValueError for an empty list, a ShapeError for shapes that differ; otherwise as concatenate.
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
/// Row gather/scatter along axis 0 with int32/int64 indices: take(x, idx)[i] = x[idx[i]].
/// Every index must be in [0, x.shape()[0]) (unlike np.take, negative ones do not wrap):
/// IndexError naming take, the first bad index and its position otherwise, on both
/// devices. On a GPU the check is one min / max reduction and one sync per call.
///
/// x: (n, ...), indices: any shape -> (indices.shape..., ...), in x's dtype. A DtypeError
/// for floating indices, a ShapeError for a 0-d x.
Tensor take(const Tensor& x, const Tensor& indices);

/// Copies src into dst's storage (broadcasting src, casting to dst's dtype, across devices).
///
/// dst keeps its shape, dtype and device. A ShapeError when src does not broadcast to dst's shape.
void copyto(Tensor& dst, const Tensor& src);

/// \cond INTERNAL
namespace detail {
class Generator;  // backend/generator.hpp
}
/// \endcond

// --- random numbers (NumPy's legacy MT19937 stream: same seed, same values) ----
/// dezero::random: seeded random tensors from NumPy's legacy MT19937 stream (DeZero's
/// np.random), so that the same seed gives the same values as the book.
///
/// The free functions draw from one process-wide stream, as DeZero's np.random does:
/// random::seed(42) seeds it for every thread (a lock makes concurrent draws safe, but
/// two threads then share, and interleave, one stream). A random::Generator is a stream
/// of its own. Tensors on a GPU are filled by their device from the same stream.
namespace random {
/// Where a stream is: NumPy's `RandomState.get_state()` without the leading 'MT19937' -
/// MT19937's 624 key words, the position of the next word, and the second normal draw of
/// the last pair (NumPy's has_gauss / cached_gaussian). Saved by a training snapshot so that
/// a resumed run draws the same numbers; `np.random.set_state(('MT19937', key, pos, has_gauss,
/// cached_gaussian))` continues the same stream in NumPy.
struct GeneratorState {
  std::array<std::uint32_t, 624> key{};  ///< MT19937's state words.
  int pos = 624;                         ///< The next word to use, 0-624 (624: regenerate first).
  bool has_gauss = false;                ///< Whether a normal draw is cached.
  double cached_gaussian = 0.0;          ///< The cached normal draw (when has_gauss).
};

/// A stream of random numbers of its own (NumPy's RandomState(seed)).
///
/// A Generator is a stream of its own (NumPy's RandomState(seed)): seeded, independent
/// of the global one and of every other Generator. Generator(42).randn(...) gives the
/// same values as seed(42); randn(...). Copies are handles to the same stream (pass it
/// to layers, dropout and DataLoaders by value); draws lock it, so sharing one between
/// threads is safe but makes its sequence depend on their timing: give each thread its
/// own. Generator::global() is the process-wide stream itself.
class Generator {
 public:
  /// A new stream seeded with `seed` (MT19937's default 5489 when none is given).
  ///
  /// A ValueError for a seed past 2^32 - 1 (NumPy's limit).
  explicit Generator(std::uint64_t seed = 5489);
  /// A handle to the process-wide stream that the free functions of dezero::random use.
  static Generator global();
  /// Reseeds this stream (np.random.seed): a ValueError for a seed past 2^32 - 1.
  void seed(std::uint64_t s);
  /// Standard normal samples of `shape` (np.random.randn), float64 by default.
  ///
  /// A DtypeError for an integer dtype (as for rand and uniform).
  Tensor randn(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
  /// Uniform samples in [0, 1) of `shape` (np.random.rand), float64 by default.
  Tensor rand(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
  /// Uniform samples in [low, high) of `shape`: rand(shape) * (high - low) + low.
  Tensor uniform(double low, double high, const Shape& shape, DType dtype = float64, Device device = Device::cpu());
  /// Integers uniform in [low, high) of `shape` (np.random.randint), int64 by default.
  ///
  /// A ValueError when high <= low. The values are drawn on the host and copied to `device`.
  Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype = int64,
                 Device device = Device::cpu());
  /// A random permutation of 0, 1, ..., n - 1, (n,) int64 (np.random.permutation(n)).
  ///
  /// A ValueError for a negative n. Drawn on the host and copied to `device`.
  Tensor permutation(std::int64_t n, Device device = Device::cpu());
  /// One uniform draw in [0, 1).
  double random_double();
  /// One standard normal draw.
  double gauss();
  /// Whether this is a handle to the process-wide stream (global()).
  bool is_global() const;
  /// The stream's state (NumPy's get_state()): set_state() of it draws the same numbers again.
  GeneratorState get_state() const;
  /// Puts the stream where get_state() found it (NumPy's set_state()). A ValueError for a pos
  /// outside 0-624 or a key of zeros (which MT19937 cannot leave), changing nothing.
  void set_state(const GeneratorState& state);
  /// Equal when both are handles to the same stream.
  ///@{
  bool operator==(const Generator& o) const { return impl_ == o.impl_; }
  bool operator!=(const Generator& o) const { return impl_ != o.impl_; }
  ///@}
  /// \cond INTERNAL
  detail::Generator& impl() const { return *impl_; }
  /// \endcond

 private:
  explicit Generator(std::shared_ptr<detail::Generator> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::Generator> impl_;
};

/// Seeds the process-wide stream for every thread (np.random.seed): a ValueError for a seed
/// past 2^32 - 1.
void seed(std::uint64_t s);
/// Standard normal samples of `shape` from the process-wide stream (np.random.randn).
///
/// float64 by default; a DtypeError for an integer dtype (as for rand and uniform).
Tensor randn(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
/// Uniform samples in [0, 1) of `shape` from the process-wide stream (np.random.rand).
Tensor rand(const Shape& shape, DType dtype = float64, Device device = Device::cpu());
/// Uniform samples in [low, high) of `shape` from the process-wide stream (np.random.uniform).
Tensor uniform(double low, double high, const Shape& shape, DType dtype = float64, Device device = Device::cpu());
/// Integers uniform in [low, high) of `shape` from the process-wide stream (np.random.randint).
///
/// int64 by default; a ValueError when high <= low.
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype = int64,
               Device device = Device::cpu());
/// A random permutation of 0, 1, ..., n - 1, (n,) int64, from the process-wide stream.
///
/// np.random.permutation(n); a ValueError for a negative n.
Tensor permutation(std::int64_t n, Device device = Device::cpu());
/// One uniform draw in [0, 1) from the process-wide stream.
double random_double();
/// One standard normal draw from the process-wide stream.
double gauss();
/// The process-wide stream's state (np.random.get_state()).
GeneratorState get_state();
/// Puts the process-wide stream where get_state() found it (np.random.set_state()).
void set_state(const GeneratorState& state);
}  // namespace random

}  // namespace dezero
