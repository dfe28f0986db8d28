// dezero/device.hpp - where a tensor's storage lives: host memory or a CUDA device.
#pragma once

#include <ostream>
#include <string>

namespace dezero {

class Device {
 public:
  enum class Type { CPU, CUDA };

  constexpr Device() = default;  // the CPU
  static constexpr Device cpu() { return Device(); }
  static constexpr Device cuda(int id = 0) { return Device(Type::CUDA, id); }

  constexpr Type type() const { return type_; }
  constexpr int index() const { return index_; }  // -1 for the CPU (Chainer's DummyDevice id)
  constexpr bool is_cpu() const { return type_ == Type::CPU; }
  constexpr bool is_cuda() const { return type_ == Type::CUDA; }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index_); }

  constexpr bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  constexpr Device(Type t, int id) : type_(t), index_(id) {}
  Type type_ = Type::CPU;
  int index_ = -1;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace dezero
