/// \file
/// NumPy .npz files (np.savez / np.savez_compressed / np.load)
/// without Python: a small zip reader/writer on zlib plus the .npy format.
///
/// Reads: zip entries stored or deflated (zip64 records where NumPy writes them),
/// .npy format versions 1.0, 2.0 and 3.0, C order, little- or big-endian
/// `'<f4' '<f8' '<i4' '<i8' '<f2'` into float32 / float64 / int32 / int64 / float16, and
/// `'<V2'` (or `'|V2'`, or the descr `'bfloat16'`) into bfloat16. Small integer
/// and bool arrays (`'|u1' '|i1' '|b1' '<u2' '<i2'`) load as int32 and `'<u4'` as
/// int64 (lossless; dezero has no narrower integer dtypes). Anything else - other
/// void sizes, uint64, complex, strings, object (pickled) arrays, fortran_order=True - is a
/// DtypeError / IOError naming the entry. CRCs are checked.
///
/// bfloat16: NumPy has no such dtype; dezero writes it as np.save writes an array of
/// ml_dtypes.bfloat16 (the de-facto NumPy bfloat16 of JAX and TensorFlow): descr `'<V2'`,
/// two opaque little-endian bytes per element. `np.load(f)["w"].view(ml_dtypes.bfloat16)`
/// gives the values back in Python; dezero reads any 2-byte void array as bfloat16.
///
/// Writes: .npy version 1.0 (2.0 when a header needs it) with 64-byte aligned
/// headers, entries stored (save_npz) or deflated (compressed = true) with valid
/// CRCs, as np.savez / np.savez_compressed do. Not zip64: a file of 4 GiB or more
/// is an IOError.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dezero/tensor.hpp"

namespace dezero::utils {

/// (name, array) in file order; names are NumPy's keys (the entry name less ".npy").
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Every array of an .npz file, on the CPU. IOError for a missing, truncated or
/// corrupt file; DtypeError for an element type dezero cannot hold.
NamedTensors load_npz(const std::string& path);

/// The array named `key` of `arrays` (NumPy's `np.load(path)[key]`): a handle to the same
/// tensor, not a copy. `utils::get_array(utils::load_npz("w.npz"), "l0/W")` is safe (the
/// handle keeps the data alive). A missing key is a ValueError naming it and the keys there are.
Tensor get_array(const NamedTensors& arrays, const std::string& key);

namespace detail {
// load_npz with its errors prefixed by `op` (Layer::load_weights reports as itself).
NamedTensors load_npz_as(const std::string& op, const std::string& path);
}  // namespace detail

/// Writes `arrays` (any device; copied to the host) as an .npz file at `path`
/// exactly (no ".npz" is appended). Names must be unique and non-empty.
/// A repeated or empty name, or an undefined tensor, is a dezero::ValueError; a file
/// that cannot be written (or would need zip64) an IOError. The file is written under a
/// fresh temporary name nobody can predict ("<path>.<random>.tmp", created with O_EXCL |
/// O_NOFOLLOW: never through a planted symlink), flushed to the disk and renamed when complete.
void save_npz(const std::string& path, const NamedTensors& arrays, bool compressed = false);

/// The same formats in memory: the arrays of the bytes of a whole .npz file.
/// `what` is what the errors call the bytes; errors as load_npz.
NamedTensors parse_npz(const std::string& bytes, const std::string& what = "npz");
/// The same formats in memory: the bytes of a whole .npz file holding `arrays` (as save_npz writes it).
std::string serialize_npz(const NamedTensors& arrays, bool compressed = false);
/// The same formats in memory: the host tensor in the bytes of one .npy file.
/// `what` is what the errors call the bytes (dezero::IOError / dezero::DtypeError).
Tensor parse_npy(const std::string& bytes, const std::string& what = "npy");
/// The same formats in memory: the bytes of one .npy file holding `array` (any device).
std::string serialize_npy(const Tensor& array);

/// The cap on what an .npz file may make load_npz / parse_npz (and so load_weights, load_state)
/// allocate: the total of its entries' uncompressed sizes, the size of the file itself, and the
/// total of the tensors it makes (a 1- or 2-byte integer entry widens to 4 bytes an element).
/// A small deflated file can declare about 1000 times its size. The sizes are added up before
/// anything is inflated (or, for the file, read), and each tensor is counted from its entry's
/// header before it is allocated; beyond the cap is an IOError naming the sizes, the cap and
/// this setter. Default 2 GiB (2^31 bytes): about four times VGG16's 528 MB of
/// weights, or Adam's state for it. Process-wide, thread-safe; ValueError for a value <= 0.
void set_max_npz_bytes(std::int64_t bytes);
/// The cap set by set_max_npz_bytes (default 2^31 bytes).
std::int64_t get_max_npz_bytes();

}  // namespace dezero::utils
