/// \file
/// Shape (a vector of int64 extents) and axis helpers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "dezero/error.hpp"

namespace dezero {

/// The most axes a tensor may have (NumPy allows 32): every kernel's strided view holds this many
/// extents, a file or a peer declaring more is refused. The one definition of the limit.
inline constexpr int kMaxNdim = 12;

/// A tensor's shape: (2, 3) is Shape{2, 3}; a 0-d tensor has Shape{}.
///
/// Vector-like (size, [], iterators, push_back, insert, erase, resize, conversion to
/// and from `std::vector<int64_t>`), with room for 4 extents inside the object (40 bytes
/// in all): every tensor, every graph node and every op carries shapes, and keeping them
/// off the heap saves a malloc/free per shape copy (about 40 per training step of
/// bench/w3_overhead.cpp). Shapes of 5 and more extents (im2col's 6-d views) live on the
/// heap.
/// A Shape itself accepts any extents; a tensor of a shape with a negative extent, or whose
/// non-zero extents multiply past what int64 can count, is a ShapeError (checked_numel()).
class Shape {
 public:
  /// The member types of `std::vector<std::int64_t>`.
  ///@{
  using value_type = std::int64_t;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = std::int64_t&;
  using const_reference = const std::int64_t&;
  using pointer = std::int64_t*;
  using const_pointer = const std::int64_t*;
  using iterator = std::int64_t*;
  using const_iterator = const std::int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  ///@}

