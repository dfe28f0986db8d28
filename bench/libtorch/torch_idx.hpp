// bench/libtorch/torch_idx.hpp - Fashion-MNIST's gzip'ed IDX files for the LibTorch twins
// (W1 and W2 train on the same images as ours): the images as float32 /255 and the labels
// as int64, read with zlib from DIR (default /usr/share/datasets/fashion-mnist, Debian's
// dataset-fashion-mnist). A benchmark helper, not a hardened reader: the files are the
// machine's own.
#pragma once

#include <torch/torch.h>
#include <zlib.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace tbench {

// The bytes of a gzip'ed IDX file after its header (magic, then one int32 per dimension).
inline std::vector<unsigned char> read_idx_gz(const std::string& path, int ndim) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path + "; hint: apt-get install dataset-fashion-mnist or --data DIR");
  std::vector<unsigned char> all, buf(1 << 16);
  int n;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0) all.insert(all.end(), buf.begin(), buf.begin() + n);
  gzclose(f);
  std::size_t header = 4 + 4 * static_cast<std::size_t>(ndim);
  if (all.size() < header) throw std::runtime_error(path + " is too short for an IDX file");
  return std::vector<unsigned char>(all.begin() + static_cast<std::ptrdiff_t>(header), all.end());
}

// The first n images of a Fashion-MNIST split, (n, 784) float32 in [0, 1], and their labels (n,) int64.
// split is "train" or "t10k".
inline std::pair<torch::Tensor, torch::Tensor> fashion_mnist(const std::string& dir, const std::string& split,
                                                             std::int64_t n) {
  std::vector<unsigned char> img = read_idx_gz(dir + "/" + split + "-images-idx3-ubyte.gz", 3);
  std::vector<unsigned char> lab = read_idx_gz(dir + "/" + split + "-labels-idx1-ubyte.gz", 1);
  if (img.size() < static_cast<std::size_t>(n) * 784 || lab.size() < static_cast<std::size_t>(n))
    throw std::runtime_error("fewer than " + std::to_string(n) + " " + split + " images in " + dir);
  torch::Tensor x = torch::from_blob(img.data(), {n, 784}, torch::kUInt8).to(torch::kFloat32) / 255.0;
  torch::Tensor t = torch::from_blob(lab.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return {x, t};  // both own their storage (.to copies)
}

}  // namespace tbench
