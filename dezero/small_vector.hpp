/// \file
/// `SmallVector<T, N>`: a std::vector work-alike that keeps
/// its first N elements inside the object.
///
/// VariableList and TensorList are SmallVectors: every Function call builds a few of
/// them (its inputs, the tensors forward() returns, its outputs), almost always of
/// one to three elements, and on the heap each cost a malloc/free pair. The
/// interface is std::vector's (size, [], iterators, push_back, emplace_back,
/// insert, erase, resize, reserve, ==), and it converts to and from `std::vector<T>`,
/// so code written against a std::vector keeps compiling. Past N elements the
/// storage moves to the heap like a vector's; iterators are invalidated by growth
/// the same way, and a moved-from SmallVector is empty.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace dezero {

/// Whether `SmallVector<T, N>{a, b}` takes its elements by forwarding (temporaries moved
/// in) instead of copying them out of a std::initializer_list: for types whose copies cost
/// (dezero's Variable and Tensor handles, which specialise it to true). `D` is void; it
/// only makes the constructor's condition depend on a template parameter.
template <class T, class D = void>
struct small_vector_forwards_braced : std::false_type {};

/// Whether It is an iterator (has an iterator_category): the range members take only those.
template <class It, class = void>
struct small_vector_is_iterator : std::false_type {};
/// \cond INTERNAL
template <class It>
struct small_vector_is_iterator<It, std::void_t<typename std::iterator_traits<It>::iterator_category>>
    : std::true_type {};
/// \endcond

