// dezero/shape.hpp - Shape (a vector of int64 extents) and axis helpers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace dezero {

// A tensor's shape: (2, 3) is Shape{2, 3}; a 0-d tensor has Shape{}.
class Shape : public std::vector<std::int64_t> {
 public:
  using std::vector<std::int64_t>::vector;
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : std::vector<std::int64_t>(dims) {}
  Shape(const std::vector<std::int64_t>& v) : std::vector<std::int64_t>(v) {}  // NOLINT implicit

  int ndim() const { return static_cast<int>(size()); }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : *this) n *= d;
    return n;
  }
  // Python's tuple spelling: "()", "(10,)", "(2, 3)".
  std::string str() const {
    std::string s = "(";
    for (std::size_t i = 0; i < size(); ++i) {
      if (i) s += ", ";
      s += std::to_string((*this)[i]);
    }
    if (size() == 1) s += ",";
    return s + ")";
  }
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

// A set of axes for reductions: all axes (the default), one axis, or a list.
// x.sum() sums everything; x.sum(1); x.sum({0, 2}, true).
class Axes {
 public:
  Axes() = default;  // all axes
  Axes(int axis) : all_(false), axes_{axis} {}  // NOLINT implicit
  Axes(std::initializer_list<int> axes) : all_(false), axes_(axes) {}
  Axes(std::vector<int> axes) : all_(false), axes_(std::move(axes)) {}  // NOLINT implicit
  static Axes all() { return Axes(); }

  bool is_all() const { return all_; }
  const std::vector<int>& list() const { return axes_; }
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