  /// The shape of a 0-d tensor, ().
  Shape() = default;
  /// The extents in order: Shape{2, 3} is (2, 3).
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.end()); }
  /// `n` extents, each `value`.
  explicit Shape(size_type n, std::int64_t value = 0) { resize(n, value); }
  /// The extents of the range [first, last).
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  Shape(It first, It last) {
    assign(first, last);
  }
  /// The extents of a std::vector (implicit, so that code written with vectors keeps compiling).
  Shape(const std::vector<std::int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT implicit
  /// Copies and moves, as std::vector's (a moved-from Shape is empty).
  ///@{
  Shape(const Shape& o) {
    if (o.size_ <= kInline) copy_inline(o);  // the common case: four extents, no branch per extent
    else assign(o.begin(), o.end());
  }
  Shape(Shape&& o) noexcept { take(o); }
  Shape& operator=(const Shape& o) {
    if (this == &o) return *this;
    if (o.size_ <= kInline && !on_heap()) copy_inline(o);
    else assign(o.begin(), o.end());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ///@}
  /// Replaces the extents: `s = {2, 3};`.
  Shape& operator=(std::initializer_list<std::int64_t> dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  /// Frees the heap storage of a shape of more than 6 extents.
  ~Shape() { release(); }

  /// The extents as a std::vector.
  operator std::vector<std::int64_t>() const { return std::vector<std::int64_t>(begin(), end()); }  // NOLINT

  // --- the vector interface
  /// The number of extents (ndim()).
  size_type size() const { return size_; }
  /// Whether there are no extents (the shape of a 0-d tensor).
  bool empty() const { return size_ == 0; }
  /// The extents in contiguous memory.
  ///@{
  std::int64_t* data() { return ptr(); }
  const std::int64_t* data() const { return ptr(); }
  ///@}
  /// Iterators over the extents, as std::vector's.
  ///@{
  iterator begin() { return ptr(); }
  iterator end() { return ptr() + size_; }
  const_iterator begin() const { return ptr(); }
  const_iterator end() const { return ptr() + size_; }
  const_iterator cbegin() const { return ptr(); }
  const_iterator cend() const { return ptr() + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }
  ///@}
  /// Extent `i`, as std::vector's (no bounds check; negative axes are not accepted here).
  ///@{
  std::int64_t& operator[](size_type i) { return ptr()[i]; }
  const std::int64_t& operator[](size_type i) const { return ptr()[i]; }
  ///@}
  /// Extent `i`, checked: std::out_of_range when `i >= size()`.
  ///@{
  std::int64_t& at(size_type i) {
    check(i);
    return ptr()[i];
  }
  const std::int64_t& at(size_type i) const {
    check(i);
    return ptr()[i];
  }
  ///@}
  /// The first and the last extent, as std::vector's (the shape must not be empty).
  ///@{
  std::int64_t& front() { return ptr()[0]; }
  const std::int64_t& front() const { return ptr()[0]; }
  std::int64_t& back() { return ptr()[size_ - 1]; }
  const std::int64_t& back() const { return ptr()[size_ - 1]; }
  ///@}

  /// Makes room for `n` extents, as std::vector's.
  void reserve(size_type n) {
    if (n <= cap_) return;
    std::int64_t* p = new std::int64_t[n];
    std::copy(begin(), end(), p);
    release();
    heap_ = p;
    cap_ = static_cast<std::uint32_t>(n);
  }
  /// Removes every extent: the shape becomes ().
  void clear() { size_ = 0; }
  /// Keeps the first `n` extents, or appends copies of `value` up to `n`.
  void resize(size_type n, std::int64_t value = 0) {
    reserve(n);
    std::int64_t* p = ptr();
    for (size_type i = size_; i < n; ++i) p[i] = value;
    size_ = static_cast<std::uint32_t>(n);
  }
  /// Appends an extent.
  ///@{
  void push_back(std::int64_t v) {
    if (size_ == cap_) reserve(std::size_t(cap_) * 2);
    ptr()[size_++] = v;
  }
  void emplace_back(std::int64_t v) { push_back(v); }
  ///@}
  /// Removes the last extent (the shape must not be empty).
  void pop_back() { --size_; }
  /// Replaces the extents with those of the range [first, last), which may be this shape's own.
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    size_type n = static_cast<size_type>(std::distance(first, last));
    if (n > cap_) {  // new storage first: [first, last) may be our own elements
      std::int64_t* p = new std::int64_t[n];
      std::copy(first, last, p);
      release();
      heap_ = p;
      cap_ = static_cast<std::uint32_t>(n);
    } else {
      std::copy(first, last, ptr());
    }
    size_ = static_cast<std::uint32_t>(n);
  }
  /// Inserts extents before `pos`, as std::vector's; returns an iterator to the first one inserted.
  ///@{
  iterator insert(const_iterator pos, std::int64_t v) { return insert(pos, &v, &v + 1); }
  iterator insert(const_iterator pos, size_type count, std::int64_t v) {
    std::vector<std::int64_t> tmp(count, v);
    return insert(pos, tmp.begin(), tmp.end());
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  iterator insert(const_iterator pos, It first, It last) {
    // Through a copy: [first, last) may point into this shape.
    std::vector<std::int64_t> add(first, last);
    size_type at = static_cast<size_type>(pos - begin()), n = add.size();
    if (size_ + n > cap_) reserve(std::max<size_type>(size_ + n, std::size_t(cap_) * 2));
    std::int64_t* p = ptr();
    std::move_backward(p + at, p + size_, p + size_ + n);
    std::copy(add.begin(), add.end(), p + at);
    size_ = static_cast<std::uint32_t>(size_ + n);
    return p + at;
  }
  ///@}
  /// Removes the extent at `pos`, or those of [first, last), as std::vector's.
  ///@{
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    size_type a = static_cast<size_type>(first - begin()), b = static_cast<size_type>(last - begin());
    std::int64_t* p = ptr();
    std::move(p + b, p + size_, p + a);
    size_ = static_cast<std::uint32_t>(size_ - (b - a));
    return p + a;
  }
  ///@}

  /// Equal when the extents are; `<` is lexicographic (for ordered containers).
  ///@{
  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.size_ != b.size_) return false;
    const std::int64_t *pa = a.ptr(), *pb = b.ptr();
    for (std::uint32_t i = 0; i < a.size_; ++i)
      if (pa[i] != pb[i]) return false;
    return true;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  friend bool operator<(const Shape& a, const Shape& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  ///@}

  // --- shape helpers
  /// The number of axes, as an int: 0 for ().
  int ndim() const { return static_cast<int>(size()); }
  /// The product of the extents, unchecked: for shapes that already back a tensor.
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : *this) n *= d;
    return n;
  }
  /// The product of the extents for a shape about to be allocated or adopted: a
  /// ShapeError naming op and the shape when an extent is negative or the product of
  /// its non-zero extents does not fit in int64. A zero extent makes the size 0 but
  /// does not excuse the others: (0, 2^62, 2^62) is refused too, so that every partial
  /// product of a tensor's extents (strides, a reduction's outer and inner sizes) fits
  /// in int64. One checked multiply per extent.
  std::int64_t checked_numel(const char* op) const {
    std::int64_t n = 1;
    bool overflow = false, zero = false;
    for (auto d : *this) {
      if (d < 0) throw ShapeError(std::string(op) + ": negative dimension in shape " + str());
      if (d == 0) zero = true;
      else overflow |= __builtin_mul_overflow(n, d, &n);
    }
    if (overflow)
      throw ShapeError(std::string(op) + ": shape " + str() +
                       (zero ? " has extents whose product (the zero extent left out) is more elements than int64 can "
                               "count; hint: check the extents (a product past 2^63 - 1)"
                             : " has more elements than int64 can count; hint: check the extents (a product past "
                               "2^63 - 1)"));
    return zero ? 0 : n;
  }
  /// checked_numel times elem_size bytes, checked as well: the byte count must fit
  /// in int64 (and so in size_t). A ShapeError naming op otherwise.
  std::size_t checked_nbytes(const char* op, std::size_t elem_size) const {
    std::int64_t n = checked_numel(op), bytes = 0;
    if (__builtin_mul_overflow(n, static_cast<std::int64_t>(elem_size), &bytes))
      throw ShapeError(std::string(op) + ": shape " + str() + " needs " + std::to_string(n) + " elements of " +
                       std::to_string(elem_size) + " bytes, more bytes than int64 can count; hint: check the extents");
    return static_cast<std::size_t>(bytes);
  }
  /// Python's tuple spelling: "()", "(10,)", "(2, 3)".
  std::string str() const {
    std::string s = "(";
    for (std::size_t i = 0; i < size(); ++i) {
      if (i) s += ", ";
      s += std::to_string((*this)[i]);
    }
    if (size() == 1) s += ",";
    return s + ")";
  }

 private:
  static constexpr std::uint32_t kInline = 4;

  bool on_heap() const { return cap_ > kInline; }
  void copy_inline(const Shape& o) {  // *this is inline, o has at most kInline extents
    const std::int64_t* src = o.ptr();
    for (std::uint32_t i = 0; i < kInline; ++i) inline_[i] = i < o.size_ ? src[i] : 0;
    size_ = o.size_;
  }
  std::int64_t* ptr() { return on_heap() ? heap_ : inline_; }
  const std::int64_t* ptr() const { return on_heap() ? heap_ : inline_; }
  void release() noexcept {
    if (on_heap()) delete[] heap_;
    cap_ = kInline;
  }
  void take(Shape& o) noexcept {  // *this holds nothing
    if (o.on_heap()) heap_ = o.heap_;
    else std::copy(o.inline_, o.inline_ + o.size_, inline_);
    cap_ = o.cap_;
    size_ = o.size_;
    o.cap_ = kInline;
    o.size_ = 0;
  }
  void check(size_type i) const {
    if (i >= size_) throw std::out_of_range("Shape::at: index " + std::to_string(i) + " >= size " + std::to_string(size_));
  }

  union {
    std::int64_t inline_[kInline] = {};  // the extents, while cap_ == kInline
    std::int64_t* heap_;                 // the extents, once more than kInline were needed
  };
  std::uint32_t size_ = 0;
  std::uint32_t cap_ = kInline;
};