/// A std::vector work-alike that keeps its first N elements inside the object.
///
/// The type of VariableList and TensorList (`SmallVector<Variable, 3>`,
/// `SmallVector<Tensor, 3>`); see the file's description. Unlike std::vector it has no
/// allocator parameter, shrink_to_fit() does nothing, and swap() moves the elements.
/// \tparam T the element type.
/// \tparam N how many elements fit inside the object (at least 1).
template <class T, std::size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs room for at least one element inside");

 public:
  /// The member types of std::vector's.
  ///@{
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  ///@}

  /// An empty vector (no allocation).
  SmallVector() noexcept = default;
  /// `n` value-initialised elements.
  explicit SmallVector(size_type n) { resize(n); }
  /// `n` copies of `value`.
  SmallVector(size_type n, const T& value) { assign(n, value); }
  /// The listed elements: `SmallVector<int, 3>{1, 2}`, copied from the initializer_list.
  template <class D = void, std::enable_if_t<!small_vector_forwards_braced<T, D>::value, int> = 0>
  SmallVector(std::initializer_list<T> items) {
    append_copies(items.begin(), items.end());
  }
  /// The listed elements of a handle type (small_vector_forwards_braced: Variable, Tensor):
  /// `VariableList{x, W}`, `return {y};`; temporaries are moved in, not copied.
  ///
  /// One element must be a T itself (so that a Tensor does not convert to a one-element
  /// VariableList where a Variable is also accepted); two or more convert as they would
  /// in an initializer_list.
  template <class... U,
            std::enable_if_t<small_vector_forwards_braced<T, void>::value && (sizeof...(U) > 0) &&
                                 (std::is_convertible_v<U&&, T> && ...) &&
                                 (sizeof...(U) > 1 || (std::is_same_v<std::decay_t<U>, T> && ...)),
                             int> = 0>
  SmallVector(U&&... items) {  // NOLINT implicit, as a braced list is
    reserve(sizeof...(U));
    (emplace_back(std::forward<U>(items)), ...);
  }
  /// Copies of the elements of the range [first, last).
  template <class It, class = std::enable_if_t<!std::is_integral_v<It> && small_vector_is_iterator<It>::value>>
  SmallVector(It first, It last) {
    append_copies(first, last);
  }
  /// The elements of a std::vector, copied or moved (implicit, so that code written with
  /// vectors keeps compiling).
  ///@{
  SmallVector(const std::vector<T>& v) { append_copies(v.begin(), v.end()); }  // NOLINT implicit
  SmallVector(std::vector<T>&& v) {                                            // NOLINT implicit
    reserve(v.size());
    for (auto& x : v) emplace_back(std::move(x));
  }
  ///@}
  /// Copies and moves, as std::vector's (a moved-from SmallVector is empty).
  ///@{
  SmallVector(const SmallVector& o) { append_copies(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept(std::is_nothrow_move_constructible_v<T>) { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &o) {
      clear();
      release();
      take(o);
    }
    return *this;
  }
  ///@}
  /// Replaces the elements with the listed ones.
  SmallVector& operator=(std::initializer_list<T> items) {
    assign(items.begin(), items.end());
    return *this;
  }
  /// Destroys the elements and frees the heap storage, if any.
  ~SmallVector() {
    clear();
    release();
  }

  /// The elements as a std::vector: copied from an lvalue, moved out of an rvalue (which is
  /// left empty).
  ///@{
  operator std::vector<T>() const& { return std::vector<T>(begin(), end()); }  // NOLINT implicit
  operator std::vector<T>() && {                                              // NOLINT implicit
    std::vector<T> v;
    v.reserve(size_);
    for (auto& x : *this) v.push_back(std::move(x));
    clear();
    return v;
  }
  ///@}

  // --- element access
  /// The number of elements.
  size_type size() const noexcept { return size_; }
  /// Whether there are no elements.
  bool empty() const noexcept { return size_ == 0; }
  /// How many elements fit without a new allocation (N while they are inside).
  size_type capacity() const noexcept { return cap_; }
  /// The largest possible size, as std::vector's.
  size_type max_size() const noexcept { return std::allocator_traits<std::allocator<T>>::max_size(std::allocator<T>()); }
  /// The elements in contiguous memory.
  ///@{
  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  ///@}
  /// Iterators, as std::vector's (invalidated by growth and by moving the vector).
  ///@{
  iterator begin() noexcept { return ptr_; }
  iterator end() noexcept { return ptr_ + size_; }
  const_iterator begin() const noexcept { return ptr_; }
  const_iterator end() const noexcept { return ptr_ + size_; }
  const_iterator cbegin() const noexcept { return ptr_; }
  const_iterator cend() const noexcept { return ptr_ + size_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
  ///@}
  /// Element access, as std::vector's (no bounds check).
  ///@{
  T& operator[](size_type i) { return ptr_[i]; }
  const T& operator[](size_type i) const { return ptr_[i]; }
  ///@}
  /// Element `i`, checked: std::out_of_range when `i >= size()`.
  ///@{
  T& at(size_type i) {
    check_index(i);
    return ptr_[i];
  }
  const T& at(size_type i) const {
    check_index(i);
    return ptr_[i];
  }
  ///@}
  /// The first and the last element, as std::vector's (the vector must not be empty).
  ///@{
  T& front() { return ptr_[0]; }
  const T& front() const { return ptr_[0]; }
  T& back() { return ptr_[size_ - 1]; }
  const T& back() const { return ptr_[size_ - 1]; }
  ///@}

  // --- modifiers
  /// Makes room for `n` elements (on the heap when `n > N`).
  void reserve(size_type n) {
    if (n > cap_) grow_to(n);
  }
  /// Does nothing (std::vector's is a non-binding request too).
  void shrink_to_fit() {}
  /// Destroys every element; the capacity stays.
  void clear() noexcept {
    std::destroy(ptr_, ptr_ + size_);
    size_ = 0;
  }
  /// Constructs an element at the end from `args` (which may refer to an element of this
  /// vector) and returns it.
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == cap_) {
      // Build first: args may refer to an element that growth would move.
      T tmp(std::forward<Args>(args)...);
      grow_to(next_capacity(size_ + 1));
      ::new (static_cast<void*>(ptr_ + size_)) T(std::move(tmp));
    } else {
      ::new (static_cast<void*>(ptr_ + size_)) T(std::forward<Args>(args)...);
    }
    return ptr_[size_++];
  }
  /// Appends a copy of `v`, or `v` moved.
  ///@{
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  ///@}
  /// Destroys the last element (the vector must not be empty).
  void pop_back() {
    --size_;
    ptr_[size_].~T();
  }
  /// Keeps the first `n` elements, or appends value-initialised ones (or copies of `value`) up to `n`.
  ///@{
  void resize(size_type n) {
    if (n < size_) return truncate(n);
    reserve(n);
    for (; size_ < n; ++size_) ::new (static_cast<void*>(ptr_ + size_)) T();
  }
  void resize(size_type n, const T& value) {
    if (n < size_) return truncate(n);
    T tmp(value);
    reserve(n);
    for (; size_ < n; ++size_) ::new (static_cast<void*>(ptr_ + size_)) T(tmp);
  }
  ///@}
  /// Replaces the elements with `n` copies of `value`, a range (which may be this vector's own) or a list.
  ///@{
  void assign(size_type n, const T& value) {
    T tmp(value);
    clear();
    resize(n, tmp);
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It> && small_vector_is_iterator<It>::value>>
  void assign(It first, It last) {
    SmallVector tmp;  // the range may be part of *this
    tmp.append_copies(first, last);
    *this = std::move(tmp);
  }
  void assign(std::initializer_list<T> items) { assign(items.begin(), items.end()); }
  ///@}

  /// Inserts elements before `pos`, as std::vector's; returns an iterator to the first one inserted.
  ///@{
  iterator insert(const_iterator pos, const T& value) { return emplace(pos, value); }
  iterator insert(const_iterator pos, T&& value) { return emplace(pos, std::move(value)); }
  iterator insert(const_iterator pos, size_type n, const T& value) {
    SmallVector tmp(n, value);
    return insert(pos, std::make_move_iterator(tmp.begin()), std::make_move_iterator(tmp.end()));
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It> && small_vector_is_iterator<It>::value>>
  iterator insert(const_iterator pos, It first, It last) {
    size_type at = static_cast<size_type>(pos - begin()), old = size_;
    SmallVector tmp;  // the range may be part of *this
    tmp.append_copies(first, last);
    reserve(size_ + tmp.size());
    for (auto& x : tmp) ::new (static_cast<void*>(ptr_ + size_++)) T(std::move(x));
    std::rotate(begin() + at, begin() + old, end());
    return begin() + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> items) {
    return insert(pos, items.begin(), items.end());
  }
  ///@}
  /// Constructs an element before `pos` from `args`; returns an iterator to it.
  template <class... Args>
  iterator emplace(const_iterator pos, Args&&... args) {
    size_type at = static_cast<size_type>(pos - begin());
    emplace_back(std::forward<Args>(args)...);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  /// Removes the element at `pos`, or those of [first, last), as std::vector's; returns an
  /// iterator to the element after the removed ones.
  ///@{
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    iterator f = begin() + (first - begin()), l = begin() + (last - begin());
    if (f != l) truncate(static_cast<size_type>(std::move(l, end(), f) - begin()));
    return f;
  }
  ///@}
  /// Exchanges the elements with `o` (by moves: elements inside the object cannot be swapped by pointer).
  void swap(SmallVector& o) {
    SmallVector tmp(std::move(o));
    o = std::move(*this);
    *this = std::move(tmp);
  }

  /// Equal when the sizes and the elements (by `==`) are.
  ///@{
  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }
  ///@}

 private:
  bool is_inline() const noexcept { return ptr_ == inline_ptr(); }
  T* inline_ptr() noexcept { return reinterpret_cast<T*>(inline_); }
  const T* inline_ptr() const noexcept { return reinterpret_cast<const T*>(inline_); }
  size_type next_capacity(size_type need) const { return std::max(need, cap_ * 2); }
  void check_index(size_type i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at: index out of range");
  }
  template <class It>
  void append_copies(It first, It last) {
    if constexpr (std::is_base_of_v<std::forward_iterator_tag,
                                    typename std::iterator_traits<It>::iterator_category>)
      reserve(size_ + static_cast<size_type>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }
  void truncate(size_type n) noexcept {
    std::destroy(ptr_ + n, ptr_ + size_);
    size_ = n;
  }
  void grow_to(size_type cap) {
    T* fresh = std::allocator<T>().allocate(cap);
    std::uninitialized_move(ptr_, ptr_ + size_, fresh);
    std::destroy(ptr_, ptr_ + size_);
    release();
    ptr_ = fresh;
    cap_ = cap;
  }
  // Frees heap storage (elements already destroyed) and points back inside.
  void release() noexcept {
    if (!is_inline()) std::allocator<T>().deallocate(ptr_, cap_);
    ptr_ = inline_ptr();
    cap_ = N;
  }
  // Takes o's elements (o is left empty, inline).
  void take(SmallVector& o) {
    if (o.is_inline()) {
      std::uninitialized_move(o.ptr_, o.ptr_ + o.size_, ptr_);
      size_ = o.size_;
      o.clear();
    } else {
      ptr_ = o.ptr_;
      size_ = o.size_;
      cap_ = o.cap_;
      o.ptr_ = o.inline_ptr();
      o.size_ = 0;
      o.cap_ = N;
    }
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* ptr_ = inline_ptr();
  size_type size_ = 0;
  size_type cap_ = N;
};

/// Exchanges the elements of `a` and `b` (a.swap(b)), as std::swap of two vectors.
template <class T, std::size_t N>
void swap(SmallVector<T, N>& a, SmallVector<T, N>& b) {
  a.swap(b);
}

}  // namespace dezero
