// dezero/utils/npy.hpp - internal to utils/: what the .npz reader and writer (npz.cpp) share with
// the .npy format (npy.cpp): bounds-checked reads of a byte string, an .npy header read before any
// of its data is allocated, the reader's memory budget, and the little-endian writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>

#include "dezero/npz.hpp"

namespace dezero::utils::detail {

// --- bounds-checked little-endian reads: a truncated or corrupt file is an IOError, never a crash --
struct Bytes {
  std::string_view b;
  const std::string& what;

  void need(std::uint64_t off, std::uint64_t n, const char* part) const {
    if (off > b.size() || n > b.size() - off)
      throw IOError(what + ": truncated or corrupt file (" + part + " at byte " + std::to_string(off) +
                    " runs past the end of the " + std::to_string(b.size()) + "-byte file)");
  }
  std::uint64_t le(std::uint64_t off, int n, const char* part) const {
    need(off, static_cast<std::uint64_t>(n), part);
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[off + i]);
    return v;
  }
  std::uint16_t u16(std::uint64_t off, const char* part) const { return static_cast<std::uint16_t>(le(off, 2, part)); }
  std::uint32_t u32(std::uint64_t off, const char* part) const { return static_cast<std::uint32_t>(le(off, 4, part)); }
  std::uint64_t u64(std::uint64_t off, const char* part) const { return le(off, 8, part); }
};

// No plain array NumPy writes has a header near this (a 64-axis shape is under 1 KB); a larger
// one is read no further.
constexpr std::uint64_t kMaxNpyHeader = 65536;

// What an .npy's header says, read before any of its data is touched: where the data starts,
// how many elements there are, and the tensor they become (its bytes are what a reader allocates).
struct NpyPlan {
  Shape shape;
  std::int64_t n = 0;           // elements
  std::uint64_t data_off = 0;   // the data's offset in the .npy bytes
  std::size_t in_size = 0;      // bytes per element in the file
  DType out = float32;          // the tensor's dtype
  bool widen = false;           // a 1- or 2-byte integer (or a '<u4') read into a wider dtype
  bool swap = false;            // big-endian data on this little-endian host (or the other way)
  std::string code;             // NumPy's type code without the byte order ("f4", "u1", ...)
  std::uint64_t data_bytes() const { return static_cast<std::uint64_t>(n) * in_size; }
  std::uint64_t out_bytes() const { return static_cast<std::uint64_t>(n) * dtype_size(out); }
};

// Reads the magic and the header of the .npy in `bytes` (which may hold only its start).
NpyPlan plan_npy(std::string_view bytes, const std::string& what);
// The tensor of `plan` from its data bytes (plan.data_bytes() of them at `data`): one copy.
Tensor build_npy(const NpyPlan& plan, const char* data);
// The tensor of `plan` (and `scratch` bytes to make it) from the reader's budget; an IOError past the cap.
void spend(std::uint64_t& budget, const NpyPlan& plan, std::uint64_t scratch, const std::string& what);
// The .npy header of `array` (magic, version, the dict padded so the data starts on a 64-byte
// boundary); the data follows it.
std::string npy_header(const Tensor& array);
// Reverses the bytes of each element in place (big-endian data on a little-endian host).
void swap_elements(char* p, std::int64_t n, std::size_t size);
// Appends the `n` low bytes of `v`, little-endian.
void put(std::string& out, std::uint64_t v, int n);

// std::bad_alloc inside a reader is an IOError that names what was being read.
template <class F>
auto reading(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    throw IOError(what + ": not enough memory to read it; hint: utils::set_max_npz_bytes lowers the cap on what a "
                  "file may make the reader allocate");
  }
}

}  // namespace dezero::utils::detail