/// Writes `s.str()` to `os`: "(2, 3)".
inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

/// A set of axes for reductions: all axes (the default), one axis, or a list.
/// x.sum() sums everything; x.sum(1); x.sum({0, 2}, true).
///
/// NumPy's axis=None, an int or a tuple. Axes are checked by the operation that uses them:
/// one outside [-ndim, ndim) is an IndexError, the same axis named twice a ValueError.
class Axes {
 public:
  /// All axes (NumPy's axis=None).
  Axes() = default;
  /// One axis (may be negative), implicit: `x.sum(1)`.
  Axes(int axis) : all_(false), axes_{axis} {}  // NOLINT implicit
  /// A list of axes: `x.sum({0, 2})`.
  Axes(std::initializer_list<int> axes) : all_(false), axes_(axes) {}
  /// A list of axes from a std::vector (implicit); an empty vector names no axis (NumPy's
  /// axis=()), where a plain `{}` is Axes(), all axes.
  Axes(std::vector<int> axes) : all_(false), axes_(std::move(axes)) {}  // NOLINT implicit
  /// All axes, as Axes().
  static Axes all() { return Axes(); }

  /// Whether this means all axes.
  bool is_all() const { return all_; }
  /// The axes as given (empty when is_all()).
  const std::vector<int>& list() const { return axes_; }
  /// Python's spelling of NumPy's axis argument: "None", "1", "(0, 2)".
  std::string str() const {
    if (all_) return "None";
    if (axes_.size() == 1) return std::to_string(axes_[0]);
    std::string s = "(";
    for (std::size_t i = 0; i < axes_.size(); ++i) s += (i ? ", " : "") + std::to_string(axes_[i]);
    return s + ")";
  }

 private:
  bool all_ = true;
  std::vector<int> axes_;
};

}  // namespace dezero
